"""The tables. The database is the source of truth: the queue only carries submission
ids, and anything lost there is found again here by the sweeper."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
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
    REFUSED = "refused"  # the destination is refused by the SSRF policy (tried again when
    # the allow-list changes)
    CANCELLED = "cancelled"  # a rejudge replaced the report before it was delivered


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    webhook_secret: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The tenant's own quotas on problem sets, where they differ from the settings'
    # (``jaxjudge tenants quotas``): {"sets": 3, "package_bytes": 1048576, ...}.
    quotas: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)


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
        Index("ix_submissions_assignment", "assignment_id", "student_id"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    batch_id: Mapped[str | None] = mapped_column(
        ForeignKey("batches.id", ondelete="CASCADE"), nullable=True, index=True
    )
    problem: Mapped[str] = mapped_column(String(200))
    problem_version: Mapped[str] = mapped_column(String(64))
    student_id: Mapped[str | None] = mapped_column(String(255), nullable=True, index=True)
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

    # The LMS assignment (an LTI resource link, or a course page) it was submitted to;
    # its grade goes back there. None for plain REST submissions.
    assignment_id: Mapped[str | None] = mapped_column(
        ForeignKey("assignments.id", ondelete="SET NULL"), nullable=True)

    # What was removed from a notebook to get ``code`` (judge.notebook: fixed words, cell
    # and line numbers); every report of the submission carries it. None for Python code.
    source_notes: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)

    # A sample run: graded on the problem's sample tests only, for the student's own
    # check; it counts for no attempt and no grade, and sends nothing to an LMS.
    sample_run: Mapped[bool] = mapped_column(Boolean, default=False)

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


class TestOutcome(Base):
    """One test of a submission's current report, copied out of it for class analytics
    (:mod:`service.analytics`), which groups and counts these rows in the database
    instead of reading every report. Written by :func:`service.outcomes.replace` in the
    transaction that stores the report (and deleted with it by a rejudge), so the rows
    always mirror ``submissions.report``; ``attempt`` is the grading whose report they
    copy. ``message``, ``received`` and ``expected`` are capped
    (:mod:`service.outcomes`); ``received`` and ``expected`` are kept for sample tests
    only."""

    __tablename__ = "test_outcomes"
    __test__ = False  # not a pytest test class

    submission_id: Mapped[str] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    attempt: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(200))
    visibility: Mapped[str] = mapped_column(String(10))
    verdict: Mapped[str] = mapped_column(String(40))
    passed: Mapped[bool] = mapped_column(Boolean)
    message: Mapped[str] = mapped_column(String(500))
    probe: Mapped[str | None] = mapped_column(String(200), nullable=True)
    received: Mapped[str | None] = mapped_column(Text, nullable=True)
    expected: Mapped[str | None] = mapped_column(Text, nullable=True)


class Delivery(Base):
    """The outbox: one report to send to one destination, opened in the transaction that
    stores the report (so a stored verdict always has its delivery) and sent in tries.

    ``id`` is the delivery id a receiver deduplicates on (``webhook-id``). ``attempts``
    counts the tries begun and is the fencing token of a try: a message names the try it
    is for, and only the first message for that try makes it. ``due_at`` is when the next
    try is due (the sweeper resends a try that is overdue); null once the delivery is
    over. ``kind`` is the kind of destination: ``webhook`` (the submission's callback) or
    ``lti-score`` (the grade, to the LMS line item of the submission's assignment).
    ``payload`` is what a kind fixes at its first try and sends unchanged on every retry
    (an LTI score and its timestamp), so a retried try is the same request.

    ``cause`` is why it was opened: ``report`` (with the report it carries; one per
    report and kind) or ``policy:<switch>`` (an LTI score opened when the assignment's
    grade policy changed the student's grade). A delivery that failed for good or was
    refused may be sent again (the gradebook, ``jaxjudge deliveries retry``, the sweeper
    when the allow-list that refused it changed): the same row, its id and body kept,
    with a new round of tries from ``first_try`` (the try number the round began at).
    ``refused_allow`` is the fingerprint of the allow-list a refusal happened under
    (:func:`service.outbound.allow_key`).
    """

    __tablename__ = "deliveries"
    __table_args__ = (
        UniqueConstraint("submission_id", "attempt", "kind", "cause", name="uq_delivery_report"),
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
    payload: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    cause: Mapped[str] = mapped_column(String(40), default="report")
    first_try: Mapped[int] = mapped_column(Integer, default=0)
    refused_allow: Mapped[str | None] = mapped_column(String(16), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


# LTI 1.3 and the pages: platforms, the tool's keys, courses, assignments, members.


class Policy(StrEnum):
    """Which submission's score an assignment's grade is: the best or the latest."""

    BEST = "best"
    LATEST = "latest"


class LtiPlatform(Base):
    """An LMS registered with a tenant (``jaxjudge lti platforms add`` or LTI Dynamic
    Registration): where its OIDC login, token endpoint and key set are, and the
    deployments of the tool it made. One (issuer, client id) belongs to one tenant."""

    __tablename__ = "lti_platforms"
    __table_args__ = (UniqueConstraint("issuer", "client_id", name="uq_lti_platform"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"),
                                           index=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    issuer: Mapped[str] = mapped_column(String(500))
    client_id: Mapped[str] = mapped_column(String(255))
    deployment_ids: Mapped[list[str]] = mapped_column(JSON, default=list)
    login_url: Mapped[str] = mapped_column(String(2048))  # OIDC authorization endpoint
    token_url: Mapped[str] = mapped_column(String(2048))  # OAuth2 token endpoint (AGS, NRPS)
    jwks_url: Mapped[str] = mapped_column(String(2048))  # the platform's key set
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class LtiKey(Base):
    """A key pair of the tool: it signs client assertions and deep-linking responses
    while current; after ``jaxjudge lti keys rotate`` it stays in the JWKS until
    ``expires_at``. The private key is stored encrypted with the configured secret."""

    __tablename__ = "lti_keys"

    kid: Mapped[str] = mapped_column(String(64), primary_key=True)
    private_key: Mapped[str] = mapped_column(Text)  # encrypted PEM
    public_jwk: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    retired_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class Course(Base):
    """A course of a tenant: an LTI context of a platform (``context_id`` the LMS's id),
    or, with no platform, a course made without an LMS (launch links, instructors who
    sign in with a key)."""

    __tablename__ = "courses"
    __table_args__ = (UniqueConstraint("tenant_id", "platform_id", "context_id",
                                       name="uq_course_context"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"),
                                           index=True)
    platform_id: Mapped[int | None] = mapped_column(
        ForeignKey("lti_platforms.id", ondelete="CASCADE"), nullable=True)
    context_id: Mapped[str] = mapped_column(String(255))
    title: Mapped[str] = mapped_column(String(500), default="")
    label: Mapped[str] = mapped_column(String(200), default="")
    memberships_url: Mapped[str | None] = mapped_column(String(2048), nullable=True)  # NRPS
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Assignment(Base):
    """A problem placed in a course: an LTI resource link (``resource_link_id``) or a
    course page of its own. Its grade goes to ``lineitem_url`` (AGS) when there is one."""

    __tablename__ = "assignments"
    __table_args__ = (UniqueConstraint("course_id", "resource_link_id",
                                       name="uq_assignment_link"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"),
                                           index=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"),
                                           index=True)
    resource_link_id: Mapped[str] = mapped_column(String(255))
    problem: Mapped[str] = mapped_column(String(200))
    title: Mapped[str] = mapped_column(String(500), default="")
    policy: Mapped[str] = mapped_column(String(10), default=Policy.BEST)
    lineitem_url: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    lineitems_url: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    ags_scopes: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    # The course term's rules (service.term; docs/lti.md, "Course term"). The dates are
    # UTC; ``dates_source`` says where they came from (``instructor`` or ``lms:<how>``)
    # and ``lms_dates`` the last dates the LMS sent, so a date changed there wins over
    # one set here, and one unchanged there does not undo the instructor's.
    opens_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    due_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    late_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    dates_source: Mapped[str | None] = mapped_column(String(40), nullable=True)
    lms_dates: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    late_penalty_percent_per_day: Mapped[float] = mapped_column(Float, default=0.0)
    late_score_floor_percent: Mapped[float] = mapped_column(Float, default=0.0)
    max_attempts: Mapped[int | None] = mapped_column(Integer, nullable=True)
    cooldown_seconds: Mapped[int] = mapped_column(Integer, default=0)
    hidden_results: Mapped[str] = mapped_column(String(20), default="immediately")


class Extension(Base):
    """One student's own dates for an assignment (each set one replaces the
    assignment's), granted by an instructor; seen by that student only."""

    __tablename__ = "extensions"
    __table_args__ = (UniqueConstraint("assignment_id", "student_id", name="uq_extension"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    assignment_id: Mapped[str] = mapped_column(
        ForeignKey("assignments.id", ondelete="CASCADE"), index=True)
    student_id: Mapped[str] = mapped_column(String(255))
    opens_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    due_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    late_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    granted_by: Mapped[str] = mapped_column(String(300), default="")
    granted_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ScoreOverride(Base):
    """One change of a student's grade by hand, kept for good (the audit): the score set
    (``score_given`` of ``score_maximum``; null when the override was removed, so the
    automatic grade applies again), the reason, who and when, and the grade before and
    after. A student's override in force is their latest row, when it sets a score."""

    __tablename__ = "score_overrides"
    __table_args__ = (Index("ix_score_overrides_student", "assignment_id", "student_id",
                            "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    assignment_id: Mapped[str] = mapped_column(
        ForeignKey("assignments.id", ondelete="CASCADE"))
    student_id: Mapped[str] = mapped_column(String(255))
    score_given: Mapped[float | None] = mapped_column(Float, nullable=True)
    score_maximum: Mapped[float | None] = mapped_column(Float, nullable=True)
    reason: Mapped[str] = mapped_column(String(500), default="")
    actor: Mapped[str] = mapped_column(String(300), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The grade before and after ({"given", "maximum"}; null: none).
    before: Mapped[dict[str, float] | None] = mapped_column(JSON, nullable=True)
    after: Mapped[dict[str, float] | None] = mapped_column(JSON, nullable=True)


class Member(Base):
    """A person of a course, as a launch or the roster (NRPS) told: ``user_id`` is the
    LTI ``sub`` (or the student id of a launch link), ``roles`` the LTI role URIs."""

    __tablename__ = "members"
    __table_args__ = (UniqueConstraint("course_id", "user_id", name="uq_member"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"),
                                           index=True)
    user_id: Mapped[str] = mapped_column(String(255))
    name: Mapped[str] = mapped_column(String(300), default="")
    email: Mapped[str] = mapped_column(String(300), default="")
    roles: Mapped[list[str]] = mapped_column(JSON, default=list)
    status: Mapped[str] = mapped_column(String(20), default="Active")
    launched_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    synced_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class LtiScoreClock(Base):
    """The timestamp of the last score sent to an assignment's line item for a student:
    the next one is strictly later (Moodle answers 409 to one that is not)."""

    __tablename__ = "lti_score_clocks"

    assignment_id: Mapped[str] = mapped_column(
        ForeignKey("assignments.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    last_timestamp: Mapped[datetime] = mapped_column(UTCDateTime)


# Problem sets of a tenant: packages uploaded by its instructors, built and verified in
# the sandbox, each upload an immutable version.


class BuildStatus(StrEnum):
    QUEUED = "queued"  # waiting for a worker (or for the sandbox to come back)
    BUILDING = "building"
    READY = "ready"  # built and verified: may go live
    FAILED = "failed"  # a check failed; ``error`` and ``steps`` say which and why


class ProblemSet(Base):
    """A set of problems owned by a tenant. Its ``name`` is unique over every tenant and
    never one of the server's own sets, so an id ``<set>/<slug>`` names one package."""

    __tablename__ = "problem_sets"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"),
                                           index=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)
    title: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Package(Base):
    """A problem of a tenant's set: its versions, and the one students are graded on."""

    __tablename__ = "packages"
    __table_args__ = (UniqueConstraint("set_id", "slug", name="uq_package_slug"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    set_id: Mapped[int] = mapped_column(ForeignKey("problem_sets.id", ondelete="CASCADE"),
                                        index=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"),
                                           index=True)
    problem: Mapped[str] = mapped_column(String(200), unique=True)  # "<set>/<slug>"
    slug: Mapped[str] = mapped_column(String(80))
    live_version: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class PackageVersion(Base):
    """One upload of a package, immutable: ``version`` is the hash of its files, which
    are kept (a normalized zip) with the test data its build made, so that submissions
    graded against it can be read and graded again for as long as they exist.

    The build is claimed like a grading: ``attempt`` is its fencing token and
    ``heartbeat_at`` shows a worker still at it. ``steps`` are the checks done so far
    (each ``{subject, expected, got, ok}``), ``total`` how many there are to do."""

    __tablename__ = "package_versions"
    __table_args__ = (
        UniqueConstraint("package_id", "version", name="uq_package_version"),
        Index("ix_package_versions_status", "status", "heartbeat_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    package_id: Mapped[int] = mapped_column(ForeignKey("packages.id", ondelete="CASCADE"),
                                            index=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"),
                                           index=True)
    version: Mapped[str] = mapped_column(String(64))
    files: Mapped[bytes] = mapped_column(LargeBinary)
    size_bytes: Mapped[int] = mapped_column(Integer)
    ignored: Mapped[list[str]] = mapped_column(JSON, default=list)  # files left out (data/)
    publish: Mapped[bool] = mapped_column(Boolean, default=False)  # live once ready
    status: Mapped[str] = mapped_column(String(20), default=BuildStatus.QUEUED)
    steps: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    total: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    weaknesses: Mapped[list[str]] = mapped_column(JSON, default=list)
    data: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)  # zip of data/
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    failures: Mapped[int] = mapped_column(Integer, default=0)  # sandbox unavailable
    enqueued: Mapped[bool] = mapped_column(Boolean, default=False)
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    retry_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    build_seconds: Mapped[float | None] = mapped_column(Float, nullable=True)
    uploaded_by: Mapped[str] = mapped_column(String(100), default="")
    uploaded_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class Rejudge(Base):
    """A rejudge of a problem's submissions, kept with each submission's verdict before
    it so that the report can say which verdicts changed."""

    __tablename__ = "rejudges"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"),
                                           index=True)
    problem: Mapped[str] = mapped_column(String(200))
    version: Mapped[str | None] = mapped_column(String(64), nullable=True)  # graded against
    total: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class RejudgeItem(Base):
    __tablename__ = "rejudge_items"

    rejudge_id: Mapped[str] = mapped_column(ForeignKey("rejudges.id", ondelete="CASCADE"),
                                            primary_key=True)
    submission_id: Mapped[str] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), primary_key=True)
    verdict: Mapped[str | None] = mapped_column(String(40), nullable=True)  # before
    score: Mapped[float | None] = mapped_column(nullable=True)
    version: Mapped[str | None] = mapped_column(String(64), nullable=True)
