"""deliveries: the outbox table; sandbox retries; Standard Webhooks secrets

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 09:00:00

- ``deliveries`` takes over the five ``webhook_*`` columns of ``submissions``: a delivery
  is opened in the transaction that stores the report, and every try is keyed by its
  delivery id. Each submission's delivery (open or over) moves to a row of its own for
  the submission's current attempt, keeping its delivery id, so a message for it still
  in the broker finds it; then the columns are dropped.
- ``submissions.failures`` and ``submissions.retry_at``: gradings whose sandbox was
  unavailable, and when the submission may be graded again.
- ``gradings.error``: why a grading failed.
- Tenant secrets take the Standard Webhooks form ``whsec_<base64 of the key>``. The key
  itself is unchanged: the old secret's text, as bytes, was the HMAC key, and it still is.
"""

from __future__ import annotations

import base64
import uuid
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

import service.db

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

PREFIX = "whsec_"
WHEN = service.db.UTCDateTime(timezone=True)


def _tables() -> tuple[sa.TableClause, sa.TableClause, sa.TableClause]:
    submissions = sa.table(
        "submissions", sa.column("id", sa.String), sa.column("tenant_id", sa.Integer),
        sa.column("attempt", sa.Integer), sa.column("status", sa.String),
        sa.column("callback_url", sa.String), sa.column("webhook_status", sa.String),
        sa.column("webhook_attempts", sa.Integer), sa.column("webhook_error", sa.String),
        sa.column("webhook_delivery", sa.String), sa.column("webhook_due_at", WHEN))
    deliveries = sa.table(
        "deliveries", sa.column("id", sa.String), sa.column("kind", sa.String),
        sa.column("submission_id", sa.String), sa.column("attempt", sa.Integer),
        sa.column("tenant_id", sa.Integer), sa.column("url", sa.String),
        sa.column("status", sa.String), sa.column("attempts", sa.Integer),
        sa.column("due_at", WHEN), sa.column("last_error", sa.String),
        sa.column("created_at", WHEN), sa.column("updated_at", WHEN))
    tenants = sa.table("tenants", sa.column("id", sa.Integer),
                       sa.column("webhook_secret", sa.String))
    return submissions, deliveries, tenants


def upgrade() -> None:
    op.create_table(
        "deliveries",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("submission_id", sa.String(length=32), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("due_at", WHEN, nullable=True),
        sa.Column("last_error", sa.String(length=500), nullable=True),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("updated_at", WHEN, nullable=False),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("submission_id", "attempt", "kind", name="uq_delivery_report"),
    )
    op.create_index("ix_deliveries_due", "deliveries", ["status", "due_at"])
    op.create_index("ix_deliveries_submission_id", "deliveries", ["submission_id"])
    with op.batch_alter_table("gradings") as batch:
        batch.add_column(sa.Column("error", sa.String(length=500), nullable=True))

    submissions, deliveries, tenants = _tables()
    bind = op.get_bind()
    now = datetime.now(UTC)
    rows = bind.execute(sa.select(submissions).where(
        submissions.c.webhook_status.is_not(None), submissions.c.callback_url.is_not(None),
        submissions.c.status == "done")).all()
    for row in rows:
        still_open = row.webhook_status == "pending"
        bind.execute(deliveries.insert().values(
            id=row.webhook_delivery or uuid.uuid4().hex, kind="webhook",
            submission_id=row.id, attempt=row.attempt, tenant_id=row.tenant_id,
            url=row.callback_url, status=row.webhook_status, attempts=row.webhook_attempts,
            due_at=(row.webhook_due_at or now) if still_open else None,
            last_error=row.webhook_error, created_at=now, updated_at=now))
    for tenant_id, secret in bind.execute(sa.select(tenants.c.id, tenants.c.webhook_secret)):
        if not secret.startswith(PREFIX):
            bind.execute(tenants.update().where(tenants.c.id == tenant_id).values(
                webhook_secret=PREFIX + base64.b64encode(secret.encode()).decode()))

    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("failures", sa.Integer(), nullable=False,
                                   server_default="0"))
        batch.add_column(sa.Column("retry_at", WHEN, nullable=True))
        for column in ("webhook_status", "webhook_attempts", "webhook_error",
                       "webhook_delivery", "webhook_due_at"):
            batch.drop_column(column)
    with op.batch_alter_table("submissions") as batch:
        batch.alter_column("failures", server_default=None)


def downgrade() -> None:
    """Back to the columns: each submission's delivery for its current attempt. Secrets
    go back to their old text when they were converted, else to the hex of the key."""
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("webhook_status", sa.String(length=20), nullable=True))
        batch.add_column(sa.Column("webhook_attempts", sa.Integer(), nullable=False,
                                   server_default="0"))
        batch.add_column(sa.Column("webhook_error", sa.String(length=500), nullable=True))
        batch.add_column(sa.Column("webhook_delivery", sa.String(length=32), nullable=True))
        batch.add_column(sa.Column("webhook_due_at", WHEN, nullable=True))
    submissions, deliveries, tenants = _tables()
    bind = op.get_bind()
    for d in bind.execute(sa.select(deliveries).where(deliveries.c.kind == "webhook")).all():
        bind.execute(submissions.update().where(
            submissions.c.id == d.submission_id, submissions.c.attempt == d.attempt).values(
            webhook_status=d.status, webhook_attempts=d.attempts, webhook_error=d.last_error,
            webhook_delivery=d.id if d.status == "pending" else None, webhook_due_at=d.due_at))
    for tenant_id, secret in bind.execute(sa.select(tenants.c.id, tenants.c.webhook_secret)):
        if secret.startswith(PREFIX):
            key = base64.b64decode(secret[len(PREFIX):])
            try:
                old = key.decode("ascii")
            except UnicodeDecodeError:
                old = key.hex()
            bind.execute(tenants.update().where(tenants.c.id == tenant_id).values(
                webhook_secret=old))
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("retry_at")
        batch.drop_column("failures")
    with op.batch_alter_table("gradings") as batch:
        batch.drop_column("error")
    op.drop_table("deliveries")
