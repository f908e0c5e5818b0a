"""The instructor pages: courses, the gradebook (roster members who never submitted,
the policy, sorting and filtering), one student's submissions, rejudging, the exports
and class uploads; who may reach them."""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from app.sessions import Principal, Sessions
from judge.verdict import Verdict
from service.courses import upsert_member
from service.models import Assignment, Batch, Course, Grading, Status, Submission
from tests.web.pages_support import Page, csrf_token, grade, launch, sign_in
from tests_support import LAYOUT_GOOD

SID = re.compile(r'href="/app/[^/]+/courses/(\d+)"')


def submit(client: FlaskClient, page: Page, code: str = LAYOUT_GOOD) -> str:
    token = csrf_token(client, page.path)
    r = client.post(page.path + "/submissions", data={"csrf_token": token, "code": code})
    assert r.status_code == 303
    found = re.search(r"submission=([0-9a-f]{32})", r.headers["Location"])
    assert found
    return found.group(1)


def course_of(app: Flask, assignment_id: str) -> int:
    with app.extensions["jaxjudge"].db.session() as s:
        found = s.get(Assignment, assignment_id)
        assert found is not None
        return found.course_id


def test_gradebook_lists_the_roster_with_best_or_latest(
        app: Flask, client: FlaskClient, keys: dict[str, str], learner: Page) -> None:
    course_id = course_of(app, learner.assignment_id)
    with app.extensions["jaxjudge"].db.session() as s:
        upsert_member(s, course_id, "carol", name="Carol Never", roles=["Learner"])
        upsert_member(s, course_id, "teacher", name="Tea Cher", roles=[
            "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"])
    good = submit(client, learner)
    grade(app, good, 1.0, Verdict.ACCEPTED)
    bad = submit(client, learner, LAYOUT_GOOD + "# worse\n")
    grade(app, bad, 0.0, Verdict.WRONG_ANSWER)
    sid = sign_in(client, keys["instructor"])
    book = f"/app/{sid}/assignments/{learner.assignment_id}/gradebook"
    html = client.get(book).get_data(as_text=True)
    rows = dict(re.findall(r'data-testid="gradebook-row" data-user-id="([^"]+)" '
                           r'data-verdict="([^"]*)"', html))
    assert rows == {"alice": "accepted", "carol": ""}  # the instructor is not a student
    assert "Carol Never" in html
    token = csrf_token(client, book)
    r = client.post(f"/app/{sid}/assignments/{learner.assignment_id}/policy",
                    data={"csrf_token": token, "policy": "latest"})
    assert r.status_code == 303
    html = client.get(book).get_data(as_text=True)
    assert 'data-user-id="alice" data-verdict="wrong_answer"' in html
    # Filter and sort on the server.
    html = client.get(book + "?verdict=none").get_data(as_text=True)
    assert 'data-user-id="carol"' in html and 'data-user-id="alice"' not in html
    html = client.get(book + "?q=car").get_data(as_text=True)
    assert 'data-user-id="carol"' in html and 'data-user-id="alice"' not in html
    html = client.get(book + "?sort=attempts&dir=desc").get_data(as_text=True)
    assert html.index('data-user-id="alice"') < html.index('data-user-id="carol"')
    html = client.get(book + "?sort=attempts").get_data(as_text=True)
    assert html.index('data-user-id="carol"') < html.index('data-user-id="alice"')


def test_one_students_submissions_and_rejudging(
        app: Flask, client: FlaskClient, keys: dict[str, str], learner: Page) -> None:
    first = submit(client, learner, LAYOUT_GOOD + "# mine\n")
    grade(app, first, 1.0, Verdict.ACCEPTED)
    sid = sign_in(client, keys["instructor"])
    page = f"/app/{sid}/assignments/{learner.assignment_id}/student?user=alice"
    html = client.get(page).get_data(as_text=True)
    assert "# mine" in html and 'id="tests-table"' in html and f'id="rejudge-{first}"' in html
    token = csrf_token(client, page)
    r = client.post(f"/app/{sid}/submissions/{first}/rejudge", data={"csrf_token": token})
    assert r.status_code == 303
    with app.extensions["jaxjudge"].db.session() as s:
        row = s.get(Submission, first)
        assert row is not None and (row.status, row.verdict) == (Status.QUEUED, None)
        assert s.scalars(select(Grading.outcome)).all() == ["stored"]
    grade(app, first, 1.0, Verdict.ACCEPTED)
    r = client.post(f"/app/{sid}/assignments/{learner.assignment_id}/rejudge",
                    data={"csrf_token": token})
    assert r.status_code == 303
    with app.extensions["jaxjudge"].db.session() as s:
        row = s.get(Submission, first)
        assert row is not None and row.status == Status.QUEUED
    # Without the token, nothing is rejudged.
    grade(app, first, 1.0, Verdict.ACCEPTED)
    r = client.post(f"/app/{sid}/submissions/{first}/rejudge")
    assert r.status_code == 400
    with app.extensions["jaxjudge"].db.session() as s:
        assert s.get(Submission, first).status == Status.DONE  # type: ignore[union-attr]


