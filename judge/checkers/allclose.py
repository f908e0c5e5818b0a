"""``allclose``: values equal within tolerance, ``|got - exp| <= atol + rtol * |exp|``.

Policy:

- Both sides are read as NumPy arrays (lists and tuples included). Shapes must be equal,
  with no broadcasting.
- dtype: any int or float matches any int or float (compared in float64 or complex128);
  bool only matches bool; complex results need a complex expected value.
- NaN: a NaN matches a NaN at the same position when ``equal_nan`` (the default), and
  nothing else. ``inf`` matches only ``inf`` of the same sign.
- Anything that is not numeric on the expected side is compared as data, as ``exact``
  does, with this tolerance on the numeric leaves.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from judge.checkers.base import Checker, CheckerParams, CheckResult
from judge.checkers.numeric import as_arrays, mismatch
from judge.checkers.structure import compare_structure
from judge.values import NotNumeric, to_numeric


class AllcloseParams(CheckerParams):
    rtol: float = Field(default=1e-5, ge=0)
    atol: float = Field(default=1e-8, ge=0)
    equal_nan: bool = True


def close(exp: np.ndarray, got: np.ndarray, params: AllcloseParams) -> CheckResult:
    dtype = np.complex128 if "c" in (exp.dtype.kind, got.dtype.kind) else np.float64
    e, g = exp.astype(dtype), got.astype(dtype)
    ok = np.isclose(g, e, rtol=params.rtol, atol=params.atol, equal_nan=params.equal_nan)
    if bool(np.all(ok)):
        return CheckResult.ok()
    return mismatch(exp, ~ok, got)


class AllcloseChecker(Checker):
    name = "allclose"
    Params = AllcloseParams
    params: AllcloseParams

    def check(self, expected: Any, received: Any) -> CheckResult:
        try:
            to_numeric(expected)
        except NotNumeric:
            return compare_structure(expected, received, self._leaf)
        return self._leaf(expected, received)

    def _leaf(self, expected: Any, received: Any) -> CheckResult:
        arrays = as_arrays(expected, received)
        if isinstance(arrays, CheckResult):
            return arrays
        return close(*arrays, self.params)
