"""The ``test_outcomes`` rows of a submission: its current report's tests, one row each,
for class analytics to group and count in the database (:mod:`service.analytics` says
why). The rows mirror ``submissions.report``: :func:`replace` writes them in the
transaction that stores a report (:func:`service.submissions.store`), :func:`clear`
removes them where a rejudge clears the report, and deleting a submission deletes them
(``ON DELETE CASCADE``). Migration 0008 filled them from the reports stored before it.

What a row keeps of a test: its name, visibility (``sample`` or ``hidden``), verdict,
message (capped at :data:`MESSAGE_CHARS`) and probe; for a sample test also what it
received and expected (capped at :data:`TEXT_CHARS`). A hidden test's report never has
those, and its row has none either.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from sqlalchemy import Table, delete, insert
from sqlalchemy.orm import Session

from service.db import chunked
from service.models import Submission, TestOutcome

NAME_CHARS = 200  # name and probe, as the columns hold them
MESSAGE_CHARS = 500
TEXT_CHARS = 2000  # received and expected
ACCEPTED = "accepted"

TABLE = cast(Table, TestOutcome.__table__)  # Core: one executemany, no ORM objects


def _clean(value: Any, cap: int) -> str:
    """``value`` as text of at most ``cap`` characters, NUL replaced: a sample test's
    message and output are the submission's own text, and PostgreSQL's text columns
    refuse NUL (the report's JSON column keeps it escaped), which would fail the store."""
    return str(value)[:cap].replace("\x00", "\ufffd")


def _text(value: Any, cap: int) -> str | None:
    return None if value is None else _clean(value, cap)


def rows(submission_id: str, attempt: int,
         report: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The rows of a report as stored (``VerdictReport.model_dump(mode="json")``), one per
    test in the report's order."""
    found = []
    for position, test in enumerate((report or {}).get("tests") or []):
        sample = test.get("visibility") == "sample"
        verdict = _clean(test.get("verdict") or "", 40)
        found.append({
            "submission_id": submission_id, "position": position, "attempt": attempt,
            "name": _clean(test.get("name") or "", NAME_CHARS),
            "visibility": "sample" if sample else "hidden", "verdict": verdict,
            "passed": verdict == ACCEPTED,
            "message": _clean(test.get("message") or "", MESSAGE_CHARS),
            "probe": _text(test.get("probe"), NAME_CHARS),
            "received": _text(test.get("received"), TEXT_CHARS) if sample else None,
            "expected": _text(test.get("expected"), TEXT_CHARS) if sample else None,
        })
    return found


def insert_rows(s: Session, found: Sequence[dict[str, Any]]) -> None:
    if found:
        s.execute(insert(TABLE), list(found))


def replace(s: Session, submission_id: str, attempt: int,
            report: Mapping[str, Any] | None) -> None:
    """Make the submission's rows those of ``report`` (the report of ``attempt`` as
    stored): one DELETE and one executemany INSERT, in the caller's transaction."""
    s.execute(delete(TABLE).where(TABLE.c.submission_id == submission_id))
    insert_rows(s, rows(submission_id, attempt, report))


def clear(s: Session, submission_ids: Iterable[str]) -> None:
    """Remove the rows of submissions whose report was cleared (a rejudge)."""
    for part in chunked(list(submission_ids)):
        s.execute(delete(TABLE).where(TABLE.c.submission_id.in_(list(part))))


def fill(s: Session, submissions: Iterable[Submission]) -> None:
    """Write the rows of new submissions added with their reports as ORM objects
    (fixtures, benches, seed data), as :func:`service.submissions.store` would have:
    flushes them first, then one executemany for all."""
    added = list(submissions)
    s.flush()
    insert_rows(s, [r for sub in added for r in rows(sub.id, sub.attempt, sub.report)])
