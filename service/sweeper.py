"""The sweeper: finds what faults left behind and puts it back on its way.

- ``running`` submissions whose heartbeat is older than ``stale_after_seconds`` (or whose
  worker process on this host is gone) go back to ``queued``: their grading was lost
  (:meth:`service.leases.Lease.requeue_lost`);
- ``queued`` submissions never published (the broker was away when they arrived, or
  their sandbox was unavailable and their ``retry_at`` has come) are published;
- ``queued`` submissions published more than ``requeue_after_seconds`` ago and never
  started are published again (a message lost with the broker's data);
- delivery tries (webhooks, LTI scores) that are overdue are queued again
  (:func:`service.deliveries.resend_overdue`);
- deliveries refused by the address policy under another allow-list than the sweeper's
  (the operator changed ``JAXJUDGE_WEBHOOK_ALLOW`` since) are sent again, once per
  change (:func:`service.deliveries.reopen_allowed`);
- builds of uploaded packages never published, due again, or whose worker was lost are
  published (:func:`service.builds.builds_to_send`, the same lease as a grading's);
- the index of waiting submissions behind ``jaxjudge_queue_oldest_seconds`` is mended
  against the database (:func:`mend_waiting`).

Every query pages through its rows (keyset pagination, ``page`` rows at a time), so a
backlog of any size is found, and every statement binds at most ``MAX_BIND`` ids.

One process sweeps at a time for the whole service: :func:`run` loops in its own process
(``python -m workers.sweeper``), and each round sweeps only while it holds
:class:`Leadership`, a Redis lock with an expiry that it renews every round. Start one
sweeper per host, or several: one sweeps, the others stand by and take over within
``lock_seconds`` when it dies. Every move is a conditional UPDATE too, so two sweepers
that did overlap (a round longer than the lock's expiry) would still move each
submission once.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from dataclasses import dataclass
from datetime import timedelta

from celery import Celery
from redis import Redis
from redis.exceptions import LockError, RedisError
from sqlalchemy import and_, or_, select

from service import builds, deliveries, metrics, submissions
from service.db import Database, utcnow
from service.models import Status, Submission
from service.queue import GRADING_QUEUES
from service.settings import ServiceSettings

log = logging.getLogger(__name__)
LOCK_KEY = "jaxjudge:sweeper"
PAGE = 500
MEND_PAGE = 100  # waiting submissions checked at a time, per queue
MEND_PAGES = 20  # at most, per queue and round


@dataclass(frozen=True)
class SweepPlan:
    lost: list[str]  # running, but their worker is gone: moved back to queued
    unpublished: list[tuple[str, str]]  # (id, queue) never published, or due again
    stale: list[tuple[str, str]]  # published long ago, never started


def find_lost(db: Database, *, stale_after: float, page: int = PAGE) -> list[str]:
    """Move every lost grading back to ``queued`` (:meth:`service.leases.Lease.requeue_lost`:
    one conditional UPDATE each, so two sweepers never both take one); their ids."""
    return submissions.LEASE.requeue_lost(db, stale_after=stale_after, page=page,
                                          requeue=submissions.requeue_lost)


def find_unpublished(db: Database, *, page: int = PAGE) -> list[tuple[str, str]]:
    """(id, queue) of every queued submission not in the broker and due, oldest first."""
    now = utcnow()
    found: list[tuple[str, str]] = []
    last: tuple[object, str] | None = None
    while True:
        query = (select(Submission.received_at, Submission.id, Submission.queue)
                 .where(submissions.LEASE.due(now), Submission.enqueued.is_(False))
                 .order_by(Submission.received_at, Submission.id).limit(page))
        if last is not None:
            query = query.where(or_(Submission.received_at > last[0],
                                    and_(Submission.received_at == last[0],
                                         Submission.id > last[1])))
        with db.session() as s:
            rows = s.execute(query).all()
        found += [(sid, queue) for _, sid, queue in rows]
        if len(rows) < page:
            return found
        last = (rows[-1][0], rows[-1][1])


def find_stale(db: Database, *, requeue_after: float, page: int = PAGE) -> list[tuple[str, str]]:
    """(id, queue) of every queued submission published over ``requeue_after`` s ago."""
    cutoff = utcnow() - timedelta(seconds=requeue_after)
    found: list[tuple[str, str]] = []
    after = ""
    while True:
        with db.session() as s:
            rows = s.execute(
                select(Submission.id, Submission.queue)
                .where(Submission.status == Status.QUEUED, Submission.enqueued.is_(True),
                       or_(Submission.queued_at.is_(None), Submission.queued_at < cutoff),
                       Submission.id > after)
                .order_by(Submission.id).limit(page)).all()
        found += [(sid, queue) for sid, queue in rows]
        if len(rows) < page:
            return found
        after = rows[-1][0]


def find_strays(db: Database, *, stale_after: float, requeue_after: float,
                page: int = PAGE) -> SweepPlan:
    """What the sweeper must do now (lost gradings are moved back to ``queued`` here)."""
    lost = find_lost(db, stale_after=stale_after, page=page)
    return SweepPlan(lost, find_unpublished(db, page=page),
                     find_stale(db, requeue_after=requeue_after, page=page))


def mend_waiting(db: Database, redis: Redis, *, page: int = MEND_PAGE,
                 pages: int = MEND_PAGES) -> int:
    """Make the index of waiting submissions (:func:`service.metrics.await_grading`)
    agree with the database where ``/metrics`` reads it, its longest waits; how many
    entries were added or removed. Per grading queue:

    - the ``page`` queued, published submissions published longest ago that wait on no
      queue's set (Redis lost the write, or its data) are added, from when they were
      last published (``queued_at``);
    - from the longest wait up, entries whose submission is not ``queued`` (a claim's
      removal that Redis lost, a deleted submission) are removed, ``page`` at a time,
      until the longest wait is one that holds (or ``pages`` pages were read: the rest
      next round).

    A worker claiming a submission between the read and the write can leave one
    entry wrong until the next round."""
    mended = 0
    for queue in GRADING_QUEUES:
        with db.session() as s:
            rows = s.execute(
                select(Submission.id, Submission.queued_at)
                .where(Submission.status == Status.QUEUED, Submission.enqueued.is_(True),
                       Submission.queue == queue, Submission.queued_at.is_not(None))
                .order_by(Submission.queued_at).limit(page)).all()
        if rows:
            present = metrics.waiting_anywhere(redis, [sid for sid, _ in rows])
            missing = {sid: at.timestamp() for sid, at in rows
                       if sid not in present and at is not None}
            mended += metrics.wait_since(redis, queue, missing)
        for _ in range(pages):
            ids = [sid for sid, _ in metrics.waiting_page(redis, queue, 0, page)]
            if not ids:
                break
            with db.session() as s:
                waiting = set(s.scalars(select(Submission.id).where(
                    Submission.id.in_(ids), Submission.status == Status.QUEUED)))
            gone = [sid for sid in ids if sid not in waiting]
            metrics.claimed(redis, gone)
            mended += len(gone)
            if len(gone) < len(ids) or len(ids) < page:
                break  # the longest wait left is a submission that waits
    return mended


def sweep(db: Database, celery: Celery, redis: Redis, settings: ServiceSettings) -> SweepPlan:
    """Requeue lost gradings, publish unpublished and stale submissions, resend overdue
    delivery tries (webhooks and LTI scores), send again what an earlier allow-list
    refused, mend the index of waiting submissions."""
    plan = find_strays(db, stale_after=settings.stale_after_seconds,
                       requeue_after=settings.requeue_after_seconds)
    todo = plan.unpublished + plan.stale
    if todo:
        submissions.dispatch(db, celery, todo, timeout=settings.publish_timeout_seconds,
                             redis=redis)
    resent = deliveries.resend_overdue(db, celery, timeout=settings.publish_timeout_seconds,
                                       grace=settings.stale_after_seconds,
                                       resend_after=settings.requeue_after_seconds)
    allowed = deliveries.reopen_allowed(db, celery, settings.webhook_allow,
                                        grace=settings.stale_after_seconds,
                                        timeout=settings.publish_timeout_seconds)
    sent = builds.builds_to_send(db, stale_after=settings.stale_after_seconds)
    for version_id in sent:
        if not builds.dispatch_build(db, celery, version_id,
                                     timeout=settings.publish_timeout_seconds,
                                     resend_after=settings.requeue_after_seconds):
            break
    try:
        mended = mend_waiting(db, redis)
    except RedisError as exc:  # the next round mends it
        log.debug("waiting submissions not mended: %s", exc)
        mended = 0
    if plan.lost or todo or resent or allowed or sent or mended:
        log.info("sweep: %d lost, %d unpublished, %d stale, %d delivery tries resent, "
                 "%d refused deliveries sent again under the allow-list, %d builds sent, "
                 "%d waiting-index entries mended", len(plan.lost), len(plan.unpublished),
                 len(plan.stale), resent, allowed, len(sent), mended)
    return plan


class Leadership:
    """The right to sweep, held by one process at a time: a Redis key holding this
    process's token, with an expiry of ``ttl`` seconds that the holder renews."""

    def __init__(self, redis: Redis, ttl: float) -> None:
        self.lock = redis.lock(LOCK_KEY, timeout=ttl, blocking=False, thread_local=False)

    def hold(self) -> bool:
        """Take the lock, or renew it if it is ours; False when another process holds it.
        Raises RedisError when Redis is away."""
        try:
            if self.lock.owned():
                self.lock.reacquire()
                return True
            return bool(self.lock.acquire(blocking=False))
        except LockError:  # it expired between the two calls and another took it
            return False

    def release(self) -> None:
        with contextlib.suppress(LockError, RedisError):
            self.lock.release()


def lock_seconds(settings: ServiceSettings) -> float:
    """How long a sweeper that died keeps the others standing by."""
    return max(30.0, 3 * settings.sweep_seconds)


def run(db: Database, celery: Celery, redis: Redis, settings: ServiceSettings,
        stop: threading.Event) -> None:
    """Sweep every ``sweep_seconds`` while this process holds the leadership, until
    ``stop`` is set. Survives the database and Redis being away (the round is skipped)."""
    leadership = Leadership(redis, lock_seconds(settings))
    rounds = 0
    try:
        while not stop.is_set():
            rounds += 1
            try:
                if leadership.hold():
                    sweep(db, celery, redis, settings)
                    log.debug("round %d: swept", rounds)
                else:
                    log.debug("round %d: standing by, another process sweeps", rounds)
            except Exception as exc:  # the database or broker away: next round
                log.warning("sweep failed: %s", exc)
            stop.wait(settings.sweep_seconds)
    finally:
        leadership.release()
