"""/readyz and /metrics: readiness needs a worker whose sandbox isolates and never shows
a driver's error text; metrics are counters kept in Redis, read without the database."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from servers import RedisServer, free_port
from service_fixtures import auth, make_settings

from judge.settings import Settings
from service import metrics
from tests_support import LAYOUT_GOOD

pytestmark = pytest.mark.service


def announce(redis_server: RedisServer, name: str, **state: Any) -> None:
    """A grading process's heartbeat, as workers/context.py writes it."""
    metrics.publish_worker(redis_server.client(), name, {
        "sandbox": "docker", "pool_size": 1, "pool_ready": 1, "sandbox_ready": True, **state},
        ttl=60)


def test_ready_only_with_a_worker_whose_sandbox_isolates(
        client: FlaskClient, app: Flask, redis_server: RedisServer, database_url: str,
        judge_settings: Settings) -> None:
    from app import create_app

    announce(redis_server, "grader@a:1", sandbox="process", isolated=False)
    r = client.get("/readyz")
    assert r.status_code == 503 and r.get_json()["checks"]["sandbox"]["ok"] is False
    assert "none that isolates" in r.get_json()["checks"]["sandbox"]["detail"]
    trusting = create_app(make_settings(database_url, redis_server.url,
                                        insecure_unsandboxed_grading=True), judge_settings)
    r = trusting.test_client().get("/readyz")
    assert r.status_code == 200, r.get_json()
    assert "does NOT isolate" in r.get_json()["checks"]["sandbox"]["detail"]
    announce(redis_server, "grader@b:1", isolated=True)
    r = client.get("/readyz")
    assert r.status_code == 200 and r.get_json()["status"] == "ok", r.get_json()


def test_readyz_names_no_database_error_text(redis_server: RedisServer,
                                             judge_settings: Settings) -> None:
    from app import create_app

    port = free_port()  # nothing listens there
    url = f"postgresql+psycopg://jaxjudge:hunter2@127.0.0.1:{port}/nowhere"
    app = create_app(make_settings(url, redis_server.url), judge_settings)
    r = app.test_client().get("/readyz")
    assert r.status_code == 503
    assert r.get_json()["checks"]["database"] == {"ok": False,
                                                  "detail": "the database is not answering"}
    assert str(port) not in r.get_data(as_text=True)


def test_metrics_are_counters_read_without_the_database(
        client: FlaskClient, keys: dict[str, str], app: Flask, redis_server: RedisServer,
        sql: list[str]) -> None:
    for _ in range(2):
        r = client.post("/v1/submissions", json={"problem": "demo/layout", "code": LAYOUT_GOOD},
                        headers=auth(keys["client"]))
        assert r.status_code == 202
    r = client.post("/v1/batches", headers=auth(keys["instructor"]), json={
        "problem": "demo/layout",
        "submissions": [{"student_id": s, "code": LAYOUT_GOOD} for s in ("a", "b", "c")]})
    assert r.status_code == 202
    metrics.count_verdict(redis_server.client(), "accepted")  # as a worker does
    metrics.count_verdict(redis_server.client(), "wrong_answer")
    metrics.count_verdict(redis_server.client(), "accepted")
    sql.clear()
    text = client.get("/metrics").get_data(as_text=True)
    assert sql == []  # a scrape never asks the database
    assert "jaxjudge_submissions_received_total 5.0" in text
    assert 'jaxjudge_verdicts_total{verdict="accepted"} 2.0' in text
    assert 'jaxjudge_verdicts_total{verdict="wrong_answer"} 1.0' in text
