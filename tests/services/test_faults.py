"""Faults of the judge and of its setup, with real worker processes: a worker whose sandbox
does not isolate refuses to start; a problem package that cannot be loaded ends its
submissions once, with a reason an operator can act on."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from servers import RedisServer, Sweeper, Worker, wait_for
from service_fixtures import auth, submit, wait_done
from sqlalchemy import select

from service import metrics
from service.models import Grading
from tests_support import FIXTURE_PROBLEMS

pytestmark = [pytest.mark.service, pytest.mark.slow]
GRADING = ("-Q", "interactive,batch", "--concurrency", "1")


def refused(worker: Worker) -> str:
    """The worker exits with status 1 on its own; its log's reason line."""
    assert worker.proc.wait(90) == 1
    log = worker.log.read_text()
    assert "Traceback" not in log, log
    [line] = [line for line in log.splitlines() if "refusing to start" in line]
    return line


@pytest.mark.parametrize(("overrides", "reason"), [
    ({"sandbox": "process"}, "the process sandbox does not isolate"),
    ({"sandbox": "auto", "docker_host": "unix:///nonexistent.sock"},
     "JAXJUDGE_SANDBOX=auto and no Docker engine answers at unix:///nonexistent.sock"),
])
def test_a_worker_whose_sandbox_does_not_isolate_refuses_to_start(
        start_worker: Callable[..., Worker], overrides: dict[str, str], reason: str) -> None:
    line = refused(start_worker(*GRADING, wait=False, **overrides))
    assert reason in line


def test_with_the_insecure_setting_it_starts_grades_and_says_it_does_not_isolate(
        client: FlaskClient, keys: dict[str, str], redis_server: RedisServer,
        start_worker: Callable[..., Worker]) -> None:
    worker = start_worker(*GRADING, wait=False, sandbox="process",
                          insecure_unsandboxed_grading=True)
    body = wait_done(client, keys["client"], submit(client, keys["client"]))
    assert (body["verdict"], body["report"]["sandbox"]) == ("accepted", "process")
    states = wait_for(lambda: metrics.workers(redis_server.client()), 30, "an announcement")
    assert [state["isolated"] for state in states.values()] == [False]
    assert "GRADING WITHOUT ISOLATION" in worker.log.read_text()


def test_a_webhook_worker_needs_no_sandbox(start_worker: Callable[..., Worker]) -> None:
    worker = start_worker("-Q", "webhooks", "--pool", "threads", wait=False,
                          sandbox="process")
    wait_for(lambda: "ready." in worker.log.read_text(), 60, "the webhook worker")
    assert worker.proc.poll() is None


def broken_copy(tmp_path: Path) -> Path:
    """The fixture problems, with demo/layout's problem.yaml malformed and a hidden test
    of demo/sharded changed after its data hash was taken."""
    problems = tmp_path / "problems"
    shutil.copytree(FIXTURE_PROBLEMS, problems)
    (problems / "demo/layout/problem.yaml").write_text("title: [unclosed\n")
    data = problems / "demo/sharded/data/hidden/01-wide.json"
    data.write_text(data.read_text().replace("}", " }", 1))
    return problems


def test_a_package_that_cannot_be_loaded_ends_its_submissions_once(
        client: FlaskClient, keys: dict[str, str], app: Flask, tmp_path: Path,
        start_worker: Callable[..., Worker], start_sweeper: Callable[..., Sweeper]) -> None:
    start_worker(*GRADING, problems_dir=broken_copy(tmp_path))
    sweeper = start_sweeper()
    malformed = submit(client, keys["client"])
    mismatched = submit(client, keys["client"], problem="demo/sharded")
    bodies = {sid: wait_done(client, keys["client"], sid) for sid in (malformed, mismatched)}
    messages = {sid: body["report"]["message"] for sid, body in bodies.items()}
    assert all(body["verdict"] == "internal_error" for body in bodies.values())
    assert "the problem package cannot be loaded: demo/layout: cannot read problem.yaml" in \
        messages[malformed]
    assert ("the problem package cannot be loaded: demo/sharded: the stored test data does "
            "not match its hash; run `jaxjudge build demo/sharded`") in messages[mismatched]
    rounds = sweeper.rounds()
    wait_for(lambda: sweeper.rounds() >= rounds + 6, 30, "six more sweeps")
    for sid in (malformed, mismatched):  # ended once: never requeued, regraded or looped
        body = client.get(f"/v1/submissions/{sid}", headers=auth(keys["client"])).get_json()
        assert (body["status"], body["attempt"]) == ("done", 1)
        with app.extensions["jaxjudge"].db.session() as s:
            outcomes = list(s.scalars(select(Grading.outcome)
                                      .where(Grading.submission_id == sid)))
        assert outcomes == ["stored"]


def test_a_sandbox_unavailable_too_many_times_ends_with_the_reason(
        client: FlaskClient, keys: dict[str, str], app: Flask,
        start_worker: Callable[..., Worker], start_sweeper: Callable[..., Sweeper]) -> None:
    """A docker worker starts while its engine is away (it may: the sandbox isolates, and
    gradings wait for the engine); each grading goes back to the queue, and after
    sandbox_attempts of them the submission ends internal_error saying why."""
    settings: dict[str, object] = {"docker_host": "unix:///nonexistent.sock",
                                   "sandbox_attempts": 3, "sandbox_retry_seconds": 0.2}
    worker = start_worker(*GRADING, wait=False, **settings)
    start_sweeper(**settings)
    body = wait_done(client, keys["client"], submit(client, keys["client"]))
    assert body["verdict"] == "internal_error"
    assert ("the sandbox was unavailable 3 times; the last time: no Docker engine answers at "
            "unix:///nonexistent.sock") in body["report"]["message"]
    with app.extensions["jaxjudge"].db.session() as s:
        rows = s.execute(select(Grading.outcome, Grading.error)
                         .where(Grading.submission_id == body["id"])
                         .order_by(Grading.attempt)).all()
    assert [outcome for outcome, _ in rows] == ["failed", "failed", "stored"]
    assert all("no Docker engine answers" in (error or "") for _, error in rows[:2])
    assert worker.proc.poll() is None


@pytest.mark.parametrize(("command", "name", "value", "status"), [
    (["celery", "-A", "workers.app", "worker", "-Q", "interactive"],
     "JAXJUDGE_WORKER_CONCURRENCY", "several", 2),
    (["celery", "-A", "workers.app", "worker", "-Q", "interactive"],
     "JAXJUDGE_POOL_SIZE", "-3", 2),
    (["python", "-m", "workers.sweeper"], "JAXJUDGE_SWEEP_SECONDS", "-1", 2),
    # The API: 3 is gunicorn's "worker failed to boot", and its master stops too.
    (["gunicorn", "-b", "127.0.0.1:0", "app:create_app()"],
     "JAXJUDGE_LONG_POLL_MAX_SECONDS", "abc", 3),
])
def test_a_bad_setting_stops_a_service_process_with_one_line(
        tmp_path: Path, command: list[str], name: str, value: str, status: int) -> None:
    import os
    import subprocess
    import sys

    from judge.settings import REPO_ROOT

    exe = [str(Path(sys.executable).parent / command[0]), *command[1:]]
    done = subprocess.run(exe, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, name: value,
                               "JAXJUDGE_REDIS_URL": "redis://127.0.0.1:1/0"})
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    ours = [line for line in done.stderr.splitlines() if line.startswith("jaxjudge: error:")]
    assert len(ours) == 1 and ours[0].startswith(f"jaxjudge: error: setting {name}:"), \
        done.stderr
