"""problem sets: tenants' own problem sets, packages and their versions; rejudge reports

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 18:00:00

- ``problem_sets``: sets owned by a tenant (names unique over all tenants).
- ``packages``: a problem of a set, with the version that is live.
- ``package_versions``: every upload (its files and, once built, its test data), with
  the state of its build and verification.
- ``rejudges``, ``rejudge_items``: a rejudge and each submission's verdict before it.
- ``tenants.quotas``: a tenant's own quotas.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import service.db

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

WHEN = service.db.UTCDateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("tenants") as batch:
        batch.add_column(sa.Column("quotas", sa.JSON(), nullable=True))
    op.create_table(
        "problem_sets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=80), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_index("ix_problem_sets_tenant_id", "problem_sets", ["tenant_id"])
    op.create_table(
        "packages",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("set_id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("problem", sa.String(length=200), nullable=False),
        sa.Column("slug", sa.String(length=80), nullable=False),
        sa.Column("live_version", sa.String(length=64), nullable=True),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("updated_at", WHEN, nullable=False),
        sa.ForeignKeyConstraint(["set_id"], ["problem_sets.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("problem"),
        sa.UniqueConstraint("set_id", "slug", name="uq_package_slug"),
    )
    op.create_index("ix_packages_set_id", "packages", ["set_id"])
    op.create_index("ix_packages_tenant_id", "packages", ["tenant_id"])
    op.create_table(
        "package_versions",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("package_id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.String(length=64), nullable=False),
        sa.Column("files", sa.LargeBinary(), nullable=False),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.Column("ignored", sa.JSON(), nullable=False),
        sa.Column("publish", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("steps", sa.JSON(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("weaknesses", sa.JSON(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("enqueued", sa.Boolean(), nullable=False),
        sa.Column("worker", sa.String(length=200), nullable=True),
        sa.Column("heartbeat_at", WHEN, nullable=True),
        sa.Column("retry_at", WHEN, nullable=True),
        sa.Column("build_seconds", sa.Float(), nullable=True),
        sa.Column("uploaded_by", sa.String(length=100), nullable=False),
        sa.Column("uploaded_at", WHEN, nullable=False),
        sa.Column("started_at", WHEN, nullable=True),
        sa.Column("finished_at", WHEN, nullable=True),
        sa.ForeignKeyConstraint(["package_id"], ["packages.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("package_id", "version", name="uq_package_version"),
    )
    op.create_index("ix_package_versions_package_id", "package_versions", ["package_id"])
    op.create_index("ix_package_versions_tenant_id", "package_versions", ["tenant_id"])
    op.create_index("ix_package_versions_status", "package_versions",
                    ["status", "heartbeat_at"])
    op.create_table(
        "rejudges",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("problem", sa.String(length=200), nullable=False),
        sa.Column("version", sa.String(length=64), nullable=True),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_rejudges_tenant_id", "rejudges", ["tenant_id"])
    op.create_table(
        "rejudge_items",
        sa.Column("rejudge_id", sa.String(length=32), nullable=False),
        sa.Column("submission_id", sa.String(length=32), nullable=False),
        sa.Column("verdict", sa.String(length=40), nullable=True),
        sa.Column("score", sa.Double(), nullable=True),
        sa.Column("version", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(["rejudge_id"], ["rejudges.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["submission_id"], ["submissions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("rejudge_id", "submission_id"),
    )


def downgrade() -> None:
    op.drop_table("rejudge_items")
    op.drop_index("ix_rejudges_tenant_id", "rejudges")
    op.drop_table("rejudges")
    op.drop_index("ix_package_versions_status", "package_versions")
    op.drop_index("ix_package_versions_tenant_id", "package_versions")
    op.drop_index("ix_package_versions_package_id", "package_versions")
    op.drop_table("package_versions")
    op.drop_index("ix_packages_tenant_id", "packages")
    op.drop_index("ix_packages_set_id", "packages")
    op.drop_table("packages")
    op.drop_index("ix_problem_sets_tenant_id", "problem_sets")
    op.drop_table("problem_sets")
    with op.batch_alter_table("tenants") as batch:
        batch.drop_column("quotas")
