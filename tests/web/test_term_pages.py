"""The course term on the pages (issue 24): the instructor's dates in their own time zone,
extensions and grades set by hand with their audit; what the student page says (dates,
attempts, the penalty now, refusals in words), that a refused submission stores
nothing, that a sample run is let in and counts for nothing, and that hidden tests'
own results wait for the due date."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from judge.verdict import Verdict
from service.db import utcnow
from service.models import Assignment, Extension, ScoreOverride, Submission
from tests.web.pages_support import Page, csrf_token, grade, sign_in
from tests_support import LAYOUT_GOOD


def assignment(app: Flask, assignment_id: str) -> Assignment:
    with app.extensions["jaxjudge"].db.session() as s:
        found = s.get(Assignment, assignment_id)
        assert found is not None
        return found


def submissions(app: Flask) -> list[Submission]:
    with app.extensions["jaxjudge"].db.session() as s:
        return list(s.scalars(select(Submission).order_by(Submission.received_at)))


def term_form(client: FlaskClient, key: str, learner: Page, **fields: str) -> str:
    """Send the rules form as an instructor (with the given fields over the defaults);
    the page it lands on."""
    sid = sign_in(client, key)
    page = f"/app/{sid}/assignments/{learner.assignment_id}/term"
    data = {"csrf_token": csrf_token(client, page), "tz": "UTC", "opens_at": "",
            "due_at": "", "late_until": "", "late_penalty_percent_per_day": "0",
            "late_score_floor_percent": "0", "max_attempts": "", "cooldown_seconds": "0",
            "hidden_results": "immediately", **fields}
    r = client.post(page + "/rules", data=data)
    assert r.status_code == 303, r.get_data(as_text=True)[:600]
    landed = client.get(r.headers["Location"])
    assert landed.status_code == 200
    return landed.get_data(as_text=True)


def words(html: str) -> str:
    """The page's text: tags out (a date is a <time> element the script localises)."""
    return re.sub(r"<[^>]+>", "", html)


def send(client: FlaskClient, learner: Page, action: str = "grade") -> tuple[int, str]:
    token = csrf_token(client, learner.path)
    r = client.post(learner.path + "/submissions",
                    data={"csrf_token": token, "code": LAYOUT_GOOD, "action": action})
    return r.status_code, r.get_data(as_text=True)


def test_dates_are_entered_in_the_instructors_zone_and_stored_in_utc(
        app: Flask, client: FlaskClient, keys: dict[str, str], learner: Page) -> None:
    html = term_form(client, keys["instructor"], learner, tz="Europe/Paris",
                     due_at="2030-01-15T18:00", late_until="2030-01-17T18:00",
                     late_penalty_percent_per_day="10", max_attempts="3",
                     hidden_results="after_due")
    assert 'data-testid="term-changed"' in html
    found = assignment(app, learner.assignment_id)
    assert found.due_at == datetime(2030, 1, 15, 17, 0, tzinfo=UTC)  # CET is UTC+1
    assert found.late_until == datetime(2030, 1, 17, 17, 0, tzinfo=UTC)
    assert (found.max_attempts, found.hidden_results, found.dates_source) == (
        3, "after_due", "instructor")
    # The student page says it in words, with machine-readable dates for the script.
    page = client.get(learner.path).get_data(as_text=True)
    assert 'datetime="2030-01-15T17:00:00+00:00"' in page
    assert "Tue 15 Jan 2030, 17:00 UTC" in page
    assert "Late work loses 10% of the full score per day late" in page
    assert "Graded attempts: 0 of 3 used (3 left)" in page
    assert "shows after the due date" in page and 'data-testid="time-left"' in page
    # A bad zone or date is a page that says what to do; nothing changes.
    sid = sign_in(client, keys["instructor"])
    path = f"/app/{sid}/assignments/{learner.assignment_id}/term"
    r = client.post(path + "/rules", data={"csrf_token": csrf_token(client, path),
                                           "tz": "Mars/Olympus", "due_at": "2030-01-01T00:00"})
    assert r.status_code == 422 and "is not a time zone" in r.get_data(as_text=True)
    assert assignment(app, learner.assignment_id).due_at == found.due_at


