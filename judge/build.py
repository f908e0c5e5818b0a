"""``jaxjudge build``: generate a package's inputs and record the reference's outputs.

The reference solution runs through the same harness and sandbox as any submission, so
the stored expected outputs are exactly what the harness encodes (shapes, dtypes,
shardings). Every test must come back ``ok``; otherwise nothing is written.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

from judge.errors import BuildFailed, ProblemError
from judge.generate import generate
from judge.grading import run_with_probes
from judge.harness import HARNESS_VERSION
from judge.judging import ProbeRun
from judge.probe_checks import check_facts, program_result
from judge.probes import StoredProbe, mesh_of
from judge.problem import Problem
from judge.sandbox.base import Sandbox
from judge.settings import Settings
from judge.testdata import Manifest, StoredTest, write_tests
from judge.values import ListValue


def build(problem: Problem, *, sandbox: Sandbox, settings: Settings) -> Manifest:
    try:
        code = problem.reference_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProblemError(f"{problem.id}: cannot read the reference solution: {exc}") from None
    inputs = generate(problem)
    outcome, probe_runs = run_with_probes(problem, code, [(t.name, t.args) for t in inputs],
                                          sandbox=sandbox, settings=settings)
    if outcome.status != "completed":
        detail = outcome.message or (outcome.error.message if outcome.error else "")
        raise ProblemError(f"{problem.id}: the reference solution failed ({outcome.status}): "
                           f"{detail}\n{outcome.harness_stderr[-2000:]}".rstrip())
    stored, failures = [], []
    for i, (test, run) in enumerate(zip(inputs, outcome.tests, strict=True)):
        if run.status != "ok" or run.value is None:
            why = f"{run.error.type}: {run.error.message}" if run.error else run.message
            failures.append(f"the reference solution got {run.status} on test "
                            f"{test.name!r}: {why}")
            continue
        probes, failed = _probes(problem, test.name, test.args, probe_runs.get(i, []))
        failures += failed
        if failed:
            continue
        stored.append(StoredTest(name=test.name, visibility=test.visibility,
                                 points=test.points, args=test.args, expected=run.value,
                                 probes=probes))
    if failures:
        # Every failure at once, so that one build shows the author all there is to fix.
        raise BuildFailed(problem.id, failures, passed=stored)
    return write_tests(problem, stored, {
        "harness": HARNESS_VERSION, "jax": version("jax"), "flax": version("flax"),
    })


def _probes(problem: Problem, test: str, args: dict[str, Any], runs: list[ProbeRun]
            ) -> tuple[dict[str, StoredProbe], list[str]]:
    """The reference's program's results for each probe on one test, and what failed:
    every probe must trace, compile and run, and the reference's own program meet the
    probe's bounds (an absolute one, or one below its own figure), or nothing is
    written."""
    stored, failures = {}, []
    for run in runs:
        export, program = run.export, run.program
        where = f"probe {run.probe.name!r} on test {test!r}"
        if export.status != "ok" or export.exported is None:
            why = (f"{export.error.type}: {export.error.message}" if export.error
                   else export.message)
            failures.append(f"{where}: the reference could not be traced "
                            f"({export.status}): {why}")
            continue
        if program is None or program.status != "ok" or not isinstance(program.value,
                                                                         ListValue):
            why = "" if program is None else (program.error.message if program.error
                                               else program.message)
            status = "not run" if program is None else program.status
            failures.append(f"{where}: the reference's program failed ({status}): {why}")
            continue
        value = program_result(run.probe, export.exported.paths, program.value.items)
        own = StoredProbe(
            expected=value if run.probe.values else None,
            memory=program.facts.memory if program.facts is not None else None,
            flops=program.facts.flops if program.facts is not None else None)
        if program.facts is not None:
            bounds = check_facts(run.probe, program.facts, mesh_of(run.probe, args), own)
            if not bounds.passed:
                failures.append(f"{where}: the reference's own program does not meet the "
                                f"probe's bounds: {bounds.detail}")
                continue
        stored[run.probe.name] = own
    return stored, failures
