"""What a deployment watches: log lines that name their submission (the API's, a real
worker's, the sweeper's), the metrics it alerts on moving when their event happens
(through the code paths that make them, with real Redis), and the alert rules of
deploy/prometheus/alerts.yaml naming only metrics the API exports."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import yaml
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families
from redis import Redis
from servers import RedisServer, Worker
from service_fixtures import submit, wait_done
from sqlalchemy import update

from judge.catalog import Catalog
from judge.grading import internal_error
from judge.settings import REPO_ROOT
from service import logcontext, metrics
from service.db import utcnow
from service.library import Library
from service.models import Status, Submission
from service.submissions import claim, store
from service.sweeper import sweep
from tests_support import FIXTURE_PROBLEMS
from workers import deliveries, grading
from workers.context import Context

pytestmark = pytest.mark.service
ALERTS = REPO_ROOT / "deploy/prometheus/alerts.yaml"


def scrape(client: FlaskClient) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """/metrics as sample name -> {labels: value}."""
    found: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    text = client.get("/metrics").get_data(as_text=True)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = \
                sample.value
    return found


def value(client: FlaskClient, name: str, **labels: str) -> float:
    return scrape(client).get(name, {}).get(tuple(sorted(labels.items())), 0.0)


def context(app: Flask, **judge: Any) -> Context:
    """A grading or delivery process's context, in this process, with the app's settings
    (and ``judge`` settings changed)."""
    svc = app.extensions["jaxjudge"]
    return Context(settings=svc.settings, judge=svc.judge.model_copy(update=judge),
                   db=svc.db, redis=Redis.from_url(svc.settings.redis_url),
                   library=Library(Catalog(FIXTURE_PROBLEMS), svc.db,
                                   svc.settings.packages_dir), name="test:1")


@pytest.fixture
def named(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """caplog at INFO whose records carry ``submission`` as the processes' handlers do."""
    caplog.set_level(logging.INFO)
    caplog.handler.addFilter(logcontext.SubmissionFilter())
    return caplog


def lines(caplog: pytest.LogCaptureFixture, sid: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if getattr(r, "submission", None) == sid]


@pytest.mark.slow
def test_a_real_worker_names_the_submission_in_its_lines_and_the_wait_is_measured(
        app: Flask, keys: dict[str, str], named: pytest.LogCaptureFixture,
        start_worker: Callable[..., Worker]) -> None:
    """A real worker on the process sandbox (which needs no image: what is logged does
    not depend on the backend), counted as ready where grading without isolation is
    allowed, as /readyz counts it."""
    svc = app.extensions["jaxjudge"]
    svc.settings = svc.settings.model_copy(update={"insecure_unsandboxed_grading": True})
    client = app.test_client()
    sid = submit(client, keys["client"])
    assert lines(named, sid) == [f"submission {sid}: received (problem demo/layout, "
                                 "tenant 1, queue interactive)"]
    time.sleep(1.1)  # no worker yet: it waits
    assert value(client, "jaxjudge_queue_oldest_seconds", queue="interactive") >= 1.0
    assert value(client, "jaxjudge_queue_oldest_seconds", queue="batch") == 0.0
    worker = start_worker("-Q", "interactive,batch", "--concurrency", "1", wait=False,
                          sandbox="process", insecure_unsandboxed_grading=True)
    assert wait_done(client, keys["client"], sid)["verdict"] == "accepted"
    log = worker.log.read_text(errors="replace").splitlines()
    about = [line for line in log if f"submission={sid} " in line]
    assert any(re.search(rf"submission {sid}: claimed by worker \S+:\d+ \(attempt 1, "
                         r"problem demo/layout, queue interactive, task [0-9a-f-]+\)", line)
               for line in about), "\n".join(log)
    assert any(re.search(rf"submission {sid}: accepted in \d+ ms", line) for line in about)
    # Celery's own line about the task carries it too.
    assert any("Task jaxjudge.grade[" in line and "succeeded" in line for line in about)
    assert all("submission=" in line for line in log if line.startswith("[20"))
    assert value(client, "jaxjudge_queue_oldest_seconds", queue="interactive") == 0.0
    assert value(client, "jaxjudge_workers_sandbox_ready") == 1.0


def test_the_sweeper_says_which_grading_it_lost_and_the_submission_waits_again(
        client: FlaskClient, keys: dict[str, str], app: Flask, redis_server: RedisServer,
        named: pytest.LogCaptureFixture) -> None:
    svc = app.extensions["jaxjudge"]
    sid = submit(client, keys["client"])
    redis = redis_server.client()
    metrics.claimed(redis, [sid])  # a worker on another host took it, then died
    with svc.db.session() as s:
        s.execute(update(Submission).where(Submission.id == sid).values(
            status=Status.RUNNING, attempt=1, tries=1, worker="grader-7:4242",
            heartbeat_at=utcnow() - timedelta(minutes=5)))
    assert value(client, "jaxjudge_queue_oldest_seconds", queue="interactive") == 0.0
    plan = sweep(svc.db, svc.celery, redis, svc.settings)
    assert plan.lost == [sid]
    assert f"submission {sid}: grading on grader-7:4242 lost, requeued" in lines(named, sid)
    assert redis.zscore(metrics.WAITING_KEY + "interactive", sid) is not None  # published again
    time.sleep(0.2)
    assert value(client, "jaxjudge_queue_oldest_seconds", queue="interactive") > 0.1


