"""The student page: opened by a launch link, the statement and samples, submitting
(with CSRF), the live status, the history; what a learner may not reach."""

from __future__ import annotations

import io
import json
import re

from flask import Flask
from flask.testing import FlaskClient
from servers import wait_for
from service_fixtures import auth
from sqlalchemy import select

from judge.verdict import Verdict
from service.launch_links import mint
from service.models import Assignment, Course, Member, Submission
from service.secret import secret_key
from tests.web.pages_support import Page, csrf_token, grade, launch, sign_in
from tests_support import LAYOUT_GOOD


def submissions(app: Flask) -> list[Submission]:
    with app.extensions["jaxjudge"].db.session() as s:
        return list(s.scalars(select(Submission)))


def submit(client: FlaskClient, page: Page, code: str = LAYOUT_GOOD) -> str:
    token = csrf_token(client, page.path)
    r = client.post(page.path + "/submissions", data={"csrf_token": token, "code": code})
    assert r.status_code == 303, r.data[:400]
    found = re.search(r"submission=([0-9a-f]{32})", r.headers["Location"])
    assert found
    return found.group(1)


def test_a_launch_link_opens_the_student_page_with_statement_and_samples(
        app: Flask, client: FlaskClient, learner: Page) -> None:
    r = client.get(learner.path)
    assert r.status_code == 200
    html = r.get_data(as_text=True)
    assert 'id="statement"' in html and 'id="sample-tests"' in html
    assert 'data-testid="sample-row"' in html
    assert "def layout(num_devices, kernel_in, kernel_out):" in html
    assert 'data-editor="python"' in html and 'id="upload"' in html
    with app.extensions["jaxjudge"].db.session() as s:
        course = s.scalars(select(Course)).one()
        assignment = s.scalars(select(Assignment)).one()
        member = s.scalars(select(Member)).one()
    assert (course.platform_id, course.context_id) == (None, "algebra")
    assert (assignment.id, assignment.problem) == (learner.assignment_id, "demo/layout")
    assert (member.user_id, member.name, member.course_id) == ("alice", "Alice", course.id)


def test_pages_send_a_strict_content_security_policy(client: FlaskClient,
                                                      learner: Page) -> None:
    r = client.get(learner.path)
    policy = dict(part.strip().split(" ", 1) for part in
                  r.headers["Content-Security-Policy"].split(";"))
    assert policy["default-src"] == "'self'"
    assert policy["script-src"] == "'self'"  # no inline script, no other host
    assert re.fullmatch(r"'self' 'nonce-[A-Za-z0-9_-]+'", policy["style-src"])
    assert policy["object-src"] == "'none'" and policy["base-uri"] == "'none'"
    assert policy["form-action"] == "'self'" and policy["frame-ancestors"] == "*"
    assert r.headers["Referrer-Policy"] == "no-referrer"
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    html = r.get_data(as_text=True)
    assert "<script>" not in html and "http://" not in html.split("</head>")[0]
    nonce = re.search(r"'nonce-([^']+)'", policy["style-src"])
    assert nonce and f'content="{nonce.group(1)}"' in html  # the editor's styles carry it


def test_submitting_from_the_page_files_it_under_the_student_and_assignment(
        app: Flask, client: FlaskClient, learner: Page) -> None:
    sid = submit(client, learner)
    (row,) = submissions(app)
    assert (row.id, row.student_id, row.assignment_id, row.problem) == \
        (sid, "alice", learner.assignment_id, "demo/layout")
    assert row.code == LAYOUT_GOOD
    page = client.get(f"{learner.path}?submission={sid}").get_data(as_text=True)
    assert 'id="submission-status"' in page and 'data-status="queued"' in page
    assert f'data-submission-id="{sid}"' in page  # in the history


