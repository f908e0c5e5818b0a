"""The course term of an assignment (issue 24) over the REST API, with the test platform
over HTTP as the LMS: late work sends the penalised grade and says why; every change of
the term (dates, penalty, extensions, overrides) re-sends exactly the grades it moves,
once; overrides are audited; refusals are problem+json with the date or the wait; the
gate admits one attempt at a time on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask.testing import FlaskClient
from service_fixtures import auth
from sqlalchemy import func, select

from service import terms
from service.db import Database, utcnow
from service.models import Assignment, Delivery, Status, Submission
from service.submissions import claim, new_id, store
from service.submitting import Refused
from tests.lti.platform import TestPlatform
from tests.lti.services_support import Setup, offline_setup, report, run_tries
from workers.context import Context

pytestmark = [pytest.mark.service]
CODE = "def solve(x):\n    return x\n"


def graded_at(setup: Setup, student: str, score: float, at: datetime) -> str:
    """A submission of ``student`` received ``at``, graded as a worker does; its id."""
    sid = new_id()
    with setup.db.session() as s:
        s.add(Submission(id=sid, tenant_id=setup.tenant_id, problem="demo/layout",
                         problem_version="v1", student_id=student, code="x = 1\n",
                         code_sha256="0" * 64, queue="interactive", status=Status.QUEUED,
                         assignment_id=setup.assignment_id, received_at=at))
    taken = claim(setup.db, sid, stale_after=30)
    assert taken is not None
    assert store(setup.db, sid, taken.attempt, report(score)) is not None
    return sid


def scores(db: Database) -> list[Delivery]:
    with db.session() as s:
        return list(s.scalars(select(Delivery).where(Delivery.kind == "lti-score")
                              .order_by(Delivery.created_at, Delivery.id)))


def send_all(ctx: Context, db: Database, after: int = 0) -> list[Delivery]:
    """Make the tries of every score opened after the first ``after``; those rows."""
    return [run_tries(ctx, row.id) for row in scores(db)[after:]]


def patch(client: FlaskClient, key: str, assignment_id: str, **body: Any) -> dict[str, Any]:
    r = client.patch(f"/v1/assignments/{assignment_id}", json=body, headers=auth(key))
    assert r.status_code == 200, r.get_json()
    found: dict[str, Any] = r.get_json()
    return found


def iso(at: datetime) -> str:
    return at.isoformat()


def test_late_work_sends_the_penalised_grade_and_a_term_change_resends_only_what_it_moves(
        client: FlaskClient, keys: dict[str, str], ctx: Context, setup: Setup, db: Database,
        platform: TestPlatform) -> None:
    now = utcnow()
    key = keys["instructor"]
    # Due 5 h ago, late work for a day at 24 % a day: 1 % an hour, 5 % for ana.
    patch(client, key, setup.assignment_id, due_at=iso(now - timedelta(hours=5) + timedelta(
        minutes=1)), late_until=iso(now + timedelta(days=1)), late_penalty_percent_per_day=24)
    graded_at(setup, "ana", 2.0, now)  # 4 h 59 min late: 5 started hours
    graded_at(setup, "bo", 2.0, now - timedelta(hours=6))  # on time
    sent = send_all(ctx, db)
    assert [row.status for row in sent] == ["delivered", "delivered"]
    [ana] = platform.services.scores_for("ana")
    [bo] = platform.services.scores_for("bo")
    assert ana["scoreGiven"] == pytest.approx(2.0 - 2.0 * 0.05) and bo["scoreGiven"] == 2.0
    assert "Late by 5 h: 5% of the score taken off." in ana["comment"]
    assert "Late" not in bo["comment"]

    # A later due date makes ana on time: her grade (only hers) is sent again, once.
    body = patch(client, key, setup.assignment_id, due_at=iso(now + timedelta(hours=1)))
    assert body["dates_source"] == "instructor"
    [resent] = send_all(ctx, db, after=2)
    assert resent.status == "delivered" and resent.cause.startswith("term:")
    assert [s["scoreGiven"] for s in platform.services.scores_for("ana")] == \
        [pytest.approx(1.9), 2.0]
    assert len(platform.services.scores_for("bo")) == 1
    # Rules that move no grade send nothing; the same dates again send nothing.
    patch(client, key, setup.assignment_id, max_attempts=3, cooldown_seconds=60,
          hidden_results="after_due", due_at=iso(now + timedelta(hours=1)))
    assert len(scores(db)) == 3
    # The penalty: no late submission now, nothing moves.
    patch(client, key, setup.assignment_id, late_penalty_percent_per_day=48)
    assert len(scores(db)) == 3

    # An extension for bo changes nothing of his (he was on time); for ana, after the due
    # date is moved back, her own later date takes her penalty away again.
    patch(client, key, setup.assignment_id, due_at=iso(now - timedelta(hours=2)))
    moved = send_all(ctx, db, after=3)
    assert [r.status for r in moved] == ["delivered"]  # ana late again (2 h at 48 %/day)
    assert platform.services.scores_for("ana")[-1]["scoreGiven"] == pytest.approx(1.92)
    body = patch(client, key, setup.assignment_id, extensions=[
        {"student_id": "ana", "due_at": iso(now + timedelta(hours=3))},
        {"student_id": "bo", "due_at": iso(now + timedelta(hours=3))}])
    assert sorted(e["student_id"] for e in body["extensions"]) == ["ana", "bo"]
    [extended] = send_all(ctx, db, after=4)
    assert extended.cause.startswith("extension:")
    assert platform.services.scores_for("ana")[-1]["scoreGiven"] == 2.0
    assert len(platform.services.scores_for("bo")) == 1


def test_an_override_reaches_the_lms_is_audited_and_can_be_removed(
        client: FlaskClient, keys: dict[str, str], ctx: Context, setup: Setup, db: Database,
        platform: TestPlatform) -> None:
    key = keys["instructor"]
    graded_at(setup, "ana", 1.0, utcnow())
    send_all(ctx, db)
    body = patch(client, key, setup.assignment_id, score_override={
        "student_id": "ana", "score_given": 1.5, "reason": "accommodation: lab access"})
    [forced] = body["score_override"]
    assert (forced["score_given"], forced["score_maximum"]) == (1.5, 2.0)
    assert forced["before"] == {"given": 1.0, "maximum": 2.0}
    assert forced["after"] == {"given": 1.5, "maximum": 2.0}
    assert forced["actor"].startswith("api-key:")
    [sent] = send_all(ctx, db, after=1)
    assert sent.status == "delivered"
    last = platform.services.scores_for("ana")[-1]
    assert last["scoreGiven"] == 1.5 and last["comment"] == "Grade set by the instructor."
    assert "accommodation" not in str(platform.services.scores_for("ana"))

    # A new submission does not move an overridden grade (its score says the override).
    graded_at(setup, "ana", 2.0, utcnow())
    [kept] = send_all(ctx, db, after=2)
    assert platform.services.scores_for("ana")[-1]["scoreGiven"] == 1.5 and \
        kept.status == "delivered"

    # Removed: the automatic grade (now 2.0) goes back, and the audit keeps both rows.
    body = patch(client, key, setup.assignment_id, score_override={
        "student_id": "ana", "score_given": None, "reason": "regraded"})
    assert body["score_override"] == []
    assert [(h["score_given"], h["reason"]) for h in body["score_override_history"]] == [
        (1.5, "accommodation: lab access"), (None, "regraded")]
    send_all(ctx, db, after=3)
    assert platform.services.scores_for("ana")[-1]["scoreGiven"] == 2.0

    # Bad overrides: 422 problem+json, nothing stored.
    for bad, says in (({"student_id": "zed", "score_given": 1, "reason": "x"},
                       "no submission"),
                      ({"student_id": "ana", "score_given": 5, "reason": "x"}, "between 0"),
                      ({"student_id": "ana", "score_given": None, "reason": "x"},
                       "no override to remove")):
        r = client.patch(f"/v1/assignments/{setup.assignment_id}",
                         json={"score_override": bad}, headers=auth(key))
        assert r.status_code == 422 and r.mimetype == "application/problem+json"
        assert says in r.get_json()["detail"]
    get = client.get(f"/v1/assignments/{setup.assignment_id}", headers=auth(key)).get_json()
    assert len(get["score_override_history"]) == 2


def test_refusals_are_problem_json_with_the_date_or_the_wait(
        client: FlaskClient, keys: dict[str, str], setup: Setup) -> None:
    now = utcnow()
    key, path = keys["instructor"], f"/v1/assignments/{setup.assignment_id}/submissions"

    def post(**extra: Any) -> Any:
        return client.post(path, json={"student_id": "ana", "code": CODE, **extra},
                           headers=auth(keys["client"]))

    patch(client, key, setup.assignment_id, opens_at=iso(now + timedelta(hours=2)))
    r = post()
    assert r.status_code == 403 and r.mimetype == "application/problem+json"
    body = r.get_json()
    assert body["refusal"] == "not_open" and "opens on" in body["detail"]
    assert datetime.fromisoformat(body["wait_until"]) > now
    assert 7000 < int(r.headers["Retry-After"]) <= 7200

    patch(client, key, setup.assignment_id, opens_at=None,
          due_at=iso(now - timedelta(hours=1)))
    r = post()
    assert (r.status_code, r.get_json()["refusal"]) == (403, "closed")
    assert "closed_at" in r.get_json() and "Retry-After" not in r.headers
    sample = post(sample_run=True)  # a sample run is let in while closed
    assert sample.status_code == 202 and sample.get_json()["sample_run"] is True

    patch(client, key, setup.assignment_id, due_at=None, max_attempts=1,
          cooldown_seconds=600)
    first = post()
    assert first.status_code == 202 and first.get_json()["sample_run"] is False
    r = post()
    assert (r.status_code, r.get_json()["refusal"]) == (403, "no_attempts")
    patch(client, key, setup.assignment_id, max_attempts=5)
    r = post()
    assert (r.status_code, r.get_json()["refusal"]) == (429, "cooling_down")
    assert 590 <= int(r.headers["Retry-After"]) <= 600
    patch(client, key, setup.assignment_id, cooldown_seconds=0)
    assert post().status_code == 202

    # Bad terms: 422 and nothing changed.
    for bad, says in (({"late_until": iso(now)}, "needs a due_at"),
                      ({"opens_at": iso(now), "due_at": iso(now - timedelta(days=1))},
                       "is after its due_at"),
                      ({"due_at": "2026-12-01T10:00:00"}, "timezone")):
        r = client.patch(f"/v1/assignments/{setup.assignment_id}", json=bad, headers=auth(key))
        assert r.status_code == 422, (bad, r.get_json())
        assert says in r.get_json()["detail"], r.get_json()
    # Another tenant's key finds nothing; a client key cannot change the term.
    assert client.get(f"/v1/assignments/{setup.assignment_id}",
                      headers=auth(keys["other"])).status_code == 404
    assert client.patch(f"/v1/assignments/{setup.assignment_id}", json={"max_attempts": 9},
                        headers=auth(keys["client"])).status_code == 403


def test_the_gate_admits_one_attempt_at_a_time(any_database_url: str) -> None:
    """Six submissions of one student at once with one attempt allowed, on SQLite and
    PostgreSQL: exactly one is stored."""
    db = Database(any_database_url)
    setup = offline_setup(db)
    with db.session() as s:
        found = s.get(Assignment, setup.assignment_id)
        assert found is not None
        terms.set_rules(s, found, {"max_attempts": 1})
    results: list[str] = []
    barrier = threading.Barrier(6)

    def one() -> None:
        barrier.wait()
        try:
            with db.session() as s:
                terms.gate(setup.assignment_id, "ana", datetime.now(UTC))(s)
                s.add(Submission(id=new_id(), tenant_id=setup.tenant_id, problem="demo/layout",
                                 problem_version="v1", student_id="ana", code="x = 1\n",
                                 code_sha256="0" * 64, queue="interactive",
                                 status=Status.QUEUED, assignment_id=setup.assignment_id))
            results.append("stored")
        except Refused as exc:
            results.append(exc.title)

    threads = [threading.Thread(target=one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with db.session() as s:
        stored = s.scalar(select(func.count()).select_from(Submission))
    db.dispose()
    assert sorted(results) == ["No attempts left"] * 5 + ["stored"] and stored == 1


def test_an_lms_date_past_the_instructors_late_until_wins_and_clears_it(
        database_url: str) -> None:
    db = Database(database_url)
    setup = offline_setup(db)
    due = datetime(2031, 5, 1, 12, tzinfo=UTC)
    with db.session() as s:
        found = s.get(Assignment, setup.assignment_id)
        assert found is not None
        terms.set_rules(s, found, {"due_at": due, "late_until": due + timedelta(days=1)})
        # The LMS moves the due date two days later: past the instructor's late_until.
        terms.take_lms_dates(s, found, {"due_at": due + timedelta(days=2)}, "lms:custom")
    with db.session() as s:
        found = s.get(Assignment, setup.assignment_id)
        assert found is not None
        assert (found.due_at, found.late_until, found.dates_source) == (
            due + timedelta(days=2), None, "lms:custom")
        # The same LMS date again changes nothing; the instructor's new late_until stays.
        terms.set_rules(s, found, {"late_until": due + timedelta(days=3)})
        assert terms.take_lms_dates(s, found, {"due_at": due + timedelta(days=2)},
                                    "lms:custom") == []
    with db.session() as s:
        found = s.get(Assignment, setup.assignment_id)
        assert found is not None and found.late_until == due + timedelta(days=3)
    db.dispose()
