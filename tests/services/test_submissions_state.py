"""The submission state machine on both databases: claims, fencing, rejudges, sweeps."""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from typing import Any

import pytest
from servers import RedisServer
from service_fixtures import make_settings
from sqlalchemy import select, update

from judge.report import VerdictReport
from judge.verdict import Verdict
from service.db import Database, utcnow
from service.keys import create_key
from service.models import Grading, Status, Submission
from service.queue import make_celery
from service.submissions import (
    claim,
    claim_webhook_try,
    find_strays,
    finish_webhook_try,
    rejudge,
    release,
    resend_webhooks,
    start_webhook,
    store,
)

pytestmark = pytest.mark.service


def report(verdict: Verdict = Verdict.ACCEPTED) -> VerdictReport:
    return VerdictReport(problem="demo/layout", problem_version="v2", verdict=verdict,
                         score=1, max_score=1, time_ms=1, tests=[])


@pytest.fixture
def db(any_database_url: str) -> Database:
    database = Database(any_database_url)
    with database.session() as s:
        create_key(s, "course-a", "client")
    yield database
    database.dispose()


def add(db: Database, sid: str = "s1") -> str:
    with db.session() as s:
        s.add(Submission(id=sid, tenant_id=1, problem="demo/layout", problem_version="v1",
                         code="x = 1", code_sha256="0" * 64, queue="interactive",
                         status=Status.QUEUED, enqueued=True, attempt=0,
                         queued_at=utcnow()))
    return sid


def row(db: Database, sid: str = "s1") -> Submission:
    with db.session() as s:
        found = s.get(Submission, sid)
        assert found is not None
        return found


def test_a_submission_is_claimed_once_and_stored_once(db: Database) -> None:
    add(db)
    first = claim(db, "s1", stale_after=30)
    assert first is not None and first.attempt == 1
    assert claim(db, "s1", stale_after=30) is None  # a duplicate delivery: not ours
    assert store(db, "s1", 1, report())
    assert not store(db, "s1", 1, report(Verdict.WRONG_ANSWER))  # never twice
    done = row(db)
    assert (done.status, done.verdict, done.problem_version) == ("done", "accepted", "v2")
    assert claim(db, "s1", stale_after=30) is None  # done stays done


def test_a_lost_grading_is_taken_over_and_the_old_worker_cannot_store(db: Database) -> None:
    add(db)
    old = claim(db, "s1", stale_after=30)
    assert old is not None
    with db.session() as s:  # the old worker stops beating
        s.execute(update(Submission).values(heartbeat_at=utcnow() - timedelta(seconds=60)))
    new = claim(db, "s1", stale_after=30)
    assert new is not None and new.attempt == 2
    assert not store(db, "s1", old.attempt, report(Verdict.WRONG_ANSWER))
    assert store(db, "s1", new.attempt, report())
    with db.session() as s:
        outcomes = dict(s.execute(select(Grading.attempt, Grading.outcome)).all())
    assert outcomes == {1: "lost", 2: "stored"}
    assert row(db).verdict == "accepted"


def test_a_rejudge_supersedes_a_running_grading(db: Database) -> None:
    add(db)
    running = claim(db, "s1", stale_after=30)
    assert running is not None
    with db.session() as s:
        assert rejudge(s, Submission.id == "s1") == ["s1"]
    assert (row(db).status, row(db).tries) == ("queued", 0)  # a rejudge starts afresh
    assert not store(db, "s1", running.attempt, report())  # its result is stale
    again = claim(db, "s1", stale_after=30)
    assert again is not None and store(db, "s1", again.attempt, report())


def test_the_sweeper_finds_lost_unpublished_and_stale_submissions(db: Database) -> None:
    for sid in ("lost", "unpublished", "stale", "fine", "running"):
        add(db, sid)
    claim(db, "lost", stale_after=30)
    claim(db, "running", stale_after=30)
    with db.session() as s:
        s.execute(update(Submission).where(Submission.id == "lost")
                  .values(heartbeat_at=utcnow() - timedelta(seconds=60)))
        s.execute(update(Submission).where(Submission.id == "unpublished")
                  .values(enqueued=False, queued_at=None))
        s.execute(update(Submission).where(Submission.id == "stale")
                  .values(queued_at=utcnow() - timedelta(hours=2)))
    plan = find_strays(db, stale_after=30, requeue_after=3600)
    assert plan.lost == ["lost"]
    assert sorted(sid for sid, _q in plan.unpublished) == ["lost", "unpublished"]
    assert [sid for sid, _q in plan.stale] == ["stale"]
    assert row(db, "lost").status == "queued"
    assert row(db, "running").status == "running"
    # A second sweeper at the same moment finds nothing more to take.
    assert find_strays(db, stale_after=30, requeue_after=3600).lost == []


