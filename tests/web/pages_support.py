"""Helpers of the page tests: a learner opened by a launch link, an instructor signed
in with an API key, the CSRF token a page carries, a report stored as a worker does."""

from __future__ import annotations

import re
from dataclasses import dataclass

from flask import Flask
from flask.testing import FlaskClient
from service_fixtures import auth

from judge.report import TestResult, VerdictReport
from judge.verdict import Verdict
from service.submissions import claim, store

SID = re.compile(r"/app/([A-Za-z0-9_-]{43})/")
TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


@dataclass
class Page:
    sid: str
    path: str  # where the launch landed

    @property
    def assignment_id(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def launch(client: FlaskClient, key: str, student: str = "alice", problem: str = "demo/layout",
           course: str | None = None, name: str = "") -> Page:
    """Mint a launch link with ``key`` and open it; the page session it started."""
    body: dict[str, object] = {"problem": problem, "student_id": student, "name": name}
    if course:
        body["course"] = course
    r = client.post("/v1/launch-links", json=body, headers=auth(key))
    assert r.status_code == 201, r.get_json()
    path = r.get_json()["url"].split("://", 1)[1].split("/", 1)[1]
    opened = client.get("/" + path)
    assert opened.status_code == 303, opened.data
    location = opened.headers["Location"]
    found = SID.search(location)
    assert found, location
    return Page(found.group(1), location.split("?")[0])


def sign_in(client: FlaskClient, key: str) -> str:
    """Sign in with an API key; the session id."""
    r = client.post("/app/signin", data={"api_key": key})
    assert r.status_code == 303, r.data
    found = SID.search(r.headers["Location"])
    assert found
    return found.group(1)


def csrf_token(client: FlaskClient, path: str) -> str:
    page = client.get(path)
    assert page.status_code == 200, page.data[:500]
    found = TOKEN.search(page.get_data(as_text=True))
    assert found, "the page has no form with a CSRF token"
    return found.group(1)


def grade(app: Flask, submission_id: str, score: float, verdict: Verdict) -> None:
    """Store a report for a submission through the state machine, as a worker does."""
    db = app.extensions["jaxjudge"].db
    taken = claim(db, submission_id, stale_after=60)
    assert taken is not None
    test = TestResult(name="hidden-1", visibility="hidden", verdict=verdict,
                      score=score, max_score=1.0, time_ms=1.0,
                      message="" if verdict == Verdict.ACCEPTED else "some values are wrong")
    report = VerdictReport(problem="demo/layout", problem_version="v", verdict=verdict,
                           score=score, max_score=1.0, time_ms=1.0, tests=[test])
    assert store(db, submission_id, taken.attempt, report) is not None
