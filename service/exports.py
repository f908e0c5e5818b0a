"""Exporting a batch's results: CSV for spreadsheets, and Gradescope's ``results.json``.

CSV (``results_csv``): one row per submission under the header ``HEADER``; ``passed`` and
``total`` count the tests with an ``accepted`` verdict and all tests. The graded cells stay
empty until the submission is done. Student ids and submission ids come from uploads, so
every cell that begins with ``= + - @``, a tab or a carriage return gets a leading single
quote, which stops spreadsheets from reading it as a formula (CSV injection).

Gradescope (``gradescope_results``): the document a Gradescope autograder writes to
``/autograder/results/results.json``, as specified at
https://gradescope-autograders.readthedocs.io/en/latest/specs/ ("Output format"): top-level
``score``, ``execution_time`` (seconds), ``output``, ``visibility``, ``stdout_visibility``,
``extra_data`` and ``tests``, each test with ``name``, ``score``, ``max_score``, ``status``
(``passed`` or ``failed``), ``output`` and ``visibility`` (``hidden``, ``after_due_date``,
``after_published`` or ``visible``). The spec has no top-level ``max_score`` (the assignment's
points are set in Gradescope), so it travels in ``extra_data`` with the verdict. Sample tests
are ``visible``; hidden tests are ``after_published``. A test's ``output`` is its message,
which for hidden tests never shows expected values or inputs (see ``judge.report``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from judge.report import TestResult, VerdictReport
from judge.verdict import Verdict

HEADER = (
    "student_id", "submission_id", "status", "verdict", "score", "max_score",
    "passed", "total", "time_ms",
)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True)
class ExportRow:
    student_id: str
    submission_id: str
    status: str  # queued | running | done
    report: VerdictReport | None = None


def _graded(status: str, report: VerdictReport | None) -> VerdictReport | None:
    """The report when the submission is done, else None."""
    return report if status == "done" else None


def _passed(tests: Iterable[TestResult]) -> int:
    return sum(t.verdict == Verdict.ACCEPTED for t in tests)


def num(x: float) -> str:
    """A number as a spreadsheet reads it best: ``3``, ``2.5``, ``0.333``."""
    return f"{x:.3f}".rstrip("0").rstrip(".")


def cell(value: str) -> str:
    """``value`` as a CSV cell a spreadsheet will not read as a formula (a leading
    quote before ``= + - @``, a tab or a carriage return)."""
    return "'" + value if value.startswith(_FORMULA_START) else value


def results_csv(rows: Iterable[ExportRow], header: bool = True) -> str:
    """The rows as CSV text (RFC 4180 quoting, CRLF line ends), header first unless
    ``header`` is false (a later page of a streamed export)."""
    out = io.StringIO()
    writer = csv.writer(out)
    if header:
        writer.writerow(HEADER)
    for row in rows:
        cells = [row.student_id, row.submission_id, row.status]
        report = _graded(row.status, row.report)
        if report is None:
            cells += [""] * (len(HEADER) - len(cells))
        else:
            cells += [
                report.verdict.value, num(report.score), num(report.max_score),
                str(_passed(report.tests)), str(len(report.tests)), num(report.time_ms),
            ]
        writer.writerow([cell(c) for c in cells])
    return out.getvalue()


def _gradescope_test(test: TestResult) -> dict[str, Any]:
    return {
        "name": test.name,
        "score": test.score,
        "max_score": test.max_score,
        "status": "passed" if test.verdict == Verdict.ACCEPTED else "failed",
        "output": test.message,
        "visibility": "visible" if test.visibility == "sample" else "after_published",
    }


def gradescope_results(report: VerdictReport | None, status: str) -> dict[str, Any]:
    """One student's ``results.json`` document; score 0 while not yet graded."""
    graded = _graded(status, report)
    if graded is None:
        return {
            "score": 0.0,
            "execution_time": 0.0,
            "output": f"This submission is still being graded (status: {status}).",
            "visibility": "visible",
            "stdout_visibility": "hidden",
            "tests": [],
        }
    summary = f"{graded.verdict.value}: {_passed(graded.tests)}/{len(graded.tests)} tests passed"
    return {
        "score": graded.score,
        "execution_time": round(graded.time_ms / 1000, 3),
        "output": f"{summary}\n{graded.message}" if graded.message else summary,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": {
            "verdict": graded.verdict.value,
            "max_score": graded.max_score,
            "problem": graded.problem,
            "problem_version": graded.problem_version,
        },
        "tests": [_gradescope_test(t) for t in graded.tests],
    }


def gradescope_json(rows: Iterable[ExportRow]) -> dict[str, dict[str, Any]]:
    """Each student id mapped to its ``results.json`` document; a repeated id is an error."""
    documents: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.student_id in documents:
            raise ValueError(f"student id {row.student_id!r} appears in more than one row")
        documents[row.student_id] = gradescope_results(row.report, row.status)
    return documents