def test_a_released_grading_goes_back_to_the_sweeper(db: Database) -> None:
    add(db)
    taken = claim(db, "s1", stale_after=30)
    assert taken is not None
    assert release(db, "s1", taken.attempt)
    assert not release(db, "s1", taken.attempt)  # only the holder, only once
    back = row(db)
    assert (back.status, back.enqueued, back.worker) == ("queued", False, None)
    with db.session() as s:
        assert s.scalar(select(Grading.outcome)) == "failed"
    assert [sid for sid, _q in find_strays(db, stale_after=30,
                                           requeue_after=3600).unpublished] == ["s1"]


def done_with_callback(db: Database, sid: str) -> str:
    add(db, sid)
    taken = claim(db, sid, stale_after=30)
    assert taken is not None and store(db, sid, taken.attempt, report())
    with db.session() as s:
        s.execute(update(Submission).where(Submission.id == sid)
                  .values(callback_url="https://lms.example/hook"))
    return start_webhook(db, sid)


def test_each_webhook_try_is_made_once_however_many_messages_ask(db: Database) -> None:
    delivery = done_with_callback(db, "s1")
    assert len(delivery) == 32 and row(db).webhook_status == "pending"
    assert claim_webhook_try(db, "s1", 0, lease=25)
    assert not claim_webhook_try(db, "s1", 0, lease=25)  # a duplicate of try 0
    assert not claim_webhook_try(db, "s1", 2, lease=25)  # not the next try
    finish_webhook_try(db, "s1", 0, state="pending", error="HTTP 500", retry_in=60)
    got = row(db)
    assert (got.webhook_attempts, got.webhook_error) == (1, "HTTP 500")
    assert got.webhook_due_at is not None and got.webhook_due_at > utcnow() + timedelta(seconds=50)
    assert claim_webhook_try(db, "s1", 1, lease=25)
    finish_webhook_try(db, "s1", 1, state="delivered", error="", retry_in=None)
    assert (row(db).webhook_status, row(db).webhook_due_at) == ("delivered", None)
    assert not claim_webhook_try(db, "s1", 2, lease=25)  # over
    # a rejudge ends the delivery of the old report: its held retries cannot fire
    with db.session() as s:
        rejudge(s, Submission.id == "s1")
    assert not claim_webhook_try(db, "s1", 0, lease=25)


def published(redis_server: RedisServer, queue: str) -> list[tuple[str, list[Any]]]:
    """(task name, args) of every message waiting in a Redis queue, oldest first."""
    out = []
    for raw in reversed(redis_server.client().lrange(queue, 0, -1)):
        message = json.loads(raw)
        args = json.loads(base64.b64decode(message["body"]))[0]
        out.append((message["headers"]["task"], args))
    return out


def test_the_sweeper_resends_overdue_webhook_tries_under_the_same_delivery_id(
        db: Database, redis_server: RedisServer, any_database_url: str) -> None:
    delivery = done_with_callback(db, "held")  # a retry held when the broker went away
    assert claim_webhook_try(db, "held", 0, lease=25)
    finish_webhook_try(db, "held", 0, state="pending", error="HTTP 503", retry_in=5)
    done_with_callback(db, "later")  # its retry is not due yet
    assert claim_webhook_try(db, "later", 0, lease=25)
    finish_webhook_try(db, "later", 0, state="pending", error="HTTP 503", retry_in=600)
    done_with_callback(db, "busy")  # a try in flight, within its lease
    assert claim_webhook_try(db, "busy", 0, lease=25)
    with db.session() as s:
        s.execute(update(Submission).where(Submission.id == "held")
                  .values(webhook_due_at=utcnow() - timedelta(seconds=40)))
    redis_server.client().delete("webhooks")
    broker = make_celery(make_settings(any_database_url, redis_server.url))
    assert resend_webhooks(db, broker, timeout=1, grace=30, resend_after=3600) == 1
    assert published(redis_server, "webhooks") == [
        ("jaxjudge.deliver_webhook", ["held", delivery, 1])]
    # the resent try is not resent again while it waits in the queue
    assert resend_webhooks(db, broker, timeout=1, grace=30, resend_after=3600) == 0
    assert claim_webhook_try(db, "held", 1, lease=25)
