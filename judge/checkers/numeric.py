"""Shared numeric policy: read both sides as arrays and compare shapes and dtype kinds."""

from __future__ import annotations

from typing import Any

import numpy as np

from judge.checkers import reasons
from judge.checkers.base import CheckResult
from judge.values import NotNumeric, to_numeric

KIND_NAMES = {"b": "bool", "i": "int", "u": "int", "f": "float", "c": "complex"}


def as_arrays(expected: Any, received: Any) -> tuple[np.ndarray, np.ndarray] | CheckResult:
    """Both values as arrays of one shape and compatible kinds, or the failure to report.

    Kinds: bool matches only bool; int and float match each other; complex needs complex
    on the expected side. Shapes must be equal (no broadcasting): a (2,) answer for a (1, 2)
    expected value is wrong.
    """
    exp = to_numeric(expected)  # the reference's own output: failing here is a problem bug
    try:
        got = to_numeric(received)
    except NotNumeric as exc:
        return CheckResult.fail(reasons.NOT_NUMERIC, f"the result is not a numeric array: it is {exc}")
    if got.shape != exp.shape:
        return CheckResult.fail(reasons.SHAPE,
                                f"the result has shape {got.shape}, expected shape {exp.shape}")
    ek, gk = exp.dtype.kind, got.dtype.kind
    if (ek == "b") != (gk == "b") or (gk == "c" and ek != "c"):
        return CheckResult.fail(
            reasons.KIND,
            f"the result holds {KIND_NAMES.get(gk, gk)} values, expected {KIND_NAMES.get(ek, ek)}",
        )
    return exp, got


def mismatch(exp: np.ndarray, bad: np.ndarray, got: np.ndarray) -> CheckResult:
    count = int(bad.sum())
    first = tuple(int(i) for i in np.argwhere(bad)[0]) if exp.ndim else ()
    where = f" (first at index {first})" if exp.ndim else ""
    detail = (
        f"{count} of {exp.size} values differ{where}: expected {exp[first] if exp.ndim else exp}, "
        f"got {got[first] if exp.ndim else got}"
    )
    return CheckResult.fail(reasons.VALUES, detail)
