"""When the infrastructure under a job is unavailable: the same policy for a grading
(:mod:`workers.grading`) and a build (:mod:`workers.building`).

The sandbox could not run the job (:class:`judge.errors.SandboxError`: the engine down or
restarting, the image missing, a container not created). That is no fault of the
submission or the package, so the job is postponed: given back under its lease
(:meth:`service.leases.Lease.retry_later`), due again after an exponential backoff
(:func:`service.backoff.backoff` from ``sandbox_retry_seconds``, at most
:data:`RETRY_CAP_SECONDS`). The ``sandbox_attempts``-th time in a row it gives up, and
the job ends with the reason (an ``internal_error`` verdict, a ``failed`` build). Each
time is counted for ``/metrics``, which a deployment alerts on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from redis import Redis
from redis.exceptions import RedisError

from service import metrics
from service.backoff import backoff
from service.settings import ServiceSettings

log = logging.getLogger(__name__)
RETRY_CAP_SECONDS = 600.0


def postpone_or_give_up(settings: ServiceSettings, job: str, earlier: int, reason: str,
                        postpone: Callable[[float], object], *,
                        redis: Redis | None = None) -> str | None:
    """The sandbox was unavailable to ``job`` (``earlier`` times before this one, for
    ``reason``). Below ``sandbox_attempts`` such times, ``postpone(delay)`` gives it
    back, due in ``delay`` seconds, and the answer is None; else the answer is why the
    job ends. Either way it counts in ``redis`` for ``/metrics``
    (``jaxjudge_sandbox_unavailable_total``)."""
    if redis is not None:
        try:
            metrics.count_sandbox_unavailable(redis)
        except RedisError as exc:
            log.debug("sandbox unavailability not counted: %s", exc)
    failures = earlier + 1
    if failures < settings.sandbox_attempts:
        delay = backoff(failures, settings.sandbox_retry_seconds, RETRY_CAP_SECONDS)
        log.warning("%s: the sandbox is unavailable (%d of %d), again in %.0f s: %s", job,
                    failures, settings.sandbox_attempts, delay, reason)
        postpone(delay)
        return None
    log.error("%s: the sandbox was unavailable %d times, giving up: %s", job, failures,
              reason)
    return f"the sandbox was unavailable {failures} times; the last time: {reason}"
