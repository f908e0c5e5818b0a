"""Grades to the LMS (LTI AGS) through the outbox: the score a submission sends (policy,
fixed words, strictly later timestamps), the access token (client assertion checked by
the platform, cached), and how each answer of the platform ends a try. Tries are made
by calling the delivery task's body in this process against a real HTTP platform on
127.0.0.1, with real Redis and the database."""

from __future__ import annotations

import threading
from datetime import datetime

import pytest
from sqlalchemy import select

from judge.verdict import Verdict
from lti.tokens import ASSERTION_TYPE, Platform, Tokens, assertion
from service import scores
from service.db import Database
from service.models import Delivery, LtiPlatform, Submission
from service.scores import last_sent, next_timestamp, score_states, scores_endpoint
from service.settings import ServiceSettings
from service.submissions import claim, rejudge, store
from tests.lti.platform import TestPlatform
from tests.lti.services_support import (
    Setup,
    delivery,
    graded,
    make_setup,
    offline_setup,
    report,
    run_tries,
)
from workers.context import Context
from workers.deliveries import attempt

pytestmark = [pytest.mark.service]


def test_the_scores_url_is_the_line_item_path_with_scores_before_any_query() -> None:
    assert scores_endpoint("https://lms.example/li/7") == "https://lms.example/li/7/scores"
    assert scores_endpoint("https://lms.example/li/7/") == "https://lms.example/li/7/scores"
    assert (scores_endpoint("https://lms.example/mod/lti/services.php/2/lineitems/7/lineitem"
                            "?type_id=1")
            == "https://lms.example/mod/lti/services.php/2/lineitems/7/lineitem/scores?type_id=1")


def test_a_graded_submission_sends_its_score_once_with_a_token(
        ctx: Context, setup: Setup, platform: TestPlatform) -> None:
    sid, opened = graded(setup, "student-1", 1.0)
    assert opened is not None
    row = run_tries(ctx, opened)
    assert (row.status, row.attempts, row.last_error) == ("delivered", 1, None)
    assert row.url == setup.lineitem + "/scores"
    [body] = platform.services.scores_for("student-1", setup.lineitem)
    assert body == row.payload
    assert body["scoreGiven"] == 1.0 and body["scoreMaximum"] == 2.0
    assert body["activityProgress"] == "Completed"
    assert body["gradingProgress"] == "FullyGraded"
    assert body["comment"] == "Verdict: accepted. Tests passed: 1 of 2."
    [grant] = platform.services.tokens
    assert grant["scope"] == scores.SCORE_SCOPE and grant["client_id"] == platform.client_id
    # A second score uses the cached token: the platform grants no second one.
    _, again = graded(setup, "student-1", 2.0)
    assert again is not None and run_tries(ctx, again).status == "delivered"
    assert len(platform.services.tokens) == 1
    assert len(platform.services.scores_for("student-1")) == 2


def test_the_comment_is_in_fixed_words_only(ctx: Context, setup: Setup,
                                            platform: TestPlatform) -> None:
    _, opened = graded(setup, "student-1", 0.0, verdict=Verdict.WRONG_ANSWER,
                       message="LEAK-by-the-submission")
    assert opened is not None and run_tries(ctx, opened).status == "delivered"
    [body] = platform.services.scores_for("student-1")
    assert body["comment"] == "Verdict: wrong answer. Tests passed: 0 of 2."
    assert "LEAK" not in str(body)


@pytest.mark.parametrize("policy, expected", [("best", 2.0), ("latest", 1.0)])
def test_the_policy_picks_the_score_over_the_students_graded_submissions(
        ctx: Context, db: Database, lti_settings: ServiceSettings, platform: TestPlatform,
        policy: str, expected: float) -> None:
    setup = make_setup(db, lti_settings, platform, policy=policy)
    for score in (0.0, 2.0, 1.0):  # received in this order; the last is the latest
        graded(setup, "student-1", score)
    graded(setup, "student-2", 0.0)  # another student's scores are not in it
    with db.session() as s:
        opened = s.scalars(select(Delivery.id).where(Delivery.kind == "lti-score")
                           .order_by(Delivery.created_at, Delivery.id)).all()
    for delivery_id in opened:
        assert run_tries(ctx, delivery_id).status in ("delivered", "cancelled")
    with db.session() as s:
        states = score_states(s, setup.assignment_id)
        sent = last_sent(s, setup.assignment_id, "student-1")
    assert sent is not None and sent.score_given == expected
    assert states["student-1"].score_given == expected and states["student-2"].score_given == 0
    bodies = platform.services.scores_for("student-1")
    assert bodies[-1]["scoreGiven"] == expected
    stamps = [datetime.fromisoformat(b["timestamp"]) for b in bodies]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)


