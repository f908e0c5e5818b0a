"""The one grading function that the CLI, the API and the workers all call.

``grade(problem, code, sandbox=..., settings=...)`` sends the code and the test *inputs*
to a sandbox, then compares what comes back with the stored expected outputs here, on the
trusted side, with the problem's checker (:func:`judge.judging.judge_outcome`). It never
raises for anything the submission does: every failure is a verdict. It raises
:class:`~judge.errors.ProblemError` for a broken package and
:class:`~judge.errors.SandboxUnavailable` when the sandbox itself failed (the engine is
down, the harness did not start): those are no verdict at all, and the caller retries or
reports them. Submitted bytes become code in :mod:`judge.intake`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from judge import __version__, probe_requests
from judge.errors import ProblemError, SandboxUnavailable
from judge.judging import ProbeRun, judge_outcome
from judge.probes import ProbeSpec
from judge.problem import Problem
from judge.report import VerdictReport
from judge.sandbox.base import Sandbox
from judge.sandbox.protocol import Job, JobTest, ProgramRequest, RunOutcome, TestRun
from judge.settings import Settings
from judge.testdata import load_tests
from judge.verdict import Verdict


def make_job(problem: Problem, code: str, inputs: list[dict[str, dict]], settings: Settings,
             label: str = "", hidden: list[bool] | None = None) -> Job:
    """The job for ``code``: the tests in order (samples first); ``hidden`` marks the tests
    whose texts the supervisor drops (none for a trusted run, such as building)."""
    args = problem.spec.entry_point.args
    hidden = hidden or [False] * len(inputs)
    return Job(
        code=code,
        entry_point=problem.spec.entry_point.name,
        tests=[
            JobTest(index=i, args=[test[a.name] for a in args], kinds=[a.type for a in args],
                    hidden=secret)
            for i, (test, secret) in enumerate(zip(inputs, hidden, strict=True))
        ],
        limits=problem.limits(settings),
        label=label,
    )


@dataclass(frozen=True)
class _ProbeSlot:
    """One probe on one test: the export asked of the submission's run (``export``, an
    extra test of its job) and what the clean run needs to run the program it returns."""

    test: int  # the position of the test it probes
    export: JobTest
    probe: ProbeSpec
    program: ProgramRequest
    values: list[dict]
    kinds: list[str]


def run_with_probes(problem: Problem, code: str, tests: list[tuple[str, dict[str, dict]]], *,
                    sandbox: Sandbox, settings: Settings, label: str = "",
                    hidden: list[bool] | None = None
                    ) -> tuple[RunOutcome, dict[int, list[ProbeRun]]]:
    """Run ``code`` on ``tests`` (name, inputs) and, for each probe of each test, export
    the entry point in the same sandbox and compile and run the program in a clean one
    (judge.probes). Raises SandboxUnavailable when a sandbox itself failed."""
    hidden = hidden or [False] * len(tests)
    job = make_job(problem, code, [args for _, args in tests], settings, label, hidden)
    arg_names = [a.name for a in problem.spec.entry_point.args]
    kinds: list[str] = [a.type for a in problem.spec.entry_point.args]
    slots: list[_ProbeSlot] = []
    ordered: list[JobTest] = []
    for i, (test, (name, args)) in enumerate(zip(job.tests, tests, strict=True)):
        ordered.append(test)
        for probe in problem.probes_for(name):
            try:
                export, export_args, program, values, value_kinds = probe_requests.requests(
                    probe, arg_names, kinds, args)
            except ValueError as exc:
                raise ProblemError(f"{problem.id}: {exc}") from None
            asked = JobTest(index=len(tests) + len(slots), args=export_args,
                            kinds=kinds, hidden=test.hidden, export=export)  # type: ignore[arg-type]
            ordered.append(asked)
            slots.append(_ProbeSlot(i, asked, probe, program, values, value_kinds))
    if slots:
        job = job.model_copy(update={"tests": ordered})
    outcome = sandbox.run(job)
    if outcome.status == "internal_error":
        # The harness never got as far as the submission (it did not start, or answered
        # as another version): the sandbox is broken, not the submission. No verdict.
        raise SandboxUnavailable(f"the {sandbox.name} sandbox failed: {outcome.message}")
    runs = {r.index: r for r in outcome.tests}
    outcome = outcome.model_copy(update={"tests": [r for r in outcome.tests
                                                   if r.index < len(tests)]})
    programs = []
    for position, slot in enumerate(slots):
        exported = runs.get(slot.export.index)
        if exported is not None and exported.status == "ok" and exported.exported is not None:
            # The outputs' paths are the export's: the values are checked by them, so a
            # layout out_specs gives a path is the one asked of the value checked there.
            request = slot.program.model_copy(update={
                "program": exported.exported.program,
                "out_paths": exported.exported.paths if slot.program.out_specs is not None
                else None})
            programs.append(JobTest(index=position, args=slot.values, kinds=slot.kinds,  # type: ignore[arg-type]
                                    hidden=slot.export.hidden, program=request))
    ran: dict[int, TestRun] = {}
    if programs:
        clean = Job(code="", entry_point="", tests=programs, limits=job.limits,
                    label=f"{label}-programs" if label else "programs", mode="programs")
        result = sandbox.run(clean)
        if result.status != "completed":
            # No submission code ran there: whatever went wrong is the judge's.
            raise SandboxUnavailable(f"the {sandbox.name} sandbox failed to run the "
                                     f"compiled programs: {result.status} {result.message}")
        ran = {r.index: r for r in result.tests}
    found: dict[int, list[ProbeRun]] = {}
    for position, slot in enumerate(slots):
        export_run = runs.get(slot.export.index) or TestRun(
            index=slot.export.index, status="not_run", message="not run")
        found.setdefault(slot.test, []).append(ProbeRun(slot.probe, export_run,
                                                        ran.get(position)))
    return outcome, found


def grade(problem: Problem, code: str, *, sandbox: Sandbox, settings: Settings,
          label: str = "", samples_only: bool = False) -> VerdictReport:
    """Grade ``code`` against every stored test of ``problem`` (only its sample tests
    when ``samples_only``: a student's sample run, worth no points)."""
    started = time.monotonic()
    tests = load_tests(problem)
    if samples_only:
        tests = [t for t in tests if t.visibility == "sample"]
    outcome, probe_runs = run_with_probes(
        problem, code, [(t.name, t.args) for t in tests], sandbox=sandbox, settings=settings,
        label=label, hidden=[t.visibility == "hidden" for t in tests])
    report = judge_outcome(problem.id, problem.version, tests, outcome, problem.checker, settings,
                           probe_runs)
    timings = report.timings.model_copy(update={"total_ms": (time.monotonic() - started) * 1000})
    return report.model_copy(update={"sandbox": sandbox.name, "timings": timings})


def internal_error(problem: Problem | str, message: str, settings: Settings) -> VerdictReport:
    """The report of a grading that could not be done (the service gave up on it, or the
    package is broken): every test ``internal_error``, ``message`` saying why. Never
    raises: when ``problem`` is only an id, or its tests cannot be loaded, the report lists
    no tests."""
    if isinstance(problem, Problem):
        try:
            return judge_outcome(problem.id, problem.version, load_tests(problem),
                                 RunOutcome(status="internal_error", message=message),
                                 problem.checker, settings)
        except ProblemError:
            problem = problem.id
    return VerdictReport(problem=problem, problem_version="", verdict=Verdict.INTERNAL_ERROR,
                         score=0.0, max_score=0.0, time_ms=0.0,
                         message=f"the judge failed: {message}", tests=[],
                         judge_version=__version__)
