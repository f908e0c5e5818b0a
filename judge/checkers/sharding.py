"""``sharding``: values within tolerance *and* laid out as expected across the devices.

Policy, for each array in the expected value (a single array, or arrays, PartitionSpecs
and NamedShardings anywhere in a list, dict or pytree):

- Values as ``allclose`` (rtol, atol, per-path ``tolerances``, NaN equal to NaN); skip
  with ``check_values: false``.
- The received value must be a ``jax.Array`` (a NumPy array has no sharding). Its mesh
  must have the same axis names, in order, with the same sizes; its PartitionSpec must
  equal the expected one once both are normalised (trailing ``None`` dropped,
  ``('data',)`` read as ``'data'``, mesh axes of size 1 dropped since they split nothing).
- Every device must hold a shard of the expected shape (``shard_shapes``, on by
  default), and with ``check_placement`` the same slice of the array as expected.
- PartitionSpecs and NamedShardings on their own are compared normalised, as above.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from judge.checkers import reasons
from judge.checkers.allclose import AllcloseParams, PathName, Tolerance, close
from judge.checkers.base import Checker, CheckerParams, CheckResult
from judge.checkers.numeric import as_arrays
from judge.checkers.structure import compare_layout, compare_structure
from judge.values import ArrayValue


class ShardingParams(CheckerParams):
    rtol: float = Field(default=1e-5, ge=0)
    atol: float = Field(default=1e-8, ge=0)
    tolerances: dict[PathName, Tolerance] = Field(default_factory=dict, max_length=100,
                                                  description="As allclose's.")
    check_values: bool = True
    shard_shapes: bool = True
    check_placement: bool = False


class ShardingChecker(Checker):
    name = "sharding"
    Params = ShardingParams
    params: ShardingParams

    def __init__(self, params: CheckerParams) -> None:
        super().__init__(params)
        # The value comparison's tolerances, made once for every leaf of every check.
        self.values = AllcloseParams(rtol=self.params.rtol, atol=self.params.atol,
                                     tolerances=self.params.tolerances)

    def check(self, expected: Any, received: Any) -> CheckResult:
        return compare_structure(expected, received, self._leaf)

    def _leaf(self, expected: Any, received: Any, path: str) -> CheckResult:
        if self.params.check_values:
            arrays = as_arrays(expected, received)
            if isinstance(arrays, CheckResult):
                return arrays
            result = close(*arrays, self.values.at(path))
            if not result.passed:
                return result
        if not isinstance(expected, ArrayValue) or expected.sharding is None:
            return CheckResult.ok()
        if not isinstance(received, ArrayValue) or received.sharding is None:
            return CheckResult.fail(reasons.NOT_JAX_ARRAY)
        return self._layout(expected, received)

    def _layout(self, expected: ArrayValue, received: ArrayValue) -> CheckResult:
        exp, got = expected.sharding, received.sharding
        assert exp is not None and got is not None
        if exp.spec is not None:
            if got.spec is None:
                return CheckResult.fail(reasons.NOT_NAMED,
                                        f"the array has a {got.kind}, not a NamedSharding")
            result = compare_layout(exp.spec, exp.mesh_axes, exp.mesh_shape,
                                    got.spec, got.mesh_axes, got.mesh_shape)
            if not result.passed:
                return result
        if self.params.shard_shapes or self.params.check_placement:
            exp_shards, got_shards = expected.shards(), received.shards()
            if sorted(exp_shards) != sorted(got_shards):
                return CheckResult.fail(
                    reasons.DEVICES,
                    f"the array is on devices {sorted(got_shards)}, expected {sorted(exp_shards)}",
                )
            for device, shard in sorted(exp_shards.items()):
                mine = got_shards[device]
                if mine.shape != shard.shape:
                    return CheckResult.fail(
                        reasons.SHARD_SHAPE.format(expected_device=device),
                        f"device {device} holds a shard of shape {tuple(mine.shape)}, "
                        f"expected {tuple(shard.shape)}",
                    )
                if self.params.check_placement and mine.index != shard.index:
                    return CheckResult.fail(
                        reasons.PLACEMENT.format(expected_device=device),
                        f"device {device} holds {mine.index}, expected {shard.index}",
                    )
        return CheckResult.ok()
