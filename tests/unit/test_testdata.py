"""judge.testdata: stored tests are read back in the order they were declared, however
many there are, and the first failing test is the first one declared that fails."""

from __future__ import annotations

import shutil
from pathlib import Path

from judge.catalog import Catalog
from judge.checkers import get_checker
from judge.harness.codec import encode
from judge.judging import judge_outcome
from judge.problem import Problem
from judge.sandbox.protocol import RunOutcome, TestRun
from judge.settings import Settings
from judge.testdata import StoredTest, load_tests, read_manifest, write_tests
from judge.verdict import Verdict
from tests_support import FIXTURE_PROBLEMS

COUNT = 125  # past 99 and past 100: 100-x sorts before 11-y as text


def package(tmp_path: Path) -> Problem:
    shutil.copytree(FIXTURE_PROBLEMS / "demo" / "layout", tmp_path / "demo" / "layout")
    return Catalog(tmp_path).get("demo/layout")


def declared(count: int) -> list[StoredTest]:
    out = [StoredTest(name="sample", visibility="sample", points=0.0,
                      args={"x": encode(-1)}, expected=encode(-1))]
    out += [StoredTest(name=f"t{i}", visibility="hidden", points=1.0, args={"x": encode(i)},
                       expected=encode(i)) for i in range(count)]
    return out


def test_tests_come_back_in_declaration_order_past_a_hundred(tmp_path: Path) -> None:
    problem = package(tmp_path)
    written = declared(COUNT)
    write_tests(problem, written, {})
    names = sorted(p.name for p in (problem.data_dir / "hidden").iterdir())
    assert names[0] == "001-t0.json" and "125-t124.json" in names
    assert [t.name for t in load_tests(problem)] == [t.name for t in written]


def test_the_first_failing_test_is_the_first_declared_that_fails(tmp_path: Path) -> None:
    problem = package(tmp_path)
    write_tests(problem, declared(COUNT), {})
    stored = load_tests(problem)
    # Tests t10 (the 11th hidden test) and t99 (the 100th) fail: t10 decides the verdict.
    runs = [TestRun(index=i, status="ok", value=t.expected if t.name not in ("t10", "t99")
                    else encode(-7))
            for i, t in enumerate(stored)]
    report = judge_outcome(problem.id, problem.version, stored,
                           RunOutcome(status="completed", tests=runs), get_checker("exact"),
                           Settings())
    failed = [t.name for t in report.tests if t.verdict is not Verdict.ACCEPTED]
    assert failed == ["t10", "t99"]
    assert report.verdict is Verdict.WRONG_ANSWER


def test_two_digit_packages_keep_their_names_and_hash(tmp_path: Path) -> None:
    # Packages built before (fewer than 100 tests) are unchanged: same names, same hash.
    problem = package(tmp_path)
    before = (problem.data_dir / "manifest.json").read_text()
    write_tests(problem, load_tests(problem), read_manifest(problem).built_with)
    assert (problem.data_dir / "manifest.json").read_text() == before
