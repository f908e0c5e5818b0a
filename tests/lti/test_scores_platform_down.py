"""Scores survive an LMS that is down, and a delivery worker killed mid-try: real
grading (Docker sandbox) and delivery worker processes, real Redis, the sweeper, and
the test platform over HTTP on 127.0.0.1, stopped and started again on its port.

Every score is stored before it is sent (the outbox), retried with backoff while the
platform is away, and arrives once: the platform takes each body at most once, the
timestamps it takes for a student only grow, and its last grade for each student is the
policy's (best) grade."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pytest
from flask import Flask
from servers import Sweeper, Worker, wait_for
from sqlalchemy import select

from service.models import Delivery, Status, Submission
from service.submitting import NewSubmission, submit
from tests.lti.conftest import Tool
from tests.lti.platform import TestPlatform
from tests.lti.services_support import Setup, make_setup
from tests_support import LAYOUT_GOOD as GOOD
from tests_support import LAYOUT_WRONG as WRONG

pytestmark = [pytest.mark.service, pytest.mark.slow]
LTI = {"webhook_allow": ["127.0.0.1"], "secret_key": "tests-secret",
       "lti_backoff_seconds": 0.5, "lti_max_attempts": 40, "lti_timeout_seconds": 2.0}


def send(app: Flask, setup: Setup, student: str, code: str) -> str:
    row, _ = submit(app.extensions["jaxjudge"], NewSubmission(
        tenant_id=setup.tenant_id, problem="demo/layout", code=code, student_id=student,
        assignment_id=setup.assignment_id))
    return row.id


def scores(setup: Setup) -> list[tuple[str, Delivery]]:
    """(student, delivery) of every score delivery of the assignment."""
    with setup.db.session() as s:
        return [(student, row) for student, row in s.execute(
            select(Submission.student_id, Delivery)
            .join(Submission, Submission.id == Delivery.submission_id)
            .where(Delivery.kind == "lti-score")).all()]


def graded(setup: Setup, ids: list[str]) -> bool:
    with setup.db.session() as s:
        return all(s.get(Submission, sid).status == Status.DONE  # type: ignore[union-attr]
                   for sid in ids)


def taken(platform: TestPlatform) -> list[str]:
    """The score bodies the platform took (2xx), canonical, in arrival order."""
    return [str(sorted(s.body.items())) for s in platform.services.scores if s.status < 300]


def check_once(platform: TestPlatform) -> None:
    """Each body was taken at most once, and timestamps taken only grow per student."""
    bodies = [s.body for s in platform.services.scores if s.status < 300]
    assert len(set(taken(platform))) == len(bodies), bodies
    for student in {b["userId"] for b in bodies}:
        stamps = [datetime.fromisoformat(b["timestamp"]) for b in bodies
                  if b["userId"] == student]
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)


def test_every_score_arrives_once_after_the_platform_comes_back(
        app: Flask, tool: Tool, platform: TestPlatform,
        start_worker: Callable[..., Worker]) -> None:
    setup = make_setup(tool.db, app.extensions["jaxjudge"].settings, platform)
    platform.stop()  # the LMS is down while the scores are due
    start_worker("-Q", "interactive,batch", "--concurrency", "1", **LTI)
    start_worker("-Q", "webhooks", "--pool", "threads", "--concurrency", "4", **LTI)
    plan = {"ana": [WRONG, GOOD], "bo": [GOOD, WRONG], "cy": [WRONG]}
    ids = [send(app, setup, student, code) for student, codes in plan.items()
           for code in codes]
    wait_for(lambda: graded(setup, ids), 240, "the submissions graded")
    wait_for(lambda: len(found := scores(setup)) == len(ids)
             and all(d.attempts >= 2 and d.status == "pending" for _, d in found),
             120, "every score tried twice or more while the platform is down")
    platform.start()
    wait_for(lambda: all(d.status != "pending" for _, d in scores(setup)), 120,
             "every score delivered")
    found = scores(setup)
    assert {d.status for _, d in found} <= {"delivered", "cancelled"}, found
    check_once(platform)
    took = set(taken(platform))
    for student, row in found:
        assert row.payload is not None and row.payload["userId"] == student
        if row.status == "delivered":  # its very body is the one the platform took
            assert str(sorted(row.payload.items())) in took
        else:  # overtaken: a later score of the same student was taken
            assert "later score" in (row.last_error or "")
    with setup.db.session() as s:
        best = dict(s.execute(select(Submission.student_id, Submission.score)
                              .where(Submission.id.in_(ids))
                              .order_by(Submission.score)).all())
    for student in plan:
        last = platform.services.scores_for(student)[-1]
        assert last["scoreGiven"] == best[student] and last["scoreMaximum"] > 0


def test_a_delivery_worker_killed_mid_try_sends_the_score_once(
        app: Flask, tool: Tool, platform: TestPlatform, start_worker: Callable[..., Worker],
        start_sweeper: Callable[..., Sweeper]) -> None:
    """The platform takes the score and answers late; the worker dies before the answer.
    The sweeper resends the overdue try, whose 409 says the platform has it: delivered,
    taken once."""
    setup = make_setup(tool.db, app.extensions["jaxjudge"].settings, platform)
    platform.services.hold_seconds = 30
    start_worker("-Q", "interactive,batch", "--concurrency", "1", **LTI)
    sender = start_worker("-Q", "webhooks", "--pool", "threads", **LTI)
    sid = send(app, setup, "ana", GOOD)
    wait_for(lambda: platform.services.scores_for("ana"), 240, "the platform to take it")
    sender.kill9()
    platform.services.hold_seconds = 0
    start_sweeper(**LTI)
    start_worker("-Q", "webhooks", "--pool", "threads", **LTI)
    wait_for(lambda: all(d.status != "pending" for _, d in scores(setup)), 120,
             "the score delivered")
    [(student, row)] = scores(setup)
    assert (student, row.status, row.attempts) == ("ana", "delivered", 2), row.last_error
    received = [s for s in platform.services.scores if s.body["userId"] == "ana"]
    assert [s.status for s in received] == [200, 409]
    assert received[0].body == received[1].body == row.payload
    with setup.db.session() as s:
        assert s.get(Submission, sid).verdict == "accepted"  # type: ignore[union-attr]
