"""judge.judging's pure ``judge_outcome`` (outcome + tests -> report), and judge.grading's
``grade`` and ``internal_error`` where a run is no verdict."""

from __future__ import annotations

import shutil
from typing import Any

import numpy as np
import pytest

from judge import __version__
from judge.catalog import Catalog
from judge.checkers import get_checker, reasons
from judge.errors import SandboxUnavailable
from judge.grading import grade, internal_error
from judge.harness.codec import encode
from judge.judging import HIDDEN_OUTPUT_NOTE, judge_outcome
from judge.report import VerdictReport
from judge.sandbox.base import Sandbox
from judge.sandbox.protocol import ErrorInfo, Job, RunOutcome
from judge.sandbox.protocol import TestRun as Run
from judge.sandbox.supervisor import INTERFERED
from judge.settings import Settings
from judge.testdata import StoredTest
from judge.verdict import Verdict
from tests_support import FIXTURE_PROBLEMS

SETTINGS = Settings(max_code_bytes=1000, report_output_bytes=200)
EXACT = get_checker("exact")

# Distinctive data of the hidden tests: none of it may reach a hidden test's result.
SECRET_EXPECTED = 31337.75
SECRET_INPUT = 271828.5
SECRET_MESSAGE = "the answer was 31337.75"


def enc(value: Any) -> dict[str, Any]:
    return encode(value)


def stored(name: str, visibility: str, expected: Any, x: Any, points: float = 1.0) -> StoredTest:
    return StoredTest(
        name=name,
        visibility=visibility,  # type: ignore[arg-type]
        points=0.0 if visibility == "sample" else points,
        args={"x": enc(x)},
        expected=enc(expected),
    )


TESTS = [
    stored("s1", "sample", np.array([1.5, 2.5]), np.array([3.0])),
    stored("s2", "sample", 42, 7),
    stored("h1", "hidden", np.array([SECRET_EXPECTED, 1.0]), SECRET_INPUT, points=2.0),
    stored("h2", "hidden", SECRET_EXPECTED, np.array([SECRET_INPUT]), points=3.0),
]


def ok(index: int, value: Any, time_ms: float = 10.0, **extra: Any) -> Run:
    return Run(index=index, status="ok", value=enc(value), time_ms=time_ms, **extra)


def right(index: int, **extra: Any) -> Run:
    return ok(index, [np.array([1.5, 2.5]), 42, np.array([SECRET_EXPECTED, 1.0]),
                      SECRET_EXPECTED][index], **extra)


def completed(*runs: Run, **extra: Any) -> RunOutcome:
    return RunOutcome(status="completed", tests=list(runs), **extra)


def judge(outcome: RunOutcome, tests: list[StoredTest] = TESTS, checker=EXACT) -> VerdictReport:
    return judge_outcome("set/prob", "v123", tests, outcome, checker, SETTINGS)


def assert_hidden_clean(report: VerdictReport) -> None:
    """No hidden test's result shows its expected value, its input or an error message."""
    for result in report.tests:
        if result.visibility != "hidden":
            continue
        assert result.input is None and result.expected is None and result.received is None
        text = result.model_dump_json()
        for secret in ("31337", "271828", SECRET_MESSAGE, "Traceback"):
            assert secret not in text, (secret, text)


# -- judge_outcome: accepted and scores --------------------------------------------------


def test_all_accepted() -> None:
    report = judge(completed(*(right(i, time_ms=1.25 * (i + 1)) for i in range(4)),
                             startup_ms=1.04, import_ms=500.0, load_ms=3.0, tests_ms=20.0))
    assert report.verdict is Verdict.ACCEPTED
    assert [t.verdict for t in report.tests] == [Verdict.ACCEPTED] * 4
    assert [t.name for t in report.tests] == ["s1", "s2", "h1", "h2"]
    assert report.score == 5.0 and report.max_score == 5.0
    assert [t.score for t in report.tests] == [0.0, 0.0, 2.0, 3.0]
    assert report.time_ms == 12.5
    assert report.problem == "set/prob" and report.problem_version == "v123"
    assert report.judge_version == __version__ and report.schema_version == 1
    assert report.timings.import_ms == 500.0 and report.timings.startup_ms == 1.0
    assert report.message == "" and all(t.message == "" for t in report.tests)
    sample = report.tests[0]
    assert sample.input == "x=[3.] (float64, shape (1,))"  # small: shown in full
    assert sample.expected is not None and "1.5" in sample.expected
    assert sample.received is not None and "2.5" in sample.received
    assert report.tests[1].input == "x=7" and report.tests[1].expected == "42"
    assert_hidden_clean(report)


