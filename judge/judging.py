"""A sandbox's outcome judged into the report, on the trusted side: each test's value
against the stored expected one with the problem's checker, each probe's compiled program
(:mod:`judge.probe_checks`), and what a hidden test may say (fixed texts only).
:func:`judge_outcome` is pure: no I/O, no sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass

from judge import __version__, probe_checks, probes
from judge.checkers import Checker, CheckResult
from judge.errors import ProblemError
from judge.probes import ProbeSpec
from judge.report import TestResult, Timings, VerdictReport
from judge.sandbox.protocol import ErrorInfo, RunOutcome, TestRun, TestStatus
from judge.sandbox.supervisor import INTERFERED
from judge.settings import Settings
from judge.testdata import StoredTest
from judge.values import ListValue, render, render_input
from judge.verdict import Verdict, overall

STATUS_VERDICT: dict[str, Verdict] = {
    "error": Verdict.RUNTIME_ERROR,
    "crashed": Verdict.RUNTIME_ERROR,
    "interfered": Verdict.RUNTIME_ERROR,
    "timeout": Verdict.TIME_LIMIT_EXCEEDED,
    "memory": Verdict.MEMORY_LIMIT_EXCEEDED,
    "output_limit": Verdict.OUTPUT_LIMIT_EXCEEDED,
}
HIDDEN_OUTPUT_NOTE = "[output written during hidden tests is not shown]\n"


@dataclass(frozen=True)
class ProbeRun:
    """One probe on one test: the export in the submission's sandbox, and the compiled
    program's run in the clean one (None when the export did not produce a program)."""

    probe: ProbeSpec
    export: TestRun
    program: TestRun | None = None


# What a hidden test may say when it did not pass. Fixed texts: exception types, line
# numbers, exit codes and the harness's own messages are all the submission's to choose,
# so any of them could carry a hidden input out. A hidden test's checker reason is ours.
HIDDEN_MESSAGES: dict[str, str] = {
    "error": "the submission raised an exception",
    "timeout": "the test ran over its time limit",  # CPU time, or the wall-clock net
    "memory": "the submission ran out of memory",
    "output_limit": "the submission went over the output limit (printed output or return value)",
    "crashed": "the submission's process died during the test",
    "interfered": INTERFERED,
}


def _error_text(error: ErrorInfo | None) -> str:
    if error is None:
        return "the submission raised an exception"
    where = f" (line {error.line})" if error.line else ""
    text = f"{error.type}: {error.message}{where}" if error.message else f"{error.type}{where}"
    if error.traceback:
        text += "\n" + error.traceback.rstrip()
    return text


def _test_verdict(run: TestRun) -> Verdict:
    status: TestStatus = run.cause if run.status == "not_run" and run.cause else run.status
    return STATUS_VERDICT.get(status, Verdict.INTERNAL_ERROR)


def _sample_message(run: TestRun) -> str:
    if run.status == "error":
        return _error_text(run.error)
    if run.status == "memory":  # a MemoryError in Python, or the engine's OOM kill
        detail = _error_text(run.error) if run.error is not None else run.message
        return HIDDEN_MESSAGES["memory"] + (f" ({detail})" if detail else "")
    return run.message or HIDDEN_MESSAGES.get(run.status, run.status)


def _judge_probe(test: StoredTest, probe_run: ProbeRun, checker: Checker,
                 mesh: tuple[list[str], list[int]] | None) -> tuple[Verdict, str] | None:
    """A probe's verdict on a test whose value passed: None if the probe passes."""
    sample = test.visibility == "sample"
    probe, export, program = probe_run.probe, probe_run.export, probe_run.program
    said = f"probe {probe.name!r}: "

    def failed(result: CheckResult) -> tuple[Verdict, str]:
        return Verdict.WRONG_ANSWER, said + (result.detail if sample else result.reason)

    if export.status == "error":
        detail = "the judge could not trace your function with jax.jit as one program: " + \
            _error_text(export.error)
        return failed(CheckResult(False, probe_checks.REASONS["untraceable"], detail))
    if export.status != "ok":
        return _test_verdict(export), said + (
            _sample_message(export) if sample and export.status != "not_run" else
            HIDDEN_MESSAGES.get(export.status, export.message or "the test failed"))
    if program is None:
        return Verdict.INTERNAL_ERROR, said + "the judge failed: the program was not run"
    if program.status == "refused":
        return failed(CheckResult(False, probe_checks.REASONS["refused"], program.message))
    if program.status in ("error", "crashed"):
        detail = _error_text(program.error) if program.error else program.message
        return failed(CheckResult(False, probe_checks.REASONS["failed"],
                                  f"your compiled program failed on the test's inputs: {detail}"))
    if program.status != "ok" or program.value is None:
        # (A program the clean run never reached says so in the supervisor's own words.)
        return _test_verdict(program), said + (
            program.message if (sample or program.status == "not_run") and program.message
            else HIDDEN_MESSAGES.get(program.status, "the test failed"))
    stored = test.probes.get(probe.name)
    if probe.values:
        if stored is None or stored.expected is None or export.exported is None \
                or not isinstance(program.value, ListValue) \
                or len(program.value.items) != len(export.exported.paths):
            result = CheckResult(False, probe_checks.REASONS["values"],
                                 "the compiled program's outputs do not match the function's "
                                 "output tree" if stored is not None else
                                 "the reference's result is not stored: rebuild the problem")
            return failed(result)
        received = probe_checks.program_result(probe, export.exported.paths, program.value.items)
        result = probe.checker_for(checker).check(probe_checks.without_unit_axes(stored.expected),
                                                  probe_checks.without_unit_axes(received))
        if not result.passed:
            return failed(CheckResult(False, probe_checks.REASONS["values"],
                                      "the compiled program's results: " + result.detail))
    if program.facts is not None:
        result = probe_checks.check_facts(probe, program.facts, mesh, stored)
        if not result.passed:
            return failed(result)
    return None


