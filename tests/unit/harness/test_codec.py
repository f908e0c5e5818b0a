"""judge.harness.codec: encoding values as tagged JSON, the size caps, round trips through
judge.harness.inputs."""

from __future__ import annotations

import collections
import json
import math
from typing import Any

import hypothesis.extra.numpy as hnp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from judge.checkers import get_checker
from judge.harness.codec import (
    ALLOWED_DTYPES,
    MAX_INT_BITS,
    MAX_STR,
    EncodeLimit,
    encode,
    make_encoder,
)
from judge.harness.inputs import decode_input
from judge.values import (
    ArrayValue,
    Buffer,
    DictValue,
    FloatValue,
    IntValue,
    ListValue,
    NamedShardingValue,
    NoneValue,
    OpaqueValue,
    PSpecValue,
    Shard,
    StrValue,
    TreeValue,
    normalize_spec,
)

from ..conftest import VALUE, to_json, wire_value

DTYPES = [
    "bool",
    "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
    "complex64", "complex128",
]


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtype, shape and bytes: NaN payloads and -0.0 included."""
    a = np.array(a, dtype=a.dtype.newbyteorder("="), order="C")
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_the_dtype_list_is_the_documented_one() -> None:
    assert set(DTYPES) == ALLOWED_DTYPES


# -- arrays -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_array_round_trip_every_dtype(dtype: str, data: st.DataObject) -> None:
    arr = data.draw(
        hnp.arrays(np.dtype(dtype), hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    )
    enc = encode(arr)
    assert enc["t"] == "array" and enc["dtype"] == dtype and enc["shape"] == list(arr.shape)
    value = wire_value(arr)
    assert isinstance(value, ArrayValue)
    back = value.to_numpy()
    assert same_bits(arr, back)
    assert same_bits(arr, decode_input(enc))


@pytest.mark.parametrize("dtype", [">i2", ">i4", ">u8", ">f4", ">f8", ">c16"])
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_big_endian_arrays_travel_little_endian_with_the_plain_dtype(dtype: str, data) -> None:
    arr = data.draw(hnp.arrays(np.dtype(dtype), hnp.array_shapes(max_dims=2, max_side=4)))
    value = wire_value(arr)
    assert value.dtype == np.dtype(dtype).name
    back = value.to_numpy()
    assert back.dtype.isnative
    assert same_bits(arr.astype(arr.dtype.newbyteorder("=")), back)


@pytest.mark.parametrize(
    "arr",
    [
        np.array(3.5, dtype=np.float32),  # 0-d
        np.zeros((0,), dtype=np.int32),
        np.zeros((3, 0, 2), dtype=np.float64),
        np.arange(24, dtype=np.int16).reshape(2, 3, 4),
        np.arange(12, dtype=np.float64).reshape(3, 4).T,  # not C-contiguous
        np.arange(10, dtype=np.int64)[::3],  # strided
        np.array([np.nan, np.inf, -np.inf, -0.0, 1e-300], dtype=np.float64),
        np.array([np.nan, np.inf, -np.inf], dtype=np.float16),
        np.array([complex(np.nan, 1), complex(-np.inf, np.inf)], dtype=np.complex64),
        np.array([0, 2**64 - 1], dtype=np.uint64),
        np.array([-(2**63), 2**63 - 1], dtype=np.int64),
        np.array([[True, False]]),
    ],
    ids=lambda a: f"{a.dtype}{a.shape}",
)
def test_array_round_trip_shapes_and_special_values(arr: np.ndarray) -> None:
    value = wire_value(arr)
    assert value.shape == list(arr.shape)
    assert same_bits(arr, value.to_numpy())


@pytest.mark.parametrize(
    "scalar, dtype",
    [
        (np.float32(2.5), "float32"),
        (np.int8(-7), "int8"),
        (np.uint64(2**64 - 1), "uint64"),
        (np.bool_(True), "bool"),
        (np.complex128(1 - 2j), "complex128"),
        (np.float64("nan"), "float64"),
    ],
)
def test_numpy_scalars_become_0d_arrays(scalar: Any, dtype: str) -> None:
    value = wire_value(scalar)
    assert isinstance(value, ArrayValue)
    assert value.dtype == dtype and value.shape == []
    assert same_bits(np.asarray(scalar), value.to_numpy())


def test_bfloat16_travels_as_float32_with_orig_dtype() -> None:
    x = jnp.asarray([1.5, -2.0, 3.0e10, float("inf")], dtype=jnp.bfloat16)
    value = wire_value(x)
    assert value.dtype == "float32" and value.orig_dtype == "bfloat16"
    np.testing.assert_array_equal(value.to_numpy(), np.asarray(x).astype(np.float32))
    host = wire_value(np.asarray(x))  # a NumPy (ml_dtypes) bfloat16 array too
    assert host.dtype == "float32" and host.orig_dtype == "bfloat16"
    assert host.sharding is None


def test_arrays_without_orig_dtype_say_none() -> None:
    assert "orig_dtype" not in encode(np.zeros(2, np.float32))


class Tricky(np.ndarray):
    """An ndarray subclass that lies about its contents everywhere it can."""

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        return np.full(self.shape, 99.0)

    def tobytes(self, *args: Any, **kwargs: Any) -> bytes:  # type: ignore[override]
        return b"lies"

    def __eq__(self, other: Any) -> bool:  # type: ignore[override]
        return True

    @property
    def dtype(self) -> np.dtype:  # type: ignore[override]
        return np.dtype("int8")


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_ndarray_subclasses_are_encoded_from_their_buffer() -> None:
    base = np.arange(6, dtype=np.float64).reshape(2, 3)
    value = wire_value(base.view(Tricky))
    assert value.dtype == "float64"
    np.testing.assert_array_equal(value.to_numpy(), base)

    matrix = wire_value(np.matrix([[1, 2], [3, 4]], dtype=np.int32))
    assert matrix.shape == [2, 2]
    np.testing.assert_array_equal(matrix.to_numpy(), [[1, 2], [3, 4]])

    masked = wire_value(np.ma.masked_array([1.0, 2.0], mask=[True, False]))
    assert masked.t == "array"
    np.testing.assert_array_equal(masked.to_numpy(), [1.0, 2.0])


@pytest.mark.parametrize(
    "arr, name",
    [
        (np.array([object(), 1], dtype=object), "object"),
        (np.array(["a", "bc"]), "str64"),
        (np.zeros(2, dtype="datetime64[s]"), "datetime64[s]"),
        (np.zeros(2, dtype=np.longdouble), np.dtype(np.longdouble).name),
        (np.zeros(2, dtype=[("a", "i4"), ("b", "f8")]), np.dtype([("a", "i4"), ("b", "f8")]).name),
    ],
    ids=["object", "str", "datetime", "longdouble", "structured"],
)
def test_unsupported_dtypes_become_opaque(arr: np.ndarray, name: str) -> None:
    if name in ALLOWED_DTYPES:  # longdouble is float64 on some platforms
        assert encode(arr)["t"] == "array"
        return
    enc = encode(arr)
    assert enc == {"t": "opaque", "type": f"numpy.ndarray[{name}]"}
    assert isinstance(wire_value(arr), OpaqueValue)


def test_unsupported_jax_dtypes_become_opaque() -> None:
    enc = encode(jnp.zeros(3, dtype=jnp.int4))
    assert enc["t"] == "opaque" and "int4" in enc["type"]


# -- jax arrays and sharding -------------------------------------------------------------


def test_single_device_jax_array_carries_its_placement() -> None:
    x = jnp.arange(6, dtype=jnp.int32).reshape(2, 3)
    value = wire_value(x)
    assert value.dtype == "int32"
    np.testing.assert_array_equal(value.to_numpy(), np.arange(6).reshape(2, 3))
    info = value.sharding
    assert info.kind == "SingleDeviceSharding"
    assert info.spec is None and info.mesh_axes is None and info.mesh_devices is None
    assert info.buffers == [Buffer(device=0, shape=[2, 3])]
    assert info.shards == []  # the sandbox reports buffers; the judge works out the shards
    assert value.shards() == {0: Shard(device=0, shape=[2, 3], index=[(0, 2), (0, 3)])}


def test_a_jax_array_on_another_device_says_which() -> None:
    x = jax.device_put(np.arange(4, dtype=np.int8), jax.devices()[5])
    value = wire_value(x)
    assert value.sharding.buffers == [Buffer(device=5, shape=[4])]
    assert value.shards() == jax_shards(x)


@pytest.mark.parametrize("device", [0, 3])
def test_a_named_sharding_over_a_one_device_mesh(device: int) -> None:
    # Such an array is its own (only) buffer, with the NamedSharding, not a
    # SingleDeviceSharding: it is still read as an array (device-put-batch needs it).
    mesh = Mesh(np.array(jax.devices()[device:device + 1]), ("data",))
    host = np.arange(12, dtype=np.float32).reshape(4, 3)
    x = jax.device_put(jnp.asarray(host), NamedSharding(mesh, P("data", None)))
    value = wire_value(x)
    assert isinstance(value, ArrayValue), value
    np.testing.assert_array_equal(value.to_numpy(), host)
    assert value.sharding.kind == "NamedSharding" and value.sharding.mesh_devices == [device]
    assert value.shards() == jax_shards(x)


def jax_shards(x: jax.Array) -> dict[int, Shard]:
    """What JAX itself says each device holds: shape and (start, stop) of every dimension."""
    return {
        s.device.id: Shard(device=s.device.id, shape=list(s.data.shape),
                           index=[sl.indices(n)[:2] for sl, n in zip(s.index, x.shape, strict=True)])
        for s in x.addressable_shards
    }


@pytest.mark.parametrize(
    "spec, shard_shape",
    [
        (P("data", "model"), [4, 4]),
        (P("data"), [4, 16]),
        (P("data", None), [4, 16]),
        (P(None, "model"), [8, 4]),
        (P(("data", "model")), [1, 16]),
        (P(None, ("model", "data")), [8, 2]),
        (P(), [8, 16]),
    ],
    ids=str,
)
def test_sharded_jax_array_encoding(mesh, spec: P, shard_shape: list[int]) -> None:
    host = np.arange(128, dtype=np.float32).reshape(8, 16)
    x = jax.device_put(host, NamedSharding(mesh, spec))
    enc = encode(x)
    info = enc["sharding"]
    expected_spec = [list(e) if isinstance(e, tuple) else e for e in x.sharding.spec]
    # the sandbox reports what it reads, never where the shards lie: no indices
    assert info == {
        "kind": "NamedSharding",
        "spec": expected_spec,
        "mesh_axes": ["data", "model"],
        "mesh_shape": [2, 4],
        "mesh_devices": [d.id for d in mesh.devices.flat],
        "buffers": [{"device": d, "shape": shard_shape} for d in range(8)],
    }
    value = wire_value(x)  # it validates, with the whole array put together from buffers
    np.testing.assert_array_equal(value.to_numpy(), host)
    assert value.sharding.spec == expected_spec
    # the judge works out which slice every device holds, and JAX agrees
    assert value.shards() == jax_shards(x)
    for device, shard in value.shards().items():
        on_device = next(s for s in x.addressable_shards if s.device.id == device)
        np.testing.assert_array_equal(host[tuple(slice(a, b) for a, b in shard.index)],
                                      np.asarray(on_device.data))


def test_a_sharded_array_on_a_permuted_mesh(mesh) -> None:
    order = [5, 2, 7, 0, 3, 6, 1, 4]
    permuted = Mesh(np.array(jax.devices())[order].reshape(4, 2), ("data", "model"))
    host = np.arange(64, dtype=np.int32).reshape(8, 8) * 3 - 17
    x = jax.device_put(host, NamedSharding(permuted, P("model", "data")))
    enc = encode(x)
    assert enc["sharding"]["mesh_devices"] == order
    assert [b["device"] for b in enc["sharding"]["buffers"]] == list(range(8))
    assert all(b["shape"] == [4, 2] for b in enc["sharding"]["buffers"])
    value = wire_value(x)
    np.testing.assert_array_equal(value.to_numpy(), host)
    assert value.shards() == jax_shards(x)


def test_a_replicated_array_is_one_copy(mesh) -> None:
    host = np.arange(12, dtype=np.float64).reshape(3, 4)
    x = jax.device_put(host, NamedSharding(mesh, P()))
    value = wire_value(x)
    assert value.shape == [3, 4]
    np.testing.assert_array_equal(value.to_numpy(), host)
    assert [b.shape for b in value.sharding.buffers] == [[3, 4]] * 8
    assert value.shards() == jax_shards(x)


def test_the_encoder_reads_through_what_it_bound_before_the_submission_loads(
        mesh, monkeypatch: pytest.MonkeyPatch) -> None:
    from jax._src.array import ArrayImpl

    from judge.harness import codec, layout

    bound = make_encoder()  # as the harness does, before the submission loads
    host = np.arange(64, dtype=np.float32).reshape(8, 8)
    x = jax.device_put(host, NamedSharding(mesh, P("data", "model")))
    truth = bound(x)
    # what a submission could then do: make jax.Array and the codec module lie
    lie = NamedSharding(mesh, P())
    monkeypatch.setattr(ArrayImpl, "sharding", property(lambda self: lie))
    monkeypatch.setattr(ArrayImpl, "addressable_shards", property(lambda self: []))
    monkeypatch.setattr(ArrayImpl, "__array__", lambda self, *a, **k: np.zeros((8, 8)))
    monkeypatch.setattr(layout, "shard_indices", lambda *a, **k: {})
    monkeypatch.setattr(codec, "ALLOWED_DTYPES", frozenset())
    # and NumPy and math, which the layout module uses to put the array together
    real_asarray = np.asarray
    monkeypatch.setattr(np, "asarray", lambda a, *args, **kw: real_asarray(
        list(reversed(a)) if isinstance(a, list) else a, *args, **kw))
    monkeypatch.setattr(math, "prod", lambda *a, **k: 1)
    assert x.sharding is lie and float(np.asarray(x).sum()) == 0.0  # the lies are in place
    sent = bound(x)
    monkeypatch.undo()  # the trusted side is another process, untouched
    assert sent == truth
    np.testing.assert_array_equal(VALUE.validate_python(sent).to_numpy(), host)


class LooksSharded:
    """Claims everything a sharded jax.Array has, but is not one."""

    shape = (8, 8)
    dtype = np.dtype(np.float32)
    ndim = 2

    def __init__(self, sharding: NamedSharding) -> None:
        self.sharding = sharding
        self.addressable_shards: list[Any] = []

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        return np.zeros(self.shape, self.dtype)


def test_only_jax_s_own_types_are_read_as_arrays_and_shardings(mesh) -> None:
    sharding = NamedSharding(mesh, P("data"))
    assert encode(LooksSharded(sharding)) == {"t": "opaque",
                                              "type": f"{__name__}.LooksSharded"}

    class MySharding(NamedSharding):
        pass

    assert encode(MySharding(mesh, P("data")))["t"] == "opaque"
    assert encode({"s": MySharding(mesh, P("data"))})["items"][0][1]["t"] == "opaque"


def test_spec_tuple_entries_are_lists_and_trailing_none_is_kept(mesh) -> None:
    x = jax.device_put(np.zeros((8, 8, 2)), NamedSharding(mesh, P(("data", "model"), None, None)))
    assert encode(x)["sharding"]["spec"] == [["data", "model"], None, None]


# -- partition specs and shardings -------------------------------------------------------


@pytest.mark.parametrize(
    "spec, wire",
    [
        (P(), []),
        (P("data"), ["data"]),
        (P("data", None), ["data", None]),
        (P(None, "model", None), [None, "model", None]),
        (P(("data", "model"), None), [["data", "model"], None]),
    ],
    ids=str,
)
def test_partition_spec(spec: P, wire: list[Any]) -> None:
    assert encode(spec) == {"t": "pspec", "v": wire}
    value = wire_value(spec)
    assert isinstance(value, PSpecValue) and value.v == wire


def test_one_axis_tuple_entry_means_that_axis() -> None:
    # jax itself may store P(('data',)) as P('data'); either way it reads as 'data'
    assert normalize_spec(encode(P(("data",), None))["v"]) == ("data",)


def test_partition_spec_unconstrained_is_a_marked_string() -> None:
    value = wire_value(P(P.UNCONSTRAINED, "a"))
    assert value.v[1] == "a"
    assert isinstance(value.v[0], str) and value.v[0].startswith("<")


def test_named_sharding(mesh) -> None:
    value = wire_value(NamedSharding(mesh, P(None, ("model", "data"))))
    assert isinstance(value, NamedShardingValue)
    assert value.spec == [None, ["model", "data"]]
    assert value.mesh_axes == ["data", "model"] and value.mesh_shape == [2, 4]


def test_partition_specs_inside_a_pytree_stay_specs() -> None:
    value = wire_value({"w": P("data", None), "b": [P(), None]})
    assert isinstance(value, DictValue)
    items = dict(value.items)
    assert items["w"] == PSpecValue(t="pspec", v=["data", None])
    assert items["b"].items[0] == PSpecValue(t="pspec", v=[])


# -- nnx state and other pytrees ---------------------------------------------------------


def test_nnx_state_is_a_tree_of_arrays() -> None:
    model = nnx.Linear(3, 5, rngs=nnx.Rngs(0))
    _, state = nnx.split(model)
    value = wire_value(state)
    assert isinstance(value, TreeValue)
    assert value.type == "State"
    items = dict(value.items)
    kernel = next(v for k, v in items.items() if "kernel" in k)
    bias = next(v for k, v in items.items() if "bias" in k)
    assert len(items) == 2
    assert kernel.shape == [3, 5] and bias.shape == [5]
    np.testing.assert_array_equal(kernel.to_numpy(), np.asarray(model.kernel[...]))
    np.testing.assert_array_equal(bias.to_numpy(), np.zeros(5, np.float32))


def test_nnx_partition_spec_state_is_a_tree_of_specs(mesh) -> None:
    with jax.set_mesh(mesh):
        model = nnx.Linear(
            4, 8,
            kernel_init=nnx.with_partitioning(nnx.initializers.lecun_normal(), (None, "model")),
            rngs=nnx.Rngs(0),
        )
    specs = nnx.get_partition_spec(nnx.state(model))
    value = wire_value(specs)
    assert isinstance(value, TreeValue)
    kernel = next(v for k, v in value.items if "kernel" in k)
    assert kernel == PSpecValue(t="pspec", v=[None, "model"])


def test_registered_pytrees_and_namedtuples() -> None:
    ordered = wire_value(collections.OrderedDict([("b", 1), ("a", 2.5)]))
    assert isinstance(ordered, TreeValue) and ordered.type == "OrderedDict"
    assert [k for k, _ in ordered.items] == ["['b']", "['a']"]

    # a namedtuple (jnp.linalg.slogdet's result, an optax state) travels as a tuple, so
    # that it matches a reference that returns a plain tuple, and the other way round
    Pair = collections.namedtuple("Pair", "x y")
    pair = wire_value(Pair(1, "two"))
    assert isinstance(pair, ListValue) and pair.t == "tuple"
    assert pair.items == [IntValue(t="int", v=1), StrValue(t="str", v="two")]
    sign, logdet = jnp.linalg.slogdet(jnp.eye(2) * 2.0)
    assert get_checker("allclose").check(wire_value((sign, logdet)),
                                         wire_value(jnp.linalg.slogdet(jnp.eye(2) * 2.0))).passed


# -- python scalars, strings, containers ---------------------------------------------------


@pytest.mark.parametrize(
    "value, enc",
    [
        (None, {"t": "none"}),
        (True, {"t": "bool", "v": True}),
        (False, {"t": "bool", "v": False}),
        (0, {"t": "int", "v": 0}),
        (-(2**200), {"t": "int", "v": -(2**200)}),
        (1.5, {"t": "float", "v": 1.5}),
        (float("nan"), {"t": "float", "v": "nan"}),
        (float("inf"), {"t": "float", "v": "inf"}),
        (float("-inf"), {"t": "float", "v": "-inf"}),
        ("", {"t": "str", "v": ""}),
        ("héllo ☃ 𝔘", {"t": "str", "v": "héllo ☃ 𝔘"}),
        ([], {"t": "list", "items": []}),
        ((), {"t": "tuple", "items": []}),
        ({}, {"t": "dict", "items": []}),
    ],
    ids=repr,
)
def test_scalars_and_empty_containers(value: Any, enc: dict[str, Any]) -> None:
    assert encode(value) == enc
    wire_value(value)  # valid JSON (no NaN literals) and valid on the trusted side


def test_floats_survive_json_exactly() -> None:
    for x in (0.1, -0.0, 5e-324, 1.7976931348623157e308, 1 / 3):
        value = wire_value(x)
        assert isinstance(value, FloatValue)
        assert math.copysign(1, value.number) == math.copysign(1, x) and value.number == x
    assert math.isnan(wire_value(float("nan")).number)
    assert wire_value(float("-inf")).number == -math.inf


def test_big_ints_round_trip() -> None:
    for n in (2**63, -(2**63) - 1, 2**64, 10**1000, 2**MAX_INT_BITS - 1, -(2**MAX_INT_BITS - 1)):
        value = wire_value(n)
        assert isinstance(value, IntValue) and value.v == n
        assert decode_input(encode(n)) == n


def test_dict_keys_become_strings() -> None:
    enc = encode({1: "a", None: 2, 2.5: 3, False: 4, ("x", 1): 5, "s": 6})
    assert [k for k, _ in enc["items"]] == ["1", "None", "2.5", "False", "<tuple>", "s"]
    assert encode({"k" * 300: 1})["items"][0][0] == "k" * 200


def test_containers_keep_order_and_kind() -> None:
    value = wire_value([(1, "a"), {"z": [None, 2.0], "a": ()}, [[True]]])
    assert isinstance(value, ListValue) and value.t == "list"
    first, second, third = value.items
    assert first.t == "tuple" and first.items == [IntValue(t="int", v=1), StrValue(t="str", v="a")]
    assert [k for k, _ in second.items] == ["z", "a"]
    assert dict(second.items)["z"].items[0] == NoneValue(t="none")
    assert third.items[0].items[0].v is True


def same(a: Any, b: Any) -> bool:
    """Equality that tells bool from int, list from tuple, and NaN equals NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**200), max_value=2**200)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
)
nested = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=4)
    | st.lists(inner, max_size=4).map(tuple)
    | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=150, deadline=None)
