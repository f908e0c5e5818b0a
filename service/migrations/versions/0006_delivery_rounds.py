"""delivery rounds: deliveries sent again, and LTI scores opened by a policy switch

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24 09:00:00

- ``deliveries.cause``: why a delivery was opened, ``report`` (every existing row: with
  the report it carries) or ``policy:<switch>`` (an LTI score opened when an
  assignment's grade policy changed a student's grade). The uniqueness of a delivery
  per report and kind becomes per report, kind and cause, so a policy switch may open a
  score on a submission that already has one.
- ``deliveries.first_try``: the try number the delivery's current round of tries began
  at (0 until it is sent again: a new round has the full number of tries and backoff).
- ``deliveries.refused_allow``: the fingerprint of the allow-list a refusal happened
  under; null for the refusals made before this revision, so each of those is tried
  once more under the allow-list the sweeper runs with.
- LTI scores that the address policy refused at the platform's token endpoint ended
  ``failed`` before (their error ``token endpoint: refused: ...``); they become
  ``refused``, so they too go by themselves once the allow-list lets the LMS through.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

TOKEN_REFUSED = ("kind = 'lti-score' AND status = 'failed' "
                 "AND last_error LIKE 'token endpoint: refused:%'")


def upgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        batch.add_column(sa.Column("cause", sa.String(length=40), nullable=False,
                                   server_default="report"))
        batch.add_column(sa.Column("first_try", sa.Integer(), nullable=False,
                                   server_default="0"))
        batch.add_column(sa.Column("refused_allow", sa.String(length=16), nullable=True))
        batch.drop_constraint("uq_delivery_report", type_="unique")
        batch.create_unique_constraint("uq_delivery_report",
                                       ["submission_id", "attempt", "kind", "cause"])
    with op.batch_alter_table("deliveries") as batch:
        batch.alter_column("cause", server_default=None)
        batch.alter_column("first_try", server_default=None)
    op.execute(sa.text(f"UPDATE deliveries SET status = 'refused' WHERE {TOKEN_REFUSED}"))


def downgrade() -> None:
    """Scores opened by policy switches go (their grades were sent or are lost with
    them); the rest keep their rows."""
    op.execute(sa.text("DELETE FROM deliveries WHERE cause <> 'report'"))
    op.execute(sa.text("UPDATE deliveries SET status = 'failed' WHERE kind = 'lti-score' "
                       "AND status = 'refused' AND last_error LIKE 'token endpoint: refused:%'"))
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_constraint("uq_delivery_report", type_="unique")
        batch.create_unique_constraint("uq_delivery_report",
                                       ["submission_id", "attempt", "kind"])
        batch.drop_column("refused_allow")
        batch.drop_column("first_try")
        batch.drop_column("cause")