def test_judge_outcome_is_pure() -> None:
    outcome = completed(right(0), ok(1, 41), right(2), right(3))
    first = judge(outcome)
    assert judge(outcome) == first
    assert outcome == completed(right(0), ok(1, 41), right(2), right(3))


def test_partial_score_and_first_failure_is_the_verdict() -> None:
    report = judge(completed(right(0), right(1), ok(2, np.array([0.0, 1.0])), right(3)))
    assert report.verdict is Verdict.WRONG_ANSWER
    assert report.score == 3.0 and report.max_score == 5.0
    report = judge(completed(right(0), right(1),
                             Run(index=2, status="timeout", time_ms=5000.0),
                             ok(3, 0.0)))
    assert report.verdict is Verdict.TIME_LIMIT_EXCEEDED
    assert [t.verdict for t in report.tests][2:] == [Verdict.TIME_LIMIT_EXCEEDED,
                                                     Verdict.WRONG_ANSWER]


# -- wrong answers -----------------------------------------------------------------------


def test_hidden_wrong_answer_shows_the_reason_only() -> None:
    report = judge(completed(right(0), right(1), ok(2, np.array([SECRET_EXPECTED + 1, 1.0])),
                             ok(3, 12.0)))
    h1, h2 = report.tests[2:]
    assert h1.verdict is Verdict.WRONG_ANSWER
    # how many values are wrong and where depends on the submission: not for hidden tests
    assert h1.message == reasons.VALUES
    assert h2.verdict is Verdict.WRONG_ANSWER and h2.message == reasons.VALUES
    assert h1.score == 0.0 and h1.max_score == 2.0
    assert_hidden_clean(report)


def test_hidden_wrong_shape_and_type() -> None:
    # a shape (or a type, a string) the submission chose could carry the hidden input out
    report = judge(completed(right(0), right(1), ok(2, np.zeros(271828, np.uint8)),
                             ok(3, type("LEAK_271828", (), {})())))
    assert report.tests[2].message == reasons.SHAPE
    assert report.tests[3].message == reasons.NOT_NUMERIC
    assert report.tests[2].verdict is report.tests[3].verdict is Verdict.WRONG_ANSWER
    assert_hidden_clean(report)


def test_sample_wrong_shape_and_type_say_what_was_received() -> None:
    report = judge(completed(ok(0, np.zeros(3)), ok(1, type("Mine", (), {})()), right(2),
                             right(3)))
    assert report.tests[0].message == "the result has shape (3,), expected shape (2,)"
    assert report.tests[1].message == (
        f"the result is not a numeric array: it is an object of type {__name__}.Mine")


def test_sample_wrong_answer_shows_expected_and_received() -> None:
    report = judge(completed(ok(0, np.array([1.5, 9.0])), right(1), right(2), right(3)))
    s1 = report.tests[0]
    assert s1.verdict is Verdict.WRONG_ANSWER
    assert "expected 2.5" in s1.message and "got 9.0" in s1.message
    assert s1.expected is not None and "2.5" in s1.expected
    assert s1.received is not None and "9." in s1.received
    assert s1.input == "x=[3.] (float64, shape (1,))"


def test_sample_inputs_of_every_kind_are_shown() -> None:
    tests = [
        StoredTest(name="s", visibility="sample", points=0.0, expected=enc(1),
                   args={"a": enc(2.5), "b": enc(True), "c": enc("relu"), "d": enc(None),
                         "e": enc(float("nan"))}),
    ]
    report = judge(completed(ok(0, 1)), tests)
    assert report.tests[0].input == "a=2.5, b=True, c='relu', d=None, e=nan"


