"""``jaxjudge build``: generate a package's inputs and record the reference's outputs.

The reference solution runs through the same harness and sandbox as any submission, so
the stored expected outputs are exactly what the harness encodes (shapes, dtypes,
shardings). Every test must come back ``ok``; otherwise nothing is written.
"""

from __future__ import annotations

from importlib.metadata import version

from judge.errors import ProblemError
from judge.generate import generate
from judge.grading import make_job
from judge.harness import HARNESS_VERSION
from judge.problem import Problem
from judge.sandbox.base import Sandbox
from judge.settings import Settings
from judge.testdata import Manifest, StoredTest, write_tests


def build(problem: Problem, *, sandbox: Sandbox, settings: Settings) -> Manifest:
    try:
        code = problem.reference_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProblemError(f"{problem.id}: cannot read the reference solution: {exc}") from None
    inputs = generate(problem)
    outcome = sandbox.run(make_job(problem, code, [t.args for t in inputs], settings))
    if outcome.status != "completed":
        detail = outcome.message or (outcome.error.message if outcome.error else "")
        raise ProblemError(f"{problem.id}: the reference solution failed ({outcome.status}): "
                           f"{detail}\n{outcome.harness_stderr[-2000:]}".rstrip())
    stored = []
    for test, run in zip(inputs, outcome.tests, strict=True):
        if run.status != "ok" or run.value is None:
            why = run.error.message if run.error else run.message
            raise ProblemError(
                f"{problem.id}: the reference solution got {run.status} on test "
                f"{test.name!r}: {why}"
            )
        stored.append(StoredTest(name=test.name, visibility=test.visibility,
                                 points=test.points, args=test.args, expected=run.value))
    return write_tests(problem, stored, {
        "harness": HARNESS_VERSION, "jax": version("jax"), "flax": version("flax"),
    })
