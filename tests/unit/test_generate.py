"""Generated inputs (judge/generate.py): the tree generator of parameter dicts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from judge.errors import ProblemError
from judge.generate import generate
from judge.harness.inputs import decode_input
from judge.problem import Problem

TREE = {"tree": {"hidden": {"kernel": {"normal": [8, 16]}, "bias": {"normal": {
    "shape": [16], "scale": 0.0}}}, "out": {"kernel": {"uniform": {"shape": [16, 2]}},
                                             "bias": [1.0, 2.0]}, "steps": {"randint": [1, 3]}}}


def problem(tmp_path: Path, params: object) -> Problem:
    folder = tmp_path / "set" / "tree"
    folder.mkdir(parents=True, exist_ok=True)
    spec = {"title": "t", "entry_point": {"name": "f", "args": [{"name": "params", "type": "any"}]},
            "tests": {"seed": 3, "sample": [{"name": "s", "args": {"params": params}}],
                      "hidden": [{"name": "h", "args": {"params": params}}]}}
    (folder / "problem.yaml").write_text(yaml.safe_dump(spec))
    (folder / "statement.md").write_text("t")
    return Problem.load("set/tree", folder)


def test_a_tree_is_a_nested_dict_of_generated_values(tmp_path: Path) -> None:
    sample, hidden = generate(problem(tmp_path, TREE))
    params = decode_input(sample.args["params"])
    assert list(params) == ["hidden", "out", "steps"]
    assert params["hidden"]["kernel"].shape == (8, 16)
    assert params["hidden"]["kernel"].dtype == np.float32
    assert not params["hidden"]["bias"].any()
    assert params["out"]["bias"] == [1.0, 2.0] and 1 <= params["steps"] <= 3
    again = decode_input(generate(problem(tmp_path, TREE))[0].args["params"])
    assert np.array_equal(again["hidden"]["kernel"], params["hidden"]["kernel"])
    other = decode_input(hidden.args["params"])  # each test its own draw
    assert not np.array_equal(other["hidden"]["kernel"], params["hidden"]["kernel"])


@pytest.mark.parametrize("bad", [{"tree": []}, {"tree": {}}, {"tree": {"a": {"normal": "x"}}}])
def test_a_bad_tree_is_a_problem_error(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ProblemError, match="params"):
        generate(problem(tmp_path, bad))