def test_sample_inputs_that_are_containers_are_shown() -> None:
    # Arguments of type "any" may be lists, tuples or dicts; _render_input shows
    # repr(encoded.get("v")), which is None for them: the student reads "shape=None".
    tests = [
        StoredTest(name="s", visibility="sample", points=0.0, expected=enc(1),
                   args={"shape": enc([16, 8]), "axes": enc(("data", None)),
                         "cfg": enc({"k": 3})}),
    ]
    text = judge(completed(ok(0, 1)), tests).tests[0].input
    assert text is not None
    assert "None" not in text.replace("'data', None", "")
    assert "16" in text and "8" in text and "data" in text and "3" in text


# -- errors and limits -------------------------------------------------------------------

ERROR = ErrorInfo(type="ValueError", message=SECRET_MESSAGE, line=12,
                  traceback="Traceback (most recent call last):\n  ...\nValueError: " + SECRET_MESSAGE)


def test_hidden_runtime_error_hides_the_message() -> None:
    report = judge(completed(right(0), right(1),
                             Run(index=2, status="error", error=ERROR, time_ms=3.0),
                             Run(index=3, status="error")))
    assert report.verdict is Verdict.RUNTIME_ERROR
    # Neither the type nor the line: both are the submission's to choose (a leak channel).
    assert report.tests[2].message == "the submission raised an exception"
    assert "ValueError" not in report.tests[2].message and "12" not in report.tests[2].message
    assert report.tests[3].message == "the submission raised an exception"
    assert report.tests[2].time_ms == 3.0
    assert_hidden_clean(report)


def test_sample_runtime_error_shows_message_and_traceback() -> None:
    report = judge(completed(Run(index=0, status="error", error=ERROR), right(1), right(2),
                             right(3)))
    message = report.tests[0].message
    assert message.startswith(f"ValueError: {SECRET_MESSAGE} (line 12)")
    assert "Traceback" in message
    assert report.tests[0].received is None


def test_memory() -> None:
    oom = ErrorInfo(type="MemoryError", message=SECRET_MESSAGE)
    report = judge(completed(Run(index=0, status="memory", error=oom), right(1),
                             Run(index=2, status="memory", error=oom), right(3)))
    assert report.verdict is Verdict.MEMORY_LIMIT_EXCEEDED
    assert report.tests[0].message.startswith("the submission ran out of memory (MemoryError")
    assert SECRET_MESSAGE in report.tests[0].message
    assert report.tests[2].message == "the submission ran out of memory"
    assert_hidden_clean(report)


@pytest.mark.parametrize(
    "status, verdict",
    [
        ("timeout", Verdict.TIME_LIMIT_EXCEEDED),
        ("crashed", Verdict.RUNTIME_ERROR),
        ("output_limit", Verdict.OUTPUT_LIMIT_EXCEEDED),
        ("memory", Verdict.MEMORY_LIMIT_EXCEEDED),
        ("error", Verdict.RUNTIME_ERROR),
    ],
)
def test_status_verdicts(status: str, verdict: Verdict) -> None:
    report = judge(completed(right(0), right(1),
                             Run(index=2, status=status, message="the process was killed"),
                             right(3)))
    assert report.tests[2].verdict is verdict
    assert report.verdict is verdict
    assert report.tests[2].score == 0.0
    assert report.tests[2].message
    assert_hidden_clean(report)


def test_timeout_without_message_gets_one() -> None:
    report = judge(completed(right(0), right(1), Run(index=2, status="timeout"), right(3)))
    assert report.tests[2].message == "the test ran over its time limit"


def test_not_run_tests_take_the_verdict_of_their_cause() -> None:
    report = judge(completed(
        right(0), Run(index=1, status="timeout", message="the test ran over 2 s"),
        Run(index=2, status="not_run", cause="timeout", message="not run: earlier test"),
        Run(index=3, status="not_run", cause="output_limit", message="not run: x"),
    ))
    assert [t.verdict for t in report.tests] == [
        Verdict.ACCEPTED, Verdict.TIME_LIMIT_EXCEEDED, Verdict.TIME_LIMIT_EXCEEDED,
        Verdict.OUTPUT_LIMIT_EXCEEDED,
    ]
    assert report.tests[2].message == "not run: earlier test"
    assert report.verdict is Verdict.TIME_LIMIT_EXCEEDED


