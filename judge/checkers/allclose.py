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
- ``tolerances`` sets rtol/atol for parts of a result by their dotted key path (``loss``,
  ``params.hidden``: that subtree, ``0``: a list's first item); the longest path that
  names a leaf or one of its parents wins, the problem's rtol/atol elsewhere.
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from pydantic import Field

from judge.checkers.base import Checker, CheckerParams, CheckResult
from judge.checkers.numeric import as_arrays, mismatch
from judge.checkers.structure import compare_structure, dotted
from judge.values import NotNumeric, to_numeric

PathName = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^.\s]+(\.[^.\s]+)*$")]


class Tolerance(CheckerParams):
    rtol: float | None = Field(default=None, ge=0)
    atol: float | None = Field(default=None, ge=0)


class AllcloseParams(CheckerParams):
    rtol: float = Field(default=1e-5, ge=0)
    atol: float = Field(default=1e-8, ge=0)
    equal_nan: bool = True
    tolerances: dict[PathName, Tolerance] = Field(
        default_factory=dict, max_length=100, description="rtol/atol by the dotted key "
        "path of a part of the result (the longest that names a leaf or a parent wins).")

    def at(self, path: str) -> AllcloseParams:
        """The tolerance for the leaf at ``path`` (a checker's key path)."""
        if not self.tolerances:
            return self
        name = dotted(path)
        best = max((k for k in self.tolerances if name == k or name.startswith(k + ".")),
                   key=len, default=None)
        if best is None:
            return self
        chosen = self.tolerances[best]
        return self.model_copy(update={
            "rtol": self.rtol if chosen.rtol is None else chosen.rtol,
            "atol": self.atol if chosen.atol is None else chosen.atol, "tolerances": {}})


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
        return self._leaf(expected, received, "")

    def _leaf(self, expected: Any, received: Any, path: str) -> CheckResult:
        arrays = as_arrays(expected, received)
        if isinstance(arrays, CheckResult):
            return arrays
        return close(*arrays, self.params.at(path))
