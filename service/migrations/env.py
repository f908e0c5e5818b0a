"""Alembic environment: the URL comes from the caller (service.migrate), never a file."""

from __future__ import annotations

from alembic import context

from service.db import make_engine
from service.models import Base

config = context.config
url = config.attributes["url"]
engine = make_engine(url)
try:
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=Base.metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
finally:
    engine.dispose()
