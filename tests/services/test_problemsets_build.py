"""Uploaded packages built and verified by a real worker: the scaffold goes live and
grades a student; a hostile reference is contained in the Docker sandbox (a fresh
container) and the version fails with its reason; versions and queued submissions;
publish with a rejudge report.

The tests that are not about the sandbox grade in the zygote sandbox, as the service's
workers do (its containers are hardened as a fresh one is): one container start per
worker process, not one per grading."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from packages_support import scaffold_files, slim, zip_package
from servers import Worker, wait_for
from service_fixtures import auth, wait_done

from service.settings import ServiceSettings

pytestmark = pytest.mark.service
ZYGOTE = {"sandbox": "zygote"}
ACCEPTED = b"import jax\n\n\ndef softmax(x):\n    return jax.nn.softmax(x, axis=-1)\n"


def wait_built(client: FlaskClient, key: str, location: str, timeout: float = 240
               ) -> dict[str, Any]:
    seen: list[int] = []

    def check() -> dict[str, Any] | None:
        body: dict[str, Any] = client.get(location, headers=auth(key)).get_json()
        seen.append(body["done"])
        return body if body["status"] in ("ready", "failed") else None

    found: dict[str, Any] = wait_for(check, timeout, f"the build at {location}")
    found["progress_seen"] = seen
    return found


def push(client: FlaskClient, key: str, files: dict[str, bytes], query: str = ""
         ) -> tuple[dict[str, Any], str]:
    r = client.post(f"/v1/problemsets/ml-course/problems{query}", data=zip_package(files),
                    content_type="application/zip", headers=auth(key))
    assert r.status_code == 202, r.get_json()
    return r.get_json(), r.headers["Location"]


@pytest.fixture
def course(client: FlaskClient, keys: dict[str, str]) -> str:
    r = client.post("/v1/problemsets", json={"name": "ml-course"}, headers=auth(keys["instructor"]))
    assert r.status_code == 201
    return keys["instructor"]


def test_the_scaffold_is_built_verified_goes_live_and_grades_a_student(
        client: FlaskClient, keys: dict[str, str], course: str,
        start_worker: Callable[..., Worker]) -> None:
    start_worker(**ZYGOTE)
    first, location = push(client, course, scaffold_files())
    built = wait_built(client, course, location)
    assert built["status"] == "ready", (built["error"], built["steps"])
    assert built["live"] and built["error"] is None
    assert built["done"] == built["total"] == 4 + 9  # every example of the scaffold
    assert all(step["ok"] for step in built["steps"])
    assert [s["got"] for s in built["steps"] if s["subject"].startswith("submissions/")] == [
        s["subject"].split("/")[1] for s in built["steps"]
        if s["subject"].startswith("submissions/")]
    # Nothing weak but, on a loaded machine, the reference's own time (its first test
    # compiles): the scaffold's examples catch what its hidden tests are there for.
    assert [w for w in built["weaknesses"] if "more than a tenth" not in w] == []
    assert built["build_seconds"] > 0
    detail = client.get("/v1/problems/ml-course/softmax", headers=auth(keys["client"]))
    assert detail.status_code == 200 and detail.get_json()["version"] == first["version"]
    r = client.post("/v1/submissions", json={"problem": "ml-course/softmax",
                                             "code": ACCEPTED.decode()},
                    headers=auth(keys["client"]))
    assert r.status_code == 202
    done = wait_done(client, keys["client"], r.get_json()["id"])
    assert done["verdict"] == "accepted", done
    assert done["report"]["problem_version"] == first["version"]


HOSTILE_REFERENCE = '''import os, socket


def softmax(x):
    # What a hostile package would try on the judge's host: read its database, the other
    # packages, the engine's socket, reach Redis. In the sandbox none of it is there.
    found = []
    for path in (%r, %r, "/etc/shadow", "/var/run/docker.sock"):
        try:
            open(path, "rb").read(1)
            found.append(path)
        except OSError:
            pass
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=1)
        found.append("redis")
    except OSError:
        pass
    raise RuntimeError("contained: " + ",".join(found or ["nothing reachable"]))
'''


def test_a_hostile_reference_is_contained_and_the_version_fails_with_the_reason(
        client: FlaskClient, keys: dict[str, str], course: str,
        service_settings: ServiceSettings, start_worker: Callable[..., Worker]) -> None:
    start_worker()
    database = service_settings.database_url.removeprefix("sqlite:///")
    assert Path(database).is_file()
    files = slim(scaffold_files())
    files["reference.py"] = (HOSTILE_REFERENCE % (
        database, str(service_settings.packages_dir))).encode()
    body, location = push(client, course, files)
    built = wait_built(client, course, location)
    assert built["status"] == "failed" and not built["live"]
    assert "the reference solution" in built["error"]
    assert "contained: nothing reachable" in built["error"]
    assert built["steps"][0]["subject"] == "build" and not built["steps"][0]["ok"]
    listed = client.get("/v1/problems", headers=auth(keys["instructor"])).get_json()
    assert "ml-course/softmax" not in [i["id"] for i in listed["items"]]
    r = client.post("/v1/submissions", json={"problem": "ml-course/softmax", "code": "x=1"},
                    headers=auth(keys["client"]))
    assert r.status_code == 404  # nothing is live: nothing half-installed


def test_a_wrong_example_fails_the_build_with_every_failure_named(
        client: FlaskClient, course: str, start_worker: Callable[..., Worker]) -> None:
    start_worker(**ZYGOTE)
    files = slim(scaffold_files())
    files["submissions/accepted/columns.py"] = files[
        "submissions/wrong_answer/columns_not_rows.py"]
    _, location = push(client, course, files)
    built = wait_built(client, course, location)
    assert built["status"] == "failed"
    assert "submissions/accepted/columns.py: expected accepted, got wrong_answer" in built["error"]
    failed = [s for s in built["steps"] if not s["ok"]]
    assert [s["subject"] for s in failed] == ["submissions/accepted/columns.py"]
    assert "wrong_answer" in failed[0]["detail"] and "test " in failed[0]["detail"]


def test_a_reference_that_fails_a_test_still_has_every_example_checked(
        client: FlaskClient, course: str, start_worker: Callable[..., Worker]) -> None:
    # The reference fails on one row; an example is misfiled. One build names both: the
    # examples are checked on the tests the reference passed.
    start_worker(**ZYGOTE)
    files = slim(scaffold_files(), keep=("submissions/wrong_answer/columns_not_rows.py",))
    files["submissions/accepted/columns.py"] = files[
        "submissions/wrong_answer/columns_not_rows.py"]
    files["reference.py"] = files["reference.py"].replace(
        b"    z = x -", b"    if x.shape[0] == 1:\n        raise ValueError('one row')\n    z = x -")
    _, location = push(client, course, files)
    built = wait_built(client, course, location)
    assert built["status"] == "failed" and not built["live"]
    assert "ValueError: one row" in built["error"]
    assert "example(s) got the wrong verdict: submissions/accepted/columns.py" in built["error"]
    by_subject = {s["subject"]: s for s in built["steps"]}
    assert not by_subject["build"]["ok"]
    columns = by_subject["submissions/accepted/columns.py"]
    assert not columns["ok"] and columns["got"] == "wrong_answer"
    assert columns["detail"].startswith("on the ") and "test " in columns["detail"]
    assert by_subject["submissions/wrong_answer/columns_not_rows.py"]["ok"]


def test_each_submission_is_graded_on_its_version_until_the_instructor_rejudges(
        app: Flask, client: FlaskClient, keys: dict[str, str], course: str,
        start_worker: Callable[..., Worker]) -> None:
    worker = start_worker(**ZYGOTE)
    v1, location = push(client, course, slim(scaffold_files()))
    assert wait_built(client, course, location)["live"]
    worker.stop()
    # v1 is live; a student submits while no worker runs: queued, recorded against v1.
    student = auth(keys["client"])
    r = client.post("/v1/submissions", json={"problem": "ml-course/softmax",
                                             "code": ACCEPTED.decode(), "student_id": "s1"},
                    headers=student)
    queued = r.get_json()["id"]
    # v2 changes the task (columns, not rows): the same code is now wrong.
    files = slim(scaffold_files(), keep=())
    files["reference.py"] = files["reference.py"].replace(b"axis=-1", b"axis=0")
    v2, location2 = push(client, course, files, "?publish=true")
    start_worker(**ZYGOTE)
    built = wait_built(client, course, location2)
    assert built["status"] == "ready" and built["live"], built
    assert "no wrong_answer example" in " ".join(built["weaknesses"])
    first = wait_done(client, keys["client"], queued)
    assert first["verdict"] == "accepted"
    assert first["report"]["problem_version"] == v1["version"]
    r = client.post("/v1/submissions", json={"problem": "ml-course/softmax",
                                             "code": ACCEPTED.decode(), "student_id": "s2"},
                    headers=student)
    later = wait_done(client, keys["client"], r.get_json()["id"])
    assert later["verdict"] == "wrong_answer"
    assert later["report"]["problem_version"] == v2["version"]
    # Old versions stay readable.
    old = client.get(f"/v1/problems/ml-course/softmax?version={v1['version']}", headers=student)
    assert old.status_code == 200 and old.get_json()["version"] == v1["version"]
    # Publishing v2 again with a rejudge: s1 is graded on v2, and the report says so.
    r = client.post(f"/v1/problemsets/ml-course/problems/softmax/versions/{v2['version']}"
                    "/publish", json={"rejudge": True}, headers=auth(course))
    assert r.status_code == 200, r.get_json()
    rejudge = r.get_json()["rejudge"]
    assert rejudge["rejudged"] == 1 and rejudge["ids"] == [queued]
    report_url = f"/v1/rejudges/{rejudge['rejudge']}"

    def finished() -> dict[str, Any] | None:
        body: dict[str, Any] = client.get(report_url, headers=auth(course)).get_json()
        return body if body["finished"] else None

    report = wait_for(finished, 120, "the rejudge")
    assert report["total"] == report["done"] == 1 and report["unchanged"] == 0
    (change,) = report["changed"]
    assert change["submission_id"] == queued and change["student_id"] == "s1"
    assert (change["before"], change["after"]) == ("accepted", "wrong_answer")
    assert (change["version_before"], change["version_after"]) == (v1["version"], v2["version"])
    assert client.get(report_url, headers=auth(keys["other"])).status_code == 404
