"""course term: an assignment's dates and rules, extensions, score overrides, sample runs

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27 10:30:00

- ``assignments``: ``opens_at``, ``due_at``, ``late_until`` (UTC), where the dates came
  from (``dates_source``) and the last dates the LMS sent (``lms_dates``), the late
  penalty per day and its floor, ``max_attempts``, ``cooldown_seconds`` and
  ``hidden_results``. Existing assignments get no dates and no limits: nothing changes
  for them until an instructor sets a rule.
- ``extensions``: a student's own dates for an assignment.
- ``score_overrides``: every change of a grade by hand (the audit; the latest row of a
  student is the override in force when it sets a score).
- ``submissions.sample_run``: a run on the sample tests only, counting for nothing.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import service.db

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

WHEN = service.db.UTCDateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("assignments") as batch:
        batch.add_column(sa.Column("opens_at", WHEN, nullable=True))
        batch.add_column(sa.Column("due_at", WHEN, nullable=True))
        batch.add_column(sa.Column("late_until", WHEN, nullable=True))
        batch.add_column(sa.Column("dates_source", sa.String(length=40), nullable=True))
        batch.add_column(sa.Column("lms_dates", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("late_penalty_percent_per_day", sa.Float(),
                                   nullable=False, server_default="0"))
        batch.add_column(sa.Column("late_score_floor_percent", sa.Float(), nullable=False,
                                   server_default="0"))
        batch.add_column(sa.Column("max_attempts", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("cooldown_seconds", sa.Integer(), nullable=False,
                                   server_default="0"))
        batch.add_column(sa.Column("hidden_results", sa.String(length=20), nullable=False,
                                   server_default="immediately"))
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("sample_run", sa.Boolean(), nullable=False,
                                   server_default=sa.false()))
    op.create_table(
        "extensions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("assignment_id", sa.String(length=32), nullable=False),
        sa.Column("student_id", sa.String(length=255), nullable=False),
        sa.Column("opens_at", WHEN, nullable=True),
        sa.Column("due_at", WHEN, nullable=True),
        sa.Column("late_until", WHEN, nullable=True),
        sa.Column("granted_by", sa.String(length=300), nullable=False),
        sa.Column("granted_at", WHEN, nullable=False),
        sa.ForeignKeyConstraint(["assignment_id"], ["assignments.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("assignment_id", "student_id", name="uq_extension"),
    )
    op.create_index("ix_extensions_assignment_id", "extensions", ["assignment_id"])
    op.create_table(
        "score_overrides",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("assignment_id", sa.String(length=32), nullable=False),
        sa.Column("student_id", sa.String(length=255), nullable=False),
        sa.Column("score_given", sa.Float(), nullable=True),
        sa.Column("score_maximum", sa.Float(), nullable=True),
        sa.Column("reason", sa.String(length=500), nullable=False),
        sa.Column("actor", sa.String(length=300), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("before", sa.JSON(), nullable=True),
        sa.Column("after", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(["assignment_id"], ["assignments.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_score_overrides_student", "score_overrides",
                    ["assignment_id", "student_id", "id"])
    with op.batch_alter_table("assignments") as batch:
        for column in ("late_penalty_percent_per_day", "late_score_floor_percent",
                       "cooldown_seconds", "hidden_results"):
            batch.alter_column(column, server_default=None)
    with op.batch_alter_table("submissions") as batch:
        batch.alter_column("sample_run", server_default=None)


def downgrade() -> None:
    """Sample runs go (they were never grades); the rules, extensions and overrides go
    with their columns and tables."""
    op.execute(sa.text("DELETE FROM submissions WHERE sample_run"))
    op.drop_index("ix_score_overrides_student", table_name="score_overrides")
    op.drop_table("score_overrides")
    op.drop_index("ix_extensions_assignment_id", table_name="extensions")
    op.drop_table("extensions")
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("sample_run")
    with op.batch_alter_table("assignments") as batch:
        for column in ("hidden_results", "cooldown_seconds", "max_attempts",
                       "late_score_floor_percent", "late_penalty_percent_per_day",
                       "lms_dates", "dates_source", "late_until", "due_at", "opens_at"):
            batch.drop_column(column)
