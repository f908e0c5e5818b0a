"""``/healthz`` (the process answers), ``/readyz`` (it can do its job: database, broker,
a live worker with a ready sandbox) and ``/metrics`` (Prometheus)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from flask import Blueprint, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import (
    CollectorRegistry,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from redis.exceptions import RedisError
from sqlalchemy import func, select, text

from api.app import Services, services
from api.spec import operation
from service import metrics as shared
from service.models import Submission
from service.queue import BATCH, INTERACTIVE, WEBHOOKS
from service.wire import Check, Health

bp = Blueprint("health", __name__)


@bp.get("/healthz")
@operation("Liveness: the API process answers", tag="health",
           responses={200: Health})
def healthz() -> Any:
    return Health(status="ok").model_dump(mode="json")


def readiness(svc: Services) -> dict[str, Check]:
    checks: dict[str, Check] = {}
    try:
        with svc.db.session() as s:
            s.execute(text("SELECT 1"))
        checks["database"] = Check(ok=True)
    except Exception as exc:
        checks["database"] = Check(ok=False, detail=str(exc).splitlines()[0][:200])
    try:
        svc.redis.ping()
        checks["broker"] = Check(ok=True)
        live = shared.workers(svc.redis)
        checks["workers"] = Check(ok=bool(live), detail=f"{len(live)} grading process(es)")
        ready = [w for w in live.values() if w.get("sandbox_ready")]
        checks["sandbox"] = Check(ok=bool(ready), detail=f"{len(ready)} with a ready sandbox")
    except RedisError as exc:
        checks["broker"] = Check(ok=False, detail=str(exc)[:200])
        checks["workers"] = Check(ok=False, detail="unknown: the broker is down")
        checks["sandbox"] = Check(ok=False, detail="unknown: the broker is down")
    return checks


@bp.get("/readyz")
@operation("Readiness: database, broker, a live worker and a ready sandbox", tag="health", responses={200: Health, 503: ("Not ready", Health, "application/json")})
def readyz() -> Any:
    checks = readiness(services())
    ok = all(c.ok for c in checks.values())
    body = Health(status="ok" if ok else "unavailable", checks=checks)
    return body.model_dump(mode="json"), 200 if ok else 503


class ServiceCollector:
    """Read at scrape time from the database and Redis, so every API process reports the
    same numbers whichever one is scraped."""

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
        workers = GaugeMetricFamily("jaxjudge_workers", "Live grading processes")
        try:
            for queue in (INTERACTIVE, BATCH, WEBHOOKS):
                depth.add_metric([queue], svc.redis.llen(queue))
            live = shared.workers(svc.redis)
            workers.add_metric([], len(live))
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
        yield from (depth, workers, pool, pool_size)
        by_verdict = GaugeMetricFamily("jaxjudge_submissions",
                                       "Submissions by status and verdict",
                                       labels=["status", "verdict"])
        with svc.db.session() as s:
            rows = s.execute(select(Submission.status, Submission.verdict, func.count())
                             .group_by(Submission.status, Submission.verdict)).all()
        for status, verdict, count in rows:
            by_verdict.add_metric([status, verdict or ""], count)
        yield by_verdict


@bp.get("/metrics")
@operation("Prometheus metrics", tag="health",
           responses={200: ("Prometheus text format", {"type": "string"}, "text/plain")})
def metrics() -> Response:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ServiceCollector(services()))
    return Response(generate_latest(registry), mimetype=CONTENT_TYPE_LATEST.split(";")[0])
