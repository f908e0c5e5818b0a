"""Taking submissions in: the checks, the idempotent insert and the dispatch that the
REST API (``POST /v1/submissions``, ``POST /v1/batches``) and the pages (the student
page's submit, the instructor's class upload) share. A submission is stored before it
is queued; when the broker cannot be reached it stays ``queued`` for the sweeper.

A refusal is :class:`Refused` (an HTTP status, a title and a one-line detail), or the
core's :class:`~judge.errors.UsageError` for code the core refuses (not UTF-8, empty,
NUL bytes): each adapter shows it its own way (problem+json, an error on the page).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from celery import Celery
from redis import Redis
from redis.exceptions import RedisError
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, defer

from judge.errors import SubmissionRejected
from judge.intake import Source, decode_code
from judge.notebook import read_notebook
from judge.settings import Settings
from service import logcontext
from service.batchzip import read_batch_zip
from service.db import Database, utcnow
from service.library import Library, ProblemUnavailable
from service.metrics import count_received
from service.models import Batch, Status, Submission
from service.outbound import WebhookRefused, check_url
from service.queue import BATCH, INTERACTIVE
from service.settings import ServiceSettings
from service.submissions import code_digest, dispatch, new_id
from service.wire import BatchCreate, BatchEntry, BatchMember, BatchOut

log = logging.getLogger(__name__)
# What an answer never shows is never read: the code (up to 256 KiB) of any submission.
WITHOUT_CODE = defer(Submission.code, raiseload=True)


class Refused(Exception):
    """A submission (or batch) refused: the HTTP status an adapter answers with, a short
    title and a one-line detail for the person who sent it."""

    def __init__(self, status: int, title: str, detail: str,
                 headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.status, self.title, self.detail = status, title, detail
        self.headers = headers or {}
        self.extra = extra  # more members of the problem details (RFC 9457)


class Intake(Protocol):
    """What taking a submission in needs (the API's ``Services`` is one)."""

    @property
    def settings(self) -> ServiceSettings: ...
    @property
    def judge(self) -> Settings: ...
    @property
    def db(self) -> Database: ...
    @property
    def library(self) -> Library: ...
    @property
    def celery(self) -> Celery: ...
    @property
    def redis(self) -> Redis: ...


@dataclass(frozen=True)
class NewSubmission:
    """What a caller asks to grade; ``fingerprint`` identifies the request for its
    ``idempotency_key`` (the same key with another fingerprint is refused)."""

    tenant_id: int
    problem: str
    code: str
    source_notes: tuple[str, ...] = ()  # what was removed from a notebook to get ``code``
    student_id: str | None = None
    callback_url: str | None = None
    metadata: dict[str, Any] | None = None
    idempotency_key: str | None = None
    fingerprint: str | None = None
    assignment_id: str | None = None
    queue: str = INTERACTIVE
    sample_run: bool = False  # the sample tests only: no attempt, no grade
    received_at: datetime | None = None  # default: now (a term's gate passes its clock's)


def fingerprint(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def checked_code(intake: Intake, code: str) -> str:
    """The size cap (413), then the core's own checks (UTF-8, empty, NUL bytes:
    :class:`UsageError`, 422)."""
    data = code.encode("utf-8", "surrogatepass")
    limit = intake.judge.max_code_bytes
    if len(data) > limit:
        raise Refused(413, "Content too large",
                      f"the code is {len(data)} bytes; the limit is {limit} bytes")
    return decode_code(data, intake.judge, noun="the code")


def checked_source(intake: Intake, code: str | None,
                   notebook: dict[str, Any] | str | None) -> Source:
    """What to grade: ``code`` (:func:`checked_code`), or a notebook's code cells with
    notes on what was removed (:mod:`judge.notebook`; the notebook as a JSON object or as
    its text). A notebook over the notebook limit is refused 413; one that is not a
    notebook, or whose code is refused, is a :class:`UsageError` (422)."""
    if notebook is None:
        return Source(checked_code(intake, code or ""))
    text = notebook if isinstance(notebook, str) else json.dumps(notebook, ensure_ascii=False)
    data = text.encode("utf-8", "surrogatepass")
    limit = intake.judge.max_notebook_bytes
    if len(data) > limit:
        raise Refused(413, "Content too large",
                      f"the notebook is {len(data)} bytes; the limit is {limit} bytes")
    return read_notebook(data, intake.judge)


def checked_callback(intake: Intake, url: str | None) -> str | None:
    if url is None:
        return None
    try:
        check_url(url, intake.settings.webhook_allow)
    except WebhookRefused as exc:
        raise Refused(422, "Refused callback_url", str(exc)) from None
    return url


def received(intake: Intake, n: int = 1) -> None:
    """Count ``n`` stored submissions for /metrics; Redis away loses the count, not the
    submission."""
    try:
        count_received(intake.redis, n)
    except RedisError as exc:
        log.warning("cannot count %d received submission(s): %s", n, exc)


def replayed(intake: Intake, tenant_id: int, key: str, seen: str | None) -> Submission | None:
    """The submission made earlier with this idempotency key, if any (without its code);
    :class:`Refused` when the key came with another request."""
    with intake.db.session() as s:
        row = s.scalar(select(Submission).options(WITHOUT_CODE)
                       .where(Submission.tenant_id == tenant_id,
                              Submission.idempotency_key == key))
    if row is not None and row.request_hash != seen:
        raise Refused(422, "Idempotency-Key reused", "this Idempotency-Key was sent before "
                      "with a different request")
    return row


def target(intake: Intake, tenant_id: int, problem_id: str) -> tuple[str, str]:
    """The problem id and version a submission to ``problem_id`` records
    (:class:`ProblemNotFound` when the tenant has no such problem). A problem whose
    package cannot be loaded is the judge's fault, not the sender's: the submission is
    taken all the same (an id, ``queued``) and its grading ends it once with
    ``internal_error`` and the loader's message, as any grading of a broken package
    does (docs/api.md, section 9); a rejudge once the package is fixed grades it."""
    try:
        problem = intake.library.get(tenant_id, problem_id)
    except ProblemUnavailable as exc:
        log.error("problem %s cannot be loaded; its submissions end internal_error: %s",
                  exc.problem_id, exc)
        return exc.problem_id, exc.version
    return problem.id, problem.version


Gate = Callable[[Session], None]


def submit(intake: Intake, new: NewSubmission,
           gate: Gate | None = None) -> tuple[Submission, bool]:
    """Store ``new`` and queue it; the stored row (without its code) and whether it is
    the replay of an earlier request with the same idempotency key. ``gate`` runs in the
    transaction that inserts the row, before it (an assignment's course term:
    :func:`service.terms.gate`); what it raises refuses the submission, and nothing is
    stored."""
    key = new.idempotency_key
    if key is not None and (found := replayed(intake, new.tenant_id, key,
                                              new.fingerprint)) is not None:
        return found, True
    problem_id, version = target(intake, new.tenant_id, new.problem)
    code = checked_code(intake, new.code)
    callback = checked_callback(intake, new.callback_url)
    limit = intake.settings.max_metadata_bytes
    if new.metadata is not None and len(json.dumps(new.metadata)) > limit:
        raise Refused(422, "Unprocessable submission", f"metadata is over {limit} bytes as JSON")
    sid = new_id()
    with logcontext.about(sid):
        return _store_and_queue(intake, new, gate, Submission(
            id=sid, tenant_id=new.tenant_id, problem=problem_id,
            problem_version=version, student_id=new.student_id, code=code,
            code_sha256=code_digest(code), source_notes=list(new.source_notes) or None,
            callback_url=callback, meta=new.metadata,
            idempotency_key=key, request_hash=new.fingerprint, queue=new.queue,
            status=Status.QUEUED, enqueued=False, attempt=0,
            assignment_id=new.assignment_id, sample_run=new.sample_run,
            received_at=new.received_at or utcnow()))


def _store_and_queue(intake: Intake, new: NewSubmission, gate: Gate | None,
                     row: Submission) -> tuple[Submission, bool]:
    """:func:`submit`'s second half, with the new row's id current in the log."""
    key = new.idempotency_key
    try:
        with intake.db.session() as s:
            if gate is not None:
                gate(s)
            s.add(row)
    except IntegrityError:  # the same key, concurrently: answer with the winner
        if key is None or (found := replayed(intake, new.tenant_id, key,
                                             new.fingerprint)) is None:
            raise
        return found, True
    received(intake)
    log.info("submission %s: received (problem %s, tenant %d, queue %s%s)", row.id,
             row.problem, row.tenant_id, new.queue, ", sample run" if new.sample_run else "")
    dispatch(intake.db, intake.celery, [(row.id, new.queue)],
             timeout=intake.settings.publish_timeout_seconds, redis=intake.redis)
    with intake.db.session() as s:
        stored = s.scalar(select(Submission).options(WITHOUT_CODE)
                          .where(Submission.id == row.id))
    assert stored is not None
    return stored, False


# Batches.


def zip_entries(intake: Intake, data: bytes) -> list[BatchEntry]:
    """A class upload's ``<student_id>.py`` files and ``<student_id>.ipynb`` notebooks as
    batch entries (the archive's rules: :mod:`service.batchzip`;
    :class:`SubmissionRejected` for a bad archive). A notebook is read when the batch is
    checked (:func:`submit_batch`)."""
    entries = read_batch_zip(data, max_files=intake.settings.max_batch_submissions,
                             max_total_bytes=intake.settings.max_batch_bytes,
                             max_file_bytes=intake.judge.max_code_bytes,
                             max_notebook_bytes=intake.judge.max_notebook_bytes)
    items = []
    for member in entries:
        try:
            text = member.data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise Refused(422, "Unprocessable batch",
                          f"{member.filename} is not UTF-8 (byte {exc.start})") from None
        items.append(BatchEntry(student_id=member.student_id, notebook=text)
                     if member.notebook else BatchEntry(student_id=member.student_id, code=text))
    return items


def submit_batch(intake: Intake, tenant_id: int, body: BatchCreate,
                 assignment_id: str | None = None) -> str:
    """Check every member, then store the batch and its submissions (all or nothing)
    and queue them; the batch's id."""
    limit = intake.settings.max_batch_submissions
    if len(body.submissions) > limit:
        raise Refused(413, "Content too large",
                      f"{len(body.submissions)} submissions; the limit is {limit}")
    seen: set[str] = set()
    for entry in body.submissions:
        if entry.student_id.lower() in seen:
            raise Refused(422, "Unprocessable batch", f"student {entry.student_id!r} "
                          "appears twice")
        seen.add(entry.student_id.lower())
    problem_id, version = target(intake, tenant_id, body.problem)
    callback = checked_callback(intake, body.callback_url)
    sources = []
    for entry in body.submissions:
        try:
            sources.append(checked_source(intake, entry.code, entry.notebook))
        except (Refused, SubmissionRejected) as exc:
            detail = exc.detail if isinstance(exc, Refused) else str(exc)
            raise Refused(422, "Unprocessable batch", f"{entry.student_id}: {detail}") from None
    batch = Batch(id=new_id(), tenant_id=tenant_id, problem=problem_id, name=body.name,
                  total=len(sources))
    rows = [
        Submission(id=new_id(), tenant_id=tenant_id, batch_id=batch.id, problem=problem_id,
                   problem_version=version, student_id=e.student_id, code=src.code,
                   code_sha256=code_digest(src.code), source_notes=list(src.notes) or None,
                   callback_url=callback, queue=BATCH, status=Status.QUEUED, enqueued=False,
                   attempt=0, assignment_id=assignment_id)
        for e, src in zip(body.submissions, sources, strict=True)
    ]
    with intake.db.session() as s:
        s.add(batch)
        s.flush()
        s.add_all(rows)
    log.info("batch %s: received, %d submission(s) of problem %s (tenant %d)", batch.id,
             len(rows), problem_id, tenant_id)
    for member in rows:
        log.debug("submission %s: received in batch %s (student %s)", member.id, batch.id,
                  member.student_id, extra={"submission": member.id})
    dispatch(intake.db, intake.celery, [(r.id, BATCH) for r in rows],
             timeout=intake.settings.publish_timeout_seconds, redis=intake.redis)
    received(intake, len(rows))
    return batch.id


def find_batch(s: Session, tenant_id: int, batch_id: str) -> Batch | None:
    return s.scalar(select(Batch).where(Batch.id == batch_id, Batch.tenant_id == tenant_id))


def batch_progress(db: Database, tenant_id: int, batch_id: str) -> BatchOut | None:
    """Counts by status and verdict from the database (GROUP BY), and the members
    without their code or report: a batch of 1,000 reads no report. None for a batch
    the tenant does not have."""
    counts = {s.value: 0 for s in Status}
    verdicts: dict[str, int] = {}
    with db.session() as s:
        batch = find_batch(s, tenant_id, batch_id)
        if batch is None:
            return None
        for status, verdict, n in s.execute(
                select(Submission.status, Submission.verdict, func.count())
                .where(Submission.batch_id == batch.id)
                .group_by(Submission.status, Submission.verdict)):
            counts[status] += n
            if verdict:
                verdicts[verdict] = verdicts.get(verdict, 0) + n
        members = s.execute(
            select(Submission.student_id, Submission.id, Submission.status, Submission.verdict,
                   Submission.score, Submission.max_score)
            .where(Submission.batch_id == batch.id).order_by(Submission.student_id)).all()
    return BatchOut(
        id=batch.id, problem=batch.problem, name=batch.name, total=batch.total,
        created_at=batch.created_at, counts=counts, verdicts=verdicts,  # type: ignore[arg-type]
        done=counts[Status.DONE] == batch.total,
        submissions=[BatchMember(student_id=student or "", submission_id=sid,
                                 status=status, verdict=verdict,  # type: ignore[arg-type]
                                 score=score, max_score=max_score)
                     for student, sid, status, verdict, score, max_score in members],
    )
