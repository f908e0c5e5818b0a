"""``exact``: every value equal.

Policy:

- Numbers and arrays are read as NumPy arrays on both sides (lists and tuples included).
  Shapes must be equal; bool only matches bool, int and float compare by value (``4 ==
  4.0``, in float64, so ints beyond 2**53 compare approximately against floats) unless
  ``strict_dtype`` asks for the very same dtype (bfloat16 counts as its own dtype).
- NaN equals NaN at the same position (``nan_equal``, on by default); ``inf`` only equals
  ``inf`` of the same sign.
- Anything that is not numeric on the expected side (a PartitionSpec, a string, a tree of
  specs) is compared as data: same structure, same keys, equal leaves, with PartitionSpecs
  normalised first (``P('a', None) == P('a')``, ``P(('a',)) == P('a')``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from judge.checkers import reasons
from judge.checkers.base import Checker, CheckerParams, CheckResult
from judge.checkers.numeric import as_arrays, mismatch
from judge.checkers.structure import compare_structure
from judge.values import ArrayValue, NotNumeric, to_numeric


def _dtype(value: Any, array: np.ndarray) -> str:
    """The dtype the submission produced: bfloat16 travels as float32 but is bfloat16."""
    if isinstance(value, ArrayValue) and value.orig_dtype:
        return value.orig_dtype
    return array.dtype.name


class ExactParams(CheckerParams):
    strict_dtype: bool = False
    nan_equal: bool = True


class ExactChecker(Checker):
    name = "exact"
    Params = ExactParams
    params: ExactParams

    def check(self, expected: Any, received: Any) -> CheckResult:
        try:
            to_numeric(expected)
        except NotNumeric:
            return compare_structure(expected, received, self._leaf)
        return self._leaf(expected, received, "")

    def _leaf(self, expected: Any, received: Any, path: str) -> CheckResult:
        arrays = as_arrays(expected, received)
        if isinstance(arrays, CheckResult):
            return arrays
        exp, got = arrays
        exp_dtype, got_dtype = _dtype(expected, exp), _dtype(received, got)
        if self.params.strict_dtype and exp_dtype != got_dtype:
            return CheckResult.fail(reasons.DTYPE,
                                    f"the result has dtype {got_dtype}, expected {exp_dtype}")
        with np.errstate(invalid="ignore"):
            equal = exp == got
        if self.params.nan_equal and exp.dtype.kind in "fc" and got.dtype.kind in "fc":
            equal |= np.isnan(exp) & np.isnan(got)
        if bool(np.all(equal)):
            return CheckResult.ok()
        return mismatch(exp, ~np.asarray(equal), got)
