"""The "Grade in your course" panel and its endpoint (GET
/app/<sid>/assignments/<id>/score), which the page's script asks while a score is on
its way: the state and the panel rendered from the page's own template, for every
state a score delivery goes through, a later failure after a delivered grade included."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from service.db import utcnow
from service.deliveries import LTI_SCORE, open_delivery
from service.models import Assignment, Delivery, Submission
from tests.web.pages_support import Page, csrf_token
from tests_support import LAYOUT_GOOD

LINEITEM = "https://lms.example/api/lti/courses/1/line_items/7"


def panel(client: FlaskClient, page: Page) -> tuple[str, str]:
    """The panel's state and its words (tags and runs of spaces taken out)."""
    r = client.get(page.path + "/score")
    assert r.status_code == 200, r.data[:400]
    assert r.headers["Cache-Control"] == "no-store"
    body: dict[str, Any] = r.get_json()
    html = body["score_html"]
    assert html.lstrip().startswith('<section class="panel" id="lms-grade-section"')
    assert f'data-state="{body["state"]}"' in html
    return body["state"], " ".join(re.sub(r"<[^>]+>", "", html).split())


def graded_to_lms(app: Flask, page: Page) -> None:
    """Give the page's assignment a line item (as an LTI launch would)."""
    with app.extensions["jaxjudge"].db.session() as s:
        row = s.get(Assignment, page.assignment_id)
        assert row is not None
        row.lineitem_url = LINEITEM


def submitted(app: Flask, client: FlaskClient, page: Page) -> Submission:
    token = csrf_token(client, page.path)
    r = client.post(page.path + "/submissions", data={"csrf_token": token,
                                                      "code": LAYOUT_GOOD})
    assert r.status_code == 303, r.data[:400]
    with app.extensions["jaxjudge"].db.session() as s:
        row = s.scalars(select(Submission).order_by(Submission.received_at.desc())).first()
        assert row is not None
        s.expunge(row)
    return row


def score(app: Flask, submission: Submission, at: int, **state: Any) -> str:
    """A score delivery of ``submission``, opened ``at`` seconds from now, with
    ``state`` set on it (status, attempts, last_error, payload)."""
    db = app.extensions["jaxjudge"].db
    now = utcnow() + timedelta(seconds=at)
    with db.session() as s:
        delivery_id = open_delivery(s, submission.id, submission.attempt,
                                    submission.tenant_id, LINEITEM + "/scores", now,
                                    kind=LTI_SCORE, cause=f"test:{at}")
    change(app, delivery_id, **state)
    return delivery_id


def change(app: Flask, delivery_id: str, **state: Any) -> None:
    with app.extensions["jaxjudge"].db.session() as s:
        row = s.get(Delivery, delivery_id)
        assert row is not None
        for name, value in state.items():
            setattr(row, name, value)


def body(given: float, stamp: str) -> dict[str, Any]:
    return {"userId": "alice", "scoreGiven": given, "scoreMaximum": 3.0,
            "timestamp": stamp, "activityProgress": "Completed",
            "gradingProgress": "FullyGraded"}


def test_an_assignment_without_an_lms_says_so(client: FlaskClient, learner: Page) -> None:
    assert panel(client, learner) == ("none",
                                      "Grade in your course This assignment does not send "
                                      "grades to an LMS.")
    page = client.get(learner.path).get_data(as_text=True)
    assert 'data-score-url=' not in page  # nothing for the script to follow


def test_the_panel_follows_a_score_until_the_lms_has_it(
        app: Flask, client: FlaskClient, learner: Page) -> None:
    graded_to_lms(app, learner)
    page = client.get(learner.path).get_data(as_text=True)
    assert f'data-score-url="{learner.path}/score"' in page
    assert panel(client, learner) == (
        "not-sent", "Grade in your course Not sent yet: a grade is sent when a submission "
        "is graded.")

    first = submitted(app, client, learner)
    delivery = score(app, first, 0)
    state, words = panel(client, learner)
    assert state == "pending"
    assert words.endswith("Your grade is being sent to your course."), words
    assert "try 0" not in words
    change(app, delivery, attempts=2, last_error="token endpoint: HTTP 503",
           payload=body(3.0, "2026-01-01T10:00:00.000+00:00"))
    state, words = panel(client, learner)
    assert state == "pending"
    assert words.endswith("Your grade of 3.0 / 3.0 is being sent to your course (try 2: "
                          "the LMS has not taken it yet)."), words
    assert "HTTP 503" not in words  # a retry's reason is the instructor's business

    change(app, delivery, status="delivered", attempts=3, last_error=None)
    state, words = panel(client, learner)
    assert state == "delivered"
    assert re.search(r"Your grade 3\.0 / 3\.0 is in your course \(sent [0-9-]+ [0-9:]+ "
                     r"UTC\)\.$", words), words

    # A newer grade on its way, then failed for good: the course still holds the first.
    later = score(app, first, 1, attempts=1, payload=body(2.0, "2026-01-01T11:00:00.000+00:00"))
    state, words = panel(client, learner)
    assert state == "pending"
    assert "is in your course (sent" in words
    assert words.endswith("; a newer grade of 2.0 / 3.0 is being sent to your course "
                          "(try 1)."), words
    change(app, later, status="failed", last_error="HTTP 404")
    state, words = panel(client, learner)
    assert state == "failed"
    assert "Your grade 3.0 / 3.0 is in your course (sent" in words, words
    assert words.endswith("; a later grade of 2.0 / 3.0 could not be sent. Your "
                          "instructor sees why and can send it again."), words
    assert "HTTP 404" not in words  # the LMS's answer is for the instructor's eyes

    # Cancelled (a later score replaced it): what the course holds is what counts.
    change(app, later, status="cancelled")
    assert panel(client, learner)[0] == "delivered"


def test_a_first_grade_refused_or_failed_says_so_and_who_sees_why(
        app: Flask, client: FlaskClient, learner: Page) -> None:
    graded_to_lms(app, learner)
    first = submitted(app, client, learner)
    delivery = score(app, first, 0, status="refused", attempts=1,
                     last_error="the address is refused by the webhook policy",
                     payload=body(3.0, "2026-01-01T10:00:00.000+00:00"))
    state, words = panel(client, learner)
    assert state == "refused"
    assert words.endswith("Your grade of 3.0 / 3.0 could not be sent. Your instructor sees "
                          "why and can send it again."), words
    assert "webhook policy" not in words
    change(app, delivery, status="cancelled")
    assert panel(client, learner) == ("cancelled", "Grade in your course Not sent: a later "
                                                   "grade replaced it.")


def test_the_panel_is_the_sessions_own(app: Flask, client: FlaskClient, learner: Page) -> None:
    r = client.get("/app/" + "x" * 43 + "/assignments/" + learner.assignment_id + "/score")
    assert r.status_code == 401
    other = learner.path.rsplit("/", 1)[0] + "/" + "0" * 32 + "/score"
    assert client.get(other).status_code == 404
