"""``jaxjudge problems push/versions/publish`` and ``jaxjudge tenants quotas``, run as
the installed command against a live API (the app served on 127.0.0.1) and, for
builds, a real worker with the zygote sandbox (hardened Docker containers, as the service's
workers grade)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from packages_support import scaffold_files, slim
from servers import Worker
from service_fixtures import auth
from werkzeug.serving import make_server

from service.settings import ServiceSettings

pytestmark = pytest.mark.service
JAXJUDGE = str(Path(sys.executable).parent / "jaxjudge")


@pytest.fixture
def served(app: Flask) -> Iterator[str]:
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(10)


@pytest.fixture
def jaxjudge(service_settings: ServiceSettings, served: str, keys: dict[str, str],
             tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    env = {**os.environ, "JAXJUDGE_DATABASE_URL": service_settings.database_url,
           "JAXJUDGE_REDIS_URL": service_settings.redis_url, "JAXJUDGE_URL": served,
           "JAXJUDGE_API_KEY": keys["instructor"]}

    def call(*argv: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([JAXJUDGE, *argv], env={**env, **extra}, cwd=tmp_path,
                              capture_output=True, text=True, timeout=600)

    return call


def write(folder: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


def one_line_error(result: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert result.returncode == code, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_push_refused_uploads_exit_2_with_the_reason(
        jaxjudge: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    files = slim(scaffold_files())
    files["problem.yaml"] = files["problem.yaml"].replace(b"{name: allclose,",
                                                          b"{name: closeish,")
    folder = write(tmp_path / "softmax", files)
    one_line_error(jaxjudge("problems", "push", str(folder), "--set", "ml"), 2,
                   "404", "no problem set 'ml'")
    one_line_error(jaxjudge("problems", "push", str(folder), "--set", "ml", "--create-set"),
                   2, "422", "unknown checker")
    one_line_error(jaxjudge("problems", "push", str(tmp_path), "--set", "ml"), 2,
                   "no problem.yaml")
    one_line_error(jaxjudge("problems", "push", str(folder), "--set", "ml",
                            JAXJUDGE_API_KEY="jj_wrong"), 2, "401")


def test_push_follows_the_build_and_a_failing_check_exits_1_with_every_failure(
        jaxjudge: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path,
        start_worker: Callable[..., Worker]) -> None:
    start_worker(sandbox="zygote")  # the service's: one container start, not one per grading
    files = slim(scaffold_files())
    files["data/manifest.json"] = b"{}"  # left out: the judge builds the test data
    files["submissions/accepted/columns.py"] = files[
        "submissions/wrong_answer/columns_not_rows.py"]
    folder = write(tmp_path / "softmax", files)
    pushed = jaxjudge("problems", "push", str(folder), "--set", "ml", "--create-set")
    assert pushed.returncode == 1, (pushed.stdout, pushed.stderr)
    out = pushed.stdout
    assert "made the set ml" in out and "uploaded ml/softmax version" in out
    assert "ok    build: reference outputs recorded" in out
    assert "ok    submissions/wrong_answer/columns_not_rows.py: wrong_answer" in out
    assert "FAIL  submissions/accepted/columns.py: wrong_answer  (test " in out
    assert "left out" not in out  # data/ is skipped by push itself
    one_line_error(pushed, 1, "failed", "submissions/accepted/columns.py: expected accepted, "
                   "got wrong_answer")
    # Fixed and pushed again: a new version, ready and live (the problem's first ready one).
    (folder / "submissions/accepted/columns.py").unlink()
    fixed = jaxjudge("problems", "push", str(folder), "--set", "ml")
    assert fixed.returncode == 0, (fixed.stdout, fixed.stderr)
    assert "is live" in fixed.stdout
    listed = jaxjudge("problems", "versions", "ml/softmax")
    rows = [line.split("\t") for line in listed.stdout.splitlines()]
    assert [(r[1], r[4]) for r in rows] == [("ready", "live"), ("failed", "")]
    one_line_error(jaxjudge("problems", "publish", "ml/softmax", rows[1][0]), 2, "409",
                   "only a ready")
    again = jaxjudge("problems", "push", str(folder), "--set", "ml", "--no-wait")
    assert again.returncode == 0 and "already uploaded" in again.stdout


def test_tenants_quotas_shows_sets_and_resets_a_tenants_own_values(
        jaxjudge: Callable[..., subprocess.CompletedProcess[str]], client: FlaskClient,
        keys: dict[str, str]) -> None:
    shown = jaxjudge("tenants", "quotas", "course-a")
    assert shown.returncode == 0 and "sets\t10\n" in shown.stdout
    changed = jaxjudge("tenants", "quotas", "course-a", "--set", "sets=0",
                       "--set", "build_seconds=60")
    assert "sets\t0  (the tenant's own)" in changed.stdout
    assert "build_seconds\t60  (the tenant's own)" in changed.stdout
    r = client.post("/v1/problemsets", json={"name": "ml"}, headers=auth(keys["instructor"]))
    assert r.status_code == 403 and "quota of 0 problem sets" in r.get_json()["detail"]
    other = client.post("/v1/problemsets", json={"name": "b"}, headers=auth(keys["other"]))
    assert other.status_code == 201  # course-b keeps the settings' quota
    reset = jaxjudge("tenants", "quotas", "course-a", "--reset", "sets")
    assert "sets\t10\n" in reset.stdout and "build_seconds\t60  (the tenant's own)" in reset.stdout
    r = client.post("/v1/problemsets", json={"name": "ml"}, headers=auth(keys["instructor"]))
    assert r.status_code == 201
    one_line_error(jaxjudge("tenants", "quotas", "course-a", "--set", "cats=3"), 2, "cats=3")
    one_line_error(jaxjudge("tenants", "quotas", "course-a", "--set", "sets=many"), 2,
                   "not a number")
    one_line_error(jaxjudge("tenants", "quotas", "nobody"), 2, "no tenant 'nobody'")
