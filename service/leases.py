"""Leases: how a worker holds a job row, the same for every kind of job (a submission's
grading, :mod:`service.submissions`; a package version's build, :mod:`service.builds`).

A leased table has the columns ``id``, ``status``, ``attempt`` (the fencing token: it only
grows), ``worker`` (``host:pid``, :mod:`service.liveness`), ``heartbeat_at``,
``started_at``, ``finished_at``, ``retry_at``, ``failures`` (holds that ended with the
infrastructure unavailable) and ``enqueued`` (its task is in the broker). A row is
*waiting* (``queued``), *held* (``running``, ``building``) or *over* (``done``;
``ready``, ``failed``). The protocol, every step one conditional UPDATE so that any
number of workers and sweepers race without a lock:

- **claim** (:meth:`Lease.claimable`, then :meth:`Lease.take`): a row that is not over,
  and not held by a live worker (a heartbeat fresher than ``stale_after`` seconds from a
  process that is not known to be gone), is taken by raising its ``attempt`` from the
  value read, in the status read. Two claimants read the same attempt; one UPDATE wins.
- **fence** (:meth:`Lease.holds`): every later write of the holder is conditional on
  the row being held under its attempt, so a holder that was taken over (or whose row a
  rejudge put back) writes nothing.
- **heartbeat** (:meth:`Lease.beat`): the holder shows it is alive.
- **retry later** (:meth:`Lease.retry_later`): the infrastructure was unavailable: back
  to waiting, one more failure, due again at ``retry_at`` (in the database, so the due
  time survives the loss of the broker; the sweeper publishes it then).
- **release** (:meth:`Lease.release`): back to waiting, due at once (a lost holder).
- **finish** (:meth:`Lease.finish`): the holder ends the row in an over status.
- **lost** (:meth:`Lease.requeue_lost`, the sweeper): held rows whose heartbeat is
  stale, or whose worker process on this host is gone, are released, a page at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, or_, select, update
from sqlalchemy.orm import Session

from service.db import Database, changed, utcnow
from service.liveness import worker_gone, worker_name

PAGE = 500  # rows a sweep reads at a time


@dataclass(frozen=True)
class Lease:
    """The lease over the rows of ``model`` (an ORM class with the columns above), whose
    statuses ``waiting``, ``held`` and ``over`` mean waiting for a worker, held by one,
    and ended."""

    model: Any
    waiting: str
    held: str
    over: Collection[str]

    def holds(self, row_id: str, attempt: int) -> ColumnElement[bool]:
        """The fence: the row is held under ``attempt``; only its holder may write."""
        m = self.model
        return and_(m.id == row_id, m.attempt == attempt, m.status == self.held)

    def alive(self, row: Any, now: datetime, stale_after: float) -> bool:
        """A held row's worker is alive: a fresh heartbeat from a process not known to be
        gone."""
        return (row.heartbeat_at is not None
                and row.heartbeat_at > now - timedelta(seconds=stale_after)
                and not worker_gone(row.worker))

    def claimable(self, s: Session, row_id: str, *, stale_after: float,
                  now: datetime) -> Any | None:
        """The row, if this process may claim it (read what the claim needs from it, then
        :meth:`take` it); None when it is missing, over, or held by a live worker."""
        row = s.get(self.model, row_id)
        if row is None or row.status in self.over:
            return None
        if row.status == self.held and self.alive(row, now, stale_after):
            return None
        return row

    def take(self, s: Session, row: Any, *, now: datetime, **values: Any) -> bool:
        """Claim ``row`` (from :meth:`claimable`) for this process under the next attempt,
        with ``values`` set too; False when another claimant moved it first."""
        m = self.model
        seen_status, seen_attempt = row.status, row.attempt  # the UPDATE rewrites ``row``
        return changed(s, update(m).where(
            m.id == row.id, m.status == seen_status, m.attempt == seen_attempt,
        ).values(status=self.held, attempt=seen_attempt + 1, worker=worker_name(),
                 heartbeat_at=now, started_at=now, retry_at=None, **values)) == 1

    def beat(self, s: Session, row_id: str, attempt: int, **values: Any) -> bool:
        """The holder's heartbeat (with ``values`` written too); False when the row is no
        longer held under ``attempt``."""
        return changed(s, update(self.model).where(self.holds(row_id, attempt))
                       .values(heartbeat_at=utcnow(), **values)) == 1

    def release(self, s: Session, row_id: str, attempt: int, **values: Any) -> bool:
        """Take the row away from the holder of ``attempt``: waiting again, out of the
        broker (the sweeper publishes it), due at once unless ``values`` say otherwise."""
        return changed(s, update(self.model).where(self.holds(row_id, attempt)).values(
            **{"status": self.waiting, "enqueued": False, "worker": None,
               "heartbeat_at": None, "retry_at": None, **values})) == 1

    def retry_later(self, s: Session, row_id: str, attempt: int, *, delay: float,
                    now: datetime, **values: Any) -> bool:
        """The holder could not do the job (its infrastructure was unavailable): released
        with one more failure, due again ``delay`` seconds after ``now``."""
        return self.release(s, row_id, attempt, failures=self.model.failures + 1,
                            retry_at=now + timedelta(seconds=delay), **values)

    def finish(self, s: Session, row_id: str, attempt: int, status: str, *, now: datetime,
               **values: Any) -> bool:
        """The holder of ``attempt`` ends the row in ``status`` (one of ``over``)."""
        assert status in self.over
        return changed(s, update(self.model).where(self.holds(row_id, attempt)).values(
            status=status, finished_at=now, heartbeat_at=None, **values)) == 1

    def due(self, now: datetime) -> ColumnElement[bool]:
        """Waiting, and its ``retry_at`` (if any) has come."""
        m = self.model
        return and_(m.status == self.waiting, or_(m.retry_at.is_(None), m.retry_at <= now))

    def requeue_lost(self, db: Database, *, stale_after: float, page: int = PAGE,
                     requeue: Callable[[Session, str, int, datetime], bool] | None = None
                     ) -> list[str]:
        """Release every held row whose worker was lost (a stale heartbeat, or a process on
        this host that is gone), paging through them by id; their ids. Each release is
        conditional, so two sweepers never both take one. ``requeue`` releases one row
        (by default :meth:`release`) when a kind records more with it."""
        m = self.model
        now = utcnow()
        release = requeue or (lambda s, row_id, attempt, _now: self.release(s, row_id, attempt))
        lost: list[str] = []
        after = ""
        while True:
            with db.session() as s:
                rows = s.execute(select(m.id, m.attempt, m.worker, m.heartbeat_at)
                                 .where(m.status == self.held, m.id > after)
                                 .order_by(m.id).limit(page)).all()
                for row_id, attempt, worker, beat in rows:
                    stale = beat is None or beat < now - timedelta(seconds=stale_after)
                    if (stale or worker_gone(worker)) and release(s, row_id, attempt, now):
                        lost.append(row_id)
            if len(rows) < page:
                return lost
            after = rows[-1][0]
