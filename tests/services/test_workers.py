"""Real worker processes, real Redis, real Docker sandboxes: grading end to end and
what happens when a worker is killed, Redis restarts, the broker is away or the Docker
engine restarts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from servers import RedisServer, Sweeper, Worker, wait_for
from service_fixtures import auth, submit, wait_done
from sqlalchemy import select

from judge.settings import REPO_ROOT
from service.db import utcnow
from service.liveness import pid_alive
from service.models import Grading, Submission, Tenant
from service.settings import ServiceSettings
from service.webhooks import ID_HEADER, verify
from tests_support import LAYOUT_GOOD as GOOD
from tests_support import LAYOUT_WRONG as WRONG

pytestmark = [pytest.mark.service, pytest.mark.slow]
BROKER_DOWN_ATTEMPTS = 3  # the broker is away for this many reconnection attempts of each worker
SLOW = "import time\n" + GOOD.replace("    return", "    time.sleep(0.8)\n    return")


def gradings(app: Flask, sid: str) -> dict[int, str | None]:
    with app.extensions["jaxjudge"].db.session() as s:
        return dict(s.execute(select(Grading.attempt, Grading.outcome)
                              .where(Grading.submission_id == sid)
                              .order_by(Grading.attempt)).all())


def test_submissions_are_graded_with_the_right_verdicts(
        client: FlaskClient, keys: dict[str, str], app: Flask,
        start_worker: Callable[..., Worker]) -> None:
    start_worker("-Q", "interactive,batch", "--concurrency", "1")
    good, wrong = submit(client, keys["client"]), submit(client, keys["client"], WRONG)
    assert wait_done(client, keys["client"], good)["verdict"] == "accepted"
    report = wait_done(client, keys["client"], wrong)["report"]
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
        start_worker: Callable[..., Worker], start_sweeper: Callable[..., Sweeper]) -> None:
    start_sweeper()
    first = start_worker("-Q", "interactive,batch", "--concurrency", "1")
    sid = submit(client, keys["client"], SLOW)
    wait_for(lambda: client.get(f"/v1/submissions/{sid}", headers=auth(keys["client"]))
             .get_json()["status"] == "running", 60, "grading to start")
    first.kill9()  # main process and pool child, mid-grading
    assert client.get(f"/v1/submissions/{sid}", headers=auth(keys["client"])).get_json()[
        "status"] == "running"
    start_worker("-Q", "interactive,batch", "--concurrency", "1")
    body = wait_done(client, keys["client"], sid)
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
    verdicts = [wait_done(client, keys["client"], sid)["verdict"] for sid in ids]
    assert verdicts == ["wrong_answer", "accepted", "wrong_answer", "accepted"]


def test_a_submission_taken_while_the_broker_was_down_is_queued_when_it_returns(
        client: FlaskClient, keys: dict[str, str], redis_server: RedisServer,
        start_worker: Callable[..., Worker], start_sweeper: Callable[..., Sweeper]) -> None:
    start_sweeper()
    start_worker("-Q", "interactive,batch", "--concurrency", "1")
    redis_server.stop()
    try:
        r = client.post("/v1/submissions", json={"problem": "demo/layout", "code": GOOD},
                        headers=auth(keys["client"]))
        assert r.status_code == 202 and r.get_json()["queued_at"] is None
    finally:
        redis_server.start()
    assert wait_done(client, keys["client"], r.get_json()["id"])["verdict"] == "accepted"


def test_interactive_submissions_go_ahead_of_batch_work(
        client: FlaskClient, keys: dict[str, str], app: Flask,
        start_worker: Callable[..., Worker]) -> None:
    batch = client.post("/v1/batches", headers=auth(keys["instructor"]), json={
        "problem": "demo/layout",
        "submissions": [{"student_id": f"s{i}", "code": GOOD} for i in range(5)]})
    assert batch.status_code == 202
    sid = submit(client, keys["client"])
    start_worker("-Q", "interactive,batch", "--concurrency", "1")
    wait_done(client, keys["client"], sid)
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


def failed_reconnects(worker: Worker) -> int:
    """The times the worker's consumer has tried to reach the broker and failed."""
    return worker.log.read_text(errors="replace").count("consumer: Cannot connect to")


