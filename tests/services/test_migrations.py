"""The migrations build exactly the schema the models declare, on both databases."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from service.db import make_engine
from service.migrate import current
from service.models import Base

pytestmark = pytest.mark.service


def test_the_migrated_schema_is_the_models_schema(any_database_url: str) -> None:
    assert current(any_database_url) == "0002"
    engine = make_engine(any_database_url)
    try:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    finally:
        engine.dispose()
    assert diff == []
