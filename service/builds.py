"""The build lifecycle of an uploaded package version: dispatching its task, the worker's
claim, progress and end, and what the sweeper sends again. The build itself runs in a
worker (:mod:`workers.building`); uploads and live versions are
:mod:`service.problemsets`.

A version moves ``queued`` -> ``building`` -> ``ready`` or ``failed``. The build holds
its version under the lease a grading holds its submission under (:mod:`service.leases`):
``attempt`` fences every write of a claim, a claim whose heartbeat is stale (or whose
worker process is gone) is taken over, and when the sandbox is unavailable the version
goes back to ``queued`` with a ``retry_at`` for the sweeper. ``retry_at`` also marks a
published build not started in time, which the sweeper publishes again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from celery import Celery
from sqlalchemy import select, update

from service.db import Database, changed, utcnow
from service.leases import Lease
from service.models import BuildStatus, Package, PackageVersion
from service.packages import Upload
from service.queue import BATCH, BUILD_TASK, publish

log = logging.getLogger(__name__)
# The checks of a build besides the examples: the reference's outputs recorded, the
# stored data's hash, the inputs reproducible, the reference accepted.
FIXED_STEPS = 4
LEASE = Lease(PackageVersion, waiting=BuildStatus.QUEUED, held=BuildStatus.BUILDING,
              over=(BuildStatus.READY, BuildStatus.FAILED))


def total_steps(upload: Upload) -> int:
    """The checks the build of ``upload`` makes (one more per example submission)."""
    return FIXED_STEPS + sum(1 for path in upload.files if path.startswith("submissions/"))


def dispatch_build(db: Database, celery: Celery, version_id: str, *, timeout: float,
                   resend_after: float) -> bool:
    """Publish the build task of a version; False (left for the sweeper) when the broker
    cannot be reached. A published build not started after ``resend_after`` s is
    published again (a message lost with the broker's data)."""
    try:
        publish(celery, BUILD_TASK, [version_id], queue=BATCH, timeout=timeout)
    except Exception as exc:  # kombu's OperationalError, redis' ConnectionError, OSError
        log.warning("broker unavailable, the build of %s is left for the sweeper: %s",
                    version_id, exc)
        return False
    with db.session() as s:
        changed(s, update(PackageVersion).where(PackageVersion.id == version_id,
                                                PackageVersion.status == BuildStatus.QUEUED)
                .values(enqueued=True, retry_at=utcnow() + timedelta(seconds=resend_after)))
    return True


@dataclass(frozen=True)
class BuildClaim:
    version_id: str
    attempt: int
    problem: str
    version: str
    files: bytes
    failures: int
    tenant_id: int


def claim_build(db: Database, version_id: str, *, stale_after: float) -> BuildClaim | None:
    """Take a build: None when it is over, or running and alive elsewhere."""
    now = utcnow()
    with db.session() as s:
        row = LEASE.claimable(s, version_id, stale_after=stale_after, now=now)
        if row is None:
            return None
        package = s.get(Package, row.package_id)
        assert package is not None
        taken = BuildClaim(version_id, row.attempt + 1, package.problem, row.version,
                           row.files, row.failures, row.tenant_id)
        return taken if LEASE.take(s, row, now=now, steps=[], error=None) else None


def build_heartbeat(db: Database, version_id: str, attempt: int) -> bool:
    with db.session() as s:
        return LEASE.beat(s, version_id, attempt)


def record_steps(db: Database, version_id: str, attempt: int,
                 steps: Sequence[dict[str, Any]]) -> bool:
    """The checks done so far (the whole list, so a write is never half of one)."""
    with db.session() as s:
        return LEASE.beat(s, version_id, attempt, steps=list(steps))


def finish_build(db: Database, version_id: str, attempt: int, *, data: bytes | None,
                 error: str | None, weaknesses: Sequence[str], seconds: float) -> bool:
    """End the build: ``ready`` with its test data, or ``failed`` with why. A ready
    version goes live if it is the problem's first or was uploaded with ``publish``."""
    now = utcnow()
    ok = error is None and data is not None
    with db.session() as s:
        if not LEASE.finish(
                s, version_id, attempt, BuildStatus.READY if ok else BuildStatus.FAILED,
                now=now, data=data if ok else None,
                error=None if ok else (error or "the build did not finish")[:4000],
                weaknesses=list(weaknesses), build_seconds=round(seconds, 3),
                enqueued=False):
            return False
        row = s.get(PackageVersion, version_id)
        assert row is not None
        package = s.get(Package, row.package_id)
        assert package is not None
        if ok and (package.live_version is None or row.publish):
            package.live_version = row.version
            package.updated_at = now
    return True


def postpone_build(db: Database, version_id: str, attempt: int, *, delay: float,
                   error: str) -> bool:
    """The sandbox was unavailable: back to ``queued``, due again after ``delay``."""
    with db.session() as s:
        return LEASE.retry_later(s, version_id, attempt, delay=delay, now=utcnow(),
                                 error=error[:4000])


def builds_to_send(db: Database, *, stale_after: float) -> list[str]:
    """Versions the sweeper publishes: a build whose worker was lost goes back to
    ``queued`` first (:meth:`service.leases.Lease.requeue_lost`); then every queued one
    that is not in the broker and due, or was published and not started by its
    ``retry_at``."""
    LEASE.requeue_lost(db, stale_after=stale_after)
    now = utcnow()
    with db.session() as s:
        return list(s.scalars(select(PackageVersion.id).where(
            LEASE.due(now),
            PackageVersion.enqueued.is_(False) | PackageVersion.retry_at.is_not(None))
            .order_by(PackageVersion.uploaded_at).limit(500)))
