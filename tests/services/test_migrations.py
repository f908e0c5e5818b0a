"""The migrations build exactly the schema the models declare, on both databases."""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import insert, select, text
from sqlalchemy.exc import IntegrityError

from service.db import Database, make_engine, utcnow
from service.migrate import alembic_config, current, upgrade
from service.models import Base, Delivery, Grading, Submission, Tenant
from service.webhooks import sign, verify

pytestmark = pytest.mark.service


def test_the_migrated_schema_is_the_models_schema(any_database_url: str) -> None:
    assert current(any_database_url) == "0008"
    engine = make_engine(any_database_url)
    try:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    finally:
        engine.dispose()
    assert diff == []


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'jaxjudge.db'}"
    url: str = request.getfixturevalue("postgres_server").new_database()
    return url


INSERT = text(
    "INSERT INTO submissions (id, tenant_id, problem, problem_version, code, code_sha256,"
    " queue, status, enqueued, attempt, tries, received_at, callback_url, webhook_status,"
    " webhook_attempts) VALUES (:id, 1, 'demo/layout', 'v1', 'x = 1', :sha, 'interactive',"
    " :status, false, :attempt, 1, :now, :url, :state, :tries)")


def submission(sid: str, state: str | None, status: str = "done", attempt: int = 1,
               tries: int = 1, url: str | None = "https://lms.example/hook") -> dict[str, Any]:
    return {"id": sid, "sha": "0" * 64, "now": utcnow(), "state": state, "status": status,
            "attempt": attempt, "tries": tries, "url": url}


def test_0002_turns_deliveries_left_open_into_due_pending_ones(empty_database_url: str) -> None:
    upgrade(empty_database_url, "0001")
    engine = make_engine(empty_database_url)
    try:
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO tenants (id, name, webhook_secret, created_at)"
                              " VALUES (1, 'course-a', 'secret', :now)"), {"now": utcnow()})
            for sid, state in [("unsent", "unsent"), ("pending", "pending"),
                               ("delivered", "delivered"), ("none", None)]:
                conn.execute(INSERT, submission(sid, state))
        upgrade(empty_database_url, "0002")
        with engine.connect() as conn:
            rows = {r.id: r for r in conn.execute(text(
                "SELECT id, webhook_status, webhook_delivery, webhook_due_at FROM submissions"))}
    finally:
        engine.dispose()
    for sid in ("unsent", "pending"):
        assert rows[sid].webhook_status == "pending"
        assert rows[sid].webhook_delivery and len(rows[sid].webhook_delivery) == 32
        assert rows[sid].webhook_due_at is not None
    assert rows["unsent"].webhook_delivery != rows["pending"].webhook_delivery
    for sid in ("delivered", "none"):
        assert (rows[sid].webhook_delivery, rows[sid].webhook_due_at) == (None, None)
    assert rows["delivered"].webhook_status == "delivered"


