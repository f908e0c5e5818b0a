"""webhook tries: the delivery id and when the next try is due

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 16:45:00

A retry that a worker holds for its countdown is lost for hours when the broker
connection drops (kombu puts it back only after the visibility timeout); with the
delivery id and the due time in the database, the sweeper resends it once it is overdue.

Deliveries still open from before (``unsent``, or ``pending`` with a message in the old
format) become ``pending`` under a new delivery id and due now, so the sweeper sends
their next try: the code after this revision knows no other open state.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

import service.db

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("webhook_delivery", sa.String(length=32), nullable=True))
        batch.add_column(sa.Column("webhook_due_at", service.db.UTCDateTime(timezone=True),
                                   nullable=True))
    submissions = sa.table(
        "submissions", sa.column("id", sa.String), sa.column("webhook_status", sa.String),
        sa.column("webhook_delivery", sa.String),
        sa.column("webhook_due_at", service.db.UTCDateTime(timezone=True)))
    bind = op.get_bind()
    now = datetime.now(UTC)
    open_ids = bind.execute(sa.select(submissions.c.id).where(
        submissions.c.webhook_status.in_(("pending", "unsent")))).scalars().all()
    for sid in open_ids:
        bind.execute(submissions.update().where(submissions.c.id == sid).values(
            webhook_status="pending", webhook_delivery=uuid.uuid4().hex, webhook_due_at=now))


def downgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("webhook_due_at")
        batch.drop_column("webhook_delivery")