@given(nested)
def test_nested_values_round_trip(value: Any) -> None:
    enc = encode(value)
    text = to_json(enc)  # the harness writes with allow_nan=False: must not raise
    assert same(decode_input(json.loads(text)), value)
    wire_value(value)


# -- opaque --------------------------------------------------------------------------------


class Evil:
    """Any use of it other than its type is a failure."""

    def __eq__(self, other: Any) -> bool:
        raise AssertionError("compared")

    def __iter__(self):
        raise AssertionError("iterated")

    def __len__(self) -> int:
        raise AssertionError("measured")

    def __array__(self, *args: Any, **kwargs: Any):
        raise AssertionError("converted")


class MyInt(int):
    def __repr__(self) -> str:
        return "lies"


class MyList(list):
    pass


@pytest.mark.parametrize(
    "obj, type_name",
    [
        (Evil(), f"{__name__}.Evil"),
        (MyInt(3), f"{__name__}.MyInt"),
        (MyList([1, 2]), f"{__name__}.MyList"),
        (print, "builtins.builtin_function_or_method"),
        ({1, 2}, "builtins.set"),
        (b"bytes", "builtins.bytes"),
        (object(), "builtins.object"),
    ],
    ids=lambda x: type(x).__name__,
)
def test_other_objects_are_opaque(obj: Any, type_name: str) -> None:
    assert encode(obj) == {"t": "opaque", "type": type_name}
    value = wire_value([obj])
    assert value.items[0] == OpaqueValue(t="opaque", type=type_name)