def test_not_run_without_a_cause_and_ok_without_a_value_are_internal_errors() -> None:
    report = judge(completed(right(0), right(1), Run(index=2, status="not_run"),
                             Run(index=3, status="ok")))
    assert report.tests[2].verdict is Verdict.INTERNAL_ERROR
    assert report.tests[3].verdict is Verdict.INTERNAL_ERROR
    assert report.verdict is Verdict.INTERNAL_ERROR


def test_none_result_is_a_value() -> None:
    tests = [stored("h", "hidden", None, 1)]
    assert judge(completed(ok(0, None)), tests).verdict is Verdict.ACCEPTED
    report = judge(completed(ok(0, 0)), tests)
    assert report.verdict is Verdict.WRONG_ANSWER


# -- whole-run outcomes ------------------------------------------------------------------


def test_compile_error() -> None:
    error = ErrorInfo(type="SyntaxError", message="invalid syntax", line=3)
    outcome = RunOutcome(status="compile_error", error=error, load_stdout="loading...\n",
                         tests=[Run(index=i, status="not_run") for i in range(4)])
    report = judge(outcome)
    assert report.verdict is Verdict.COMPILE_ERROR
    assert [t.verdict for t in report.tests] == [Verdict.COMPILE_ERROR] * 4
    assert report.message == "the submission could not be loaded: SyntaxError: invalid syntax (line 3)"
    assert all(t.message == "not run: the submission did not load" for t in report.tests)
    assert report.score == 0.0 and report.max_score == 5.0
    assert report.stdout == "loading...\n"
    assert_hidden_clean(report)


@pytest.mark.parametrize(
    "status, verdict",
    [("load_timeout", Verdict.TIME_LIMIT_EXCEEDED), ("load_crashed", Verdict.RUNTIME_ERROR)],
)
def test_load_timeout_and_crash(status: str, verdict: Verdict) -> None:
    report = judge(RunOutcome(status=status, message="loading took over 2 s"))
    assert report.verdict is verdict
    assert [t.verdict for t in report.tests] == [verdict] * 4
    assert all(t.message == "not run: loading took over 2 s" for t in report.tests)
    assert report.message == "loading took over 2 s"
    assert report.score == 0.0


def test_internal_error() -> None:
    report = judge(RunOutcome(status="internal_error", message="the harness is version 0"))
    assert report.verdict is Verdict.INTERNAL_ERROR
    assert [t.verdict for t in report.tests] == [Verdict.INTERNAL_ERROR] * 4
    assert report.message == "the judge failed: the harness is version 0"


@pytest.mark.parametrize(
    "indices", [[0, 1, 2], [0, 1, 2, 3, 4], [0, 1, 2, 5], []], ids=str
)
def test_lost_or_extra_tests_are_an_internal_error(indices: list[int]) -> None:
    report = judge(completed(*(ok(i, 0) for i in indices)))
    assert report.verdict is Verdict.INTERNAL_ERROR
    assert all(t.verdict is Verdict.INTERNAL_ERROR for t in report.tests)
    assert "lost tests" in report.message


def test_no_tests_at_all_is_an_internal_error() -> None:
    report = judge(completed(), tests=[])
    assert report.verdict is Verdict.INTERNAL_ERROR and report.tests == []


# -- output ------------------------------------------------------------------------------


def test_output_of_samples_is_kept_and_of_hidden_tests_is_not() -> None:
    report = judge(completed(
        right(0, stdout="S0-OUT\n", stdout_bytes=7, stderr="S0-ERR\n", stderr_bytes=7),
        right(1),
        right(2, stdout="H-OUT 31337.75\n", stdout_bytes=15, stderr="H-ERR\n", stderr_bytes=6),
        right(3),
        load_stdout="LOAD-OUT\n", load_stderr="LOAD-ERR\n",
    ))
    assert report.stdout == "LOAD-OUT\nS0-OUT\n" + HIDDEN_OUTPUT_NOTE
    assert report.stderr == "LOAD-ERR\nS0-ERR\n"
    assert "H-OUT" not in report.model_dump_json() and "H-ERR" not in report.model_dump_json()


