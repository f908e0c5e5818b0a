"""lti: platforms, the tool's keys, courses, assignments, members, score clocks

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 12:00:00

- ``lti_platforms``: LMSs registered with a tenant; ``lti_keys``: the tool's key pairs
  (the private key encrypted with the configured secret).
- ``courses``, ``assignments``, ``members``: what launches (and the roster) told.
- ``lti_score_clocks``: the last score timestamp sent per assignment and student.
- ``submissions.assignment_id``: the assignment a submission was made to.
- ``submissions.source_notes``: what was removed from a notebook to get its code.
- ``deliveries.payload``: what a delivery fixes at its first try (an LTI score).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import service.db

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

WHEN = service.db.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "lti_platforms",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("issuer", sa.String(length=500), nullable=False),
        sa.Column("client_id", sa.String(length=255), nullable=False),
        sa.Column("deployment_ids", sa.JSON(), nullable=False),
        sa.Column("login_url", sa.String(length=2048), nullable=False),
        sa.Column("token_url", sa.String(length=2048), nullable=False),
        sa.Column("jwks_url", sa.String(length=2048), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("issuer", "client_id", name="uq_lti_platform"),
    )
    op.create_index("ix_lti_platforms_tenant_id", "lti_platforms", ["tenant_id"])
    op.create_table(
        "lti_keys",
        sa.Column("kid", sa.String(length=64), nullable=False),
        sa.Column("private_key", sa.Text(), nullable=False),
        sa.Column("public_jwk", sa.JSON(), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("retired_at", WHEN, nullable=True),
        sa.Column("expires_at", WHEN, nullable=True),
        sa.PrimaryKeyConstraint("kid"),
    )
    op.create_table(
        "courses",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("platform_id", sa.Integer(), nullable=True),
        sa.Column("context_id", sa.String(length=255), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=False),
        sa.Column("memberships_url", sa.String(length=2048), nullable=True),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("updated_at", WHEN, nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["platform_id"], ["lti_platforms.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant_id", "platform_id", "context_id", name="uq_course_context"),
    )
    op.create_index("ix_courses_tenant_id", "courses", ["tenant_id"])
    op.create_table(
        "assignments",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("course_id", sa.Integer(), nullable=False),
        sa.Column("resource_link_id", sa.String(length=255), nullable=False),
        sa.Column("problem", sa.String(length=200), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("policy", sa.String(length=10), nullable=False),
        sa.Column("lineitem_url", sa.String(length=2048), nullable=True),
        sa.Column("lineitems_url", sa.String(length=2048), nullable=True),
        sa.Column("ags_scopes", sa.JSON(), nullable=True),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("updated_at", WHEN, nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["course_id"], ["courses.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("course_id", "resource_link_id", name="uq_assignment_link"),
    )
    op.create_index("ix_assignments_tenant_id", "assignments", ["tenant_id"])
    op.create_index("ix_assignments_course_id", "assignments", ["course_id"])
    op.create_table(
        "members",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("course_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=300), nullable=False),
        sa.Column("email", sa.String(length=300), nullable=False),
        sa.Column("roles", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("launched_at", WHEN, nullable=True),
        sa.Column("synced_at", WHEN, nullable=True),
        sa.ForeignKeyConstraint(["course_id"], ["courses.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("course_id", "user_id", name="uq_member"),
    )
    op.create_index("ix_members_course_id", "members", ["course_id"])
    op.create_table(
        "lti_score_clocks",
        sa.Column("assignment_id", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=255), nullable=False),
        sa.Column("last_timestamp", WHEN, nullable=False),
        sa.ForeignKeyConstraint(["assignment_id"], ["assignments.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("assignment_id", "user_id"),
    )
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("assignment_id", sa.String(length=32), nullable=True))
        # An LTI user id (``sub``) may be 255 characters.
        batch.alter_column("student_id", existing_type=sa.String(length=128),
                           type_=sa.String(length=255), existing_nullable=True)
        batch.create_foreign_key("fk_submissions_assignment_id", "assignments",
                                 ["assignment_id"], ["id"], ondelete="SET NULL")
        batch.create_index("ix_submissions_assignment", ["assignment_id", "student_id"])
        batch.add_column(sa.Column("source_notes", sa.JSON(), nullable=True))
    with op.batch_alter_table("deliveries") as batch:
        batch.add_column(sa.Column("payload", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_column("payload")
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("source_notes")
        batch.drop_index("ix_submissions_assignment")
        batch.drop_constraint("fk_submissions_assignment_id", type_="foreignkey")
        batch.drop_column("assignment_id")
        batch.alter_column("student_id", existing_type=sa.String(length=255),
                           type_=sa.String(length=128), existing_nullable=True)
    op.drop_table("lti_score_clocks")
    op.drop_index("ix_members_course_id", "members")
    op.drop_table("members")
    op.drop_index("ix_assignments_course_id", "assignments")
    op.drop_index("ix_assignments_tenant_id", "assignments")
    op.drop_table("assignments")
    op.drop_index("ix_courses_tenant_id", "courses")
    op.drop_table("courses")
    op.drop_table("lti_keys")
    op.drop_index("ix_lti_platforms_tenant_id", "lti_platforms")
    op.drop_table("lti_platforms")
