"""Switching an assignment's grade policy sends the grades it changes (issue 20, item 8):
through the outbox, once per student whose grade changes and none for the others, with
timestamps later than every score before. Over the gradebook's form, with a real
delivery worker and the test platform over HTTP; and concurrent switches on SQLite and
PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from flask.testing import FlaskClient
from servers import Worker
from sqlalchemy import func, select

from service.db import Database
from service.models import Assignment, Delivery, Policy
from tests.lti.platform import TestPlatform
from tests.lti.services_support import Setup, graded, offline_setup, run_tries, wait_status
from tests.web.pages_support import csrf_token, sign_in
from workers.context import Context

pytestmark = [pytest.mark.service]
LTI = {"webhook_allow": ["127.0.0.1"], "secret_key": "tests-secret",
       "lti_backoff_seconds": 0.2, "lti_timeout_seconds": 3.0}


def score_ids(db: Database) -> list[str]:
    with db.session() as s:
        return list(s.scalars(select(Delivery.id).where(Delivery.kind == "lti-score")
                              .order_by(Delivery.created_at, Delivery.id)))


def stamps(bodies: list[dict[str, Any]]) -> list[datetime]:
    return [datetime.fromisoformat(b["timestamp"]) for b in bodies]


def test_switching_the_policy_sends_each_changed_grade_once(
        client: FlaskClient, keys: dict[str, str], ctx: Context, setup: Setup, db: Database,
        platform: TestPlatform, start_worker: Callable[..., Worker]) -> None:
    # ana: best 2, latest 0 (changes); bo: best = latest = 2; cy: one submission.
    for student, score in (("ana", 2.0), ("ana", 0.0), ("bo", 0.0), ("bo", 2.0),
                           ("cy", 1.0)):
        graded(setup, student, score)
    for opened in score_ids(db):
        assert run_tries(ctx, opened).status == "delivered"
    before = {u: platform.services.scores_for(u) for u in ("ana", "bo", "cy")}
    assert before["ana"][-1]["scoreGiven"] == 2.0
    start_worker("-Q", "webhooks", "--pool", "threads", **LTI)
    sid = sign_in(client, keys["instructor"])
    path = f"/app/{sid}/assignments/{setup.assignment_id}/gradebook"
    token = csrf_token(client, path)
    action = f"/app/{sid}/assignments/{setup.assignment_id}/policy"

    r = client.post(action, data={"csrf_token": token, "policy": "latest"})
    assert r.status_code == 303
    [switched] = score_ids(db)[5:]  # ana's, and nobody else's
    assert r.headers["Location"].endswith("policy_sent=1")
    wait_status(db, switched, "delivered")
    ana = platform.services.scores_for("ana")
    assert ana[:-1] == before["ana"] and ana[-1]["scoreGiven"] == 0.0
    assert stamps(ana) == sorted(stamps(ana)) and len(set(stamps(ana))) == len(ana)
    assert {u: platform.services.scores_for(u) for u in ("bo", "cy")} == \
        {u: before[u] for u in ("bo", "cy")}
    page = client.get(path).get_data(as_text=True)
    assert 'data-user-id="ana"' in page and "delivered (0.0)" in page

    # The same form sent again: the policy is latest already, nothing is opened.
    again = client.post(action, data={"csrf_token": token, "policy": "latest"})
    assert again.headers["Location"].endswith("policy_sent=0")
    assert len(score_ids(db)) == 6
    # Back to best: ana's grade changes again, later still.
    back = client.post(action, data={"csrf_token": token, "policy": "best"})
    assert back.headers["Location"].endswith("policy_sent=1")
    [returned] = score_ids(db)[6:]
    wait_status(db, returned, "delivered")
    ana = platform.services.scores_for("ana")
    assert len(ana) == len(before["ana"]) + 2 and ana[-1]["scoreGiven"] == 2.0
    assert stamps(ana) == sorted(stamps(ana)) and len(set(stamps(ana))) == len(ana)
    assert platform.services.scores_for("bo") == before["bo"]


def test_concurrent_switches_open_each_changed_grade_once(any_database_url: str) -> None:
    """Six instructors switch to latest at once, on SQLite and PostgreSQL: one switch
    happens, opening one score (ana's, whose grade changes)."""
    from service.scores import switch_policy  # (new in issue 20: the rest runs on older code)

    db = Database(any_database_url)
    setup = offline_setup(db)
    for student, score in (("ana", 2.0), ("ana", 0.0), ("bo", 1.0)):
        graded(setup, student, score)
    opened: list[list[str]] = []
    gate = threading.Barrier(6)

    def switch() -> None:
        gate.wait()
        with db.session() as s:
            assignment = s.get(Assignment, setup.assignment_id)
            assert assignment is not None
            opened.append(switch_policy(s, assignment, Policy.LATEST))

    threads = [threading.Thread(target=switch) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with db.session() as s:
        switched = s.scalars(select(Delivery).where(Delivery.cause.like("policy:%"))).all()
        assert s.scalar(select(func.count()).select_from(Delivery)) == 4
        policy = s.scalar(select(Assignment.policy))
    db.dispose()
    assert sorted(len(o) for o in opened) == [0, 0, 0, 0, 0, 1]
    [row] = switched
    assert [row.id] == [o for found in opened for o in found]
    assert row.status == "pending" and row.payload is None and policy == "latest"

