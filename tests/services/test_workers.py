"""Real worker processes, real Redis, real Docker sandboxes: grading end to end and
what happens when a worker is killed, Redis restarts or the broker is away."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from servers import RedisServer, Worker, wait_for
from service_fixtures import auth
from sqlalchemy import select

from service.models import Grading, Submission, Tenant
from service.settings import ServiceSettings
from service.webhooks import verify
from tests_support import LAYOUT_GOOD as GOOD
from tests_support import LAYOUT_WRONG as WRONG

pytestmark = [pytest.mark.service, pytest.mark.slow]
BROKER_DOWN_SECONDS = 12  # several of the worker's reconnection attempts
SLOW = "import time\n" + GOOD.replace("    return", "    time.sleep(0.8)\n    return")


def submit(client: FlaskClient, key: str, code: str = GOOD, **body: Any) -> str:
    r = client.post("/v1/submissions", json={"problem": "demo/layout", "code": code, **body},
                    headers=auth(key))
    assert r.status_code in (200, 202), r.get_json()
    sid: str = r.get_json()["id"]
    return sid


def done(client: FlaskClient, key: str, sid: str, timeout: float = 120) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        body = client.get(f"/v1/submissions/{sid}?wait=2", headers=auth(key)).get_json()
        return body if body["status"] == "done" else None

    found: dict[str, Any] = wait_for(check, timeout, f"submission {sid} done")
    return found


def gradings(app: Flask, sid: str) -> dict[int, str | None]:
    with app.extensions["jaxjudge"].db.session() as s:
        return dict(s.execute(select(Grading.attempt, Grading.outcome)
                              .where(Grading.submission_id == sid)).all())


def test_submissions_are_graded_with_the_right_verdicts(
        client: FlaskClient, keys: dict[str, str], app: Flask,
        start_worker: Callable[..., Worker]) -> None:
    start_worker("-Q", "interactive,batch", "--concurrency", "1")
    good, wrong = submit(client, keys["client"]), submit(client, keys["client"], WRONG)
    assert done(client, keys["client"], good)["verdict"] == "accepted"
    report = done(client, keys["client"], wrong)["report"]
    assert report["verdict"] == "wrong_answer" and report["sandbox"] == "docker"
    assert gradings(app, good) == {1: "stored"}
    ready = client.get("/readyz").get_json()
    assert ready["status"] == "ok", ready
    text = client.get("/metrics").get_data(as_text=True)
    assert "jaxjudge_grading_tests_seconds_count 2.0" in text
    assert 'jaxjudge_verdicts_total{verdict="accepted"} 1.0' in text
    assert 'jaxjudge_warm_pool_size{worker=' in text


def test_a_worker_killed_mid_grading_is_replaced_and_the_report_stored_once(
        client: FlaskClient, keys: dict[str, str], app: Flask,
        start_worker: Callable[..., Worker]) -> None:
    first = start_worker("-Q", "interactive,batch", "--concurrency", "1")
    sid = submit(client, keys["client"], SLOW)
    wait_for(lambda: client.get(f"/v1/submissions/{sid}", headers=auth(keys["client"]))
             .get_json()["status"] == "running", 60, "grading to start")
    first.kill9()  # main process and pool child, mid-grading
    assert client.get(f"/v1/submissions/{sid}", headers=auth(keys["client"])).get_json()[
        "status"] == "running"
    start_worker("-Q", "interactive,batch", "--concurrency", "1")
    body = done(client, keys["client"], sid)
    assert body["verdict"] == "accepted" and body["attempt"] == 2
    assert gradings(app, sid) == {1: "lost", 2: "stored"}


def test_queued_submissions_survive_a_redis_restart(
        client: FlaskClient, keys: dict[str, str], redis_server: RedisServer,
        start_worker: Callable[..., Worker]) -> None:
    ids = [submit(client, keys["client"], GOOD if i % 2 else WRONG) for i in range(4)]
    assert redis_server.client().llen("interactive") == 4
    redis_server.stop(kill=True)
    redis_server.start()
    assert redis_server.client().llen("interactive") == 4  # the append-only file kept them
    start_worker("-Q", "interactive,batch", "--concurrency", "1")
    verdicts = [done(client, keys["client"], sid)["verdict"] for sid in ids]
    assert verdicts == ["wrong_answer", "accepted", "wrong_answer", "accepted"]


def test_a_submission_taken_while_the_broker_was_down_is_queued_when_it_returns(
        client: FlaskClient, keys: dict[str, str], redis_server: RedisServer,
        start_worker: Callable[..., Worker]) -> None:
    start_worker("-Q", "interactive,batch", "--concurrency", "1")
    redis_server.stop()
    try:
        r = client.post("/v1/submissions", json={"problem": "demo/layout", "code": GOOD},
                        headers=auth(keys["client"]))
        assert r.status_code == 202 and r.get_json()["queued_at"] is None
    finally:
        redis_server.start()
    assert done(client, keys["client"], r.get_json()["id"])["verdict"] == "accepted"


def test_interactive_submissions_go_ahead_of_batch_work(
        client: FlaskClient, keys: dict[str, str], app: Flask,
        start_worker: Callable[..., Worker]) -> None:
    batch = client.post("/v1/batches", headers=auth(keys["instructor"]), json={
        "problem": "demo/layout",
        "submissions": [{"student_id": f"s{i}", "code": GOOD} for i in range(5)]})
    assert batch.status_code == 202
    sid = submit(client, keys["client"])
    start_worker("-Q", "interactive,batch", "--concurrency", "1")
    done(client, keys["client"], sid)
    wait_for(lambda: client.get(batch.headers["Location"], headers=auth(keys["instructor"]))
             .get_json()["done"], 120, "the batch")
    with app.extensions["jaxjudge"].db.session() as s:
        order = [r for (r,) in s.execute(select(Submission.queue)
                                         .order_by(Submission.started_at))]
    assert order.index("interactive") == 0, order


class Receiver(BaseHTTPRequestHandler):
    """A webhook receiver on 127.0.0.1: records every call, and answers 500 to the first
    ``fail_first[path]`` calls to a path, 200 otherwise."""

    calls: list[tuple[str, dict[str, str], bytes]] = []
    fail_first: dict[str, int] = {}

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.calls.append((self.path, dict(self.headers), body))
        so_far = paths().count(self.path)
        self.send_response(500 if so_far <= Receiver.fail_first.get(self.path, 0) else 200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def paths() -> list[str]:
    """The paths the receiver was called on, in order."""
    return [path for path, _, _ in Receiver.calls]


@pytest.fixture
def receiver() -> Iterator[str]:
    """The receiver's base URL."""
    Receiver.calls, Receiver.fail_first = [], {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_the_report_is_posted_signed_and_retried(
        service_settings: ServiceSettings, keys: dict[str, str], app: Flask, receiver: str,
        start_worker: Callable[..., Worker]) -> None:
    app.extensions["jaxjudge"].settings = service_settings.model_copy(
        update={"webhook_allow": ["127.0.0.1"]})
    client = app.test_client()
    start_worker("-Q", "interactive,batch", "--concurrency", "1", webhook_allow=["127.0.0.1"])
    start_worker("-Q", "webhooks", "--pool", "threads", "--without-sweeper",
                 webhook_allow=["127.0.0.1"])
    Receiver.fail_first = {"/hook": 2}
    sid = submit(client, keys["client"], callback_url=f"{receiver}/hook",
                 metadata={"lti": "abc"})
    wait_for(lambda: len(Receiver.calls) >= 3, 120, "three deliveries")
    time.sleep(0.5)
    with app.extensions["jaxjudge"].db.session() as s:
        secret = s.scalar(select(Tenant.webhook_secret).where(Tenant.name == "course-a"))
        row = s.get(Submission, sid)
        assert row is not None
        assert (row.webhook_status, row.webhook_attempts) == ("delivered", 3)
    assert len(Receiver.calls) == 3
    assert len({h["X-Jaxjudge-Delivery"] for _, h, _ in Receiver.calls}) == 1  # one delivery id
    _, headers, body = Receiver.calls[-1]
    assert secret and verify(secret, body, headers["X-Jaxjudge-Signature"])
    assert not verify(secret, body + b" ", headers["X-Jaxjudge-Signature"])
    event = json.loads(body)
    assert event["event"] == "submission.done" and event["tenant"] == "course-a"
    assert event["submission"]["report"]["verdict"] == "accepted"
    assert event["submission"]["metadata"] == {"lti": "abc"}


def test_connected_workers_ride_out_a_redis_restart(
        service_settings: ServiceSettings, keys: dict[str, str], app: Flask,
        redis_server: RedisServer, receiver: str,
        start_worker: Callable[..., Worker]) -> None:
    """Redis killed and restarted under a grading worker that is grading one submission
    with more queued, and under a webhook worker holding a retry for its countdown (the
    case that made kombu 5.7 exit for good): both processes survive and reconnect,
    everything is graded, the held retry is resent by the sweeper once it is overdue and
    delivered once, and work published after the restart is graded and delivered."""
    Receiver.fail_first = {"/flaky": 1}
    overrides: dict[str, Any] = {"webhook_allow": ["127.0.0.1"], "webhook_backoff_seconds": 8}
    app.extensions["jaxjudge"].settings = service_settings.model_copy(update=overrides)
    client = app.test_client()
    grader = start_worker("-Q", "interactive,batch", "--concurrency", "1", **overrides)
    webhooks = start_worker("-Q", "webhooks", "--pool", "threads", "--without-sweeper",
                            **overrides)
    held = submit(client, keys["client"], callback_url=f"{receiver}/flaky")
    wait_for(lambda: paths() == ["/flaky"], 60, "the first delivery to fail")
    running = submit(client, keys["client"], SLOW)
    queued = [submit(client, keys["client"], GOOD if i % 2 else WRONG) for i in range(2)]
    wait_for(lambda: client.get(f"/v1/submissions/{running}", headers=auth(keys["client"]))
             .get_json()["status"] == "running", 60, "grading to start")
    assert paths() == ["/flaky"]  # the retry is still held for its countdown
    redis_server.stop(kill=True)
    time.sleep(BROKER_DOWN_SECONDS)
    redis_server.start()
    assert done(client, keys["client"], running)["verdict"] == "accepted"
    assert [done(client, keys["client"], sid)["verdict"] for sid in queued] == [
        "wrong_answer", "accepted"]
    later = submit(client, keys["client"], callback_url=f"{receiver}/ok")  # after the restart
    assert done(client, keys["client"], later)["verdict"] == "accepted"
    wait_for(lambda: "/ok" in paths() and paths().count("/flaky") == 2, 60,
             "the later webhook and the held retry delivered")
    for worker in (grader, webhooks):
        assert worker.proc.poll() is None, worker.log.read_text()[-3000:]
    assert gradings(app, later) == {1: "stored"}
    state = client.get(f"/v1/submissions/{held}", headers=auth(keys["client"])).get_json()
    assert state["webhook"]["status"] == "delivered" and state["webhook"]["attempts"] == 2
    time.sleep(3)  # several sweeps: nothing is resent once delivered
    assert paths().count("/flaky") == 2
