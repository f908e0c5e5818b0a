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


class DeliveryStatus(StrEnum):
    PENDING = "pending"  # tries to come (or one in flight)
    DELIVERED = "delivered"
    FAILED = "failed"  # the receiver kept failing, or answered a final 4xx/3xx
    REFUSED = "refused"  # the destination is refused by the SSRF policy
    CANCELLED = "cancelled"  # a rejudge replaced the report before it was delivered


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

    # Gradings whose sandbox was unavailable since the submission was last queued anew,
    # and when it may be graded again (the sweeper publishes it then, not before).
    failures: Mapped[int] = mapped_column(Integer, default=0)
    retry_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)

    # The webhook delivery of the report stored by the current attempt, if any.
    delivery: Mapped[Delivery | None] = relationship(
        primaryjoin="and_(Submission.id == foreign(Delivery.submission_id), "
        "Submission.attempt == foreign(Delivery.attempt), Delivery.kind == 'webhook')",
        viewonly=True, lazy="joined", uselist=False)


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
    error: Mapped[str | None] = mapped_column(String(500), nullable=True)  # why it failed


class Delivery(Base):
    """The outbox: one report to send to one destination, opened in the transaction that
    stores the report (so a stored verdict always has its delivery) and sent in tries.

    ``id`` is the delivery id a receiver deduplicates on (``webhook-id``). ``attempts``
    counts the tries begun and is the fencing token of a try: a message names the try it
    is for, and only the first message for that try makes it. ``due_at`` is when the next
    try is due (the sweeper resends a try that is overdue); null once the delivery is
    over. ``kind`` is the kind of destination (``webhook``; LMS grade passback later).
    """

    __tablename__ = "deliveries"
    __table_args__ = (
        UniqueConstraint("submission_id", "attempt", "kind", name="uq_delivery_report"),
        Index("ix_deliveries_due", "status", "due_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    kind: Mapped[str] = mapped_column(String(20))
    submission_id: Mapped[str] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    attempt: Mapped[int] = mapped_column(Integer)  # the grading whose report it carries
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    url: Mapped[str] = mapped_column(String(2048))
    status: Mapped[str] = mapped_column(String(20))  # DeliveryStatus
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    due_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    last_error: Mapped[str | None] = mapped_column(String(500), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