def retry_due(app: Flask, sid: str) -> bool:
    """A try of the submission's webhook has failed, and the next one is due."""
    with app.extensions["jaxjudge"].db.session() as s:
        row = s.get(Submission, sid)
        hook = row.delivery if row is not None else None
        return bool(hook and hook.attempts and hook.due_at and hook.due_at <= utcnow())


def webhook_over(client: FlaskClient, key: str, sid: str) -> dict[str, Any]:
    """The submission's webhook state once its delivery is no longer pending (the receiver
    has its call a moment before the worker records the answer)."""
    def over() -> dict[str, Any] | None:
        state: dict[str, Any] = client.get(f"/v1/submissions/{sid}",
                                           headers=auth(key)).get_json()["webhook"]
        return state if state["status"] != "pending" else None

    found: dict[str, Any] = wait_for(over, 120, f"the webhook of {sid} delivered or ended")
    return found


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
    start_worker("-Q", "webhooks", "--pool", "threads", webhook_allow=["127.0.0.1"])
    Receiver.fail_first = {"/hook": 2}
    sid = submit(client, keys["client"], callback_url=f"{receiver}/hook",
                 metadata={"lti": "abc"})
    webhook_over(client, keys["client"], sid)  # its last try answered and recorded
    with app.extensions["jaxjudge"].db.session() as s:
        secret = s.scalar(select(Tenant.webhook_secret).where(Tenant.name == "course-a"))
        row = s.get(Submission, sid)
        assert row is not None and row.delivery is not None
        assert (row.delivery.status, row.delivery.attempts) == ("delivered", 3)
    assert len(Receiver.calls) == 3
    assert {h[ID_HEADER] for _, h, _ in Receiver.calls} == {row.delivery.id}  # one delivery id
    for _, headers, body in Receiver.calls:  # each try signed afresh, Standard Webhooks
        assert secret and verify(secret, body, headers)
        assert not verify(secret, body + b" ", headers)
    _, _, body = Receiver.calls[-1]
    event = json.loads(body)
    assert event["event"] == "submission.done" and event["tenant"] == "course-a"
    assert event["submission"]["report"]["verdict"] == "accepted"
    assert event["submission"]["metadata"] == {"lti": "abc"}


def test_connected_workers_ride_out_a_redis_restart(
        service_settings: ServiceSettings, keys: dict[str, str], app: Flask,
        redis_server: RedisServer, receiver: str,
        start_worker: Callable[..., Worker], start_sweeper: Callable[..., Sweeper]) -> None:
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
    webhooks = start_worker("-Q", "webhooks", "--pool", "threads", **overrides)
    sweeper = start_sweeper(**overrides)
    held = submit(client, keys["client"], callback_url=f"{receiver}/flaky")
    wait_for(lambda: paths() == ["/flaky"], 60, "the first delivery to fail")
    running = submit(client, keys["client"], SLOW)
    queued = [submit(client, keys["client"], GOOD if i % 2 else WRONG) for i in range(2)]
    wait_for(lambda: client.get(f"/v1/submissions/{running}", headers=auth(keys["client"]))
             .get_json()["status"] == "running", 60, "grading to start")
    assert paths() == ["/flaky"]  # the retry is still held for its countdown
    redis_server.stop(kill=True)
    wait_for(lambda: all(failed_reconnects(w) >= BROKER_DOWN_ATTEMPTS for w in (grader, webhooks))
             and retry_due(app, held), 120,
             "each worker's reconnection attempts and the held retry's due time")
    redis_server.start()
    assert wait_done(client, keys["client"], running)["verdict"] == "accepted"
    assert [wait_done(client, keys["client"], sid)["verdict"] for sid in queued] == [
        "wrong_answer", "accepted"]
    later = submit(client, keys["client"], callback_url=f"{receiver}/ok")  # after the restart
    assert wait_done(client, keys["client"], later)["verdict"] == "accepted"
    wait_for(lambda: "/ok" in paths() and paths().count("/flaky") == 2, 60,
             "the later webhook and the held retry delivered")
    for process in (grader, webhooks, sweeper):
        assert process.proc.poll() is None, process.log.read_text()[-3000:]
    assert gradings(app, later) == {1: "stored"}
    state = webhook_over(client, keys["client"], held)
    assert state["status"] == "delivered" and state["attempts"] == 2
    rounds = sweeper.rounds()  # six more, longer apart than the grace before a resend
    wait_for(lambda: sweeper.rounds() >= rounds + 6, 60, "six more sweeps")
    assert paths().count("/flaky") == 2  # nothing is resent once delivered


