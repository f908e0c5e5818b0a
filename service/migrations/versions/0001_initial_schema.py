"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-21 14:28:37.901975
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import service.db

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tenants",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("webhook_secret", sa.String(length=100), nullable=False),
        sa.Column("created_at", service.db.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("prefix", sa.String(length=20), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("created_at", service.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", service.db.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key_hash"),
        sa.UniqueConstraint("prefix"),
    )
    op.create_table(
        "batches",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("problem", sa.String(length=200), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("created_at", service.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("batches", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_batches_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "submissions",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("batch_id", sa.String(length=32), nullable=True),
        sa.Column("problem", sa.String(length=200), nullable=False),
        sa.Column("problem_version", sa.String(length=64), nullable=False),
        sa.Column("student_id", sa.String(length=128), nullable=True),
        sa.Column("code", sa.Text(), nullable=False),
        sa.Column("code_sha256", sa.String(length=64), nullable=False),
        sa.Column("callback_url", sa.String(length=2048), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=True),
        sa.Column("idempotency_key", sa.String(length=255), nullable=True),
        sa.Column("request_hash", sa.String(length=64), nullable=True),
        sa.Column("queue", sa.String(length=20), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("enqueued", sa.Boolean(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("tries", sa.Integer(), nullable=False),
        sa.Column("worker", sa.String(length=200), nullable=True),
        sa.Column("heartbeat_at", service.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("verdict", sa.String(length=40), nullable=True),
        sa.Column("score", sa.Double(), nullable=True),
        sa.Column("max_score", sa.Double(), nullable=True),
        sa.Column("report", sa.JSON(), nullable=True),
        sa.Column("received_at", service.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("queued_at", service.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("started_at", service.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("finished_at", service.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("webhook_status", sa.String(length=20), nullable=True),
        sa.Column("webhook_attempts", sa.Integer(), nullable=False),
        sa.Column("webhook_error", sa.String(length=500), nullable=True),
        sa.ForeignKeyConstraint(["batch_id"], ["batches.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant_id", "idempotency_key", name="uq_submission_idempotency"),
    )
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_submissions_batch_id"), ["batch_id"], unique=False)
        batch_op.create_index("ix_submissions_problem", ["tenant_id", "problem"], unique=False)
        batch_op.create_index("ix_submissions_status", ["status", "enqueued"], unique=False)
        batch_op.create_index(batch_op.f("ix_submissions_student_id"), ["student_id"], unique=False)
        batch_op.create_index(
            "ix_submissions_tenant_received", ["tenant_id", "received_at", "id"], unique=False
        )

    op.create_table(
        "gradings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.String(length=32), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("worker", sa.String(length=200), nullable=False),
        sa.Column("started_at", service.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("finished_at", service.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("outcome", sa.String(length=20), nullable=True),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("submission_id", "attempt", name="uq_grading_attempt"),
    )
    with op.batch_alter_table("gradings", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_gradings_submission_id"), ["submission_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("gradings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_gradings_submission_id"))

    op.drop_table("gradings")
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_index("ix_submissions_tenant_received")
        batch_op.drop_index(batch_op.f("ix_submissions_student_id"))
        batch_op.drop_index("ix_submissions_status")
        batch_op.drop_index("ix_submissions_problem")
        batch_op.drop_index(batch_op.f("ix_submissions_batch_id"))

    op.drop_table("submissions")
    with op.batch_alter_table("batches", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_batches_tenant_id"))

    op.drop_table("batches")
    op.drop_table("api_keys")
    op.drop_table("tenants")
