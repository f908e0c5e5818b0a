"""The ``test_outcomes`` rows mirror each submission's current report on both databases:
stored with it, replaced by a rejudge's report, never written by a stale attempt, gone
with the submission."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import delete, select

from judge.report import TestResult as Result
from judge.report import VerdictReport
from judge.verdict import Verdict
from service import outcomes
from service.db import Database, utcnow
from service.keys import create_key
from service.models import Status, Submission, TestOutcome
from service.submissions import claim, rejudge, store

pytestmark = pytest.mark.service


def result(name: str, ok: bool, sample: bool = False, received: str = "",
           message: str = "") -> Result:
    return Result(
        name=name, visibility="sample" if sample else "hidden",
        verdict=Verdict.ACCEPTED if ok else Verdict.WRONG_ANSWER, score=0.0, max_score=1.0,
        time_ms=1.0, message="" if ok else message, input="x" if sample else None,
        expected="P('data')" if sample else None, received=received if sample else None)


def report(*tests: Result) -> VerdictReport:
    ok = all(t.verdict == Verdict.ACCEPTED for t in tests)
    return VerdictReport(problem="demo/layout", problem_version="v1",
                         verdict=Verdict.ACCEPTED if ok else Verdict.WRONG_ANSWER,
                         score=1.0 if ok else 0.0, max_score=1.0, time_ms=1.0,
                         tests=list(tests))


@pytest.fixture
def db(any_database_url: str) -> Iterator[Database]:
    database = Database(any_database_url)
    with database.session() as s:
        create_key(s, "course-a", "client")
        s.add(Submission(id="s1", tenant_id=1, problem="demo/layout", problem_version="v1",
                         code="x = 1", code_sha256="0" * 64, queue="interactive",
                         status=Status.QUEUED, enqueued=True, attempt=0, tries=0,
                         failures=0, queued_at=utcnow(), received_at=utcnow()))
    yield database
    database.dispose()


def rows(db: Database) -> list[tuple[Any, ...]]:
    with db.session() as s:
        return [tuple(r) for r in s.execute(
            select(TestOutcome.position, TestOutcome.attempt, TestOutcome.name,
                   TestOutcome.visibility, TestOutcome.passed, TestOutcome.message,
                   TestOutcome.received, TestOutcome.expected)
            .where(TestOutcome.submission_id == "s1").order_by(TestOutcome.position))]


def graded(db: Database, result: VerdictReport) -> int:
    taken = claim(db, "s1", stale_after=30)
    assert taken is not None and store(db, "s1", taken.attempt, result) is not None
    return taken.attempt


def test_a_rejudge_replaces_the_rows_and_a_stale_attempt_writes_none(db: Database) -> None:
    first = graded(db, report(result("sample-1", False, True, "P()", "wrong"),
                              result("h1", False, message="values"), result("h2", True)))
    assert rows(db) == [
        (0, first, "sample-1", "sample", False, "wrong", "P()", "P('data')"),
        (1, first, "h1", "hidden", False, "values", None, None),
        (2, first, "h2", "hidden", True, "", None, None)]
    stale = claim(db, "s1", stale_after=30)
    assert stale is None  # done: nothing to claim
    with db.session() as s:
        rejudge(s, Submission.id == "s1")
    assert rows(db) == []  # the report is gone, and its rows
    running = claim(db, "s1", stale_after=30)
    assert running is not None
    with db.session() as s:
        rejudge(s, Submission.id == "s1")  # overtakes the running grading
    assert store(db, "s1", running.attempt, report(result("old", True))) is None
    assert rows(db) == []  # the stale attempt wrote nothing
    second = graded(db, report(result("sample-1", True, True, "P('data')"), result("h1", True)))
    assert second > running.attempt
    assert rows(db) == [
        (0, second, "sample-1", "sample", True, "", "P('data')", "P('data')"),
        (1, second, "h1", "hidden", True, "", None, None)]
    with db.session() as s:  # replace (what store calls) swaps the rows in place
        outcomes.replace(s, "s1", second, report(result("h9", False, message="m" * 900))
                         .model_dump(mode="json"))
    assert rows(db) == [(0, second, "h9", "hidden", False, "m" * outcomes.MESSAGE_CHARS,
                         None, None)]
    with db.session() as s:
        s.execute(delete(Submission).where(Submission.id == "s1"))
    assert rows(db) == []  # gone with the submission


def test_a_nul_in_a_sample_tests_output_or_message_is_stored(db: Database) -> None:
    """A submission chooses a sample test's received text and its error message; a NUL
    in them (PostgreSQL's text refuses it) must not stop its report from being stored."""
    attempt = graded(db, report(result("sample-1", False, True, "a\x00b", "ValueError: \x00")))
    assert rows(db) == [(0, attempt, "sample-1", "sample", False, "ValueError: \ufffd",
                         "a\ufffdb", "P('data')")]
    with db.session() as s:
        stored = s.get(Submission, "s1")
        assert stored is not None and stored.status == Status.DONE
        assert stored.report is not None
        assert stored.report["tests"][0]["received"] == "a\x00b"  # the report keeps it


def test_rows_cap_long_texts_and_keep_outputs_of_sample_tests_only() -> None:
    stored = report(result("s", False, True, "r" * 5000), result("h", False, message="x")
                    ).model_dump(mode="json")
    stored["tests"][1]["received"] = "leaked"  # a hidden test never carries one
    found = outcomes.rows("s1", 3, stored)
    assert [(r["name"], r["attempt"], r["position"]) for r in found] == [
        ("s", 3, 0), ("h", 3, 1)]
    assert found[0]["received"] == "r" * outcomes.TEXT_CHARS
    assert found[1]["received"] is None and found[1]["expected"] is None
    assert outcomes.rows("s1", 1, None) == [] and outcomes.rows("s1", 1, {}) == []
