"""The submission state machine, the outbox and the sweeper's queries on both databases:
claims, fencing, rejudges, retries after the sandbox was unavailable, deliveries keyed by
their id, backlogs past one page."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from servers import RedisServer
from service_fixtures import make_settings
from sqlalchemy import event, insert, select, update

from judge.report import VerdictReport
from judge.verdict import Verdict
from service.db import MAX_BIND, Database, utcnow
from service.deliveries import claim_try, finish_try, resend_overdue
from service.keys import create_key
from service.models import Delivery, DeliveryStatus, Grading, Status, Submission
from service.queue import make_celery
from service.submissions import claim, dispatch, mark_enqueued, rejudge, retry_later, store
from service.sweeper import find_strays, sweep

pytestmark = pytest.mark.service
HOOK = "https://lms.example/hook"


def report(verdict: Verdict = Verdict.ACCEPTED) -> VerdictReport:
    return VerdictReport(problem="demo/layout", problem_version="v2", verdict=verdict,
                         score=1, max_score=1, time_ms=1, tests=[])


@pytest.fixture
def db(any_database_url: str) -> Iterator[Database]:
    database = Database(any_database_url)
    with database.session() as s:
        create_key(s, "course-a", "client")
    yield database
    database.dispose()


def fields(sid: str, **values: Any) -> dict[str, Any]:
    return {"id": sid, "tenant_id": 1, "problem": "demo/layout", "problem_version": "v1",
            "code": "x = 1", "code_sha256": "0" * 64, "queue": "interactive",
            "status": Status.QUEUED, "enqueued": True, "attempt": 0, "tries": 0,
            "failures": 0, "queued_at": utcnow(), "received_at": utcnow(), **values}


def add(db: Database, sid: str = "s1", **values: Any) -> str:
    with db.session() as s:
        s.add(Submission(**fields(sid, **values)))
    return sid


def add_many(db: Database, rows: list[dict[str, Any]]) -> None:
    with db.session() as s:
        s.execute(insert(Submission), rows)


def row(db: Database, sid: str = "s1") -> Submission:
    with db.session() as s:
        found = s.get(Submission, sid)
        assert found is not None
        return found


def gradings(db: Database, sid: str = "s1") -> list[tuple[int, str | None, str | None]]:
    with db.session() as s:
        return [tuple(r) for r in s.execute(  # type: ignore[misc]
            select(Grading.attempt, Grading.outcome, Grading.error)
            .where(Grading.submission_id == sid).order_by(Grading.attempt))]


def test_a_submission_is_claimed_once_and_stored_once(db: Database) -> None:
    add(db)
    first = claim(db, "s1", stale_after=30)
    assert first is not None and first.attempt == 1
    assert claim(db, "s1", stale_after=30) is None  # a duplicate delivery: not ours
    assert store(db, "s1", 1, report()) is not None
    assert store(db, "s1", 1, report(Verdict.WRONG_ANSWER)) is None  # never twice
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
    assert new is not None and new.attempt == 2 and new.lost == 1
    assert store(db, "s1", old.attempt, report(Verdict.WRONG_ANSWER)) is None
    assert store(db, "s1", new.attempt, report()) is not None
    assert [(a, o) for a, o, _ in gradings(db)] == [(1, "lost"), (2, "stored")]
    assert row(db).verdict == "accepted"


def test_a_rejudge_supersedes_a_running_grading(db: Database) -> None:
    add(db)
    running = claim(db, "s1", stale_after=30)
    assert running is not None
    with db.session() as s:
        assert rejudge(s, Submission.id == "s1") == ["s1"]
    assert (row(db).status, row(db).tries) == ("queued", 0)  # a rejudge starts afresh
    assert store(db, "s1", running.attempt, report()) is None  # its result is stale
    again = claim(db, "s1", stale_after=30)
    assert again is not None and store(db, "s1", again.attempt, report()) is not None


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


def test_a_grading_whose_sandbox_failed_comes_back_when_due(db: Database) -> None:
    add(db)
    taken = claim(db, "s1", stale_after=30)
    assert taken is not None and taken.failures == 0
    before = utcnow()
    assert retry_later(db, "s1", taken.attempt, delay=60, error="engine down")
    after = utcnow()
    assert not retry_later(db, "s1", taken.attempt, delay=60, error="again")  # holder, once
    back = row(db)
    assert (back.status, back.enqueued, back.worker, back.failures) == ("queued", False, None, 1)
    assert back.retry_at is not None  # 60 s after the call, however long it took
    assert before + timedelta(seconds=60) <= back.retry_at <= after + timedelta(seconds=60)
    assert gradings(db) == [(1, "failed", "engine down")]
    # not published before it is due: the backoff lives in the database, not the broker
    assert find_strays(db, stale_after=30, requeue_after=3600).unpublished == []
    with db.session() as s:
        s.execute(update(Submission).values(retry_at=utcnow() - timedelta(seconds=1)))
    assert find_strays(db, stale_after=30, requeue_after=3600).unpublished == [
        ("s1", "interactive")]
    again = claim(db, "s1", stale_after=30)
    assert again is not None and (again.failures, again.lost) == (1, 0)  # failed, not lost
    assert row(db).retry_at is None


def test_a_publish_recorded_after_the_grading_it_started_put_it_back_leaves_it_unpublished(
        db: Database) -> None:
    """The sweeper publishes; a worker takes the message at once, finds the sandbox
    unavailable and puts the submission back; only then does the sweeper record its
    publish. That record must not mark the requeued submission as in the broker, or no
    one would publish it again for an hour."""
    add(db, enqueued=False, queued_at=None)
    published = [("s1", row(db).attempt)]  # what dispatch read, then published
    taken = claim(db, "s1", stale_after=30)
    assert taken is not None and retry_later(db, "s1", taken.attempt, delay=0, error="down")
    mark_enqueued(db, published)
    assert row(db).enqueued is False
    assert find_strays(db, stale_after=30, requeue_after=3600).unpublished == [
        ("s1", "interactive")]
    mark_enqueued(db, [("s1", row(db).attempt)])  # a publish of the current attempt counts
    assert row(db).enqueued is True


def done_with_callback(db: Database, sid: str) -> str:
    """A submission with a callback, graded: the id of the delivery its report opened."""
    add(db, sid, callback_url=HOOK)
    taken = claim(db, sid, stale_after=30)
    assert taken is not None
    stored = store(db, sid, taken.attempt, report())
    assert stored is not None and stored.delivery is not None
    return stored.delivery


def delivery(db: Database, delivery_id: str) -> Delivery:
    with db.session() as s:
        found = s.get(Delivery, delivery_id)
        assert found is not None
        return found


def test_storing_a_report_opens_its_delivery_in_the_same_transaction(db: Database) -> None:
    add(db, "plain")
    taken = claim(db, "plain", stale_after=30)
    assert taken is not None
    plain = store(db, "plain", taken.attempt, report())
    assert plain is not None and plain.delivery is None  # no callback, no delivery
    sid = "hooked"
    opened = done_with_callback(db, sid)
    got = delivery(db, opened)
    assert (got.submission_id, got.kind, got.url, got.status, got.attempts) == (
        sid, "webhook", HOOK, "pending", 0)
    assert got.due_at is not None and got.due_at <= utcnow()
    assert row(db, sid).delivery is not None and row(db, sid).delivery.id == opened
    with db.session() as s:
        assert s.scalar(select(Delivery.id).where(Delivery.submission_id == "plain")) is None


def test_a_worker_that_dies_after_storing_leaves_the_webhook_to_the_sweeper(
        db: Database, redis_server: RedisServer, any_database_url: str) -> None:
    """The verdict and its delivery are one commit: a crash right after it (no message
    ever queued) leaves a due delivery that the sweeper sends."""
    opened = done_with_callback(db, "s1")
    with db.session() as s:  # the worker died; by now the first try is overdue
        s.execute(update(Delivery).values(due_at=utcnow() - timedelta(seconds=40)))
    redis_server.client().delete("webhooks")
    broker = make_celery(make_settings(any_database_url, redis_server.url))
    assert resend_overdue(db, broker, timeout=1, grace=30, resend_after=3600) == 1
    assert published(redis_server, "webhooks") == [("jaxjudge.deliver", [opened, 0])]


def test_each_webhook_try_is_made_once_however_many_messages_ask(db: Database) -> None:
    opened = done_with_callback(db, "s1")
    first = claim_try(db, opened, 0, lease=25)
    assert first is not None and first.submission_id == "s1"
    assert claim_try(db, opened, 0, lease=25) is None  # a duplicate of try 0
    assert claim_try(db, opened, 2, lease=25) is None  # not the next try
    before = utcnow()
    finish_try(db, first, status=DeliveryStatus.PENDING, error="HTTP 500", retry_in=60)
    after = utcnow()
    got = delivery(db, opened)
    assert (got.attempts, got.last_error) == (1, "HTTP 500")
    assert got.due_at is not None  # 60 s after the call, however long it took
    assert before + timedelta(seconds=60) <= got.due_at <= after + timedelta(seconds=60)
    second = claim_try(db, opened, 1, lease=25)
    assert second is not None
    finish_try(db, second, status=DeliveryStatus.DELIVERED, error="", retry_in=None)
    got = delivery(db, opened)
    assert (got.status, got.due_at, got.last_error) == ("delivered", None, None)
    assert claim_try(db, opened, 2, lease=25) is None  # over
    assert row(db).delivery is not None and row(db).delivery.status == "delivered"


def test_a_rejudge_racing_a_delivery_cannot_revive_the_old_one(db: Database) -> None:
    """A try of the old report is in flight when an instructor rejudges; the new report
    opens a new delivery. The old try's outcome, and any message held for its retry,
    touch neither the old delivery (cancelled) nor the new one."""
    old = done_with_callback(db, "s1")
    in_flight = claim_try(db, old, 0, lease=25)
    assert in_flight is not None
    with db.session() as s:
        rejudge(s, Submission.id == "s1")
    assert delivery(db, old).status == "cancelled"
    taken = claim(db, "s1", stale_after=30)
    assert taken is not None
    stored = store(db, "s1", taken.attempt, report(Verdict.WRONG_ANSWER))
    assert stored is not None and stored.delivery not in (None, old)
    new = stored.delivery
    assert new is not None
    finish_try(db, in_flight, status=DeliveryStatus.PENDING, error="HTTP 503", retry_in=5)
    assert claim_try(db, old, 1, lease=25) is None  # its held retry finds it over
    assert delivery(db, old).status == "cancelled" and delivery(db, old).due_at is None
    fresh = delivery(db, new)
    assert (fresh.status, fresh.attempts, fresh.last_error) == ("pending", 0, None)
    assert claim_try(db, new, 0, lease=25) is not None
    assert row(db).delivery is not None and row(db).delivery.id == new


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
    held = done_with_callback(db, "held")  # a retry held when the broker went away
    taken = claim_try(db, held, 0, lease=25)
    assert taken is not None
    finish_try(db, taken, status=DeliveryStatus.PENDING, error="HTTP 503", retry_in=5)
    later = done_with_callback(db, "later")  # its retry is not due yet
    taken = claim_try(db, later, 0, lease=25)
    assert taken is not None
    finish_try(db, taken, status=DeliveryStatus.PENDING, error="HTTP 503", retry_in=600)
    busy = done_with_callback(db, "busy")  # a try in flight, within its lease
    assert claim_try(db, busy, 0, lease=25) is not None
    with db.session() as s:
        s.execute(update(Delivery).where(Delivery.id == held)
                  .values(due_at=utcnow() - timedelta(seconds=40)))
    redis_server.client().delete("webhooks")
    broker = make_celery(make_settings(any_database_url, redis_server.url))
    assert resend_overdue(db, broker, timeout=1, grace=30, resend_after=3600) == 1
    assert published(redis_server, "webhooks") == [("jaxjudge.deliver", [held, 1])]
    # the resent try is not resent again while it waits in the queue
    assert resend_overdue(db, broker, timeout=1, grace=30, resend_after=3600) == 0
    assert claim_try(db, held, 1, lease=25) is not None


def test_strays_past_the_first_page_are_all_found(
        db: Database, redis_server: RedisServer, any_database_url: str) -> None:
    """Over 500 strays of each kind, the lost ones behind 700 healthy running gradings:
    the sweeper's queries find every one, and publishing 600 of them binds no more than
    MAX_BIND ids in one statement."""
    now, old = utcnow(), utcnow() - timedelta(minutes=5)
    add_many(db, [fields(f"a{i:04d}", status=Status.RUNNING, attempt=1, tries=1,
                         heartbeat_at=now, worker="elsewhere:1") for i in range(700)])
    add_many(db, [fields(f"b{i:04d}", status=Status.RUNNING, attempt=1, tries=1,
                         heartbeat_at=old, worker="elsewhere:1") for i in range(600)])
    add_many(db, [fields(f"c{i:04d}", enqueued=False, queued_at=None,
                         received_at=now - timedelta(seconds=600 - i)) for i in range(600)])
    add_many(db, [fields(f"d{i:04d}", queued_at=now - timedelta(hours=2)) for i in range(600)])
    plan = find_strays(db, stale_after=30, requeue_after=3600)
    assert sorted(plan.lost) == [f"b{i:04d}" for i in range(600)]
    unpublished = [sid for sid, _ in plan.unpublished]
    assert unpublished[:600] == [f"c{i:04d}" for i in range(600)]  # oldest first
    assert sorted(unpublished) == sorted(plan.lost) + [f"c{i:04d}" for i in range(600)]
    assert sorted(sid for sid, _ in plan.stale) == [f"d{i:04d}" for i in range(600)]
    redis_server.client().delete("interactive")
    settings = make_settings(any_database_url, redis_server.url)
    with bound_ids(db) as most:
        assert dispatch(db, make_celery(settings), plan.stale, timeout=1,
                        redis=redis_server.client()) == 600
    assert most[0] <= MAX_BIND + 20  # the ids, and the values the statement sets
    assert len(published(redis_server, "interactive")) == 600
    assert find_strays(db, stale_after=30, requeue_after=3600).stale == []


class bound_ids:  # noqa: N801 - used as a context manager, like a function
    """The most parameters any one statement bound, while inside."""

    def __init__(self, db: Database) -> None:
        self.engine = db.engine
        self.most = [0]

    def listener(self, _conn: Any, _cursor: Any, _statement: str, parameters: Any,
                 _context: Any, executemany: bool) -> None:
        sets = parameters if executemany else [parameters]
        self.most[0] = max([self.most[0], *(len(p) for p in sets)])

    def __enter__(self) -> list[int]:
        event.listen(self.engine, "before_cursor_execute", self.listener)
        return self.most

    def __exit__(self, *_: Any) -> None:
        event.remove(self.engine, "before_cursor_execute", self.listener)


def test_a_rejudge_of_1200_submissions_binds_at_most_one_chunk_per_statement(
        db: Database) -> None:
    add_many(db, [fields(f"s{i:04d}", status=Status.DONE, attempt=1, tries=1,
                         verdict="accepted", callback_url=HOOK) for i in range(1200)])
    with db.session() as s:
        s.execute(insert(Delivery), [
            {"id": f"{i:032d}", "kind": "webhook", "submission_id": f"s{i:04d}", "attempt": 1,
             "tenant_id": 1, "url": HOOK, "status": "pending", "attempts": 0, "due_at": utcnow(),
             "created_at": utcnow(), "updated_at": utcnow()} for i in range(1200)])
    with bound_ids(db) as most, db.session() as s:
        ids = rejudge(s, Submission.problem == "demo/layout")
    assert len(ids) == 1200
    assert most[0] <= MAX_BIND + 20  # the ids, and the values the statement sets
    with db.session() as s:
        statuses = s.execute(select(Submission.status, Submission.verdict).distinct()).all()
        open_deliveries = s.scalar(select(Delivery.id).where(Delivery.status == "pending"))
    assert statuses == [("queued", None)]
    assert open_deliveries is None  # every old report's delivery was cancelled


def test_a_sweep_requeues_publishes_and_resends(
        db: Database, redis_server: RedisServer, any_database_url: str) -> None:
    add(db, "unpublished", enqueued=False, queued_at=None)
    settings = make_settings(any_database_url, redis_server.url)
    redis_server.client().delete("interactive")
    plan = sweep(db, make_celery(settings), redis_server.client(), settings)
    assert plan.unpublished == [("unpublished", "interactive")]
    assert published(redis_server, "interactive") == [("jaxjudge.grade", ["unpublished"])]
    assert row(db, "unpublished").enqueued