def test_timestamps_strictly_increase_under_concurrent_tries(any_database_url: str) -> None:
    """Threads move one (assignment, user) clock at once, on SQLite and PostgreSQL:
    every timestamp handed out is distinct, and each is later than the clock's value
    when it was taken."""
    db = Database(any_database_url)
    setup = offline_setup(db)
    taken: list[datetime] = []
    lock = threading.Lock()
    frozen = datetime.fromisoformat("2030-01-01T00:00:00+00:00")  # all at the same "now"

    def tick() -> None:
        for _ in range(15):
            with db.session() as s:
                stamp = next_timestamp(s, setup.assignment_id, "student-1", now=frozen)
            with lock:
                taken.append(stamp)

    threads = [threading.Thread(target=tick) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    db.dispose()
    assert len(taken) == 90 and len(set(taken)) == 90
    assert max(taken) == frozen + 89 * scores.CLOCK_STEP


def test_a_lost_answer_is_retried_and_the_409_to_the_retry_means_delivered(
        ctx: Context, setup: Setup, platform: TestPlatform) -> None:
    platform.services.lose_answers = 1  # the platform took it; its answer was lost
    _, opened = graded(setup, "student-1", 2.0)
    assert opened is not None
    row = run_tries(ctx, opened)
    assert (row.status, row.attempts) == ("delivered", 2)
    received = [s for s in platform.services.scores if s.body["userId"] == "student-1"]
    assert [s.status for s in received] == [200, 409]  # the same body twice: taken once
    assert received[0].body == received[1].body == row.payload


def test_a_platform_answering_503_is_retried_with_the_same_body(
        ctx: Context, setup: Setup, platform: TestPlatform) -> None:
    platform.services.fail_with = 503
    _, opened = graded(setup, "student-1", 2.0)
    assert opened is not None
    first = attempt(ctx, opened, 0)
    assert first is not None  # a retry is due
    fixed = delivery(ctx.db, opened)
    assert fixed.status == "pending" and fixed.last_error == "token endpoint: HTTP 503"
    assert fixed.payload is not None
    platform.services.fail_with = None
    assert attempt(ctx, opened, 1) is None
    row = delivery(ctx.db, opened)
    assert (row.status, row.attempts, row.payload) == ("delivered", 2, fixed.payload)
    assert platform.services.scores_for("student-1") == [fixed.payload]


def test_a_final_4xx_fails_the_score_with_the_reason(
        ctx: Context, db: Database, lti_settings: ServiceSettings,
        platform: TestPlatform) -> None:
    setup = make_setup(db, lti_settings, platform,
                       lineitem=platform.services.lineitem_url("course-1", "no-such-item"))
    _, opened = graded(setup, "student-1", 1.0)
    assert opened is not None
    row = run_tries(ctx, opened)
    assert (row.status, row.attempts, row.last_error) == ("failed", 1, "HTTP 404")


def test_a_client_assertion_the_platform_refuses_fails_the_score(
        ctx: Context, db: Database, setup: Setup, platform: TestPlatform) -> None:
    with db.session() as s:
        row = s.get(LtiPlatform, setup.platform_id)
        assert row is not None
        row.client_id = "somebody-else"  # the assertion's iss/sub are not the client id
    _, opened = graded(setup, "student-1", 1.0)
    assert opened is not None
    found = run_tries(ctx, opened)
    assert found.status == "failed"
    assert found.last_error == "token endpoint: HTTP 401 (invalid_client)"
    assert platform.services.scores == [] and platform.services.token_errors


def test_the_platform_refuses_a_replayed_or_misaddressed_assertion(
        db: Database, lti_settings: ServiceSettings, setup: Setup,
        platform: TestPlatform) -> None:
    import requests

    tokens = Tokens(db, lti_settings)
    target = Platform(setup.platform_id, platform.client_id, platform.services.token_url)
    signed = assertion(tokens, target)
    form = {"grant_type": "client_credentials", "client_assertion_type": ASSERTION_TYPE,
            "client_assertion": signed, "scope": scores.SCORE_SCOPE}
    assert requests.post(target.token_url, data=form, timeout=5).status_code == 200
    assert requests.post(target.token_url, data=form, timeout=5).status_code == 401  # jti
    elsewhere = assertion(tokens, Platform(setup.platform_id, platform.client_id,
                                           "http://other/token"))
    form["client_assertion"] = elsewhere
    assert requests.post(target.token_url, data=form, timeout=5).status_code == 401  # aud
    assert any("aud" in e for e in platform.services.token_errors)


def test_no_score_without_a_line_item_or_the_score_scope(
        db: Database, lti_settings: ServiceSettings, platform: TestPlatform) -> None:
    setup = make_setup(db, lti_settings, platform, scopes=[])
    _, opened = graded(setup, "student-1", 1.0)
    assert opened is None


def test_a_rejudge_cancels_the_open_score_and_the_new_report_opens_another(
        ctx: Context, db: Database, setup: Setup, platform: TestPlatform) -> None:
    sid, first = graded(setup, "student-1", 1.0)
    assert first is not None
    with db.session() as s:
        assert rejudge(s, Submission.id == sid) == [sid]
    assert delivery(db, first).status == "cancelled"
    assert attempt(ctx, first, 0) is None  # its queued try finds it over
    taken = claim(db, sid, stale_after=30)
    assert taken is not None
    stored = store(db, sid, taken.attempt, report(2.0))
    assert stored is not None and stored.score not in (None, first)
    assert stored.score is not None and run_tries(ctx, stored.score).status == "delivered"
    assert [b["scoreGiven"] for b in platform.services.scores_for("student-1")] == [2.0]
