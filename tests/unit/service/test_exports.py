"""service.exports: a batch's results as CSV and as Gradescope results.json documents."""

from __future__ import annotations

import csv
import io
import json

import pytest

from judge.report import TestResult as Judged  # not "Test*": pytest would collect it
from judge.report import VerdictReport
from judge.verdict import Verdict
from service.exports import (
    HEADER,
    ExportRow,
    gradescope_json,
    gradescope_results,
    results_csv,
)


def make_report(*tests: Judged, message: str = "") -> VerdictReport:
    verdicts = [t.verdict for t in tests]
    return VerdictReport(
        problem="jax-basics/softmax",
        problem_version="abc123",
        verdict=next((v for v in verdicts if v != Verdict.ACCEPTED), Verdict.ACCEPTED),
        score=sum(t.score for t in tests),
        max_score=sum(t.max_score for t in tests),
        time_ms=sum(t.time_ms for t in tests),
        message=message,
        tests=list(tests),
    )


SAMPLE_OK = Judged(
    name="sample-1", visibility="sample", verdict=Verdict.ACCEPTED, score=0, max_score=0,
    time_ms=12.5,
)
HIDDEN_OK = Judged(
    name="hidden-1", visibility="hidden", verdict=Verdict.ACCEPTED, score=2.5, max_score=2.5,
    time_ms=100.0,
)
HIDDEN_WA = Judged(
    name="hidden-2", visibility="hidden", verdict=Verdict.WRONG_ANSWER, score=0, max_score=1,
    time_ms=1137.5, message="values differ at 3 of 64 positions",
)
REPORT = make_report(SAMPLE_OK, HIDDEN_OK, HIDDEN_WA)


def parse(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


def test_csv_has_the_header_and_one_parsed_row_per_submission() -> None:
    rows = [
        ExportRow("alice", "sub-1", "done", REPORT),
        ExportRow("bob", "sub-2", "queued"),
        ExportRow("carol", "sub-3", "running", None),
    ]
    text = results_csv(rows)
    assert text.splitlines()[0] == ",".join(HEADER)
    assert HEADER == ("student_id", "submission_id", "status", "verdict", "score", "max_score",
                      "passed", "total", "time_ms")
    alice, bob, carol = parse(text)
    assert alice == {
        "student_id": "alice", "submission_id": "sub-1", "status": "done",
        "verdict": "wrong_answer", "score": "2.5", "max_score": "3.5",
        "passed": "2", "total": "3", "time_ms": "1250",
    }
    for row, status in ((bob, "queued"), (carol, "running")):
        assert row["status"] == status
        assert [row[k] for k in HEADER[3:]] == [""] * 6


def test_csv_leaves_graded_cells_empty_until_done_even_with_a_report() -> None:
    (row,) = parse(results_csv([ExportRow("alice", "s", "running", REPORT)]))
    assert row["verdict"] == row["score"] == row["passed"] == ""


def test_csv_survives_commas_quotes_and_newlines() -> None:
    sid = 'a,b "c"\nd'
    (row,) = parse(results_csv([ExportRow(sid, "x", "queued")]))
    assert row["student_id"] == sid


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_csv_cells_that_could_be_formulas_get_a_leading_quote(start: str) -> None:
    hostile = f"{start}HYPERLINK(\"http://evil\",\"x\")"
    (row,) = parse(results_csv([ExportRow(hostile, hostile, "queued")]))
    assert row["student_id"] == "'" + hostile
    assert row["submission_id"] == "'" + hostile


def test_csv_leaves_harmless_cells_alone() -> None:
    (row,) = parse(results_csv([ExportRow("o'brien=1", "sub-1", "done", REPORT)]))
    assert row["student_id"] == "o'brien=1"
    assert row["score"] == "2.5"


def test_gradescope_document_of_a_graded_submission() -> None:
    doc = gradescope_results(make_report(SAMPLE_OK, HIDDEN_OK, HIDDEN_WA, message=""), "done")
    assert doc["score"] == 2.5
    assert doc["execution_time"] == 1.25  # seconds
    assert doc["output"] == "wrong_answer: 2/3 tests passed"
    assert doc["visibility"] == "visible"
    assert doc["stdout_visibility"] == "hidden"
    assert doc["extra_data"]["max_score"] == 3.5
    assert doc["extra_data"]["verdict"] == "wrong_answer"
    assert doc["tests"] == [
        {"name": "sample-1", "score": 0, "max_score": 0, "status": "passed", "output": "",
         "visibility": "visible"},
        {"name": "hidden-1", "score": 2.5, "max_score": 2.5, "status": "passed", "output": "",
         "visibility": "after_published"},
        {"name": "hidden-2", "score": 0, "max_score": 1, "status": "failed",
         "output": "values differ at 3 of 64 positions", "visibility": "after_published"},
    ]
    json.dumps(doc, allow_nan=False)  # a plain JSON document


def test_gradescope_output_carries_the_report_message() -> None:
    failed = Judged(name="t", visibility="hidden", verdict=Verdict.COMPILE_ERROR, score=0,
                        max_score=1, time_ms=0)
    doc = gradescope_results(make_report(failed, message="SyntaxError on line 3"), "done")
    assert doc["output"] == "compile_error: 0/1 tests passed\nSyntaxError on line 3"
    assert doc["tests"][0]["status"] == "failed"


@pytest.mark.parametrize(("status", "report"), [("queued", None), ("running", REPORT),
                                                 ("done", None)])
def test_gradescope_document_while_not_graded(status: str, report: VerdictReport | None) -> None:
    doc = gradescope_results(report, status)
    assert doc["score"] == 0
    assert doc["tests"] == []
    assert "still being graded" in doc["output"]


def test_gradescope_json_maps_each_student_to_a_document() -> None:
    rows = [ExportRow("alice", "s1", "done", REPORT), ExportRow("bob", "s2", "queued")]
    docs = gradescope_json(rows)
    assert list(docs) == ["alice", "bob"]
    assert docs["alice"] == gradescope_results(REPORT, "done")
    assert docs["bob"]["score"] == 0
    assert json.loads(json.dumps(docs)) == docs


def test_gradescope_json_refuses_a_student_twice() -> None:
    with pytest.raises(ValueError, match="'alice'"):
        gradescope_json([ExportRow("alice", "s1", "queued"), ExportRow("alice", "s2", "queued")])


def test_export_rows_are_frozen() -> None:
    row = ExportRow("alice", "s1", "queued")
    with pytest.raises(AttributeError):
        row.status = "done"  # type: ignore[misc]
