"""The ``sharding`` checker: values within tolerance and the same layout on the devices."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from judge.checkers import get_checker
from judge.checkers.base import CheckResult
from judge.errors import ConfigError
from judge.values import ArrayValue, format_spec

from ..conftest import VALUE
from ..conftest import wire_value as w
from .support import assert_fails, assert_passes

# distinctive values: none of them can turn up in a reason by accident
HOST = (np.arange(64, dtype=np.float32).reshape(8, 8) + 1000.25)


def check(expected: Any, received: Any, **params: Any) -> CheckResult:
    return get_checker("sharding", params).check(w(expected), w(received))


def passes(expected: Any, received: Any, **params: Any) -> None:
    assert_passes(get_checker("sharding", params), expected, received)


def fails(expected: Any, received: Any, *secrets: str, **params: Any) -> CheckResult:
    result = assert_fails(get_checker("sharding", params), expected, received,
                          *secrets, "1000.25", "1001.25")
    spec = getattr(getattr(w(expected), "sharding", None), "spec", None)
    if spec:
        assert format_spec(spec) not in result.reason
    return result


def put(mesh: Mesh, spec: P, value: np.ndarray = HOST) -> jax.Array:
    return jax.device_put(value, NamedSharding(mesh, spec))


@pytest.fixture(scope="module")
def other_meshes() -> dict[str, Mesh]:
    devices = np.array(jax.devices())
    return {
        "4x2": Mesh(devices.reshape(4, 2), ("data", "model")),
        "renamed": Mesh(devices.reshape(2, 4), ("batch", "model")),
        "swapped": Mesh(devices.reshape(4, 2).T.copy(), ("model", "data")),
        "reversed": Mesh(devices[::-1].reshape(2, 4), ("data", "model")),
        "1d": Mesh(devices, ("data",)),
        "3d": Mesh(devices.reshape(2, 2, 2), ("data", "model", "extra")),
    }


def test_params_and_defaults() -> None:
    checker = get_checker("sharding")
    assert checker.params.shard_shapes is True
    assert checker.params.check_placement is False
    assert checker.params.check_values is True
    for bad in ({"rtol": -1}, {"placement": True}, {"check_values": "x"}):
        with pytest.raises(ConfigError):
            get_checker("sharding", bad)


# -- passing -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec", [P("data", "model"), P("data"), P(None, "model"), P(("data", "model")), P()], ids=str
)
def test_same_array_same_sharding_passes(mesh, spec: P) -> None:
    passes(put(mesh, spec), put(mesh, spec), check_placement=True)


def test_values_within_tolerance_pass(mesh) -> None:
    passes(put(mesh, P("data")), put(mesh, P("data"), HOST * (1 + 1e-7)))


def test_trailing_none_and_one_axis_tuples_are_the_same_spec(mesh) -> None:
    passes(put(mesh, P("data", None)), put(mesh, P("data")), check_placement=True)
    passes(put(mesh, P("data")), put(mesh, P("data", None)))
    passes(put(mesh, P(("model",), None)), put(mesh, P("model")))
    passes(put(mesh, P(None, None)), put(mesh, P()))


def test_same_spec_on_an_equal_but_distinct_mesh_passes(mesh) -> None:
    twin = Mesh(np.array(jax.devices()).reshape(2, 4), ("data", "model"))
    passes(put(mesh, P("data", "model")), put(twin, P("data", "model")), check_placement=True)


def test_a_size_one_mesh_axis_may_be_named_or_left_out(other_meshes) -> None:
    """On data=8, model=1 JAX reports P('data') for what out_shardings calls
    P('data', 'model'): the same layout, so the same answer."""
    tall = Mesh(np.array(jax.devices()).reshape(8, 1), ("data", "model"))
    passes(put(tall, P("data", "model")), put(tall, P("data")), check_placement=True)
    passes(put(tall, P(("data", "model"), None)), put(tall, P("data")))
    passes(put(tall, P()), put(tall, P(None, "model")))
    passes(NamedSharding(tall, P(None, "model")), NamedSharding(tall, P()))
    fails(put(tall, P("data", "model")), put(tall, P("model", "data")))
    fails(put(tall, P("data")), put(tall, P(None, "data")))
    # a size-1 axis of the *received* mesh means nothing when the meshes differ
    result = fails(put(other_meshes["4x2"], P("data")), put(tall, P("data")), "data=4")
    assert "mesh" in result.reason


# -- failing -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expected, received",
    [
        (P("data", None), P(None, "model")),
        (P("data"), P("model")),
        (P("data"), P(None, "data")),
        (P("data", "model"), P("model", "data")),
        (P(("data", "model")), P(("model", "data"))),
        (P(("data", "model")), P("data", "model")),
        (P("data"), P()),
        (P(), P("data")),
    ],
    ids=str,
)
def test_wrong_spec(mesh, expected: P, received: P) -> None:
    result = fails(put(mesh, expected), put(mesh, received))
    assert "PartitionSpec" in result.reason
    assert format_spec(w(put(mesh, received)).sharding.spec) in result.reason


@pytest.mark.parametrize("name", ["4x2", "renamed", "swapped", "1d", "3d"])
def test_wrong_mesh(mesh, other_meshes, name: str) -> None:
    other = other_meshes[name]
    result = fails(put(mesh, P("data")), put(other, P("data") if "data" in other.axis_names
                                               else P("batch")), "data=2, model=4")
    assert "mesh" in result.reason
    assert "(data=2, model=4)" in result.detail


def test_numpy_result_where_a_sharded_array_is_expected(mesh) -> None:
    result = fails(put(mesh, P("data")), HOST)
    assert result.reason == "the result is not a jax.Array, so it has no sharding"
    result = fails(put(mesh, P("data")), HOST.tolist())
    assert "not a jax.Array" in result.reason


def test_single_device_result_where_a_sharded_array_is_expected(mesh) -> None:
    result = fails(put(mesh, P("data")), jnp.asarray(HOST))
    assert result.reason == "the array has a SingleDeviceSharding, not a NamedSharding over a mesh"


def test_same_spec_different_shard_shapes(mesh) -> None:
    # the global shape differs, so the shards do (values not compared here)
    expected = put(mesh, P("data", "model"), np.zeros((8, 8), np.float32))
    received = put(mesh, P("data", "model"), np.zeros((16, 8), np.float32))
    result = fails(expected, received, check_values=False)
    assert result.reason == (
        "device 0 holds a shard of shape (8, 2), which is not the expected shard shape"
    )
    assert "expected (4, 2)" in result.detail
    passes(expected, received, check_values=False, shard_shapes=False)


def test_shard_shapes_compared_per_device(mesh) -> None:
    # same spec, same mesh, but the recorded shard shape of one device differs
    exp = w(put(mesh, P("data", "model")))
    data = exp.model_dump()
    data["sharding"]["shards"][5]["shape"] = [8, 1]
    got = VALUE.validate_python(data)
    result = get_checker("sharding").check(exp, got)
    assert not result.passed
    assert result.reason.startswith("device 5 holds a shard of shape (8, 1)")
    assert "(4, 2)" not in result.reason
    assert get_checker("sharding", {"shard_shapes": False}).check(exp, got).passed


def test_a_missing_device_fails(mesh) -> None:
    exp = w(put(mesh, P("data", "model")))
    data = exp.model_dump()
    del data["sharding"]["shards"][7]
    result = get_checker("sharding").check(exp, VALUE.validate_python(data))
    assert not result.passed and "devices" in result.reason
    assert "7]" not in result.reason


def test_check_placement(mesh, other_meshes) -> None:
    # the same spec, mesh axes and sizes, and shard shapes, on devices in another order
    expected = put(mesh, P("data", "model"))
    received = put(other_meshes["reversed"], P("data", "model"))
    passes(expected, received)
    result = fails(expected, received, check_placement=True)
    assert result.reason == "device 0 holds the wrong part of the array"
    assert "expected [(0, 4), (0, 2)]" in result.detail


def test_wrong_values_fail_before_the_layout(mesh) -> None:
    got = HOST.copy()
    got[3, 3] = 0.0
    result = fails(put(mesh, P("data")), put(mesh, P("data"), got), "1027.25")
    assert result.reason == "1 of 64 values are wrong (first at index (3, 3))"
    passes(put(mesh, P("data")), put(mesh, P("data"), got), check_values=False)
    result = fails(put(mesh, P("data")), put(mesh, P("model"), got), check_values=False)
    assert "PartitionSpec" in result.reason


def test_wrong_shape_or_kind(mesh) -> None:
    result = fails(put(mesh, P("data")), put(mesh, P("data"), HOST[:, :4]))
    assert "shape" in result.reason
    result = fails(put(mesh, P("data")), put(mesh, P("data"), HOST > 1010))
    assert "kind" in result.reason


def test_non_numeric_result(mesh) -> None:
    for received in (None, "sharded", object(), P("data")):
        result = fails(put(mesh, P("data")), received)
        assert "not a numeric array" in result.reason


def test_expected_without_sharding_only_checks_values(mesh) -> None:
    passes(HOST, put(mesh, P("data")))
    passes(HOST, HOST)
    fails(HOST, HOST + 1)


def test_single_device_expected(mesh) -> None:
    expected = jnp.asarray(HOST)
    passes(expected, jnp.asarray(HOST))
    result = fails(expected, put(mesh, P("data")))
    assert "devices" in result.reason


# -- specs and shardings as values, and structures ---------------------------------------


@pytest.mark.parametrize(
    "expected, received, ok",
    [
        (P("a", None), P("a"), True),
        (P(("a",)), P("a"), True),
        (P(("a", "b"), None), P(("a", "b")), True),
        (P("a"), P(None, "a"), False),
        (P("a", "b"), P("b", "a"), False),
        (P("a"), P(), False),
    ],
    ids=str,
)
def test_partition_spec_values(expected: P, received: P, ok: bool) -> None:
    result = check(expected, received)
    assert result.passed is ok
    if not ok:
        assert format_spec(w(expected).v) not in result.reason


def test_named_sharding_values(mesh, other_meshes) -> None:
    passes(NamedSharding(mesh, P("data", None)), NamedSharding(mesh, P("data")))
    result = fails(NamedSharding(mesh, P("data")), NamedSharding(mesh, P("model")), "'data'")
    assert "PartitionSpec" in result.reason
    result = fails(NamedSharding(mesh, P("data")), NamedSharding(other_meshes["4x2"], P("data")),
                   "data=2")
    assert "mesh" in result.reason
    result = fails(NamedSharding(mesh, P("data")), P("data"))
    assert result.reason == "expected a NamedSharding, got a PartitionSpec"


def test_a_dict_of_sharded_arrays(mesh) -> None:
    expected = {"w": put(mesh, P(None, "model")), "b": put(mesh, P(), HOST[0])}
    passes(expected, {"b": put(mesh, P(), HOST[0]), "w": put(mesh, P(None, "model"))})
    result = fails(expected, {"w": put(mesh, P("model")), "b": put(mesh, P(), HOST[0])})
    assert result.reason.startswith("at ['w']: the PartitionSpec")
    result = fails(expected, {"w": put(mesh, P(None, "model"))})
    assert "missing b" in result.reason


def test_a_sharded_nnx_state(mesh) -> None:
    def make(spec: tuple[Any, ...]) -> Any:
        with jax.set_mesh(mesh):
            model = nnx.Linear(
                8, 16, rngs=nnx.Rngs(0),
                kernel_init=nnx.with_partitioning(nnx.initializers.lecun_normal(), spec),
            )
        return nnx.state(model)

    expected = make((None, "model"))
    value = w(expected)
    kernel = next(v for k, v in value.items if "kernel" in k)
    assert isinstance(kernel, ArrayValue) and kernel.sharding.spec == [None, "model"]
    passes(expected, make((None, "model")))
    result = fails(expected, make(("data", "model")))
    assert "kernel" in result.reason and "PartitionSpec" in result.reason
