"""The migrations build exactly the schema the models declare, on both databases."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import select, text

from service.db import Database, make_engine, utcnow
from service.keys import create_key
from service.migrate import current, upgrade
from service.models import Base, Submission

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


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'jaxjudge.db'}"
    url: str = request.getfixturevalue("postgres_server").new_database()
    return url


def test_0002_turns_deliveries_left_open_into_due_pending_ones(empty_database_url: str) -> None:
    upgrade(empty_database_url, "0001")
    db = Database(empty_database_url)
    try:
        with db.session() as s:
            create_key(s, "course-a", "client")
            for sid, state in [("unsent", "unsent"), ("pending", "pending"),
                               ("delivered", "delivered"), ("none", None)]:
                s.execute(text(
                    "INSERT INTO submissions (id, tenant_id, problem, problem_version, code,"
                    " code_sha256, queue, status, enqueued, attempt, tries, received_at,"
                    " webhook_status, webhook_attempts) VALUES (:id, 1, 'demo/layout', 'v1',"
                    " 'x = 1', :sha, 'interactive', 'done', false, 1, 1, :now, :state, 1)"),
                    {"id": sid, "sha": "0" * 64, "now": utcnow(), "state": state})
        upgrade(empty_database_url)
        with db.session() as s:
            rows = {r.id: r for r in s.scalars(select(Submission))}
    finally:
        db.dispose()
    for sid in ("unsent", "pending"):
        assert rows[sid].webhook_status == "pending"
        assert rows[sid].webhook_delivery and len(rows[sid].webhook_delivery) == 32
        assert rows[sid].webhook_due_at is not None
        assert rows[sid].webhook_due_at <= utcnow()
    assert rows["unsent"].webhook_delivery != rows["pending"].webhook_delivery
    for sid in ("delivered", "none"):
        assert (rows[sid].webhook_delivery, rows[sid].webhook_due_at) == (None, None)
    assert rows["delivered"].webhook_status == "delivered"