def test_the_sweeper_mends_the_waiting_index_after_redis_lost_writes(
        client: FlaskClient, keys: dict[str, str], app: Flask,
        redis_server: RedisServer) -> None:
    svc = app.extensions["jaxjudge"]
    redis = redis_server.client()
    first, second = submit(client, keys["client"]), submit(client, keys["client"])
    with svc.db.session() as s:  # published ten minutes ago
        s.execute(update(Submission).where(Submission.id == first)
                  .values(queued_at=utcnow() - timedelta(minutes=10)))
    redis.delete(metrics.WAITING_KEY + "interactive")  # the additions lost
    metrics.wait_since(redis, "batch", {"deleted-long-ago": time.time() - 86400})  # a removal lost
    assert value(client, "jaxjudge_queue_oldest_seconds", queue="batch") > 86000
    sweep(svc.db, svc.celery, redis, svc.settings)
    assert value(client, "jaxjudge_queue_oldest_seconds", queue="batch") == 0.0
    age = value(client, "jaxjudge_queue_oldest_seconds", queue="interactive")
    assert 590 < age < 700
    assert {m for m, _ in metrics.waiting_page(redis, "interactive", 0, 10)} == {first, second}


def test_a_grading_the_sandbox_cannot_run_is_counted_and_waits_no_more(
        client: FlaskClient, keys: dict[str, str], app: Flask,
        named: pytest.LogCaptureFixture) -> None:
    """The grading body, in this process, with a Docker engine that is not there."""
    sid = submit(client, keys["client"])
    ctx = context(app, sandbox="docker", docker_host="unix:///nonexistent.sock")
    assert value(client, "jaxjudge_sandbox_unavailable_total") == 0.0
    assert grading.run(ctx, app.extensions["jaxjudge"].celery, sid) == "postponed"
    assert value(client, "jaxjudge_sandbox_unavailable_total") == 1.0
    assert value(client, "jaxjudge_queue_oldest_seconds", queue="interactive") == 0.0
    said = lines(named, sid)
    assert any(line.startswith(f"submission {sid}: claimed by worker test:1") for line in said)
    assert any("the sandbox is unavailable (1 of" in line for line in said)  # workers/retry.py
    assert any(line.startswith(f"submission {sid}: postponed after") for line in said)


class Refusing(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(500)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    server.shutdown()


def test_a_webhook_given_up_is_counted_by_kind(
        keys: dict[str, str], app: Flask, receiver: str,
        named: pytest.LogCaptureFixture) -> None:
    svc = app.extensions["jaxjudge"]
    svc.settings = svc.settings.model_copy(update={"webhook_allow": ["127.0.0.1"],
                                                   "webhook_max_attempts": 2})
    client = app.test_client()
    sid = submit(client, keys["client"], callback_url=receiver)
    taken = claim(svc.db, sid, stale_after=30)
    assert taken is not None
    stored = store(svc.db, sid, taken.attempt, internal_error("demo/layout", "x", svc.judge))
    assert stored is not None and stored.delivery is not None
    ctx = context(app)
    assert value(client, "jaxjudge_deliveries_failed_total", kind="webhook") == 0.0
    assert deliveries.attempt(ctx, stored.delivery, 0) is not None  # 500: tried again
    assert value(client, "jaxjudge_deliveries_failed_total", kind="webhook") == 0.0
    assert deliveries.attempt(ctx, stored.delivery, 1) is None  # the last try: given up
    assert value(client, "jaxjudge_deliveries_failed_total", kind="webhook") == 1.0
    assert value(client, "jaxjudge_deliveries_failed_total", kind="lti-score") == 0.0
    assert any(f"of submission {sid} failed after try 2" in line
               for line in lines(named, sid))


def exported(client: FlaskClient) -> set[str]:
    """Every series name a scrape of /metrics can show: each family's samples, a
    counter's ``_total``, a histogram's ``_bucket``, ``_sum`` and ``_count``."""
    names: set[str] = set()
    for family in text_string_to_metric_families(client.get("/metrics").get_data(as_text=True)):
        names |= {sample.name for sample in family.samples}
        if family.type == "counter":
            names.add(f"{family.name}_total")
        elif family.type == "histogram":
            names |= {f"{family.name}{suffix}" for suffix in ("_bucket", "_sum", "_count")}
        else:
            names.add(family.name)
    return names


def test_every_alert_is_a_rule_over_metrics_the_api_exports(client: FlaskClient) -> None:
    doc = yaml.safe_load(ALERTS.read_text())
    rules = [rule for group in doc["groups"] for rule in group["rules"]]
    assert {rule["alert"] for rule in rules} >= {
        "JaxjudgeInteractiveQueueTooOld", "JaxjudgeBatchQueueTooOld", "JaxjudgeNoWorkers",
        "JaxjudgeSandboxUnavailable", "JaxjudgeDeliveriesFailing",
        "JaxjudgeInternalErrorsRising", "JaxjudgeWarmPoolDry"}
    names = exported(client)
    assert "jaxjudge_queue_oldest_seconds" in names
    for rule in rules:
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule
        assert rule["labels"]["severity"] in ("critical", "warning")
        assert rule["annotations"]["summary"]
        used = set(re.findall(r"\bjaxjudge_[a-z0-9_]+", rule["expr"]))
        assert used and used <= names, (rule["alert"], used - names)