def test_a_closed_assignment_refuses_in_words_and_an_extension_lets_one_student_in(
        app: Flask, client: FlaskClient, keys: dict[str, str], learner: Page) -> None:
    past = (utcnow() - timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M")
    term_form(client, keys["instructor"], learner, due_at=past)
    page = client.get(learner.path).get_data(as_text=True)
    assert "This assignment closed on" in page
    assert re.search(r'id="submit-button"[^>]*disabled', page)
    status, body = send(client, learner)
    assert status == 403 and "closed on" in body and submissions(app) == []
    # A sample run is let in, and counts for nothing.
    status, _ = send(client, learner, action="sample")
    assert status == 303
    [sample] = submissions(app)
    assert sample.sample_run

    # An extension for alice: she may submit, late nothing.
    sid = sign_in(client, keys["instructor"])
    path = f"/app/{sid}/assignments/{learner.assignment_id}/term"
    later = (utcnow() + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
    r = client.post(path + "/extensions", data={"csrf_token": csrf_token(client, path),
                                                "tz": "UTC", "student": "alice",
                                                "due_at": later})
    assert r.status_code == 303
    page = client.get(learner.path).get_data(as_text=True)
    assert 'data-testid="term-extension"' in page and "This assignment closed" not in page
    status, _ = send(client, learner)
    assert status == 303 and [s.sample_run for s in submissions(app)] == [True, False]
    with app.extensions["jaxjudge"].db.session() as s:
        [ext] = s.scalars(select(Extension)).all()
    assert ext.student_id == "alice" and "key:" in ext.granted_by


def test_attempts_run_out_and_the_cooldown_is_shown(
        app: Flask, client: FlaskClient, keys: dict[str, str], learner: Page) -> None:
    term_form(client, keys["instructor"], learner, max_attempts="2", cooldown_seconds="3600")
    assert send(client, learner)[0] == 303
    page = client.get(learner.path).get_data(as_text=True)
    assert "Graded attempts: 1 of 2 used (1 left)" in page
    assert "Your next graded attempt can be made on" in page
    assert 'data-testid="cooldown"' in page and "data-countdown=" in page
    status, body = send(client, learner)
    assert status == 429 and "next graded attempt" in body
    term_form(client, keys["instructor"], learner, max_attempts="2", cooldown_seconds="0")
    assert send(client, learner)[0] == 303
    status, body = send(client, learner)
    assert status == 403 and "You have used all 2 graded attempts" in body
    assert len(submissions(app)) == 2


def test_hidden_results_wait_for_the_due_date_and_an_override_is_audited(
        app: Flask, client: FlaskClient, keys: dict[str, str], learner: Page) -> None:
    soon = (utcnow() + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    term_form(client, keys["instructor"], learner, due_at=soon, hidden_results="after_due")
    assert send(client, learner)[0] == 303
    [row] = submissions(app)
    grade(app, row.id, 0.0, Verdict.WRONG_ANSWER)
    page = client.get(learner.path).get_data(as_text=True)
    assert 'data-testid="hidden-withheld"' in page and "hidden-1" not in page
    assert "wrong answer" in page.replace("_", " ")  # the verdict itself shows
    past = (utcnow() - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M")
    term_form(client, keys["instructor"], learner, due_at=past, hidden_results="after_due")
    page = client.get(learner.path).get_data(as_text=True)
    assert "hidden-1" in page and 'data-testid="hidden-withheld"' not in page

    sid = sign_in(client, keys["instructor"])
    path = f"/app/{sid}/assignments/{learner.assignment_id}/term"
    r = client.post(path + "/overrides", data={
        "csrf_token": csrf_token(client, path), "student": "alice", "score_given": "0.75",
        "reason": "partial credit after office hours"})
    assert r.status_code == 303
    html = client.get(r.headers["Location"]).get_data(as_text=True)
    assert "partial credit after office hours" in html and 'data-testid="override-audit"' in html
    with app.extensions["jaxjudge"].db.session() as s:
        [audit] = s.scalars(select(ScoreOverride)).all()
    assert (audit.score_given, audit.score_maximum, audit.before, audit.after) == (
        0.75, 1.0, {"given": 0.0, "maximum": 1.0}, {"given": 0.75, "maximum": 1.0})
    book = client.get(f"/app/{sid}/assignments/{learner.assignment_id}/gradebook")
    assert 'data-testid="overridden"' in book.get_data(as_text=True)
    # No reason: refused in words, nothing stored.
    r = client.post(path + "/overrides", data={
        "csrf_token": csrf_token(client, path), "student": "alice", "score_given": "1",
        "reason": " "})
    assert r.status_code == 422 and "needs a reason" in r.get_data(as_text=True)


def test_time_is_the_services_clock_never_a_sleep(
        app: Flask, client: FlaskClient, keys: dict[str, str], learner: Page) -> None:
    """The term reads the services' clock (injected here): the same page before the
    opening refuses, and after it admits, with no waiting."""
    services = app.extensions["jaxjudge"]
    opens = datetime(2031, 3, 1, 9, 0, tzinfo=UTC)
    term_form(client, keys["instructor"], learner, opens_at="2031-03-01T09:00",
              due_at="2031-03-08T09:00")
    services.clock = lambda: opens - timedelta(hours=1)
    try:
        page = client.get(learner.path).get_data(as_text=True)
        assert "This assignment opens on Sat 01 Mar 2031, 09:00 UTC" in words(page)
        assert '<time datetime="2031-03-01T09:00:00+00:00" data-local>' in page
        status, _ = send(client, learner)
        assert status == 403 and submissions(app) == []
        services.clock = lambda: opens + timedelta(days=7, hours=1)  # past due: closed
        assert "closed on Sat 08 Mar 2031" in words(client.get(learner.path).get_data(as_text=True))
        services.clock = lambda: opens + timedelta(minutes=1)
        page = client.get(learner.path).get_data(as_text=True)
        assert "This assignment opens" not in page and 'data-testid="time-left"' in page
        status, _ = send(client, learner)
        assert status == 303
        [row] = submissions(app)
        assert row.received_at == opens + timedelta(minutes=1)  # stamped by the same clock
    finally:
        services.clock = utcnow
