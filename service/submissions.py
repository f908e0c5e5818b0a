"""The submission state machine: ``queued`` -> ``running`` -> ``done``, and back to
``queued`` on a rejudge or when the worker grading it is lost.

Every transition is one conditional UPDATE, so that any number of API processes, workers
and sweepers can race without a lock. ``attempt`` is the fencing token: a worker claims a
submission by raising it, and only the holder of the current attempt may store a report,
so a report is stored once however many times a task is delivered.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from celery import Celery
from sqlalchemy import ColumnElement, CursorResult, and_, or_, select, update
from sqlalchemy.orm import Session

from judge.report import VerdictReport
from judge.sandbox.docker import pid_alive
from service.db import Database, utcnow
from service.models import Grading, Status, Submission
from service.queue import GRADE_TASK, publish, send_webhook
from service.settings import ServiceSettings

log = logging.getLogger(__name__)


def changed(s: Session, statement: Any) -> int:
    """Run an UPDATE; how many rows it changed."""
    result: CursorResult[Any] = s.execute(statement)  # type: ignore[assignment]
    return result.rowcount


def new_id() -> str:
    return uuid.uuid4().hex


def code_digest(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _worker_gone(worker: str | None) -> bool:
    """True when ``worker`` ran on this host and its process is gone."""
    if not worker:
        return False
    host, _, pid = worker.rpartition(":")
    return host == socket.gethostname() and pid.isdigit() and not pid_alive(int(pid))


@dataclass(frozen=True)
class Claim:
    submission_id: str
    attempt: int
    problem: str
    code: str
    tries: int  # gradings started since the submission was last (re)submitted


def claim(db: Database, submission_id: str, *, stale_after: float) -> Claim | None:
    """Take ``submission_id`` for grading: ``None`` when it is not ours to grade (done,
    or running and alive elsewhere). The claim's ``attempt`` says how many gradings
    started; the caller gives up past the allowed number."""
    now = utcnow()
    with db.session() as s:
        row = s.get(Submission, submission_id)
        if row is None or row.status == Status.DONE:
            return None
        if row.status == Status.RUNNING:
            fresh = row.heartbeat_at is not None and row.heartbeat_at > now - timedelta(
                seconds=stale_after
            )
            if fresh and not _worker_gone(row.worker):
                return None
        seen_status, seen_attempt = row.status, row.attempt
        worker = worker_name()
        done = changed(
            s,
            update(Submission)
            .where(
                Submission.id == submission_id,
                Submission.status == seen_status,
                Submission.attempt == seen_attempt,
            )
            .values(
                status=Status.RUNNING,
                attempt=seen_attempt + 1,
                tries=row.tries + 1,
                worker=worker,
                heartbeat_at=now,
                started_at=now,
            ),
        )
        if done != 1:
            return None
        _close_gradings(s, submission_id, "lost", now)
        s.add(
            Grading(
                submission_id=submission_id, attempt=seen_attempt + 1, worker=worker, started_at=now
            )
        )
        return Claim(submission_id, seen_attempt + 1, row.problem, row.code, row.tries + 1)


def _close_gradings(s: Session, submission_id: str, outcome: str, now: datetime) -> None:
    changed(
        s,
        update(Grading)
        .where(Grading.submission_id == submission_id, Grading.outcome.is_(None))
        .values(outcome=outcome, finished_at=now),
    )


def _holds(submission_id: str, attempt: int) -> ColumnElement[bool]:
    """The submission is running under ``attempt``: only its holder may touch it."""
    return and_(
        Submission.id == submission_id,
        Submission.attempt == attempt,
        Submission.status == Status.RUNNING,
    )


def _back_to_queue(s: Session, submission_id: str, attempt: int, outcome: str,
                   now: datetime) -> bool:
    """Take ``attempt`` away from its holder and queue the submission for publishing
    again; the attempt's grading is closed with ``outcome``."""
    moved = changed(
        s,
        update(Submission)
        .where(_holds(submission_id, attempt))
        .values(status=Status.QUEUED, enqueued=False, worker=None, heartbeat_at=None),
    )
    if moved:
        _close_gradings(s, submission_id, outcome, now)
    return moved == 1


def release(db: Database, submission_id: str, attempt: int) -> bool:
    """Give a claimed submission back (its sandbox could not run): the sweeper publishes
    it again; the attempt's grading ends ``failed``."""
    with db.session() as s:
        return _back_to_queue(s, submission_id, attempt, "failed", utcnow())


def heartbeat(db: Database, submission_id: str, attempt: int) -> bool:
    with db.session() as s:
        return (
            changed(
                s,
                update(Submission)
                .where(_holds(submission_id, attempt))
                .values(heartbeat_at=utcnow()),
            )
            == 1
        )