def _judge_test(test: StoredTest, run: TestRun, checker: Checker,
                probe_runs: list[ProbeRun] | None = None) -> TestResult:
    sample = test.visibility == "sample"
    verdict: Verdict
    failed_probe: str | None = None  # a probe that failed a test whose value passed
    if run.status == "ok" and run.value is not None:
        result = checker.check(test.expected, run.value)
        verdict = Verdict.ACCEPTED if result.passed else Verdict.WRONG_ANSWER
        message = "" if result.passed else (result.detail if sample else result.reason)
        for probe_run in (probe_runs or []) if result.passed else []:
            try:
                mesh = probes.mesh_of(probe_run.probe, test.args)
            except ValueError as exc:
                raise ProblemError(str(exc)) from None
            found = _judge_probe(test, probe_run, checker, mesh)
            if found is not None:
                verdict, message = found
                failed_probe = probe_run.probe.name
                break
    elif run.status == "not_run":
        verdict, message = _test_verdict(run), run.message
    else:
        verdict = _test_verdict(run)
        message = _sample_message(run) if sample else HIDDEN_MESSAGES.get(
            run.status, "the test failed")
    extra = {}
    if sample:
        extra = {
            "input": ", ".join(f"{k}={render_input(v)}" for k, v in test.args.items()),
            "expected": render(test.expected),
            "received": render(run.value) if run.value is not None else None,
        }
    return TestResult(
        name=test.name,
        visibility=test.visibility,
        verdict=verdict,
        score=test.points if verdict is Verdict.ACCEPTED else 0.0,
        max_score=test.points,
        time_ms=round(run.time_ms, 3),
        cpu_ms=round(run.cpu_ms, 3),
        message=message,
        probe=failed_probe,
        **extra,
    )


def _capped(text: str, limit: int) -> str:
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore") + f"\n[... {len(data) - limit} more bytes]\n"


def judge_outcome(problem_id: str, version: str, tests: list[StoredTest], outcome: RunOutcome,
                  checker: Checker, settings: Settings,
                  probe_runs: dict[int, list[ProbeRun]] | None = None) -> VerdictReport:
    """Turn a sandbox's outcome into the report. Pure: no I/O, no sandbox."""
    message = ""
    runs = {r.index: r for r in outcome.tests}
    if outcome.status == "compile_error":
        message = f"the submission could not be loaded: {_error_text(outcome.error)}"
        results = [_uniform(t, Verdict.COMPILE_ERROR, "not run: the submission did not load")
                   for t in tests]
    elif outcome.status == "load_timeout":
        message = outcome.message
        results = [_uniform(t, Verdict.TIME_LIMIT_EXCEEDED, f"not run: {outcome.message}")
                   for t in tests]
    elif outcome.status == "load_memory":
        message = outcome.message
        results = [_uniform(t, Verdict.MEMORY_LIMIT_EXCEEDED, f"not run: {outcome.message}")
                   for t in tests]
    elif outcome.status == "load_crashed":
        message = outcome.message
        results = [_uniform(t, Verdict.RUNTIME_ERROR, f"not run: {outcome.message}")
                   for t in tests]
    elif outcome.status == "interfered":
        message = INTERFERED
        results = [_uniform(t, Verdict.RUNTIME_ERROR, f"not run: {INTERFERED}") for t in tests]
    elif outcome.status == "internal_error" or set(runs) != set(range(len(tests))):
        message = f"the judge failed: {outcome.message or 'the sandbox lost tests'}"
        results = [_uniform(t, Verdict.INTERNAL_ERROR, "not run: the judge failed")
                   for t in tests]
    else:
        probe_runs = probe_runs or {}
        results = [_judge_test(t, runs[i], checker, probe_runs.get(i))
                   for i, t in enumerate(tests)]

    interfered = outcome.status == "interfered" or any(
        r.status == "interfered" for r in outcome.tests)
    if interfered and not message:
        message = INTERFERED
    stdout, stderr = outcome.load_stdout, outcome.load_stderr
    hidden_output = False
    for i, test in enumerate(tests):
        run = runs.get(i)
        if run is None:
            continue
        if test.visibility == "sample":
            stdout += run.stdout
            stderr += run.stderr
        elif run.stdout_bytes or run.stderr_bytes:
            hidden_output = True
    if hidden_output:
        stdout += HIDDEN_OUTPUT_NOTE
    limit = settings.report_output_bytes
    return VerdictReport(
        problem=problem_id,
        problem_version=version,
        verdict=overall(r.verdict for r in results),
        score=sum(r.score for r in results),
        max_score=sum(r.max_score for r in results),
        time_ms=round(sum(r.time_ms for r in results), 3),
        cpu_ms=round(sum(r.cpu_ms for r in results), 3),
        message=message,
        tests=results,
        stdout=_capped(stdout, limit),
        stderr=_capped(stderr, limit),
        judge_version=__version__,
        interfered=interfered,
        timings=Timings(
            startup_ms=round(outcome.startup_ms, 1),
            import_ms=round(outcome.import_ms, 1),
            load_ms=round(outcome.load_ms, 1),
            load_cpu_ms=round(outcome.load_cpu_ms, 1),
            tests_ms=round(outcome.tests_ms, 1),
        ),
    )


def _uniform(test: StoredTest, verdict: Verdict, message: str) -> TestResult:
    return TestResult(name=test.name, visibility=test.visibility, verdict=verdict, score=0.0,
                      max_score=test.points, time_ms=0.0, message=message)
