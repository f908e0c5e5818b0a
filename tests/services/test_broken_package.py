"""A problem package that cannot be loaded, on every path that takes a submission (issue
20, item 3; issue 10 chose what happens): never a 500.

- What takes a submission in through the API (``POST /v1/submissions``, ``POST
  /v1/batches``, a class upload) stores it, and its grading ends it once with
  ``internal_error`` and the loader's message: what issue 10 made a broken package do,
  and what docs/api.md section 9 promises. Before, the API itself loaded the package
  and answered 500.
- What needs the problem first (its page, a launch link to it, the student page and its
  submit, a course page of it, a rejudge onto it) refuses, naming it: 503 ``Problem
  unavailable`` (problem+json, or an error page), with nothing stored or requeued.
- ``/readyz`` is degraded and ``GET /v1/problems`` lists the package under ``broken``.

The API and the worker read the same broken copy of the fixture problems, as a
deployment's processes read the same disk."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from broken_support import judge_settings, problems, smash
from flask import Flask
from flask.testing import FlaskClient
from servers import Worker
from service_fixtures import auth, wait_done
from sqlalchemy import func, select
from werkzeug.test import TestResponse

from judge.verdict import Verdict
from service.models import Grading, Status, Submission
from tests.web.pages_support import csrf_token, grade, launch, sign_in
from tests_support import LAYOUT_GOOD, zip_archive

pytestmark = [pytest.mark.service]
GRADING = ("-Q", "interactive,batch", "--concurrency", "1")
UNAVAILABLE = "the problem demo/layout cannot be loaded: its package is broken"
__all__ = ["judge_settings", "problems"]  # the fixtures: the broken copy


@pytest.fixture
def broken(problems: Path, app: Flask) -> Iterator[Callable[[], None]]:
    """Break demo/layout's problem.yaml (and forget the API's cached scan)."""
    def now() -> None:
        smash(problems)
        app.extensions.pop("jaxjudge.scan", None)

    yield now


def count(app: Flask, **where: object) -> int:
    with app.extensions["jaxjudge"].db.session() as s:
        query = select(func.count()).select_from(Submission)
        for name, value in where.items():
            query = query.where(getattr(Submission, name) == value)
        return s.scalar(query) or 0


def problem_json(r: TestResponse, status: int, *words: str) -> str:
    assert r.status_code == status, (r.status_code, r.get_data(as_text=True)[:500])
    assert r.headers["Content-Type"] == "application/problem+json"
    detail: str = r.get_json()["detail"]
    for word in words:
        assert word in detail, detail
    assert "\n" not in detail
    return detail


@pytest.mark.slow
def test_submissions_taken_by_the_api_end_once_with_internal_error(
        app: Flask, client: FlaskClient, keys: dict[str, str], broken: Callable[[], None],
        start_worker: Callable[..., Worker], problems: Path) -> None:
    broken()
    r = client.post("/v1/submissions", json={"problem": "demo/layout", "code": LAYOUT_GOOD},
                    headers=auth(keys["client"]))
    assert r.status_code == 202, r.get_data(as_text=True)
    single = r.get_json()
    assert (single["status"], single["problem"]) == ("queued", "demo/layout")
    r = client.post("/v1/batches", json={"problem": "demo/layout", "submissions": [
        {"student_id": "alice", "code": LAYOUT_GOOD},
        {"student_id": "bob", "code": LAYOUT_GOOD}]}, headers=auth(keys["instructor"]))
    assert r.status_code == 202, r.get_data(as_text=True)
    members = [m["submission_id"] for m in r.get_json()["submissions"]]
    r = client.post("/v1/batches", data={"problem": "demo/layout", "archive": (zip_archive(
        {"carol.py": LAYOUT_GOOD}), "class.zip")}, headers=auth(keys["instructor"]))
    assert r.status_code == 202, r.get_data(as_text=True)
    members += [m["submission_id"] for m in r.get_json()["submissions"]]
    start_worker(*GRADING, problems_dir=problems)
    for sid in [single["id"], *members]:
        body = wait_done(client, keys["client"], sid)
        assert (body["verdict"], body["attempt"]) == ("internal_error", 1), body
        assert ("the problem package cannot be loaded: demo/layout: cannot read "
                "problem.yaml") in body["report"]["message"]
        with app.extensions["jaxjudge"].db.session() as s:
            assert list(s.scalars(select(Grading.outcome)
                                  .where(Grading.submission_id == sid))) == ["stored"]


def test_what_needs_the_broken_problem_refuses_naming_it(
        app: Flask, client: FlaskClient, keys: dict[str, str],
        broken: Callable[[], None]) -> None:
    r = client.post("/v1/submissions", json={"problem": "demo/layout", "code": LAYOUT_GOOD},
                    headers=auth(keys["client"]))
    taken = r.get_json()["id"]  # before it broke
    broken()
    client_detail = problem_json(client.get("/v1/problems/demo/layout",
                                            headers=auth(keys["client"])), 503, UNAVAILABLE,
                                 "GET /v1/problems lists it under broken")
    assert "problem.yaml" not in client_detail  # the loader's words: instructors only
    problem_json(client.get("/v1/problems/demo/layout", headers=auth(keys["instructor"])),
                 503, UNAVAILABLE, "demo/layout: cannot read problem.yaml")
    problem_json(client.post("/v1/launch-links", json={"problem": "demo/layout",
                                                       "student_id": "alice"},
                             headers=auth(keys["client"])), 503, UNAVAILABLE)
    problem_json(client.post("/v1/problems/demo/layout/rejudge",
                             headers=auth(keys["instructor"])), 503, UNAVAILABLE)
    problem_json(client.post(f"/v1/submissions/{taken}/rejudge",
                             headers=auth(keys["instructor"])), 503, UNAVAILABLE)
    with app.extensions["jaxjudge"].db.session() as s:
        row = s.get(Submission, taken)
        assert row is not None and row.attempt == 0  # nothing was requeued
    listed = client.get("/v1/problems", headers=auth(keys["instructor"])).get_json()
    assert [b["id"] for b in listed["broken"]] == ["demo/layout"]
    assert "demo/layout" not in [p["id"] for p in listed["items"]]
    ready = client.get("/readyz").get_json()
    assert ready["checks"]["problems"] == {"ok": False, "detail": "broken: demo/layout"}
    assert client.get("/v1/problems/demo/sharded", headers=auth(keys["client"])).status_code \
        == 200  # one broken package hides no other


def page_error(r: TestResponse, status: int, *words: str) -> None:
    assert r.status_code == status, (r.status_code, r.get_data(as_text=True)[:500])
    assert r.headers["Content-Type"].startswith("text/html")
    text = r.get_data(as_text=True).replace("&#39;", "'")
    for word in words:
        assert word in text, text[-2000:]
    assert "Traceback" not in text


def test_the_pages_of_a_broken_problem_say_so_and_take_nothing(
        app: Flask, client: FlaskClient, keys: dict[str, str],
        broken: Callable[[], None]) -> None:
    learner = launch(client, keys["client"])  # while it loads
    token = csrf_token(client, learner.path)
    sid = sign_in(client, keys["instructor"])
    courses_token = csrf_token(client, f"/app/{sid}/courses")
    broken()
    page_error(client.get(learner.path), 503, "Problem unavailable",
               "The problem of this assignment (demo/layout) cannot be loaded")
    r = client.post(learner.path + "/submissions", data={"csrf_token": token,
                                                         "code": LAYOUT_GOOD})
    page_error(r, 503, "(demo/layout) cannot be loaded", "nothing was submitted")
    assert count(app) == 0
    r = client.post(f"/app/{sid}/courses", data={"csrf_token": courses_token,
                                                  "course": "Physics", "problem": "demo/layout"})
    page_error(r, 503, "The problem demo/layout cannot be loaded", "cannot read problem.yaml")


def test_an_instructor_rejudge_of_a_broken_problem_keeps_the_verdicts(
        app: Flask, client: FlaskClient, keys: dict[str, str],
        broken: Callable[[], None]) -> None:
    learner = launch(client, keys["client"])
    token = csrf_token(client, learner.path)
    r = client.post(learner.path + "/submissions", data={"csrf_token": token,
                                                         "code": LAYOUT_GOOD})
    assert r.status_code == 303
    with app.extensions["jaxjudge"].db.session() as s:
        first = s.scalars(select(Submission.id)).one()
    grade(app, first, 1.0, Verdict.ACCEPTED)
    sid = sign_in(client, keys["instructor"])
    page = f"/app/{sid}/assignments/{learner.assignment_id}/student?user=alice"
    token = csrf_token(client, page)
    broken()
    for path in (f"/app/{sid}/submissions/{first}/rejudge",
                 f"/app/{sid}/assignments/{learner.assignment_id}/rejudge"):
        page_error(client.post(path, data={"csrf_token": token}), 503,
                   "The problem demo/layout cannot be loaded")
    assert count(app, status=Status.DONE, verdict="accepted") == 1
