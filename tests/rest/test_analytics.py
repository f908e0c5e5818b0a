"""Class analytics (issue 26): every number of an assignment's and a problem's analytics
against a class built here, whose numbers are known by construction; the endpoints'
roles, tenants and bad parameters; the CSV.

The class (assignment A1 of demo/layout, due at T0 + 48 h, late work until T0 + 51 h at
240% a day, i.e. 10% of the score per started hour; attempt k of a student at hour k):

=========  ==========================================  =========================
student    graded attempts (kind percent)               counts as
=========  ==========================================  =========================
n1, n2     none (roster only)                           never started
n3         a sample run only                            never started
acc1       ok 100, model 50                             accepted after 1
acc2a      model 50, ok 100                             accepted after 2
acc2b      none 0, ok 100                               accepted after 2
acc3       none 0, model 50, ok 100                     accepted after 3
acc12      none 0 x 11, ok 100                          accepted after 12 (10+)
stuck1     model 50, model 60, probe 40, probe 60,      stuck: the last 3 (40, 60, 50)
           model 50                                     no better than before (60)
stuck2     none 0 x 6                                   stuck
started1   none 0, 10, 20, model 30, probe 40           started: still improving
started2   none 0, model 0 (+ one queued)               started; override 9/10
x1         model 50, one hour late (not on roster)      started; graded 40 (late)
teach      the course's instructor                      not a student
=========  ==========================================  =========================

Kinds: ``ok`` passes all; ``model`` returns P('model') on the sample and fails hidden h1;
``none`` returns P() on the sample and fails h1 and h2; ``probe`` fails h2 on the probe
``no-all-gather``. Outside the assignment: y1's plain submission (ok 100) to demo/layout,
and another tenant's submission to it, which no analytics of course-a may count.
"""

from __future__ import annotations

import csv
import io
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from service_fixtures import auth
from sqlalchemy import select

from judge.checkers import reasons
from service import outcomes
from service.analytics import analytics_csv, assignment_analytics, problem_analytics
from service.models import (
    Assignment,
    Course,
    Member,
    ScoreOverride,
    Submission,
    Tenant,
)

T0 = datetime(2025, 3, 1, tzinfo=UTC)
DUE = T0 + timedelta(hours=48)
PROBLEM = "demo/layout"
SAMPLE_EXPECTED = "P(None, 'model')"
H1_REASON = "at w: " + reasons.PSPEC
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"


