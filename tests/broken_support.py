"""A copy of the fixture problems that a test breaks (issue 20, item 3): the API, the
pages, LTI and the worker read the copy, as a deployment's processes read one disk.
Import the fixtures ``problems`` and ``judge_settings`` into a test module to use it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from judge.settings import Settings
from tests_support import FIXTURE_PROBLEMS


@pytest.fixture
def problems(tmp_path: Path) -> Path:
    copy = tmp_path / "problems"
    shutil.copytree(FIXTURE_PROBLEMS, copy)
    return copy


@pytest.fixture
def judge_settings(problems: Path) -> Settings:
    return Settings(problems_dir=problems, sandbox="docker", pool_size=1)


def smash(problems: Path, problem: str = "demo/layout") -> None:
    """Make the problem's problem.yaml fail to parse."""
    (problems / problem / "problem.yaml").write_text("title: [unclosed\n")
