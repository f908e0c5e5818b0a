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

from judge.checkers import get_checker, reasons
from judge.checkers.base import CheckResult
from judge.errors import ConfigError
from judge.harness.codec import encode
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


def legacy(x: jax.Array) -> dict[str, Any]:
    """``x`` as builds before the judge computed layouts stored it: no buffers or mesh
    devices, but every shard's device, shape and index as JAX reported them."""
    data = encode(x)
    info = data["sharding"]
    del info["buffers"], info["mesh_devices"]
    info["shards"] = sorted(
        ({"device": s.device.id, "shape": list(s.data.shape),
          "index": [list(sl.indices(n)[:2]) for sl, n in zip(s.index, x.shape, strict=True)]}
         for s in x.addressable_shards),
        key=lambda shard: shard["device"])
    return data


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
    result = fails(put(other_meshes["4x2"], P("data")), put(tall, P("data")), "data=4", "data=8")
    assert result.reason == reasons.MESH


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
    got = format_spec(w(put(mesh, received)).sharding.spec)
    result = fails(put(mesh, expected), put(mesh, received), got)
    assert result.reason == reasons.PSPEC
    assert result.detail.startswith(f"got {got}, expected P(")


@pytest.mark.parametrize("name", ["4x2", "renamed", "swapped", "1d", "3d"])
def test_wrong_mesh(mesh, other_meshes, name: str) -> None:
    other = other_meshes[name]
    result = fails(put(mesh, P("data")), put(other, P("data") if "data" in other.axis_names
                                               else P("batch")), "data=2, model=4", "batch",
                   "extra", *(f"{a}={n}" for a, n in other.shape.items()))
    assert result.reason == reasons.MESH
    mesh_text = ", ".join(f"{a}={n}" for a, n in other.shape.items())
    assert result.detail == f"the mesh is ({mesh_text}), expected (data=2, model=4)"


def test_numpy_result_where_a_sharded_array_is_expected(mesh) -> None:
    result = fails(put(mesh, P("data")), HOST)
    assert result.reason == "the result is not a jax.Array, so it has no sharding"
    result = fails(put(mesh, P("data")), HOST.tolist())
    assert "not a jax.Array" in result.reason


def test_single_device_result_where_a_sharded_array_is_expected(mesh) -> None:
    result = fails(put(mesh, P("data")), jnp.asarray(HOST), "SingleDeviceSharding")
    assert result.reason == "the array is not laid out with a NamedSharding over a mesh"
    assert result.detail == "the array has a SingleDeviceSharding, not a NamedSharding"


def test_same_spec_different_shard_shapes(mesh) -> None:
    # the global shape differs, so the shards do (values not compared here)
    expected = put(mesh, P("data", "model"), np.zeros((8, 8), np.float32))
    received = put(mesh, P("data", "model"), np.zeros((16, 8), np.float32))
    result = fails(expected, received, "(8, 2)", "(4, 2)", check_values=False)
    assert result.reason == "device 0 holds a shard of the wrong shape"
    assert result.detail == "device 0 holds a shard of shape (8, 2), expected (4, 2)"
    passes(expected, received, check_values=False, shard_shapes=False)


def test_stored_shards_are_compared_per_device(mesh) -> None:
    # A value stored before the judge computed layouts carries JAX's own shards; the
    # recorded shard shape of one device differs, with the same spec and mesh.
    x = put(mesh, P("data", "model"))
    exp = w(x)
    data = legacy(x)
    assert VALUE.validate_python(data).shards() == exp.shards()  # read as it was stored
    data["sharding"]["shards"][5]["shape"] = [8, 1]
    got = VALUE.validate_python(data)
    result = get_checker("sharding").check(exp, got)
    assert not result.passed
    assert result.reason == "device 5 holds a shard of the wrong shape"
    assert result.detail == "device 5 holds a shard of shape (8, 1), expected (4, 2)"
    assert get_checker("sharding", {"shard_shapes": False}).check(exp, got).passed


def test_a_stored_layout_with_wrong_indices_fails_placement(mesh) -> None:
    x = put(mesh, P("data", "model"))
    data = legacy(x)
    data["sharding"]["shards"][6]["index"] = [[0, 4], [0, 2]]
    got = VALUE.validate_python(data)
    assert get_checker("sharding").check(w(x), got).passed  # the shapes are right
    result = get_checker("sharding", {"check_placement": True}).check(w(x), got)
    assert result.reason == "device 6 holds the wrong part of the array"
    assert "[(0, 4), (0, 2)]" in result.detail and "[(4, 8), (4, 6)]" in result.detail


def test_a_missing_device_fails(mesh) -> None:
    x = put(mesh, P("data", "model"))
    data = legacy(x)
    del data["sharding"]["shards"][7]
    result = get_checker("sharding").check(w(x), VALUE.validate_python(data))
    assert result.reason == reasons.DEVICES
    assert result.detail == ("the array is on devices [0, 1, 2, 3, 4, 5, 6], "
                             "expected [0, 1, 2, 3, 4, 5, 6, 7]")


