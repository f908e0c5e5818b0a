"""Test inputs from ``problem.yaml``: seeded, reproducible, by test name.

Each argument value in a test is either a literal or a one-key generator:

``{normal: [N, D]}`` or ``{normal: {shape: [N, D], scale: 2.0, dtype: float32}}``
    an array of normal samples;
``{uniform: {shape: [N, D], low: -1, high: 1, dtype: float32}}``
    an array of uniform samples;
``{randint: [low, high]}``
    an int in ``[low, high]`` (both ends included);
``{choice: [a, b, c]}``
    one of the listed values.

The generator for a test is seeded with ``(tests.seed, crc32(test name))``: adding,
removing or reordering tests leaves every other test's inputs unchanged. ``tests.generator``
may name a Python file whose ``generate(rng)`` returns more hidden tests as
``{"name", "args", "points"?}`` dicts (author code, run on the trusted side at build time).
"""

from __future__ import annotations

import importlib.util
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from judge.errors import ProblemError
from judge.harness import codec
from judge.problem import Arg, Problem, TestSpec
from judge.testdata import Visibility


@dataclass(frozen=True)
class GeneratedTest:
    name: str
    visibility: Visibility
    points: float
    args: dict[str, dict[str, Any]]  # encoded, by argument name


def _rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(name.encode())]))


def _array_params(spec: Any) -> dict[str, Any]:
    return {"shape": spec} if isinstance(spec, list) else dict(spec)


def _value(spec: Any, rng: np.random.Generator) -> Any:
    if not isinstance(spec, dict):
        return spec
    if len(spec) != 1:
        raise ValueError(f"a generator is a one-key mapping, got keys {sorted(spec)}")
    (kind, params), = spec.items()
    if kind == "normal":
        p = _array_params(params)
        data = rng.standard_normal(p["shape"]) * p.get("scale", 1.0)
        return data.astype(p.get("dtype", "float32"))
    if kind == "uniform":
        p = _array_params(params)
        data = rng.uniform(p.get("low", 0.0), p.get("high", 1.0), p["shape"])
        return data.astype(p.get("dtype", "float32"))
    if kind == "randint":
        low, high = params
        return int(rng.integers(low, high, endpoint=True))
    if kind == "choice":
        return params[int(rng.integers(len(params)))]
    if kind == "tree":
        # A dict of values and generators (a parameter tree: {hidden: {kernel: {normal:
        # [8, 16]}, bias: {normal: [16]}}}), generated key by key in the order written.
        if not isinstance(params, dict) or not params:
            raise ValueError("a tree is a mapping of names to values or generators")
        return {str(k): _value(v, rng) if not _is_tree(v) else _value({"tree": v}, rng)
                for k, v in params.items()}
    raise ValueError(f"unknown generator {kind!r}")


GENERATORS = ("normal", "uniform", "randint", "choice", "tree")


def _is_tree(value: Any) -> bool:
    """A mapping inside a tree that is not itself a one-key generator: a subtree."""
    return isinstance(value, dict) and not (len(value) == 1 and next(iter(value)) in GENERATORS)


def _typed(value: Any, arg: Arg) -> Any:
    if arg.type == "float":
        return float(value)
    if arg.type == "int":
        return int(value)
    if arg.type in ("array", "numpy") and not isinstance(value, np.ndarray):
        return np.asarray(value, dtype=np.float32)
    return value


def _encode_args(problem: Problem, name: str, raw: dict[str, Any], rng: np.random.Generator
                 ) -> dict[str, dict[str, Any]]:
    out = {}
    for arg in problem.spec.entry_point.args:
        if arg.name not in raw:
            raise ProblemError(f"{problem.id}: test {name!r} lacks argument {arg.name!r}")
        try:
            value = _typed(_value(raw[arg.name], rng), arg)
        except (ValueError, TypeError, KeyError) as exc:
            raise ProblemError(f"{problem.id}: test {name!r}, argument {arg.name!r}: {exc}"
                               ) from None
        out[arg.name] = codec.encode(value, max_bytes=64 << 20)
    return out


def generate(problem: Problem) -> list[GeneratedTest]:
    """Every test's inputs, samples first, in declaration order."""
    spec = problem.spec.tests
    per_test = problem.spec.scoring.points_per_test
    out: list[GeneratedTest] = []

    def add(test: TestSpec, visibility: Visibility) -> None:
        rng = _rng(spec.seed, test.name)
        points = 0.0 if visibility == "sample" else (
            test.points if test.points is not None else per_test)
        out.append(GeneratedTest(test.name, visibility, points,
                                 _encode_args(problem, test.name, test.args, rng)))

    for test in spec.sample:
        add(test, "sample")
    for test in spec.hidden:
        add(test, "hidden")
    if spec.generator:
        for extra in _run_generator(problem, spec.generator, spec.seed):
            add(extra, "hidden")
    names = [t.name for t in out]
    if len(set(names)) != len(names):
        raise ProblemError(f"{problem.id}: the generator repeats a test name")
    return out


def _run_generator(problem: Problem, filename: str, seed: int) -> list[TestSpec]:
    path = problem.path / filename
    module_spec = importlib.util.spec_from_file_location(f"_generator_{id(problem)}", path)
    if module_spec is None or module_spec.loader is None:
        raise ProblemError(f"{problem.id}: cannot load the generator {filename}")
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
        produced = module.generate(np.random.default_rng(seed))
        return [TestSpec.model_validate(t) for t in produced]
    except Exception as exc:
        raise ProblemError(f"{problem.id}: the generator {filename} failed: {exc}") from None