def store(db: Database, submission_id: str, attempt: int, report: VerdictReport) -> bool:
    """Store the report of ``attempt``; False (nothing written) if that attempt is no
    longer the current one (a rejudge, or the submission was given to another worker)."""
    now = utcnow()
    with db.session() as s:
        stored = (
            changed(
                s,
                update(Submission)
                .where(_holds(submission_id, attempt))
                .values(
                    status=Status.DONE,
                    verdict=report.verdict.value,
                    score=report.score,
                    max_score=report.max_score,
                    report=report.model_dump(mode="json"),
                    problem_version=report.problem_version,
                    finished_at=now,
                    heartbeat_at=None,
                ),
            )
            == 1
        )
        changed(
            s,
            update(Grading)
            .where(
                Grading.submission_id == submission_id,
                Grading.attempt == attempt,
                Grading.outcome.is_(None),
            )
            .values(outcome="stored" if stored else "superseded", finished_at=now),
        )
        return stored


def rejudge(s: Session, where: Any) -> list[str]:
    """Put the submissions matching ``where`` back in the queue; returns their ids."""
    ids = list(s.scalars(select(Submission.id).where(where)))
    if ids:
        changed(
            s,
            update(Submission)
            .where(Submission.id.in_(ids))
            .values(
                status=Status.QUEUED,
                enqueued=False,
                verdict=None,
                score=None,
                max_score=None,
                report=None,
                tries=0,
                worker=None,
                heartbeat_at=None,
                queued_at=None,
                started_at=None,
                finished_at=None,
                webhook_status=None,
                webhook_attempts=0,
                webhook_error=None,
                webhook_delivery=None,
                webhook_due_at=None,
            ),
        )
        now = utcnow()
        changed(
            s,
            update(Grading)
            .where(Grading.submission_id.in_(ids), Grading.outcome.is_(None))
            .values(outcome="superseded", finished_at=now),
        )
    return ids


def mark_enqueued(db: Database, ids: list[str]) -> None:
    if not ids:
        return
    with db.session() as s:
        changed(
            s,
            update(Submission)
            .where(Submission.id.in_(ids), Submission.status == Status.QUEUED)
            .values(enqueued=True, queued_at=utcnow()),
        )


@dataclass(frozen=True)
class SweepPlan:
    lost: list[str]  # running, but their worker is gone: back to queued
    unpublished: list[tuple[str, str]]  # (id, queue) never published
    stale: list[tuple[str, str]]  # published long ago, never started


def find_strays(
    db: Database, *, stale_after: float, requeue_after: float, limit: int = 500
) -> SweepPlan:
    """What the sweeper must do now. Lost submissions are moved back to ``queued`` here
    (one conditional UPDATE each, so two sweepers never both take one)."""
    now = utcnow()
    lost: list[str] = []
    with db.session() as s:
        running = s.execute(
            select(Submission.id, Submission.attempt, Submission.worker, Submission.heartbeat_at)
            .where(Submission.status == Status.RUNNING)
            .limit(limit)
        ).all()
        for sid, attempt, worker, beat in running:
            stale = beat is None or beat < now - timedelta(seconds=stale_after)
            if not (stale or _worker_gone(worker)):
                continue
            if _back_to_queue(s, sid, attempt, "lost", now):
                lost.append(sid)
        unpublished = s.execute(
            select(Submission.id, Submission.queue)
            .where(Submission.status == Status.QUEUED, Submission.enqueued.is_(False))
            .order_by(Submission.received_at)
            .limit(limit)
        ).all()
        stale_rows = s.execute(
            select(Submission.id, Submission.queue)
            .where(
                and_(
                    Submission.status == Status.QUEUED,
                    Submission.enqueued.is_(True),
                    or_(
                        Submission.queued_at.is_(None),
                        Submission.queued_at < now - timedelta(seconds=requeue_after),
                    ),
                )
            )
            .limit(limit)
        ).all()
    return SweepPlan(lost, [(r[0], r[1]) for r in unpublished], [(r[0], r[1]) for r in stale_rows])


def dispatch(db: Database, celery: Celery, items: list[tuple[str, str]], *, timeout: float) -> int:
    """Publish a grading task for each (id, queue) and record it; stops at the first
    broker failure (the rest stay unpublished, for the sweeper). Returns how many went."""
    sent: list[str] = []
    try:
        for sid, queue in items:
            publish(celery, GRADE_TASK, [sid], queue=queue, timeout=timeout)
            sent.append(sid)
    except Exception as exc:  # kombu's OperationalError, redis' ConnectionError, OSError
        log.warning(
            "broker unavailable, %d submission(s) left for the sweeper: %s",
            len(items) - len(sent),
            exc,
        )
    mark_enqueued(db, sent)
    return len(sent)


