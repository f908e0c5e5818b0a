"""test outcomes: each stored report's tests, one row each, for class analytics

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 09:00:00

- ``test_outcomes``: one row per test of a submission's current report (its name,
  visibility, verdict, message, probe; for sample tests what it received and expected),
  written with the report from now on (:mod:`service.outcomes`). Filled here from every
  report already stored, :data:`CHUNK` submissions at a time.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

from service.outcomes import rows

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

CHUNK = 500

SUBMISSIONS = sa.table("submissions", sa.column("id", sa.String()),
                       sa.column("attempt", sa.Integer()), sa.column("status", sa.String()),
                       sa.column("report", sa.JSON()))


def upgrade() -> None:
    outcomes = op.create_table(
        "test_outcomes",
        sa.Column("submission_id", sa.String(length=32), nullable=False),
        sa.Column("position", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("visibility", sa.String(length=10), nullable=False),
        sa.Column("verdict", sa.String(length=40), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("message", sa.String(length=500), nullable=False),
        sa.Column("probe", sa.String(length=200), nullable=True),
        sa.Column("received", sa.Text(), nullable=True),
        sa.Column("expected", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("submission_id", "position"),
    )
    assert outcomes is not None
    backfill(op.get_bind(), outcomes)


def backfill(conn: sa.Connection, outcomes: sa.Table) -> None:
    """The rows of every done submission's report, paged by id."""
    last = ""
    while True:
        page = conn.execute(
            sa.select(SUBMISSIONS.c.id, SUBMISSIONS.c.attempt, SUBMISSIONS.c.report)
            .where(SUBMISSIONS.c.status == "done", SUBMISSIONS.c.id > last)
            .order_by(SUBMISSIONS.c.id).limit(CHUNK)).all()
        if not page:
            return
        found: list[dict[str, Any]] = []
        for sid, attempt, report in page:
            if isinstance(report, dict):
                found += rows(sid, attempt, report)
        if found:
            conn.execute(sa.insert(outcomes), found)
        last = page[-1][0]


def downgrade() -> None:
    op.drop_table("test_outcomes")