def engine_answers() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0


def stop_engine() -> None:
    """SIGTERM to dockerd, as an operator stopping it would; until it is gone."""
    pid = int(Path("/var/run/docker.pid").read_text())
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not pid_alive(pid), 120, "dockerd to stop", every=0.2)


def start_engine() -> None:
    """As docker/engine.sh does (it is what it runs: `nohup dockerd --bridge=none
    --iptables=false`), in a session of its own so that it outlives the test."""
    if not engine_answers():
        subprocess.run(["bash", str(REPO_ROOT / "docker" / "engine.sh")], check=True,
                       start_new_session=True, timeout=120, stdout=subprocess.DEVNULL)
    wait_for(engine_answers, 60, "docker info to answer", every=0.5)


def test_an_engine_restart_delays_gradings_and_never_becomes_their_verdict(
        service_settings: ServiceSettings, keys: dict[str, str], app: Flask, receiver: str,
        start_worker: Callable[..., Worker], start_sweeper: Callable[..., Sweeper]) -> None:
    """The real Docker engine stopped under a worker with a warm pool, and started again:
    what is graded meanwhile finds the sandbox unavailable and goes back to the queue with
    backoff (a failed grading each time, no verdict, no webhook), and is graded with its
    right verdict once the engine answers; its webhook fires once, with that verdict."""
    overrides: dict[str, Any] = {"webhook_allow": ["127.0.0.1"], "sandbox_retry_seconds": 0.5,
                                 "sandbox_attempts": 50}
    app.extensions["jaxjudge"].settings = service_settings.model_copy(update=overrides)
    client = app.test_client()
    grader = start_worker("-Q", "interactive,batch", "--concurrency", "1", **overrides)
    start_worker("-Q", "webhooks", "--pool", "threads", **overrides)
    start_sweeper(**overrides)
    try:
        stop_engine()
        good = submit(client, keys["client"], callback_url=f"{receiver}/hook")
        wrong = submit(client, keys["client"], WRONG)

        def failed(sid: str) -> list[int]:
            return [attempt for attempt, outcome in gradings(app, sid).items()
                    if outcome == "failed"]

        wait_for(lambda: len(failed(good)) >= 2 and len(failed(wrong)) >= 2, 120,
                 "gradings to find the sandbox unavailable")
        for sid in (good, wrong):
            body = client.get(f"/v1/submissions/{sid}", headers=auth(keys["client"])).get_json()
            assert body["status"] != "done" and body["verdict"] is None, body
        assert Receiver.calls == []  # a requeue sends no webhook
    finally:
        start_engine()
    assert wait_done(client, keys["client"], good, timeout=240)["verdict"] == "accepted"
    body = wait_done(client, keys["client"], wrong, timeout=240)
    assert (body["verdict"], body["report"]["sandbox"]) == ("wrong_answer", "docker")
    for sid in (good, wrong):
        outcomes = list(gradings(app, sid).values())
        assert outcomes[-1] == "stored" and set(outcomes[:-1]) == {"failed"}, outcomes
        assert len(outcomes) >= 3
        with app.extensions["jaxjudge"].db.session() as s:
            errors = list(s.scalars(select(Grading.error).where(
                Grading.submission_id == sid, Grading.outcome == "failed")))
        assert all(errors), errors  # each failed grading says why
    wait_for(lambda: paths() == ["/hook"], 60, "the webhook")
    event = json.loads(Receiver.calls[0][2])
    assert event["submission"]["verdict"] == "accepted"
    assert grader.proc.poll() is None, grader.log.read_text()[-3000:]