def test_hidden_output_counts_alone_trigger_the_note() -> None:
    quiet = judge(completed(right(0), right(1), right(2), right(3)))
    assert quiet.stdout == ""
    loud = judge(completed(right(0), right(1), right(2), right(3, stderr_bytes=9000)))
    assert loud.stdout == HIDDEN_OUTPUT_NOTE and loud.stderr == ""


def test_report_output_is_capped() -> None:
    big = "é" * 500  # 1000 bytes
    report = judge(completed(right(0, stdout=big, stdout_bytes=1000), right(1), right(2),
                             right(3), load_stderr="x" * 300))
    assert report.stdout.startswith("é" * 100)
    assert len(report.stdout.split("\n")[0].encode()) <= SETTINGS.report_output_bytes
    assert "[... 800 more bytes]" in report.stdout
    assert report.stderr.startswith("x" * 200) and "[... 100 more bytes]" in report.stderr


# -- interference, and runs that are no verdict ---------------------------------------------


def test_a_test_the_submission_interfered_with_is_a_marked_runtime_error() -> None:
    runs = [right(0), right(1),
            Run(index=2, status="interfered", message=INTERFERED),
            Run(index=3, status="not_run", message="not run: an earlier test ended the run",
                cause="interfered")]
    report = judge(completed(*runs))
    assert report.verdict is Verdict.RUNTIME_ERROR
    assert report.interfered and report.message == INTERFERED
    assert [t.message for t in report.tests[2:]] == [INTERFERED,
                                                     "not run: an earlier test ended the run"]
    assert [t.verdict for t in report.tests[2:]] == [Verdict.RUNTIME_ERROR] * 2
    assert not judge(completed(*(right(i) for i in range(4)))).interfered


def test_interference_while_loading_is_a_marked_runtime_error_for_every_test() -> None:
    report = judge(RunOutcome(status="interfered", message=INTERFERED))
    assert report.verdict is Verdict.RUNTIME_ERROR and report.interfered
    assert {t.verdict for t in report.tests} == {Verdict.RUNTIME_ERROR}
    assert all(t.message == f"not run: {INTERFERED}" for t in report.tests)


class FixedSandbox(Sandbox):
    """Hands back one outcome, whatever the job (grade's own logic under test)."""

    name = "fixed"
    isolated = True

    def __init__(self, outcome: RunOutcome) -> None:
        super().__init__(SETTINGS)
        self.outcome = outcome

    def run(self, job: Job) -> RunOutcome:
        return self.outcome


def test_a_harness_that_never_reached_the_submission_is_no_verdict() -> None:
    problem = Catalog(FIXTURE_PROBLEMS).get("demo/layout")
    broken = FixedSandbox(RunOutcome(status="internal_error",
                                     message="the harness did not start (it exited)"))
    with pytest.raises(SandboxUnavailable, match="the harness did not start"):
        grade(problem, "def layout(a, b, c):\n    return 0\n", sandbox=broken,
              settings=SETTINGS)


def test_an_internal_error_report_never_raises_for_a_broken_package(tmp_path) -> None:
    shutil.copytree(FIXTURE_PROBLEMS / "demo" / "layout", tmp_path / "demo" / "layout")
    problem = Catalog(tmp_path).get("demo/layout")
    report = internal_error(problem, "given up", SETTINGS)
    assert report.verdict is Verdict.INTERNAL_ERROR and len(report.tests) == 5
    (problem.data_dir / "manifest.json").write_text("{}")  # now it cannot be loaded
    report = internal_error(problem, "the package is broken", SETTINGS)
    assert report.verdict is Verdict.INTERNAL_ERROR and report.tests == []
    assert report.message == "the judge failed: the package is broken"
    assert internal_error("demo/gone", "no such problem", SETTINGS).problem == "demo/gone"
