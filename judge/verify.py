"""``jaxjudge verify``: a package proves itself.

For each problem: the stored data matches its hash; regenerating the inputs from
problem.yaml gives exactly the stored inputs; the reference solution is ``accepted``; and
every example under ``submissions/<verdict>/`` gets the verdict its folder names.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from judge.errors import ProblemError
from judge.generate import generate
from judge.grading import grade
from judge.problem import VERDICT_DIRS, Problem
from judge.report import VerdictReport
from judge.sandbox.base import Sandbox
from judge.settings import Settings
from judge.testdata import StoredTest, check_hash, load_tests, write_tests
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


def explain(report: VerdictReport | None, ok: bool) -> str:
    """For the author (the package is theirs: hidden tests included): why a check did not
    get what it should (the report's own message, else the first test that was not
    accepted, its verdict and message), or the slowest test when it did. ``jaxjudge
    verify`` prints it under a failed check; the service's build records it with each."""
    if report is None:
        return ""
    if ok:
        slowest = max(report.tests, key=lambda t: t.time_ms, default=None)
        return f"slowest test {slowest.name!r}: {slowest.time_ms:.0f} ms" if slowest else ""
    if report.message:
        return report.message
    wrong = next((t for t in report.tests if t.verdict != Verdict.ACCEPTED), None)
    if wrong is not None:
        return f"test {wrong.name!r} ({wrong.visibility}): {wrong.verdict.value}: {wrong.message}"
    return f"every test {Verdict.ACCEPTED.value}"


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
           ) -> Generator[Check, None, None]:
    """The checks of one package, in a fixed order; gradings run ``jobs`` at a time."""
    with ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
        yield from started(problem, sandbox=sandbox, settings=settings, pool=pool)


def started(problem: Problem, *, sandbox: Sandbox, settings: Settings, pool: Executor
            ) -> Iterator[Check]:
    """:func:`verify`'s checks, the gradings handed to ``pool`` now (the data's checks
    done now too), their checks given in order as they are iterated: so that ``jaxjudge
    verify`` hands the next package's gradings over while it waits for this one's, and no
    core waits at the end of each package. Closing the iterator cancels the gradings not
    started; an error of the package's own is raised where :func:`verify` raises it."""
    early: list[Check] = []
    futures: list[tuple[str, str, Future[VerdictReport]]] = []
    error: Exception | None = None
    try:
        check_hash(problem)
    except ProblemError as exc:
        early.append(Check(problem.id, "data", "hash matches", str(exc)))
        return iter(early)
    except Exception as exc:  # noqa: BLE001 - raised in its place, as below
        return _in_order(problem, early, futures, exc)
    early.append(Check(problem.id, "data", "hash matches", "hash matches"))
    try:
        stored = [(t.name, t.visibility, t.args) for t in load_tests(problem)]
        fresh = [(t.name, t.visibility, t.args) for t in generate(problem)]
        early.append(Check(problem.id, "inputs", "reproducible", "reproducible"
                           if stored == fresh else "differ from problem.yaml: rebuild"))
        subjects = [(problem.spec.reference, Verdict.ACCEPTED.value), *examples(problem)]
        futures = [(rel, verdict, pool.submit(_grade_file, problem, rel, sandbox=sandbox,
                                              settings=settings))
                   for rel, verdict in subjects]
    except Exception as exc:  # noqa: BLE001 - raised in its place, below
        error = exc
    return _in_order(problem, early, futures, error)


def _in_order(problem: Problem, early: list[Check],
              futures: list[tuple[str, str, Future[VerdictReport]]],
              error: Exception | None) -> Generator[Check, None, None]:
    try:
        yield from early
        if error is not None:
            raise error
        for rel, verdict, future in futures:
            report = future.result()
            yield Check(problem.id, rel, verdict, report.verdict.value, report)
    finally:
        for _, _, future in futures:
            future.cancel()


def _grade_file(problem: Problem, rel: str, *, sandbox: Sandbox, settings: Settings
                ) -> VerdictReport:
    """Grade one of the package's own files (the reference, an example) as a submission."""
    code = (problem.path / rel).read_text(encoding="utf-8")
    return grade(problem, code, sandbox=sandbox, settings=settings)


def _graded(problem: Problem, subjects: list[tuple[str, str]], *, sandbox: Sandbox,
            settings: Settings, jobs: int) -> Generator[Check, None, None]:
    """A check of each (file, verdict it should get), in order; gradings run ``jobs`` at
    a time, and closing the generator cancels those not started."""
    run = partial(_grade_file, problem, sandbox=sandbox, settings=settings)
    with ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
        reports = pool.map(run, [rel for rel, _ in subjects])
        for (rel, verdict), report in zip(subjects, reports, strict=True):
            yield Check(problem.id, rel, verdict, report.verdict.value, report)


def _failing(report: VerdictReport, names: set[str]) -> frozenset[str]:
    """Which of ``names`` a report did not accept (one it has no line for, because the
    grading stopped before it, was not passed)."""
    return frozenset(names - {t.name for t in report.tests if t.verdict == Verdict.ACCEPTED})


def _only_probes_catch(report: VerdictReport) -> bool:
    """Whether every test a report did not accept was failed by a probe, its returned
    value having passed: the right numbers, computed the wrong way."""
    failed = [t for t in report.tests if t.verdict != Verdict.ACCEPTED]
    return bool(failed) and all(t.probe is not None for t in failed)