def sweep(db: Database, celery: Celery, settings: ServiceSettings) -> SweepPlan:
    """Requeue lost submissions, publish unpublished ones, republish stale ones."""
    plan = find_strays(
        db, stale_after=settings.stale_after_seconds, requeue_after=settings.requeue_after_seconds
    )
    todo = plan.unpublished + plan.stale
    if todo:
        dispatch(db, celery, todo, timeout=settings.publish_timeout_seconds)
    resend_webhooks(db, celery, timeout=settings.publish_timeout_seconds,
                    grace=settings.stale_after_seconds,
                    resend_after=settings.requeue_after_seconds)
    if plan.lost or todo:
        log.info(
            "sweep: %d lost, %d unpublished, %d stale",
            len(plan.lost),
            len(plan.unpublished),
            len(plan.stale),
        )
    return plan


# -- webhook deliveries --------------------------------------------------------------
# A delivery sends one grading's report to the callback URL under one delivery id, in up
# to ``webhook_max_attempts`` tries. ``webhook_attempts`` counts the tries begun and is the
# fencing token of a try: a message names the try it is for, and only the first message
# for that try makes it. So a retry that a worker held for its countdown when the broker
# was lost (kombu redelivers it hours later) and the sweeper's resend of it cannot both
# deliver. ``webhook_due_at`` is when the next try is due; the sweeper resends a try that
# is overdue.


def _delivery_open() -> ColumnElement[bool]:
    """A done submission whose report is still to be delivered."""
    return and_(Submission.status == Status.DONE, Submission.webhook_status == "pending")


def start_webhook(db: Database, submission_id: str) -> str:
    """A done submission's delivery: pending, its first try due now, a new delivery id."""
    delivery = new_id()
    with db.session() as s:
        s.execute(update(Submission).where(Submission.id == submission_id).values(
            webhook_status="pending", webhook_delivery=delivery, webhook_attempts=0,
            webhook_error=None, webhook_due_at=utcnow()))
    return delivery


def claim_webhook_try(db: Database, submission_id: str, try_no: int, *, lease: float) -> bool:
    """Begin try ``try_no``; False when it was begun already or the delivery is over (or
    the submission was rejudged). The try is overdue after ``lease`` seconds."""
    with db.session() as s:
        return changed(s, update(Submission).where(
            Submission.id == submission_id, _delivery_open(),
            Submission.webhook_attempts == try_no,
        ).values(webhook_attempts=try_no + 1,
                 webhook_due_at=utcnow() + timedelta(seconds=lease))) == 1


def finish_webhook_try(db: Database, submission_id: str, try_no: int, *, state: str,
                       error: str, retry_in: float | None) -> None:
    """Record how try ``try_no`` ended and when the next one is due (None: no next)."""
    due = utcnow() + timedelta(seconds=retry_in) if retry_in is not None else None
    with db.session() as s:
        s.execute(update(Submission).where(Submission.id == submission_id,
                                           Submission.webhook_attempts == try_no + 1)
                  .values(webhook_status=state, webhook_error=error[:500] or None,
                          webhook_due_at=due))


def resend_webhooks(db: Database, celery: Celery, *, timeout: float, grace: float,
                    resend_after: float) -> int:
    """Publish the next try of every delivery overdue by more than ``grace`` seconds: its
    first try could not be queued (the broker was away), or its retry was lost with the
    broker, or the worker making it died. A resent try gets ``resend_after`` seconds
    before it is resent again (a backlog is not a loss)."""
    cutoff = utcnow() - timedelta(seconds=grace)
    with db.session() as s:
        rows = s.execute(select(Submission.id, Submission.webhook_delivery,
                                Submission.webhook_attempts).where(
            _delivery_open(), Submission.webhook_due_at < cutoff).limit(500)).all()
    sent = 0
    for sid, delivery, tries in rows:
        assert delivery is not None  # set with the pending state (start_webhook, migration)
        try:
            send_webhook(celery, sid, delivery, tries, timeout=timeout)
        except Exception as exc:
            log.warning("webhooks still unsent: %s", exc)
            break
        with db.session() as s:
            changed(s, update(Submission).where(Submission.id == sid,
                                                Submission.webhook_attempts == tries)
                    .values(webhook_due_at=utcnow() + timedelta(seconds=resend_after)))
        sent += 1
    return sent