def test_opaque_type_names_are_capped() -> None:
    cls = type("X" * 500, (), {})
    assert len(encode(cls())["type"]) == 200


# -- limits ------------------------------------------------------------------------------


def nested_lists(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def nested_dicts(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"k": value}
    return value


@pytest.mark.parametrize("build", [nested_lists, nested_dicts])
@pytest.mark.parametrize("levels", [1, 5, 32])
def test_max_depth_boundary(build, levels: int) -> None:
    encode(build(levels), max_depth=levels)
    with pytest.raises(EncodeLimit, match="nested"):
        encode(build(levels), max_depth=levels - 1)


def test_default_max_depth_is_32() -> None:
    encode(nested_lists(32))
    with pytest.raises(EncodeLimit):
        encode(nested_lists(33))


def test_pytree_leaves_count_one_level() -> None:
    tree = collections.OrderedDict(a=collections.OrderedDict(b=1))
    encode(tree, max_depth=1)  # flattened: the leaf is one level down
    with pytest.raises(EncodeLimit):
        encode(tree, max_depth=0)


@pytest.mark.parametrize("count", [0, 1, 10, 500])
def test_max_nodes_boundary(count: int) -> None:
    value = [0] * count  # the list and its items: count + 1 parts
    encode(value, max_nodes=count + 1)
    with pytest.raises(EncodeLimit, match="parts"):
        encode(value, max_nodes=count)
    nested = {"a": [None] * count}  # dict + list + items
    encode(nested, max_nodes=count + 2)
    with pytest.raises(EncodeLimit, match="parts"):
        encode(nested, max_nodes=count + 1)


def _threshold(value: Any) -> int:
    """The smallest max_bytes that encodes ``value`` (bisection; the cap is monotone)."""
    lo, hi = 0, 1 << 24
    encode(value, max_bytes=hi)
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        try:
            encode(value, max_bytes=mid)
            hi = mid
        except EncodeLimit:
            lo = mid
    return hi


@pytest.mark.parametrize(
    "value",
    [
        np.zeros(30_000, dtype=np.uint8),
        np.zeros((100, 100), dtype=np.float64),
        "x" * 9_000,
        ["abc" * 100] * 30,
        [np.ones(1000, np.float32)] * 5,
        [None] * 2_000,
    ],
    ids=["uint8", "float64", "str", "strs", "arrays", "nones"],
)
def test_max_bytes_boundary_is_sharp_and_near_the_json_size(value: Any) -> None:
    size = len(to_json(encode(value)))
    cap = _threshold(value)
    encode(value, max_bytes=cap)
    with pytest.raises(EncodeLimit, match="bytes"):
        encode(value, max_bytes=cap - 1)
    # an estimate of the JSON's size (16 bytes a node, base64 size of arrays): close to it
    assert abs(cap - size) <= size * 0.25 + 64, (size, cap)


def test_default_max_bytes_is_one_mebibyte() -> None:
    encode(np.zeros(700_000, np.uint8))  # about 933 kB of base64
    with pytest.raises(EncodeLimit):
        encode(np.zeros(800_000, np.uint8))  # about 1.07 MB


def test_long_strings() -> None:
    assert wire_value("s" * MAX_STR).v == "s" * MAX_STR
    with pytest.raises(EncodeLimit, match="string"):
        encode("s" * (MAX_STR + 1))
    with pytest.raises(EncodeLimit):
        encode({"a": ["s" * (MAX_STR + 1)]})


def test_huge_ints() -> None:
    encode(2**MAX_INT_BITS - 1)
    encode(-(2**MAX_INT_BITS - 1))
    with pytest.raises(EncodeLimit, match="int"):
        encode(2**MAX_INT_BITS)
    with pytest.raises(EncodeLimit):
        encode([1, -(2**MAX_INT_BITS)])
    with pytest.raises(EncodeLimit):
        encode(10**5000)


def test_limits_apply_inside_jax_pytrees() -> None:
    state = nnx.split(nnx.Linear(64, 64, rngs=nnx.Rngs(0)))[1]  # a 16 KiB kernel
    encode(state)
    with pytest.raises(EncodeLimit):
        encode(state, max_bytes=10_000)
    with pytest.raises(EncodeLimit):
        encode(state, max_nodes=2)
