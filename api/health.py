"""``/healthz`` (the process answers), ``/readyz`` (it can do its job: database, broker,
a live worker with a ready sandbox that isolates; broken problem packages degrade it) and
``/metrics`` (Prometheus, from Redis only)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from flask import Blueprint, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from redis.exceptions import RedisError
from sqlalchemy import text

from api.spec import operation
from app.services import Services, services
from service import metrics as shared
from service.deliveries import LTI_SCORE, WEBHOOK
from service.queue import BATCH, INTERACTIVE, WEBHOOKS
from service.wire import Check, Health

bp = Blueprint("health", __name__)
log = logging.getLogger(__name__)


@bp.get("/healthz")
@operation("Liveness: the API process answers", tag="health",
           responses={200: Health})
def healthz() -> Any:
    return Health(status="ok").model_dump(mode="json")


def readiness(svc: Services) -> dict[str, Check]:
    """Every check, by name. Failure details are fixed words (the exception text of a
    driver can name hosts, ports and users: it goes to the log, not to the caller)."""
    checks: dict[str, Check] = {}
    try:
        with svc.db.session() as s:
            s.execute(text("SELECT 1"))
        checks["database"] = Check(ok=True)
    except Exception as exc:
        log.warning("readiness: the database is not answering: %s", exc)
        checks["database"] = Check(ok=False, detail="the database is not answering")
    try:
        svc.redis.ping()
        checks["broker"] = Check(ok=True)
        live = shared.workers(svc.redis)
        checks["workers"] = Check(ok=bool(live), detail=f"{len(live)} grading process(es)")
        checks["sandbox"] = sandbox_check(live, svc.settings.insecure_unsandboxed_grading)
    except RedisError as exc:
        log.warning("readiness: the broker is not answering: %s", exc)
        checks["broker"] = Check(ok=False, detail="the broker is not answering")
        checks["workers"] = Check(ok=False, detail="unknown: the broker is down")
        checks["sandbox"] = Check(ok=False, detail="unknown: the broker is down")
    broken = sorted(svc.library.global_scan()[1])
    checks["problems"] = Check(ok=not broken, detail=f"broken: {', '.join(broken)}"
                               if broken else "")
    return checks


def ready_workers(live: dict[str, dict[str, Any]], insecure_allowed: bool) -> int:
    """Live workers whose sandbox is ready and isolates (or is ready at all, where
    ``insecure_unsandboxed_grading`` allows grading without isolation): those that can
    grade."""
    ready = [w for w in live.values() if w.get("sandbox_ready")]
    return len(ready if insecure_allowed else
               [w for w in ready if w.get("isolated") is True])


def sandbox_check(live: dict[str, dict[str, Any]], insecure_allowed: bool) -> Check:
    """At least one live worker has a ready sandbox that isolates (it announces
    ``isolated``; one that does not say so does not count), or one that does not isolate
    where ``insecure_unsandboxed_grading`` allows it (:func:`ready_workers`)."""
    ready = [w for w in live.values() if w.get("sandbox_ready")]
    isolating = [w for w in ready if w.get("isolated") is True]
    if isolating:
        return Check(ok=True, detail=f"{len(isolating)} with a ready, isolating sandbox")
    if ready and insecure_allowed:
        return Check(ok=True, detail=f"{len(ready)} with a ready sandbox that does NOT "
                     "isolate (insecure_unsandboxed_grading)")
    if ready:
        return Check(ok=False, detail=f"{len(ready)} with a ready sandbox, none that "
                     "isolates")
    return Check(ok=False, detail="0 with a ready sandbox")


DEGRADING = frozenset({"problems"})  # failing ones make /readyz "degraded", still 200


@bp.get("/readyz")
@operation("Readiness: database, broker, a live worker and a ready sandbox", tag="health", responses={200: Health, 503: ("Not ready", Health, "application/json")})
def readyz() -> Any:
    checks = readiness(services())
    failed = {name for name, c in checks.items() if not c.ok}
    if failed - DEGRADING:
        return Health(status="unavailable", checks=checks).model_dump(mode="json"), 503
    return Health(status="degraded" if failed else "ok", checks=checks).model_dump(mode="json")


class ServiceCollector:
    """Read at scrape time from Redis (never the database: the counters are kept as
    submissions are stored), so every API process reports the same numbers whichever one
    is scraped."""

    def __init__(self, svc: Services) -> None:
        self.svc = svc

    def collect(self) -> Iterator[Metric]:
        svc = self.svc
        depth = GaugeMetricFamily("jaxjudge_queue_depth", "Tasks waiting in a queue",
                                  labels=["queue"])
        pool = GaugeMetricFamily("jaxjudge_warm_pool_ready",
                                 "Warm sandbox containers ready, per grading process",
                                 labels=["worker"])
        pool_size = GaugeMetricFamily("jaxjudge_warm_pool_size",
                                      "Warm pool target size, per grading process",
                                      labels=["worker"])
        oldest = GaugeMetricFamily("jaxjudge_queue_oldest_seconds",
                                   "Seconds the longest-waiting submission of a grading "
                                   "queue has waited since it was published",
                                   labels=["queue"])
        workers = GaugeMetricFamily("jaxjudge_workers", "Live grading processes")
        ready = GaugeMetricFamily("jaxjudge_workers_sandbox_ready",
                                  "Live grading processes whose sandbox is ready and "
                                  "isolates (the workers /readyz counts)")
        try:
            for queue in (INTERACTIVE, BATCH, WEBHOOKS):
                depth.add_metric([queue], svc.redis.llen(queue))
            for queue, seconds in shared.oldest_waiting(svc.redis).items():
                oldest.add_metric([queue], seconds)
            live = shared.workers(svc.redis)
            workers.add_metric([], len(live))
            ready.add_metric([], ready_workers(live,
                                               svc.settings.insecure_unsandboxed_grading))
            for name, state in live.items():
                pool.add_metric([name], state.get("pool_ready", 0))
                pool_size.add_metric([name], state.get("pool_size", 0))
            for phase in shared.PHASES:
                buckets, total = shared.histogram(svc.redis, phase)
                hist = HistogramMetricFamily(
                    f"jaxjudge_grading_{phase}_seconds",
                    f"Seconds spent in the {phase} phase of a grading", buckets=buckets,
                    sum_value=total)
                yield hist
        except RedisError:
            pass
        yield from (depth, oldest, workers, ready, pool, pool_size)
        received = CounterMetricFamily("jaxjudge_submissions_received",
                                       "Submissions stored by the API, batch members included")
        verdicts = CounterMetricFamily("jaxjudge_verdicts", "Reports stored, by verdict",
                                       labels=["verdict"])
        failed = CounterMetricFamily("jaxjudge_deliveries_failed",
                                     "Deliveries given up (failed after their tries, or "
                                     "refused by the address policy), by kind",
                                     labels=["kind"])
        unavailable = CounterMetricFamily("jaxjudge_sandbox_unavailable",
                                          "Gradings and builds the sandbox could not run "
                                          "(postponed, or given up)")
        try:
            total, by_verdict = shared.counts(svc.redis)
            received.add_metric([], total)
            for verdict, count in sorted(by_verdict.items()):
                verdicts.add_metric([verdict], count)
            by_kind, sandbox = shared.failures(svc.redis)
            for kind in sorted({*by_kind, WEBHOOK, LTI_SCORE}):
                failed.add_metric([kind], by_kind.get(kind, 0.0))
            unavailable.add_metric([], sandbox)
        except RedisError:
            return
        yield from (received, verdicts, failed, unavailable)


@bp.get("/metrics")
@operation("Prometheus metrics", tag="health",
           responses={200: ("Prometheus text format", {"type": "string"}, "text/plain")})
def metrics() -> Response:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ServiceCollector(services()))
    return Response(generate_latest(registry), mimetype=CONTENT_TYPE_LATEST.split(";")[0])
