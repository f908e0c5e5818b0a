"""Alembic environment: the URL comes from the caller (service.migrate), never a file.

On SQLite, foreign keys are off while migrating: a batch migration rebuilds a table
(copy, drop, rename), and dropping ``submissions`` with foreign keys on would delete,
by ``ON DELETE CASCADE``, every grading and delivery that refers to it. The keys are
checked once the migration is done.
"""

from __future__ import annotations

from alembic import context

from service.db import make_engine
from service.models import Base

config = context.config
url = config.attributes["url"]
engine = make_engine(url)
try:
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:  # outside a transaction, where SQLite honours it
            connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
            connection.commit()  # so that alembic begins (and commits) its own transaction
        context.configure(
            connection=connection,
            target_metadata=Base.metadata,
            render_as_batch=sqlite,
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
        if sqlite:
            broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
            if broken:
                raise RuntimeError(f"the migration broke foreign keys: {broken[:5]}")
finally:
    engine.dispose()