def test_the_same_form_sent_twice_is_one_submission(app: Flask, client: FlaskClient,
                                                     learner: Page) -> None:
    page = client.get(learner.path).get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    once = re.search(r'name="submit_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    for _ in range(2):
        r = client.post(learner.path + "/submissions",
                        data={"csrf_token": token, "submit_token": once, "code": LAYOUT_GOOD})
        assert r.status_code == 303
    assert len(submissions(app)) == 1


def test_a_python_file_upload_is_submitted(app: Flask, client: FlaskClient,
                                           learner: Page) -> None:
    token = csrf_token(client, learner.path)
    r = client.post(learner.path + "/submissions", data={
        "csrf_token": token, "code": "ignored",
        "upload": (io.BytesIO(LAYOUT_GOOD.encode()), "solution.py")},
        content_type="multipart/form-data")
    assert r.status_code == 303
    assert [s.code for s in submissions(app)] == [LAYOUT_GOOD]
    r = client.post(learner.path + "/submissions", data={
        "csrf_token": token, "upload": (io.BytesIO(b"x"), "solution.txt")},
        content_type="multipart/form-data")
    assert r.status_code == 422
    assert "upload a .py or .ipynb file" in r.get_data(as_text=True)


def test_bad_code_is_an_error_on_the_page_and_the_code_stays(app: Flask, client: FlaskClient,
                                                           learner: Page) -> None:
    token = csrf_token(client, learner.path)
    r = client.post(learner.path + "/submissions", data={"csrf_token": token, "code": "   "})
    assert r.status_code == 422
    assert 'id="submit-error"' in r.get_data(as_text=True)
    assert submissions(app) == []


def test_a_post_without_its_csrf_token_is_refused(app: Flask, client: FlaskClient,
                                                  learner: Page) -> None:
    r = client.post(learner.path + "/submissions", data={"code": LAYOUT_GOOD})
    assert r.status_code == 400
    assert "security token" in r.get_data(as_text=True)
    r = client.post(learner.path + "/submissions",
                    data={"code": LAYOUT_GOOD, "csrf_token": "forged"})
    assert r.status_code == 400
    assert submissions(app) == []


def test_an_unknown_or_expired_session_says_so(app: Flask, client: FlaskClient,
                                               learner: Page) -> None:
    r = client.get("/app/" + "x" * 43 + "/assignments/" + learner.assignment_id)
    assert r.status_code == 401
    assert "open the assignment from your course again" in r.get_data(as_text=True).lower()
    app.extensions["jaxjudge"].redis.delete("jaxjudge:web:session:" + learner.sid)
    assert client.get(learner.path).status_code == 401


def test_the_status_and_the_verdict_arrive_live(app: Flask, client: FlaskClient,
                                                learner: Page, start_worker) -> None:  # type: ignore[no-untyped-def]
    start_worker("-Q", "interactive,batch", "--concurrency", "1")
    sid = submit(client, learner)
    status = f"/app/{learner.sid}/submissions/{sid}/status"

    def done() -> dict | None:  # type: ignore[type-arg]
        body = client.get(status + "?wait=20").get_json()
        return body if body["done"] else None

    body = wait_for(done, 180, "the verdict on the page")
    assert (body["status"], body["verdict"]) == ("done", "accepted")
    assert 'data-verdict="accepted"' in body["result_html"]
    assert 'id="tests-table"' in body["result_html"]
    assert f'data-submission-id="{sid}"' in body["history_html"]
    # The same report as the REST API shows for the submission, hidden tests included.
    (row,) = submissions(app)
    assert row.report is not None
    for test in row.report["tests"]:
        assert test["name"] in body["result_html"]
        if test["visibility"] == "hidden":
            assert test["input"] is None


def test_history_shows_own_submissions_and_loads_code_back(
        app: Flask, client: FlaskClient, keys: dict[str, str], learner: Page) -> None:
    first = submit(client, learner, LAYOUT_GOOD + "# first\n")
    grade(app, first, 1.0, Verdict.ACCEPTED)
    bob = launch(client, keys["client"], student="bob", course="algebra")
    theirs = submit(client, bob, LAYOUT_GOOD + "# bob's\n")
    assert bob.assignment_id == learner.assignment_id
    page = client.get(learner.path).get_data(as_text=True)
    assert f'data-submission-id="{first}"' in page and theirs not in page
    assert 'data-verdict="accepted"' in page
    loaded = client.get(f"{learner.path}?load={first}").get_data(as_text=True)
    assert "# first" in loaded
    # Another student's submission is nobody's business.
    assert client.get(f"{learner.path}?load={theirs}").status_code == 404
    assert client.get(f"/app/{learner.sid}/submissions/{theirs}/status").status_code == 404
    assert client.get(f"/app/{learner.sid}/submissions/{first}/status").get_json()["done"]


def test_a_learner_reaches_no_instructor_page_and_no_other_assignment(
        client: FlaskClient, keys: dict[str, str], learner: Page) -> None:
    other = launch(client, keys["client"], student="alice", problem="demo/sharded",
                   course="algebra")
    base = f"/app/{learner.sid}"
    assert client.get(f"{base}/assignments/{other.assignment_id}").status_code == 404
    for path in (f"/assignments/{learner.assignment_id}/gradebook", "/courses",
                 f"/assignments/{learner.assignment_id}/export.csv"):
        r = client.get(base + path)
        assert r.status_code == 403, path
    token = csrf_token(client, learner.path)
    r = client.post(f"{base}/assignments/{learner.assignment_id}/rejudge",
                    data={"csrf_token": token})
    assert r.status_code == 403


def test_launch_links_are_signed_single_use_and_expire(
        app: Flask, client: FlaskClient, keys: dict[str, str]) -> None:
    r = client.post("/v1/launch-links", json={"problem": "demo/layout", "student_id": "al"},
                    headers=auth(keys["client"]))
    assert r.status_code == 201
    body = r.get_json()
    path = "/launch/" + body["url"].rsplit("/launch/", 1)[1]
    assert body["expires_at"]
    assert client.get(path).status_code == 303
    again = client.get(path)
    assert again.status_code == 410 and "used before" in again.get_data(as_text=True)
    # Tampered: one character of the signed body changed.
    token = path.rsplit("/", 1)[1]
    forged = token[:5] + ("A" if token[5] != "A" else "B") + token[6:]
    assert client.get("/launch/" + forged).status_code == 400
    # Signed with another secret.
    with app.app_context():
        settings = app.extensions["jaxjudge"].settings
        secret = secret_key(settings)
    other, _ = mint(b"another secret", tenant_id=1, problem="demo/layout", student_id="x",
                    seconds=60)
    assert client.get("/launch/" + other).status_code == 400
    # Expiring this very second: expired already (a link is good strictly before its time).
    expired, _ = mint(secret, tenant_id=1, problem="demo/layout", student_id="x", seconds=0)
    r = client.get("/launch/" + expired)
    assert r.status_code == 410 and "expired" in r.get_data(as_text=True)


def test_launch_link_requests_are_checked(client: FlaskClient, keys: dict[str, str]) -> None:
    for body, status in (({"problem": "demo/layout", "student_id": "a", "expires_in": 10**6}, 422),
                         ({"problem": "demo/nope", "student_id": "a"}, 404),
                         ({"problem": "demo/layout", "student_id": "../x"}, 422)):
        r = client.post("/v1/launch-links", json=body, headers=auth(keys["client"]))
        assert r.status_code == status, r.get_json()
    assert client.post("/v1/launch-links", json={"problem": "demo/layout",
                                                 "student_id": "a"}).status_code == 401


def test_sign_in_needs_an_instructor_key(client: FlaskClient, keys: dict[str, str]) -> None:
    assert client.post("/app/signin", data={"api_key": "jj_nope"}).status_code == 401
    r = client.post("/app/signin", data={"api_key": keys["client"]})
    assert r.status_code == 403
    assert client.get("/app/signin").status_code == 200
    sid = sign_in(client, keys["instructor"])
    assert client.get(f"/app/{sid}/courses").status_code == 200
    assert json.dumps(sid)