def test_exports_follow_the_gradebook(app: Flask, client: FlaskClient, keys: dict[str, str],
                                      learner: Page) -> None:
    graded = submit(client, learner)
    grade(app, graded, 1.0, Verdict.ACCEPTED)
    bob = launch(client, keys["client"], student="bob", course="algebra")
    submit(client, bob)
    sid = sign_in(client, keys["instructor"])
    base = f"/app/{sid}/assignments/{learner.assignment_id}"
    r = client.get(base + "/export.csv")
    assert r.status_code == 200 and r.mimetype == "text/csv"
    rows = {row["student_id"]: row for row in csv.DictReader(io.StringIO(r.get_data(as_text=True)))}
    assert rows["alice"]["verdict"] == "accepted" and rows["alice"]["submission_id"] == graded
    assert rows["bob"]["verdict"] == ""  # not graded yet
    r = client.get(base + "/gradescope.json")
    documents = json.loads(r.get_data(as_text=True))
    assert documents["alice"]["score"] == 1.0 and documents["bob"]["tests"] == []


def zipped(files: dict[str, str]) -> io.BytesIO:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    out.seek(0)
    return out


def test_a_class_upload_becomes_submissions_to_the_assignment(
        app: Flask, client: FlaskClient, keys: dict[str, str], learner: Page) -> None:
    sid = sign_in(client, keys["instructor"])
    form = f"/app/{sid}/assignments/{learner.assignment_id}/batches"
    token = csrf_token(client, form)
    r = client.post(form, data={"csrf_token": token, "name": "week 1",
                                "archive": (zipped({"dan.py": LAYOUT_GOOD,
                                                    "eve.py": LAYOUT_GOOD}), "class.zip")},
                    content_type="multipart/form-data")
    assert r.status_code == 303, r.data[:300]
    batch_page = r.headers["Location"]
    with app.extensions["jaxjudge"].db.session() as s:
        batch = s.scalars(select(Batch)).one()
        rows = s.scalars(select(Submission).where(Submission.batch_id == batch.id)).all()
    assert sorted(r.student_id for r in rows) == ["dan", "eve"]
    assert {r.assignment_id for r in rows} == {learner.assignment_id}
    html = client.get(batch_page).get_data(as_text=True)
    assert 'data-progress-url=' in html and 'data-student-id="dan"' in html
    progress = client.get(batch_page + "/progress").get_json()
    assert (progress["total"], progress["graded"], progress["done"]) == (2, 0, False)
    for row in rows:
        grade(app, row.id, 1.0, Verdict.ACCEPTED)
    progress = client.get(batch_page + "/progress").get_json()
    assert (progress["graded"], progress["done"]) == (2, True)
    book = client.get(f"/app/{sid}/assignments/{learner.assignment_id}/gradebook")
    assert 'data-user-id="dan" data-verdict="accepted"' in book.get_data(as_text=True)
    r = client.post(form, data={"csrf_token": token,
                                "archive": (io.BytesIO(b"not a zip"), "class.zip")},
                    content_type="multipart/form-data")
    assert r.status_code == 422 and 'id="batch-error"' in r.get_data(as_text=True)


def test_courses_are_the_tenants_and_others_are_404(
        app: Flask, client: FlaskClient, keys: dict[str, str], learner: Page) -> None:
    theirs = launch(client, keys["other"], student="zed", course="elsewhere")
    sid = sign_in(client, keys["instructor"])
    html = client.get(f"/app/{sid}/courses").get_data(as_text=True)
    mine = course_of(app, learner.assignment_id)
    other = course_of(app, theirs.assignment_id)
    assert SID.findall(html) == [str(mine)]
    assert client.get(f"/app/{sid}/courses/{mine}").status_code == 200
    assert client.get(f"/app/{sid}/courses/{other}").status_code == 404
    for path in (f"/assignments/{theirs.assignment_id}/gradebook",
                 f"/assignments/{theirs.assignment_id}/export.csv",
                 f"/assignments/{theirs.assignment_id}"):
        assert client.get(f"/app/{sid}{path}").status_code == 404, path


def test_an_lti_instructor_sees_their_course_only(
        app: Flask, client: FlaskClient, keys: dict[str, str], learner: Page) -> None:
    other = launch(client, keys["client"], student="bob", course="geometry")
    mine, theirs = course_of(app, learner.assignment_id), course_of(app, other.assignment_id)
    svc = app.extensions["jaxjudge"]
    with svc.db.session() as s:
        tenant_id = s.get(Course, mine).tenant_id  # type: ignore[union-attr]
    sid = Sessions(svc.redis, 60).start(Principal(
        tenant_id=tenant_id, role="instructor", via="lti", user_id="teacher",
        course_id=mine, assignment_id=learner.assignment_id))
    assert client.get(f"/app/{sid}/courses").status_code == 303
    assert client.get(f"/app/{sid}/courses/{mine}").status_code == 200
    assert client.get(f"/app/{sid}/courses/{theirs}").status_code == 404
    ok = f"/app/{sid}/assignments/{learner.assignment_id}/gradebook"
    assert client.get(ok).status_code == 200
    assert client.get(f"/app/{sid}/assignments/{other.assignment_id}/gradebook").status_code \
        == 404


def test_a_key_instructor_makes_a_course_without_an_lms(
        app: Flask, client: FlaskClient, keys: dict[str, str]) -> None:
    sid = sign_in(client, keys["instructor"])
    token = csrf_token(client, f"/app/{sid}/courses")
    r = client.post(f"/app/{sid}/courses", data={"csrf_token": token, "course": "Physics",
                                                  "problem": "demo/layout"})
    assert r.status_code == 303
    course = client.get(r.headers["Location"]).get_data(as_text=True)
    assert "Physics" in course and 'data-testid="assignment-row"' in course
    r = client.post(f"/app/{sid}/courses", data={"csrf_token": token, "course": "Physics",
                                                  "problem": "demo/nope"})
    assert r.status_code == 422
