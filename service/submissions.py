"""The submission state machine: ``queued`` -> ``running`` -> ``done``, and back to
``queued`` on a rejudge, when the worker grading it is lost, or when its sandbox was
unavailable (then not before ``retry_at``).

Every transition is one conditional UPDATE, so that any number of API processes, workers
and sweepers can race without a lock. A grading holds its submission under a lease
(:mod:`service.leases`, the same as a build's): ``attempt`` is the fencing token, a
worker claims a submission by raising it, and only the holder of the current attempt may
store a report, so a report is stored once however many times a task is delivered. Each
grading is recorded (:class:`service.models.Grading`) with how it ended. Storing a report
opens its deliveries in the same transaction (the outbox, ``service.deliveries``): the
webhook to its callback, and the grade to the LMS line item of its assignment (an LTI
score, :mod:`service.scores`), so no stored verdict is left without them.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from celery import Celery
from redis import Redis
from redis.exceptions import RedisError
from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.orm import Session

from judge.report import VerdictReport
from service import deliveries, metrics, outcomes, scores
from service.db import Database, changed, chunked, utcnow
from service.leases import Lease
from service.liveness import worker_name
from service.models import Grading, Status, Submission
from service.queue import GRADE_TASK, publish

log = logging.getLogger(__name__)
# The lease a grading holds a submission under (claim, fence, heartbeat, retry later).
LEASE = Lease(Submission, waiting=Status.QUEUED, held=Status.RUNNING, over=(Status.DONE,))


def new_id() -> str:
    return uuid.uuid4().hex


def code_digest(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


@dataclass(frozen=True)
class Claim:
    submission_id: str
    attempt: int
    problem: str
    code: str
    tries: int  # gradings started since the submission was last (re)submitted, this one too
    failures: int  # of the earlier ones, those whose sandbox was unavailable
    source_notes: tuple[str, ...] = ()  # what was removed from a notebook; for the report
    tenant_id: int = 0
    problem_version: str = ""  # the version it was submitted to (or rejudged against)
    sample_run: bool = False  # graded on the sample tests only
    queue: str = ""  # the queue it came in on (a rejudge publishes on batch whatever it says)

    @property
    def lost(self) -> int:
        """Earlier gradings that ended without a report or a known failure: lost."""
        return self.tries - 1 - self.failures


def claim(db: Database, submission_id: str, *, stale_after: float) -> Claim | None:
    """Take ``submission_id`` for grading (:meth:`service.leases.Lease.claimable`):
    ``None`` when it is not ours to grade (done, or running and alive elsewhere). The
    claim says how many gradings started and how they ended; the caller gives up past the
    allowed numbers."""
    now = utcnow()
    with db.session() as s:
        row = LEASE.claimable(s, submission_id, stale_after=stale_after, now=now)
        if row is None:
            return None
        tries = row.tries + 1
        taken = Claim(submission_id, row.attempt + 1, row.problem, row.code, tries,
                      row.failures, tuple(row.source_notes or ()), row.tenant_id,
                      row.problem_version, bool(row.sample_run), row.queue)
        earlier = row.worker if row.status == LEASE.held else None
        if not LEASE.take(s, row, now=now, tries=tries):
            return None
        if earlier is not None:  # its message came back before the sweeper saw it
            log.info("submission %s: grading on %s lost, taken over", submission_id, earlier)
        _close_gradings(s, submission_id, "lost", now)
        s.add(Grading(submission_id=submission_id, attempt=taken.attempt,
                      worker=worker_name(), started_at=now))
        return taken


def _close_gradings(s: Session, submission_id: str, outcome: str, now: datetime,
                    attempt: int | None = None, error: str | None = None) -> None:
    """Close the submission's open gradings (only that of ``attempt`` when given)."""
    where = [Grading.submission_id == submission_id, Grading.outcome.is_(None)]
    if attempt is not None:
        where.append(Grading.attempt == attempt)
    changed(s, update(Grading).where(*where).values(
        outcome=outcome, finished_at=now, error=error[:500] if error else None))


def retry_later(db: Database, submission_id: str, attempt: int, *, delay: float,
                error: str) -> bool:
    """Give a claimed submission back because its sandbox was unavailable
    (:meth:`service.leases.Lease.retry_later`): the attempt's grading ends ``failed`` with
    ``error``, and the sweeper publishes the submission again once ``delay`` seconds have
    passed. False when ``attempt`` was no longer the current one."""
    now = utcnow()
    with db.session() as s:
        moved = LEASE.retry_later(s, submission_id, attempt, delay=delay, now=now)
        if moved:
            _close_gradings(s, submission_id, "failed", now, error=error)
        return moved


def requeue_lost(s: Session, submission_id: str, attempt: int, now: datetime) -> bool:
    """The worker holding ``attempt`` is gone: back to the queue, its grading ``lost``
    (and a line in the log that says so, naming the worker)."""
    worker = s.scalar(select(Submission.worker).where(Submission.id == submission_id))
    moved = LEASE.release(s, submission_id, attempt)
    if moved:
        _close_gradings(s, submission_id, "lost", now)
        log.info("submission %s: grading on %s lost, requeued", submission_id,
                 worker or "an unknown worker", extra={"submission": submission_id})
    return moved


def heartbeat(db: Database, submission_id: str, attempt: int) -> bool:
    with db.session() as s:
        return LEASE.beat(s, submission_id, attempt)


@dataclass(frozen=True)
class Stored:
    """A report stored, the id of the webhook delivery opened with it (None when the
    submission has no callback) and that of its LTI score (None when its assignment has
    no line item to send grades to)."""

    delivery: str | None
    score: str | None = None

    @property
    def opened(self) -> list[str]:
        return [d for d in (self.delivery, self.score) if d is not None]


