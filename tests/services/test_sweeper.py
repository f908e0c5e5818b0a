"""The sweeper as the service runs it: its own processes, one sweeping at a time."""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from servers import RedisServer, Sweeper, wait_for
from sqlalchemy import func, insert, select

from service.db import Database, utcnow
from service.keys import create_key
from service.models import Delivery, Grading, Status, Submission
from service.settings import ServiceSettings

pytestmark = pytest.mark.service


def fields(sid: str, **values: Any) -> dict[str, Any]:
    return {"id": sid, "tenant_id": 1, "problem": "demo/layout", "problem_version": "v1",
            "code": "x = 1", "code_sha256": "0" * 64, "queue": "interactive",
            "status": Status.QUEUED, "enqueued": True, "attempt": 0, "tries": 0,
            "failures": 0, "queued_at": utcnow(), "received_at": utcnow(), **values}


def messages(redis_server: RedisServer, queue: str) -> Counter[str]:
    """How many messages wait in ``queue`` for each first argument."""
    found: Counter[str] = Counter()
    for raw in redis_server.client().lrange(queue, 0, -1):
        found[json.loads(base64.b64decode(json.loads(raw)["body"]))[0][0]] += 1
    return found


def test_two_sweepers_handle_each_stray_once(
        service_settings: ServiceSettings, redis_server: RedisServer,
        start_sweeper: Callable[..., Sweeper]) -> None:
    """Two sweeper processes started together over strays of every kind: each stray is
    published (or its webhook try queued) exactly once, and each lost grading is closed
    once, however many rounds both sweepers go through."""
    db = Database(service_settings.database_url)
    long_ago = utcnow() - timedelta(hours=2)
    with db.session() as s:
        create_key(s, "course-a", "client")
        s.execute(insert(Submission), [fields(f"new{i:03d}", enqueued=False, queued_at=None)
                                       for i in range(150)])
        s.execute(insert(Submission), [fields(f"lost{i:03d}", status=Status.RUNNING,
                                              attempt=1, tries=1, heartbeat_at=long_ago,
                                              worker="elsewhere:1") for i in range(50)])
        s.execute(insert(Grading), [{"submission_id": f"lost{i:03d}", "attempt": 1,
                                     "worker": "elsewhere:1", "started_at": long_ago}
                                    for i in range(50)])
        s.execute(insert(Submission), [fields(f"old{i:03d}", queued_at=long_ago)
                                       for i in range(50)])
        s.execute(insert(Submission), [fields(f"done{i:03d}", status=Status.DONE, attempt=1,
                                              callback_url="https://lms.example/hook")
                                       for i in range(30)])
        s.execute(insert(Delivery), [
            {"id": f"{i:032d}", "kind": "webhook", "submission_id": f"done{i:03d}",
             "attempt": 1, "tenant_id": 1, "url": "https://lms.example/hook",
             "status": "pending", "attempts": 0, "due_at": long_ago, "created_at": long_ago,
             "updated_at": long_ago} for i in range(30)])
    strays = {f"new{i:03d}" for i in range(150)} | {f"lost{i:03d}" for i in range(50)} | {
        f"old{i:03d}" for i in range(50)}
    sweepers = [start_sweeper(), start_sweeper()]

    def handled() -> bool:
        with db.session() as s:
            return s.scalar(select(func.count()).select_from(Submission).where(
                Submission.status == Status.QUEUED, Submission.queued_at > long_ago +
                timedelta(hours=1))) == len(strays) and s.scalar(
                select(func.count()).select_from(Delivery).where(
                    Delivery.due_at > utcnow())) == 30

    wait_for(handled, 60, "every stray handled", every=0.2)
    seen = [sweeper.rounds() for sweeper in sweepers]
    wait_for(lambda: all(sw.rounds() >= n + 3 for sw, n in zip(sweepers, seen, strict=True)),
             60, "three more rounds of each sweeper", every=0.2)
    try:
        assert messages(redis_server, "interactive") == Counter(strays)
        assert messages(redis_server, "webhooks") == Counter(f"{i:032d}" for i in range(30))
        with db.session() as s:
            closed = Counter(s.scalars(select(Grading.submission_id)
                                       .where(Grading.outcome == "lost")))
        assert closed == Counter(f"lost{i:03d}" for i in range(50))
        logs = [sweeper.log.read_text() for sweeper in sweepers]
        assert sum("sweep: " in text for text in logs) == 1, logs  # one did the work
    finally:
        db.dispose()
    for sweeper in sweepers:
        assert sweeper.proc.poll() is None, sweeper.log.read_text()[-2000:]
