"""Problem packages on disk (judge/problem.py): a ``problem.yaml`` nested 50,000 deep
(about 100 KB) killed the process that composed it, SIGSEGV in libyaml's composer
(issue 20); it is a broken package like any other, said in one line. The loads that
could crash run in a child process, so that a crash fails the test instead of ending
the run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from nesting_support import DEEP, nested_list

from judge.errors import ProblemError
from judge.problem import Problem
from judge.settings import REPO_ROOT
from tests_support import FIXTURE_PROBLEMS


def deep_package(root: Path) -> Path:
    """A copy of demo/layout whose title is a list 50,000 deep (about 100 KB)."""
    package = root / "deep" / "layout"
    package.mkdir(parents=True)
    for name in ("problem.yaml", "statement.md"):
        (package / name).write_bytes((FIXTURE_PROBLEMS / "demo" / "layout" / name).read_bytes())
    text = (package / "problem.yaml").read_text()
    (package / "problem.yaml").write_text(
        "\n".join(f"title: {nested_list()}" if line.startswith("title:") else line
                  for line in text.splitlines()) + "\n")
    return package


LOAD = """
import sys
from pathlib import Path
from judge.errors import ProblemError
from judge.problem import Problem
try:
    Problem.load("deep/layout", Path(sys.argv[1]))
except ProblemError as exc:
    print(exc)
"""


def test_a_problem_yaml_50000_deep_is_a_problem_error_not_a_crash(tmp_path: Path) -> None:
    package = deep_package(tmp_path)
    assert (package / "problem.yaml").stat().st_size > 2 * DEEP
    done = subprocess.run([sys.executable, "-c", LOAD, str(package)], capture_output=True,
                          text=True, timeout=120, cwd=REPO_ROOT,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.startswith("deep/layout: problem.yaml is nested more than 200 levels "
                                  "deep (at line "), done.stdout
    with pytest.raises(ProblemError, match="nested more than 200 levels deep"):
        Problem.load("deep/layout", package)  # and so in this process too


def test_the_cli_says_a_deep_problem_yaml_is_broken_in_one_line(tmp_path: Path) -> None:
    deep_package(tmp_path)
    env = {**os.environ, "JAXJUDGE_PROBLEMS_DIR": str(tmp_path), "PYTHONPATH": str(REPO_ROOT)}
    jaxjudge = Path(sys.executable).with_name("jaxjudge")
    for args in (["show", "deep/layout"], ["problems"]):
        done = subprocess.run([str(jaxjudge), *args], capture_output=True, text=True,
                              timeout=120, env=env, cwd=tmp_path)
        assert done.returncode == 1, (args, done.returncode, done.stderr[-2000:])
        assert done.stderr.startswith("jaxjudge: error: deep/layout: problem.yaml is nested "
                                      "more than 200 levels deep"), done.stderr
        assert done.stderr.count("\n") == 1
