"""``jaxjudge verify``: a package proves itself.

For each problem: the stored data matches its hash; regenerating the inputs from
problem.yaml gives exactly the stored inputs; the reference solution is ``accepted``; and
every example under ``submissions/<verdict>/`` gets the verdict its folder names.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from judge.errors import ProblemError
from judge.generate import generate
from judge.grading import grade
from judge.problem import VERDICT_DIRS, Problem
from judge.report import VerdictReport
from judge.sandbox.base import Sandbox
from judge.settings import Settings
from judge.testdata import check_hash, load_tests
from judge.verdict import Verdict


@dataclass(frozen=True)
class Check:
    problem: str
    subject: str  # "data", "inputs", "reference.py", "submissions/wrong_answer/x.py"
    expected: str
    got: str
    report: VerdictReport | None = None

    @property
    def ok(self) -> bool:
        return self.expected == self.got


def examples(problem: Problem) -> list[tuple[str, str]]:
    """(relative path, verdict) of every example submission, sorted."""
    out = []
    root = problem.submissions_dir
    if root.is_dir():
        for folder in sorted(p for p in root.iterdir() if p.is_dir()):
            if folder.name not in VERDICT_DIRS:
                raise ProblemError(f"{problem.id}: submissions/{folder.name} is not a verdict; "
                                   f"use one of {', '.join(VERDICT_DIRS)}")
            out += [(f.relative_to(problem.path).as_posix(), folder.name)
                    for f in sorted(folder.glob("*.py"))]
    return out


def verify(problem: Problem, *, sandbox: Sandbox, settings: Settings, jobs: int = 1
           ) -> Iterator[Check]:
    """The checks of one package, in a fixed order; gradings run ``jobs`` at a time."""
    try:
        check_hash(problem)
    except ProblemError as exc:
        yield Check(problem.id, "data", "hash matches", str(exc))
        return
    yield Check(problem.id, "data", "hash matches", "hash matches")
    stored = [(t.name, t.visibility, t.args) for t in load_tests(problem)]
    fresh = [(t.name, t.visibility, t.args) for t in generate(problem)]
    yield Check(problem.id, "inputs", "reproducible",
                "reproducible" if stored == fresh else "differ from problem.yaml: rebuild")
    subjects = [(problem.spec.reference, Verdict.ACCEPTED.value), *examples(problem)]

    def run(rel: str) -> VerdictReport:
        code = (problem.path / rel).read_text(encoding="utf-8")
        return grade(problem, code, sandbox=sandbox, settings=settings)

    with ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
        reports = pool.map(run, [rel for rel, _ in subjects])
        for (rel, verdict), report in zip(subjects, reports, strict=True):
            yield Check(problem.id, rel, verdict, report.verdict.value, report)
