"""The tables. The database is the source of truth: the queue only carries submission
ids, and anything lost there is found again here by the sweeper."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from service.db import UTCDateTime, utcnow


class Base(DeclarativeBase):
    pass


class Role(StrEnum):
    """``client``: submit and read its tenant's submissions (an LMS integration).
    ``instructor``: also batches and rejudging. ``admin``: also the tenant's settings
    (webhook secret)."""

    CLIENT = "client"
    INSTRUCTOR = "instructor"
    ADMIN = "admin"


ROLE_RANK = {Role.CLIENT: 0, Role.INSTRUCTOR: 1, Role.ADMIN: 2}


class Status(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    webhook_secret: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    role: Mapped[str] = mapped_column(String(20))
    prefix: Mapped[str] = mapped_column(String(20), unique=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(100), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)

    tenant: Mapped[Tenant] = relationship(lazy="joined")


class Batch(Base):
    __tablename__ = "batches"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"),
                                           index=True)
    problem: Mapped[str] = mapped_column(String(200))
    name: Mapped[str] = mapped_column(String(200), default="")
    total: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Submission(Base):
    __tablename__ = "submissions"
    __table_args__ = (
        UniqueConstraint("tenant_id", "idempotency_key", name="uq_submission_idempotency"),
        Index("ix_submissions_tenant_received", "tenant_id", "received_at", "id"),
        Index("ix_submissions_status", "status", "enqueued"),
        Index("ix_submissions_problem", "tenant_id", "problem"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    batch_id: Mapped[str | None] = mapped_column(
        ForeignKey("batches.id", ondelete="CASCADE"), nullable=True, index=True
    )
    problem: Mapped[str] = mapped_column(String(200))
    problem_version: Mapped[str] = mapped_column(String(64))
    student_id: Mapped[str | None] = mapped_column(String(128), nullable=True, index=True)
    code: Mapped[str] = mapped_column(Text)
    code_sha256: Mapped[str] = mapped_column(String(64))
    callback_url: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    meta: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSON, nullable=True)
    idempotency_key: Mapped[str | None] = mapped_column(String(255), nullable=True)
    request_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    queue: Mapped[str] = mapped_column(String(20))

    status: Mapped[str] = mapped_column(String(20), default=Status.QUEUED)
    enqueued: Mapped[bool] = mapped_column(Boolean, default=False)
    attempt: Mapped[int] = mapped_column(Integer, default=0)  # fencing token, only grows
    tries: Mapped[int] = mapped_column(Integer, default=0)  # gradings since last queued anew
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)

    verdict: Mapped[str | None] = mapped_column(String(40), nullable=True)
    score: Mapped[float | None] = mapped_column(nullable=True)
    max_score: Mapped[float | None] = mapped_column(nullable=True)
    report: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)

    received_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    queued_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)

    webhook_status: Mapped[str | None] = mapped_column(String(20), nullable=True)
    webhook_attempts: Mapped[int] = mapped_column(Integer, default=0)
    webhook_error: Mapped[str | None] = mapped_column(String(500), nullable=True)
    webhook_delivery: Mapped[str | None] = mapped_column(String(32), nullable=True)
    webhook_due_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class Grading(Base):
    """One attempt at grading a submission: who took it and how it ended (``stored``,
    ``lost`` when its worker vanished, ``superseded`` when a rejudge overtook it)."""

    __tablename__ = "gradings"
    __table_args__ = (UniqueConstraint("submission_id", "attempt", name="uq_grading_attempt"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[str] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), index=True
    )
    attempt: Mapped[int] = mapped_column(Integer)
    worker: Mapped[str] = mapped_column(String(200))
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    outcome: Mapped[str | None] = mapped_column(String(20), nullable=True)