def check_examples(problem: Problem, passed: list[StoredTest], *, sandbox: Sandbox,
                   settings: Settings, jobs: int = 1) -> list[Check]:
    """After a build in which the reference failed some tests: every example's verdict on
    the tests it passed (``BuildFailed.passed``), so that one build shows the author all
    there is to fix. Graded in a copy of the package holding those tests' data only; the
    package itself is not touched. A verdict here is on fewer tests than the package
    declares: an example whose mistake only a failed test shows is not caught."""
    if not passed:
        return []
    with tempfile.TemporaryDirectory(prefix="jaxjudge-check-") as tmp:
        root = Path(tmp) / problem.path.name
        shutil.copytree(problem.path, root, ignore=shutil.ignore_patterns("data", "data.new"))
        copy = Problem.load(problem.id, root, version=problem.version)
        write_tests(copy, passed, {"partial": f"{len(passed)} tests the reference passed"})
        return list(_graded(copy, examples(copy), sandbox=sandbox, settings=settings,
                            jobs=jobs))


# How many more times a reference that looks slow is graded before it is called slow.
REMEASURES = 2


def regrade_reference(problem: Problem, *, sandbox: Sandbox, settings: Settings
                      ) -> Callable[[], VerdictReport]:
    """Grades the reference once more when called: for :func:`weaknesses` to measure
    it again."""
    return partial(_grade_file, problem, problem.spec.reference, sandbox=sandbox,
                   settings=settings)


def weaknesses(problem: Problem, checks: list[Check],
               regrade: Callable[[], VerdictReport] | None = None) -> list[str]:
    """What a package that passes its checks still lacks, from those checks' reports:
    no wrong answer to show that the hidden tests catch a mistake (or only one, or several
    that fail exactly the same tests), no runtime-error example, no accepted example
    other than the reference, hidden tests that every wrong answer passes, probes that no
    wrong answer shows at work (one that returns the right values and fails only on
    probes: the right numbers computed the wrong way), and a
    reference that uses more than a tenth of the time limit in CPU time (a correct but
    slower submission would time out). Empty for a package with nothing to add.

    CPU time is a noisy measure: XLA's thread pools spin longer on a loaded machine, so
    one grading of a reference near the bar may cross it and the next not. With
    ``regrade`` (see :func:`regrade_reference`), a reference that looks slow is graded up
    to :data:`REMEASURES` more times and each test keeps its lowest CPU time, as
    ``timeit`` keeps the best of its runs: interference only ever adds time."""
    found: list[str] = []
    by_subject = {c.subject: c for c in checks}
    filed = examples(problem)
    wrong = [by_subject.get(rel) for rel, verdict in filed if verdict == Verdict.WRONG_ANSWER.value]
    if not wrong:
        found.append("no wrong_answer example: nothing shows that the hidden tests catch "
                     "a mistake")
    reference_text = problem.reference_path.read_text(encoding="utf-8")
    if not any(verdict == Verdict.ACCEPTED.value
               and (problem.path / rel).read_text(encoding="utf-8") != reference_text
               for rel, verdict in filed):
        found.append("no accepted example other than the reference")
    if not any(verdict == Verdict.RUNTIME_ERROR.value for _, verdict in filed):
        found.append("no runtime_error example: nothing shows that the likeliest crash gets "
                     "its verdict and a message a student can act on")
    reports = [c.report for c in wrong if c is not None and c.report is not None]
    if reports and len(reports) == len(wrong):
        names = {t.name for r in reports for t in r.tests}
        if len(reports) == 1:
            found.append("one wrong_answer example: add a second mistake, one that other "
                         "tests catch")
        elif len({_failing(r, names) for r in reports}) == 1:
            found.append(f"all {len(reports)} wrong answers fail exactly the same tests: no "
                         "test tells one mistake from another")
        hidden = [t.name for t in reports[0].tests if t.visibility == "hidden"]
        caught = set().union(*(_failing(r, set(hidden)) for r in reports))
        weak = [name for name in hidden if name not in caught]
        if weak:
            found.append(f"{len(weak)} of {len(hidden)} hidden tests are passed by every "
                         f"wrong answer: {', '.join(weak)}")
        if problem.spec.probes and not any(_only_probes_catch(r) for r in reports):
            found.append("no wrong answer that only a probe catches: nothing shows that the "
                         "probes refuse the right numbers computed the wrong way")
    reference = by_subject.get(problem.spec.reference)
    if reference is not None and reference.report is not None and reference.report.tests:
        # CPU time, as the limit: what the rest of the machine does does not change it.
        limit_ms = problem.spec.limits.test_seconds * 1000
        cpu_ms = {t.name: t.cpu_ms for t in reference.report.tests}
        for _ in range(REMEASURES if regrade is not None else 0):
            if max(cpu_ms.values()) <= limit_ms / 10:
                break
            assert regrade is not None
            again = regrade()
            if again.verdict != Verdict.ACCEPTED:
                break  # the first grading was accepted: keep what it measured
            for test in again.tests:
                if test.name in cpu_ms:
                    cpu_ms[test.name] = min(cpu_ms[test.name], test.cpu_ms)
        slowest_name = max(cpu_ms, key=lambda name: cpu_ms[name])
        slowest_ms = cpu_ms[slowest_name]
        if slowest_ms > limit_ms / 10:
            found.append(f"the reference takes {slowest_ms / 1000:.2f} s of CPU time on "
                         f"test {slowest_name!r}, more than a tenth of the "
                         f"{problem.spec.limits.test_seconds:g} s limit: a correct but "
                         "slower submission may time out")
    return found