def test_0003_moves_deliveries_to_their_own_table_and_secrets_to_standard_webhooks(
        empty_database_url: str) -> None:
    upgrade(empty_database_url, "0002")
    old_secret = "ab" * 32  # what tenants got before: token_hex(32)
    due = utcnow() - timedelta(minutes=5)
    engine = make_engine(empty_database_url)
    try:
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO tenants (id, name, webhook_secret, created_at)"
                              " VALUES (1, 'course-a', :secret, :now)"),
                         {"secret": old_secret, "now": utcnow()})
            conn.execute(INSERT, submission("open", "pending", attempt=3, tries=2))
            conn.execute(INSERT, submission("delivered", "delivered"))
            conn.execute(INSERT, submission("failed", "failed", tries=8))
            conn.execute(INSERT, submission("none", None, url=None))
            conn.execute(INSERT, submission("running", None, status="running"))
            conn.execute(text("INSERT INTO gradings (submission_id, attempt, worker, started_at,"
                              " outcome) VALUES ('open', 3, 'host:1', :now, 'stored')"),
                         {"now": utcnow()})
            conn.execute(text("UPDATE submissions SET webhook_delivery = :d, webhook_due_at = :due,"
                              " webhook_error = 'HTTP 500' WHERE id = 'open'"),
                         {"d": "d" * 32, "due": due})
    finally:
        engine.dispose()
    upgrade(empty_database_url)
    db = Database(empty_database_url)
    try:
        with db.session() as s:
            moved = {d.submission_id: d for d in s.scalars(select(Delivery))}
            rows = {r.id: r for r in s.scalars(select(Submission))}
            secret = s.scalar(select(Tenant.webhook_secret))
            kept = s.execute(select(Grading.submission_id, Grading.error)).all()
    finally:
        db.dispose()
    assert kept == [("open", None)]  # rebuilding the table cascaded no delete
    assert set(moved) == {"open", "delivered", "failed"}
    opened = moved["open"]  # keeps its id: a message for it still in the broker finds it
    assert (opened.id, opened.kind, opened.attempt, opened.tenant_id, opened.url) == (
        "d" * 32, "webhook", 3, 1, "https://lms.example/hook")
    assert (opened.status, opened.attempts, opened.last_error) == ("pending", 2, "HTTP 500")
    assert opened.due_at is not None and abs((opened.due_at - due).total_seconds()) < 1
    assert (moved["delivered"].status, moved["delivered"].due_at) == ("delivered", None)
    assert (moved["failed"].status, moved["failed"].attempts) == ("failed", 8)
    assert len(moved["delivered"].id) == 32
    # the API shows each report's delivery as before
    assert rows["open"].delivery is not None and rows["open"].delivery.id == "d" * 32
    assert rows["delivered"].delivery is not None
    assert rows["none"].delivery is None and rows["running"].delivery is None
    assert (rows["open"].failures, rows["open"].retry_at) == (0, None)
    # the secret's key is unchanged: whsec_ + base64 of the old text
    assert secret == "whsec_" + base64.b64encode(old_secret.encode()).decode()
    headers = sign(secret, "d" * 32, b"{}")
    assert verify(secret, b"{}", headers)
    expected = base64.b64encode(hmac.new(old_secret.encode(), b"d" * 32 + b"." + headers[
        "webhook-timestamp"].encode() + b".{}", hashlib.sha256).digest()).decode()
    assert headers["webhook-signature"] == f"v1,{expected}"


def test_0006_keeps_every_delivery_and_lets_a_policy_score_share_a_report(
        empty_database_url: str) -> None:
    """Deliveries made before 0006 keep their rows (cause ``report``, a first round,
    refusals not fingerprinted, so the sweeper tries each once more; a score refused at
    the token endpoint, which ended failed before, becomes refused); a policy switch's
    score may then hang on a report that has its own, a second ``report`` one may not;
    going back removes the switch's scores and keeps the rest."""
    upgrade(empty_database_url, "0005")
    engine = make_engine(empty_database_url)
    now = utcnow()
    try:
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO tenants (id, name, webhook_secret, created_at)"
                              " VALUES (1, 'course-a', 'whsec_x', :now)"), {"now": now})
            conn.execute(text(
                "INSERT INTO submissions (id, tenant_id, problem, problem_version, code,"
                " code_sha256, queue, status, enqueued, attempt, tries, received_at, failures)"
                " VALUES ('s1', 1, 'demo/layout', 'v1', 'x = 1', :sha, 'interactive', 'done',"
                " false, 1, 1, :now, 0)"), {"sha": "0" * 64, "now": now})
            conn.execute(text(
                "INSERT INTO deliveries (id, kind, submission_id, attempt, tenant_id, url,"
                " status, attempts, last_error, created_at, updated_at) VALUES ('d1',"
                " 'lti-score', 's1', 1, 1, 'http://10.0.0.5/li/scores', 'refused', 1,"
                " 'refused: 10.0.0.5 is not a public address', :now, :now)"), {"now": now})
            conn.execute(text(  # what a refusal at the token endpoint ended as before
                "INSERT INTO deliveries (id, kind, submission_id, attempt, tenant_id, url,"
                " status, attempts, last_error, created_at, updated_at) VALUES ('d0',"
                " 'lti-score', 's1', 0, 1, 'http://10.0.0.5/li/scores', 'failed', 1,"
                " 'token endpoint: refused: callback address 10.0.0.5 is not a public"
                " address', :now, :now)"), {"now": now})
        upgrade(empty_database_url)
        assert current(empty_database_url) == "0008"
        db = Database(empty_database_url)
        try:
            with db.session() as s:
                old = s.get(Delivery, "d1")
                assert old is not None
                assert (old.cause, old.first_try, old.refused_allow, old.status) == (
                    "report", 0, None, "refused")
                token = s.get(Delivery, "d0")
                assert token is not None and token.status == "refused"  # goes by itself
            with db.session() as s:
                s.add(Delivery(id="d2", kind="lti-score", submission_id="s1", attempt=1,
                               tenant_id=1, url="http://10.0.0.5/li/scores", status="pending",
                               attempts=0, cause="policy:abc", created_at=now, updated_at=now))
            with pytest.raises(IntegrityError), db.session() as s:
                s.add(Delivery(id="d3", kind="lti-score", submission_id="s1", attempt=1,
                               tenant_id=1, url="http://10.0.0.5/li/scores", status="pending",
                               attempts=0, cause="report", created_at=now, updated_at=now))
        finally:
            db.dispose()
        command.downgrade(alembic_config(empty_database_url), "0005")
        with engine.connect() as conn:
            left = conn.execute(text("SELECT id, status FROM deliveries ORDER BY id")).all()
            kept = conn.execute(text("SELECT count(*) FROM submissions")).scalar()
    finally:
        engine.dispose()
    assert [tuple(r) for r in left] == [("d0", "failed"), ("d1", "refused")] and kept == 1