def store(db: Database, submission_id: str, attempt: int,
          report: VerdictReport) -> Stored | None:
    """Store the report of ``attempt`` (and its tests' rows, :mod:`service.outcomes`)
    and, in the same transaction, open its webhook delivery and its LTI score delivery.
    None (nothing written) if that attempt is no longer the current one (a rejudge, or
    the submission was given to another worker)."""
    now = utcnow()
    stored_report = report.model_dump(mode="json")
    with db.session() as s:
        stored = LEASE.finish(s, submission_id, attempt, Status.DONE, now=now,
                              verdict=report.verdict.value, score=report.score,
                              max_score=report.max_score, report=stored_report,
                              problem_version=report.problem_version)
        _close_gradings(s, submission_id, "stored" if stored else "superseded", now,
                        attempt=attempt)
        if not stored:
            return None
        outcomes.replace(s, submission_id, attempt, stored_report)  # its tests, for analytics
        tenant_id, url, assignment_id, student, sample_run = s.execute(
            select(Submission.tenant_id, Submission.callback_url, Submission.assignment_id,
                   Submission.student_id, Submission.sample_run)
            .where(Submission.id == submission_id)).one()
        delivery = deliveries.open_delivery(s, submission_id, attempt, tenant_id, url,
                                            now) if url else None
        target = scores.scores_url(s, assignment_id) \
            if assignment_id and student and not sample_run else None  # a sample run: no grade
        score = deliveries.open_delivery(s, submission_id, attempt, tenant_id, target, now,
                                         kind=deliveries.LTI_SCORE) if target else None
        return Stored(delivery, score)


def rejudge(s: Session, where: Any, version: str | None = None) -> list[str]:
    """Put the submissions matching ``where`` back in the queue (their open deliveries
    are cancelled), to be graded against problem ``version`` when one is given (else
    against the one each was submitted to); returns their ids. Updates go in chunks of
    ``MAX_BIND`` ids."""
    ids = list(s.scalars(select(Submission.id).where(where)))
    now = utcnow()
    for part in chunked(ids):
        if version is not None:
            changed(s, update(Submission).where(Submission.id.in_(part))
                    .values(problem_version=version))
        changed(
            s,
            update(Submission)
            .where(Submission.id.in_(part))
            .values(
                status=Status.QUEUED,
                enqueued=False,
                verdict=None,
                score=None,
                max_score=None,
                report=None,
                tries=0,
                failures=0,
                retry_at=None,
                worker=None,
                heartbeat_at=None,
                queued_at=None,
                started_at=None,
                finished_at=None,
            ),
        )
        changed(
            s,
            update(Grading)
            .where(Grading.submission_id.in_(part), Grading.outcome.is_(None))
            .values(outcome="superseded", finished_at=now),
        )
        outcomes.clear(s, part)  # the report is gone, and its tests with it
        deliveries.cancel(s, part, now)
    return ids


def mark_enqueued(db: Database, published: Sequence[tuple[str, int]]) -> None:
    """Record that the ``(id, attempt)`` pairs were published, where the submission is
    still queued under that attempt: a grading that started from the message and put the
    submission back before this (its sandbox was unavailable) left it unpublished, and it
    must stay so for the sweeper to publish it again."""
    if not published:
        return
    table = cast(Table, Submission.__table__)  # Core: an executemany, not ORM semantics
    with db.session() as s:
        s.execute(update(table).where(table.c.id == bindparam("sid"),
                                      table.c.attempt == bindparam("seen"),
                                      table.c.status == Status.QUEUED)
                  .values(enqueued=True, queued_at=utcnow()),
                  [{"sid": sid, "seen": attempt} for sid, attempt in published])


def dispatch(db: Database, celery: Celery, items: Sequence[tuple[str, str]], *,
             timeout: float, redis: Redis) -> int:
    """Publish a grading task for each (id, queue) and record it, a chunk at a time;
    stops at the first broker failure (the rest stay unpublished, for the sweeper).
    Returns how many went. The only way a grading is published (the API, the pages, a
    rejudge, the sweeper): each one waits from here in ``redis``'s index of waiting
    submissions (:func:`service.metrics.await_grading`, written before it is published so
    that a worker's claim always comes after), until a worker claims it."""
    sent = 0
    for part in chunked(items):
        with db.session() as s:
            attempts = dict(s.execute(select(Submission.id, Submission.attempt).where(
                Submission.id.in_([sid for sid, _ in part]))).all())
        going = [(sid, queue) for sid, queue in part if sid in attempts]
        fresh = _await(redis, going)
        done: list[tuple[str, int]] = []
        try:
            for sid, queue in going:
                publish(celery, GRADE_TASK, [sid], queue=queue, timeout=timeout)
                done.append((sid, attempts[sid]))
        except Exception as exc:  # kombu's OperationalError, redis' ConnectionError, OSError
            log.warning("broker unavailable, %d submission(s) left for the sweeper: %s",
                        len(items) - sent - len(done), exc)
            mark_enqueued(db, done)
            published = {sid for sid, _ in done}
            with contextlib.suppress(RedisError):
                metrics.claimed(redis, [sid for sid in fresh if sid not in published])
            return sent + len(done)
        mark_enqueued(db, done)
        sent += len(done)
    return sent


def _await(redis: Redis, items: Sequence[tuple[str, str]]) -> list[str]:
    """:func:`service.metrics.await_grading`; Redis away loses the entries (the sweeper
    adds them back), never the dispatch."""
    try:
        return metrics.await_grading(redis, items)
    except RedisError as exc:
        log.debug("waiting submissions not indexed: %s", exc)
        return []
