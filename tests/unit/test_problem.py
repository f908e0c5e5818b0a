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


def test_a_problem_may_lower_the_result_cap_and_never_raise_it(tmp_path: Path) -> None:
    import shutil

    from judge.grading import grade
    from judge.sandbox import get_sandbox
    from judge.settings import Settings
    from judge.verdict import Verdict

    root = tmp_path / "demo" / "layout"
    shutil.copytree(FIXTURE_PROBLEMS / "demo" / "layout", root)
    yaml_path = root / "problem.yaml"
    text = yaml_path.read_text()
    assert "limits:" in text
    settings = Settings(problems_dir=tmp_path, result_bytes=64 * 1024)
    assert Problem.load("demo/layout", root).limits(settings).result_bytes == 64 * 1024

    yaml_path.write_text(text.replace("limits: {", "limits: {result_kb: 1, ", 1))
    small = Problem.load("demo/layout", root)
    assert small.limits(settings).result_bytes == 1024
    # A return value over the problem's own cap is the submission's fault: a verdict.
    box = get_sandbox("process", settings)
    try:
        report = grade(small, "import numpy as np\n\ndef layout(n, i, o):\n"
                       "    return np.zeros(4096, np.float32)\n", sandbox=box,
                       settings=settings)
    finally:
        box.close()
    assert report.verdict is Verdict.OUTPUT_LIMIT_EXCEEDED, report.tests[0].message

    yaml_path.write_text(text.replace("limits: {", "limits: {result_kb: 65, ", 1))
    with pytest.raises(ProblemError, match="limits.result_kb is 65; this judge allows at "
                                           r"most 64 \(JAXJUDGE_RESULT_BYTES\)"):
        Problem.load("demo/layout", root).limits(settings)