def test_a_single_device_array_on_another_device_fails() -> None:
    expected = jax.device_put(HOST, jax.devices()[0])
    received = jax.device_put(HOST, jax.devices()[3])
    result = fails(expected, received, "[3]")
    assert result.reason == reasons.DEVICES
    assert result.detail == "the array is on devices [3], expected [0]"
    passes(expected, jax.device_put(HOST, jax.devices()[0]), check_placement=True)


def test_check_placement(mesh, other_meshes) -> None:
    # the same spec, mesh axes and sizes, and shard shapes, on devices in another order
    expected = put(mesh, P("data", "model"))
    received = put(other_meshes["reversed"], P("data", "model"))
    passes(expected, received)
    result = fails(expected, received, "(4, 8)", check_placement=True)
    assert result.reason == "device 0 holds the wrong part of the array"
    assert result.detail == "device 0 holds [(4, 8), (6, 8)], expected [(0, 4), (0, 2)]"


def test_wrong_values_fail_before_the_layout(mesh) -> None:
    got = HOST.copy()
    got[3, 3] = 0.0
    result = fails(put(mesh, P("data")), put(mesh, P("data"), got), "1027.25", "(3, 3)")
    assert result.reason == reasons.VALUES
    assert result.detail == ("1 of 64 values differ (first at index (3, 3)): "
                             "expected 1027.25, got 0.0")
    passes(put(mesh, P("data")), put(mesh, P("data"), got), check_values=False)
    result = fails(put(mesh, P("data")), put(mesh, P("model"), got), check_values=False)
    assert result.reason == reasons.PSPEC


def test_wrong_shape_or_kind(mesh) -> None:
    result = fails(put(mesh, P("data")), put(mesh, P("data"), HOST[:, :4]), "(8, 4)")
    assert result.reason == reasons.SHAPE
    assert result.detail == "the result has shape (8, 4), expected shape (8, 8)"
    result = fails(put(mesh, P("data")), put(mesh, P("data"), HOST > 1010))
    assert result.reason == reasons.KIND


def test_non_numeric_result(mesh) -> None:
    for received in (None, "sharded", object(), P("data")):
        result = fails(put(mesh, P("data")), received)
        assert result.reason == reasons.NOT_NUMERIC


def test_expected_without_sharding_only_checks_values(mesh) -> None:
    passes(HOST, put(mesh, P("data")))
    passes(HOST, HOST)
    fails(HOST, HOST + 1)


def test_single_device_expected(mesh) -> None:
    expected = jnp.asarray(HOST)
    passes(expected, jnp.asarray(HOST))
    result = fails(expected, put(mesh, P("data")))
    assert result.reason == reasons.DEVICES


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
        assert result.reason == reasons.PSPEC
        got, exp = format_spec(w(received).v), format_spec(w(expected).v)
        assert result.detail == f"got {got}, expected {exp}"


def test_named_sharding_values(mesh, other_meshes) -> None:
    passes(NamedSharding(mesh, P("data", None)), NamedSharding(mesh, P("data")))
    result = fails(NamedSharding(mesh, P("data")), NamedSharding(mesh, P("model")), "'data'",
                   "'model'")
    assert result.reason == reasons.PSPEC
    assert result.detail == "got P('model'), expected P('data')"
    result = fails(NamedSharding(mesh, P("data")), NamedSharding(other_meshes["4x2"], P("data")),
                   "data=2", "data=4")
    assert result.reason == reasons.MESH
    assert result.detail == "the mesh is (data=4, model=2), expected (data=2, model=4)"
    result = fails(NamedSharding(mesh, P("data")), P("data"))
    assert result.reason == "the result is not a NamedSharding"
    assert result.detail == "expected a NamedSharding, got a PartitionSpec"


def test_a_dict_of_sharded_arrays(mesh) -> None:
    expected = {"w": put(mesh, P(None, "model")), "b": put(mesh, P(), HOST[0])}
    passes(expected, {"b": put(mesh, P(), HOST[0]), "w": put(mesh, P(None, "model"))})
    result = fails(expected, {"w": put(mesh, P("model")), "b": put(mesh, P(), HOST[0])})
    assert result.reason == f"at ['w']: {reasons.PSPEC}"
    result = fails(expected, {"w": put(mesh, P(None, "model"))})
    assert result.reason == "the keys differ: missing b"


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
    assert result.reason == f"at ['kernel']: {reasons.PSPEC}"


def test_per_path_tolerances_apply_to_values_and_the_layout_is_still_checked() -> None:
    mesh = jax.make_mesh((8,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    expected = {"loss": put(mesh, P(), np.float32(2.0)), "w": put(mesh, P("data"))}
    loose = {"tolerances": {"loss": {"atol": 0.5}}}
    passes(expected, {"loss": put(mesh, P(), np.float32(2.25)), "w": expected["w"]}, **loose)
    fails(expected, {"loss": expected["loss"], "w": put(mesh, P("data"), HOST + 0.25)},
          **loose)
    result = fails(expected, {"loss": put(mesh, P(), np.float32(2.25)),
                              "w": put(mesh, P())}, **loose)
    assert result.reason.startswith("at ['w']: ")