def outcome(name: str, visibility: str, ok: bool, message: str = "", probe: str | None = None,
         received: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {
        "name": name, "visibility": visibility, "verdict": "accepted" if ok else "wrong_answer",
        "score": 0.0, "max_score": 0.0 if visibility == "sample" else 5.0, "time_ms": 1.0,
        "message": "" if ok else message, "probe": probe}
    if visibility == "sample":
        found |= {"input": "x", "expected": SAMPLE_EXPECTED,
                  "received": SAMPLE_EXPECTED if ok else received}
    return found

KINDS = {
    "ok": [outcome("sample-1", "sample", True), outcome("h1", "hidden", True),
           outcome("h2", "hidden", True)],
    "model": [outcome("sample-1", "sample", False, reasons.PSPEC, received="P('model')"),
              outcome("h1", "hidden", False, H1_REASON), outcome("h2", "hidden", True)],
    "none": [outcome("sample-1", "sample", False, reasons.PSPEC, received="P()"),
             outcome("h1", "hidden", False, H1_REASON),
             outcome("h2", "hidden", False, reasons.VALUES)],
    "probe": [outcome("sample-1", "sample", True), outcome("h1", "hidden", True),
              outcome("h2", "hidden", False, probe="no-all-gather")],
}
CLASS: dict[str, list[tuple[str, float]]] = {
    "acc1": [("ok", 100), ("model", 50)],
    "acc2a": [("model", 50), ("ok", 100)],
    "acc2b": [("none", 0), ("ok", 100)],
    "acc3": [("none", 0), ("model", 50), ("ok", 100)],
    "acc12": [("none", 0)] * 11 + [("ok", 100)],
    "stuck1": [("model", 50), ("model", 60), ("probe", 40), ("probe", 60), ("model", 50)],
    "stuck2": [("none", 0)] * 6,
    "started1": [("none", 0), ("none", 10), ("none", 20), ("model", 30), ("probe", 40)],
    "started2": [("none", 0), ("model", 0)],
}


def row(tenant_id: int, student: str | None, kind: str, percent: float, at: datetime,
        assignment_id: str | None = None, **extra: Any) -> Submission:
    verdict = "accepted" if kind == "ok" else "wrong_answer"
    report = {"problem": PROBLEM, "problem_version": "v", "verdict": verdict,
              "score": percent / 10, "max_score": 10.0, "time_ms": 3.0,
              "tests": KINDS[kind]}
    fields: dict[str, Any] = {
        "status": "done", "verdict": verdict, "score": percent / 10, "max_score": 10.0,
        "report": report} | extra
    return Submission(id=uuid.uuid4().hex, tenant_id=tenant_id, problem=PROBLEM,
                      problem_version="v", student_id=student, code="x", code_sha256="0" * 64,
                      queue="default", attempt=1, received_at=at, finished_at=at,
                      assignment_id=assignment_id, **fields)


def build_class(app: Flask, tenant: str = "course-a", other: str = "course-b") -> str:
    """The class above; the assignment's id."""
    with app.extensions["jaxjudge"].db.session() as s:
        tenant_id = s.scalar(select(Tenant.id).where(Tenant.name == tenant))
        other_id = s.scalar(select(Tenant.id).where(Tenant.name == other))
        assert tenant_id is not None and other_id is not None
        course = Course(tenant_id=tenant_id, context_id="c1", title="Sharding")
        s.add(course)
        s.flush()
        aid = uuid.uuid4().hex
        s.add(Assignment(id=aid, tenant_id=tenant_id, course_id=course.id,
                         resource_link_id="r1", problem=PROBLEM, title="Layouts",
                         due_at=DUE, late_until=DUE + timedelta(hours=3),
                         late_penalty_percent_per_day=240.0))
        roster = ["n1", "n2", "n3", *CLASS]
        s.add_all(Member(course_id=course.id, user_id=u, name=u.upper(), roles=[LEARNER])
                  for u in roster)
        s.add(Member(course_id=course.id, user_id="teach", roles=[INSTRUCTOR]))
        s.flush()
        for n, (student, attempts) in enumerate(CLASS.items()):
            for k, (kind, pct) in enumerate(attempts):
                s.add(row(tenant_id, student, kind, pct, T0 + timedelta(hours=k, minutes=n),
                          aid))
        s.add(row(tenant_id, "x1", "model", 50, DUE + timedelta(minutes=30), aid))
        s.add(row(tenant_id, "n3", "none", 0, T0, aid, sample_run=True))
        s.add(row(tenant_id, "started2", "none", 0, T0 + timedelta(hours=5), aid,
                  status="queued", verdict=None, score=None, max_score=None, report=None))
        s.add(ScoreOverride(assignment_id=aid, student_id="started2", score_given=9.0,
                            score_maximum=10.0, reason="regraded by hand"))
        s.add(row(tenant_id, "y1", "ok", 100, T0))  # plain REST, no assignment
        s.add(row(other_id, "acc1", "none", 0, T0))  # another tenant's
        outcomes.fill(s, [x for x in s.new if isinstance(x, Submission)])  # as store does
    return aid


@pytest.fixture
def database_url(any_database_url: str) -> str:
    """Both databases: the tests are counted by each one's SQL (``test_outcomes``)."""
    return any_database_url


@pytest.fixture
def class_a(app: Flask, keys: dict[str, str]) -> str:
    return build_class(app)


def bins(a: Any) -> dict[str, int]:
    return {("100" if b.lower == 100 else f"{b.lower:g}-{b.upper:g}"): b.count
            for b in a.histogram if b.count}


def test_an_assignments_numbers_are_the_classes(app: Flask, class_a: str) -> None:
    with app.extensions["jaxjudge"].db.session() as s:
        a = assignment_analytics(s, s.get(Assignment, class_a), now=T0)
    assert (a.scope, a.id, a.problem, a.title) == ("assignment", class_a, PROBLEM, "Layouts")
    assert a.students == 13 and a.submissions == 40
    # The gradebook's grades: x1's 50 less 10% late, started2's override, best policy.
    assert bins(a) == {"0-10": 1, "40-50": 2, "60-70": 1, "90-100": 1, "100": 5}
    assert len(a.histogram) == 11

    tests = {t.name: t for t in a.tests}
    assert [t.name for t in a.tests] == ["sample-1", "h1", "h2"]
    s1, h1, h2 = tests["sample-1"], tests["h1"], tests["h2"]
    assert (s1.visibility, s1.runs, s1.passed) == ("sample", 40, 8)
    assert s1.pass_rate == pytest.approx(0.2)
    assert [(r.verdict, r.reason, r.probe, r.count) for r in s1.reasons] == [
        ("wrong_answer", reasons.PSPEC, None, 32)]
    assert (h1.visibility, h1.runs, h1.passed) == ("hidden", 40, 8)
    assert [(r.reason, r.count) for r in h1.reasons] == [(H1_REASON, 32)]
    assert (h2.runs, h2.passed) == (40, 14)
    assert [(r.reason, r.probe, r.count) for r in h2.reasons] == [
        (reasons.VALUES, None, 23), ("", "no-all-gather", 3)]

    tl = a.timeline
    assert (tl.bucket, tl.due_at, tl.late_until) == ("hour", DUE, DUE + timedelta(hours=3))
    assert tl.buckets[0].start == T0 and len(tl.buckets) == 52  # to late_until's hour
    per_hour = {i: (b.submissions, b.accepted) for i, b in enumerate(tl.buckets)
                if b.submissions}
    assert per_hour == {0: (9, 1), 1: (9, 2), 2: (5, 1), 3: (4, 0), 4: (4, 0), 5: (2, 0),
                        6: (1, 0), 7: (1, 0), 8: (1, 0), 9: (1, 0), 10: (1, 0), 11: (1, 1),
                        48: (1, 0)}

    att = a.attempts_to_accept
    assert {b.attempts: b.students for b in att.bins if b.students} == {
        "1": 1, "2": 2, "3": 1, "10+": 1}
    assert [b.attempts for b in att.bins] == [*map(str, range(1, 10)), "10+"]
    assert att.median == 2

    p = a.progress
    assert (p.never_started, p.started, p.stuck, p.accepted) == (3, 3, 2, 5)
    assert [(x.student_id, x.name, x.attempts, x.best_percent) for x in p.stuck_students] == [
        ("stuck2", "STUCK2", 6, 0.0), ("stuck1", "STUCK1", 5, 60.0)]
    assert p.stuck_students[1].last_at == T0 + timedelta(hours=4, minutes=5)

    # Each student's latest graded submission: acc1 went back to P('model').
    assert [(w.test, w.received, w.expected, w.students, w.student_ids)
            for w in a.wrong_answers] == [
        ("sample-1", "P('model')", SAMPLE_EXPECTED, 4, ["acc1", "started2", "stuck1", "x1"]),
        ("sample-1", "P()", SAMPLE_EXPECTED, 1, ["stuck2"])]


def test_a_problems_numbers_span_the_tenant_and_use_raw_best_scores(
        app: Flask, class_a: str) -> None:
    with app.extensions["jaxjudge"].db.session() as s:
        tenant_id = s.scalar(select(Tenant.id).where(Tenant.name == "course-a"))
        assert tenant_id is not None
        a = problem_analytics(s, tenant_id, PROBLEM, "Layout", now=T0)
    assert (a.scope, a.id, a.title, a.due_at) == ("problem", PROBLEM, "Layout", None)
    # The 10 graders of the assignment, y1 outside it, n3 with a sample run only.
    assert a.students == 12 and a.submissions == 41
    assert bins(a) == {"0-10": 2, "40-50": 1, "50-60": 1, "60-70": 1, "100": 6}
    p = a.progress
    assert (p.never_started, p.started, p.stuck, p.accepted) == (1, 3, 2, 6)
    assert {t.name: t.passed for t in a.tests} == {"sample-1": 9, "h1": 9, "h2": 15}
    assert a.timeline.due_at is None


def test_an_empty_assignment_has_zeros_not_errors(app: Flask, keys: dict[str, str]) -> None:
    with app.extensions["jaxjudge"].db.session() as s:
        tenant_id = s.scalar(select(Tenant.id).where(Tenant.name == "course-a"))
        course = Course(tenant_id=tenant_id, context_id="c2")
        s.add(course)
        s.flush()
        empty = Assignment(id="e" * 32, tenant_id=tenant_id, course_id=course.id,
                           resource_link_id="r", problem=PROBLEM)
        s.add(empty)
        s.flush()
        a = assignment_analytics(s, empty)
    assert (a.students, a.submissions, a.tests, a.wrong_answers) == (0, 0, [], [])
    assert sum(b.count for b in a.histogram) == 0 and a.timeline.buckets == []
    assert a.attempts_to_accept.median is None
    assert analytics_csv(a).startswith("chart,key,detail,expected,count,total,percent,at\r\n")


def test_the_api_answers_instructors_of_the_tenant_only(
        client: FlaskClient, keys: dict[str, str], class_a: str) -> None:
    r = client.get(f"/v1/assignments/{class_a}/analytics", headers=auth(keys["instructor"]))
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    assert (body["students"], body["submissions"]) == (13, 40)
    assert body["progress"]["stuck"] == 2
    assert body["wrong_answers"][0]["received"] == "P('model')"

    r = client.get(f"/v1/problems/{PROBLEM}/analytics", headers=auth(keys["instructor"]))
    assert r.status_code == 200, r.get_json()
    assert (r.get_json()["scope"], r.get_json()["submissions"]) == ("problem", 41)

    # A client key is refused; another tenant's admin sees none of course-a's.
    r = client.get(f"/v1/assignments/{class_a}/analytics", headers=auth(keys["client"]))
    assert r.status_code == 403
    r = client.get(f"/v1/assignments/{class_a}/analytics", headers=auth(keys["other"]))
    assert r.status_code == 404
    assert r.mimetype == "application/problem+json"
    r = client.get(f"/v1/problems/{PROBLEM}/analytics", headers=auth(keys["other"]))
    assert r.status_code == 200 and r.get_json()["submissions"] == 1  # its own only
    for path in ("/v1/assignments/nope/analytics", "/v1/problems/demo/nope/analytics"):
        r = client.get(path, headers=auth(keys["instructor"]))
        assert r.status_code == 404 and r.mimetype == "application/problem+json", path


def test_bad_parameters_are_problem_json(client: FlaskClient, keys: dict[str, str],
                                         class_a: str) -> None:
    for query in ("format=xml", "format=csv&format=json", "since=yesterday"):
        r = client.get(f"/v1/assignments/{class_a}/analytics?{query}",
                       headers=auth(keys["instructor"]))
        assert 400 <= r.status_code < 500 and r.mimetype == "application/problem+json", query


def test_the_csv_has_the_same_numbers_and_no_formulas(
        app: Flask, client: FlaskClient, keys: dict[str, str], class_a: str) -> None:
    with app.extensions["jaxjudge"].db.session() as s:
        tenant_id = s.scalar(select(Tenant.id).where(Tenant.name == "course-a"))
        assert tenant_id is not None
        added = [row(tenant_id, "=cmd", "none", 0, T0 + timedelta(hours=k), class_a)
                 for k in range(5)]  # stuck, so listed by id
        s.add_all(added)
        outcomes.fill(s, added)
    r = client.get(f"/v1/assignments/{class_a}/analytics?format=csv",
                   headers=auth(keys["instructor"]))
    assert r.status_code == 200 and r.mimetype == "text/csv"
    assert f'filename="analytics-{class_a}.csv"' in r.headers["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(r.get_data(as_text=True))))
    assert rows[0] == ["chart", "key", "detail", "expected", "count", "total", "percent", "at"]
    found = {(x[0], x[1]): x for x in rows[1:]}
    assert found[("summary", "students")][4] == "14"  # the class and "=cmd"
    assert found[("progress", "stuck")][4:6] == ["3", "14"]
    assert found[("histogram", "100")][4] == "5"
    assert found[("test", "h2")][4:7] == ["14", "45", "31.111"]
    assert found[("attempts_to_accept", "median")][4] == "2"
    wrong = [x for x in rows if x[0] == "wrong_answer"]
    assert wrong[0][1:5] == ["sample-1", "P('model')", SAMPLE_EXPECTED, "4"]
    # The student id that looks like a formula is quoted.
    assert found[("stuck_student", "'=cmd")][4] == "5"
    assert not any(c.startswith("=") for x in rows for c in x)
