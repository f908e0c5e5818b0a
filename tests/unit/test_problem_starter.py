"""problem.yaml's optional ``starter``: the code a student starts from."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from judge.errors import ProblemError
from judge.problem import Problem
from judge.settings import REPO_ROOT
from tests_support import FIXTURE_PROBLEMS


def package(tmp_path: Path, starter: str | None, text: str | None = None) -> Path:
    root = tmp_path / "demo" / "layout"
    shutil.copytree(FIXTURE_PROBLEMS / "demo" / "layout", root)
    if starter is not None:
        yaml = root / "problem.yaml"
        yaml.write_text(yaml.read_text() + f"starter: {starter}\n")
    if text is not None:
        (root / "starter.py").write_text(text)
    return root


def test_without_a_starter_the_signature_is_the_starting_point(tmp_path: Path) -> None:
    problem = Problem.load("demo/layout", package(tmp_path, None))
    assert problem.starter == problem.spec.entry_point.signature + "\n    ...\n"


def test_a_starter_file_is_what_the_student_starts_from(tmp_path: Path) -> None:
    problem = Problem.load("demo/layout", package(tmp_path, "starter.py", "# begin here\n"))
    assert problem.starter == "# begin here\n"


@pytest.mark.parametrize("name, text, message", [
    ("starter.py", None, "cannot read the starter"),
    ("../outside.py", "x = 1\n", "starter"),
    ("starter.py", "x = 1\n" * 20_000, "larger than"),
    ("reference.py", None, "the starter is the reference"),
])
def test_a_bad_starter_fails_at_load(tmp_path: Path, name: str, text: str | None,
                                     message: str) -> None:
    with pytest.raises(ProblemError, match=message):
        Problem.load("demo/layout", package(tmp_path, name, text))


def test_the_tensor_parallel_mlp_starter_is_a_skeleton() -> None:
    root = REPO_ROOT / "problemsets/jax-sharding/tensor-parallel-mlp"
    problem = Problem.load("jax-sharding/tensor-parallel-mlp", root)
    assert "def tensor_parallel_mlp(x, w1, b1, w2, b2, mesh_shape):" in problem.starter
    assert "TODO" in problem.starter and "psum" not in problem.starter
    compile(problem.starter, "starter.py", "exec")