def test_0008_fills_test_outcomes_from_the_stored_reports(empty_database_url: str) -> None:
    """Every done submission's report gets its rows (in pages of CHUNK submissions);
    one without a report, or not done, gets none; going back drops the table."""
    from importlib import import_module

    chunk = import_module("service.migrations.versions.0008_test_outcomes").CHUNK
    upgrade(empty_database_url, "0007")
    tests = [{"name": "sample-1", "visibility": "sample", "verdict": "wrong_answer",
              "message": "a layout is wrong", "probe": None, "input": "x",
              "expected": "P('data')", "received": "P()"},
             {"name": "h1", "visibility": "hidden", "verdict": "accepted", "message": ""}]
    engine = make_engine(empty_database_url)
    try:
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO tenants (id, name, webhook_secret, created_at)"
                              " VALUES (1, 'course-a', 'whsec_x', :now)"), {"now": utcnow()})
            done = [f"d{i:04d}" for i in range(chunk + 3)]  # past one page
            base = {"tenant_id": 1, "problem": "demo/layout", "problem_version": "v1",
                    "code": "x = 1", "code_sha256": "0" * 64, "queue": "interactive",
                    "enqueued": False, "tries": 1, "failures": 0, "sample_run": False,
                    "received_at": utcnow()}
            conn.execute(insert(Submission), [
                base | {"id": sid, "status": "done", "attempt": 2,
                        "report": {"verdict": "wrong_answer", "tests": tests}}
                for sid in done] + [
                base | {"id": "queued", "status": "queued", "attempt": 1,
                        "report": {"tests": tests}},
                base | {"id": "empty", "status": "done", "attempt": 1, "report": None}])
        upgrade(empty_database_url)
        with engine.connect() as conn:
            found = conn.execute(text(
                "SELECT submission_id, position, attempt, name, visibility, verdict, passed,"
                " message, probe, received, expected FROM test_outcomes"
                " ORDER BY submission_id, position")).all()
        assert len(found) == 2 * len(done)
        assert {r[0] for r in found} == set(done)
        assert [tuple(r[1:]) for r in found[:2]] == [
            (0, 2, "sample-1", "sample", "wrong_answer", False, "a layout is wrong", None,
             "P()", "P('data')"),
            (1, 2, "h1", "hidden", "accepted", True, "", None, None, None)]
        command.downgrade(alembic_config(empty_database_url), "0007")
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM submissions")).scalar() == len(
                done) + 2
            with pytest.raises(Exception):  # noqa: B017
                conn.execute(text("SELECT count(*) FROM test_outcomes"))
    finally:
        engine.dispose()
