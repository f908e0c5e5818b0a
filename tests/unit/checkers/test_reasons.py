"""A hidden test's reason never carries text or numbers the submission chose.

A submission could otherwise smuggle a hidden test's input out of the judge through its
failure message: a class named after the input, a dict key, a mesh axis name, an array
whose shape, count of wrong values or first wrong index encodes it. So every checker's
``reason`` must be one of the fixed sentences of :mod:`judge.checkers.reasons`, filled
only from the *expected* value (its key paths, keys and devices), and everything about
the received value goes in the ``detail`` (shown for sample tests only).

The property is fuzzed: hypothesis draws expected values (arrays, sharded jax arrays,
lists, dicts, pytrees, specs, shardings, strings, None) and hostile received values full
of markers (text containing ``LEAK``, numbers that nothing in an expected value here
could produce), and every checker must give reasons free of the markers that match
``reasons.pattern`` for the expected value.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable
from functools import cache
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

from judge.checkers import get_checker, reasons
from judge.checkers.base import Checker, CheckResult
from judge.checkers.structure import flatten
from judge.values import ArrayValue, DictValue, ListValue, TreeValue

from ..conftest import wire_value

TEXT = "LEAK"  # every string the submission chooses here contains it
VALUE_MARK = 7391846  # a wrong value
SHAPE_MARK = 5230417  # a dimension of a (zero-size) array
LENGTH_MARK = 12721  # the length of a list
INDEX_MARK = 3187  # the first wrong index of a 1-d array (BIG below)
COUNT_MARK = 709  # how many of its values are wrong
NUMBERS = (VALUE_MARK, SHAPE_MARK, LENGTH_MARK, INDEX_MARK, COUNT_MARK)

BIG = np.arange(4096, dtype=np.float64) * 0.5 + 3.0
HOST = np.arange(64, dtype=np.float32).reshape(8, 8) + 0.25

CHECKERS: list[Checker] = [
    get_checker("exact"),
    get_checker("exact", {"strict_dtype": True, "nan_equal": False}),
    get_checker("allclose"),
    get_checker("allclose", {"rtol": 0.0, "atol": 0.0, "equal_nan": False}),
    get_checker("sharding"),
    get_checker("sharding", {"check_placement": True}),
    get_checker("sharding", {"check_values": False, "check_placement": True}),
]


# -- meshes and the submission's marker types --------------------------------------------


@cache
def mesh() -> Mesh:
    return Mesh(np.array(jax.devices()).reshape(2, 4), ("data", "model"))


@cache
def leak_mesh() -> Mesh:
    """The same devices and sizes, under axis names the submission chose."""
    return Mesh(np.array(jax.devices()).reshape(2, 4), ("LEAK_ax_d", "LEAK_ax_m"))


@cache
def reversed_mesh() -> Mesh:
    """The expected axis names and sizes, the devices in another order (placement)."""
    return Mesh(np.array(jax.devices())[::-1].reshape(2, 4), ("data", "model"))


LeakObject = type("LEAK_cls_7f3a", (), {})
LeakKey = type("LEAK_keycls_91c", (), {})
LeakPair = collections.namedtuple("LEAK_nt_2b", ["LEAK_f_a", "LEAK_f_b"])  # type: ignore[misc]


class LeakModule(nnx.Module):
    def __init__(self) -> None:
        self.LEAK_param_w = nnx.Param(jnp.zeros(3))


LeakTree = type("LEAK_tree_5e1", (), {"__init__": lambda self, kids: setattr(self, "kids", kids)})
jax.tree_util.register_pytree_node(
    LeakTree, lambda t: (t.kids, None), lambda _, kids: LeakTree(list(kids)))


def put(value: np.ndarray, spec: P, on: Mesh | None = None) -> jax.Array:
    return jax.device_put(value, NamedSharding(on or mesh(), spec))


# -- expected values ---------------------------------------------------------------------


def sharded_state() -> Any:
    with jax.set_mesh(mesh()):
        model = nnx.Linear(8, 4, rngs=nnx.Rngs(0), kernel_init=nnx.with_partitioning(
            nnx.initializers.lecun_normal(), (None, "model")))
    return nnx.state(model)


EXPECTED: dict[str, Callable[[], Any]] = {
    "big-1d": lambda: BIG.copy(),
    "0d": lambda: np.array(2.5),
    "ints": lambda: np.arange(12, dtype=np.int32).reshape(3, 4),
    "bools": lambda: np.array([True, False, True]),
    "complex": lambda: np.array([1 + 2j, 3 - 1j], np.complex64),
    "bf16": lambda: jnp.array([1.0, 2.0, 0.5], jnp.bfloat16),
    "int": lambda: 42,
    "float": lambda: 2.5,
    "bool": lambda: True,
    "none": lambda: None,
    "str": lambda: "gelu",
    "pspec": lambda: P("data", None),
    "pspec-tuple": lambda: P(("data", "model")),
    "named-sharding": lambda: NamedSharding(mesh(), P("data")),
    "sharded-2d": lambda: put(HOST, P("data", "model")),
    "sharded-rows": lambda: put(HOST, P("data")),
    "sharded-tuple": lambda: put(HOST, P(("data", "model"))),
    "replicated": lambda: put(HOST, P()),
    "single-device": lambda: jax.device_put(HOST, jax.devices()[2]),
    "list": lambda: ["relu", 3, None],
    "tuple": lambda: (1.5, "x", P("model")),
    "strings": lambda: ["a", "b", "c", "d"],
    "dict": lambda: {"w": np.ones((2, 3)), "b": np.zeros(3), "act": "gelu"},
    "nested": lambda: {"layer": {"w": np.eye(2), "spec": P(None, "model")}, "name": "mlp"},
    "sharded-dict": lambda: {"w": put(HOST, P(None, "model")), "b": put(HOST[0], P("model"))},
    "list-of-sharded": lambda: [put(HOST, P("data")), put(HOST, P(None, "model"))],
    "ordered": lambda: collections.OrderedDict(w=np.full(3, 0.5), spec=P("data", None)),
    "state": lambda: nnx.state(nnx.Linear(2, 3, rngs=nnx.Rngs(0))),
    "sharded-state": sharded_state,
}

small_arrays = hnp.arrays(
    st.sampled_from([np.float32, np.int32, np.bool_, np.complex64]),
    hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4),
    elements={"allow_nan": False, "allow_infinity": False, "min_value": -9, "max_value": 9},
)
expected_values = st.sampled_from(sorted(EXPECTED)).map(lambda name: EXPECTED[name]()) | small_arrays


# -- hostile received values -------------------------------------------------------------


def generic_hostiles() -> list[Callable[[], Any]]:
    """Values whose every distinguishing feature is a marker, whatever was expected."""
    return [
        LeakObject,
        lambda: "LEAK_str_33e",
        lambda: {"LEAK_key_a1": 1, "LEAK_key_b2": "LEAK_val"},
        lambda: {LeakKey(): 1.5},
        lambda: collections.OrderedDict(LEAK_od_key=np.zeros(2)),
        lambda: LeakPair(1, "LEAK_x"),
        lambda: LeakTree([1.0, "LEAK_kid"]),
        lambda: nnx.state(LeakModule()),
        lambda: P("LEAK_ax_d", None),
        lambda: P(("LEAK_ax_d", "LEAK_ax_m")),
        lambda: NamedSharding(leak_mesh(), P("LEAK_ax_d")),
        lambda: put(HOST, P("LEAK_ax_d", "LEAK_ax_m"), leak_mesh()),
        lambda: np.zeros((0, SHAPE_MARK)),
        lambda: np.zeros((SHAPE_MARK, 0), np.int8),
        lambda: [None] * LENGTH_MARK,
        lambda: [VALUE_MARK] * 3,
        lambda: VALUE_MARK,
        lambda: float(VALUE_MARK) + 0.5,
        lambda: np.full((2, 3), VALUE_MARK),
        lambda: [np.zeros(2), np.zeros(SHAPE_MARK % 7)],  # ragged
        lambda: np.array([LeakObject()], dtype=object),
        lambda: None,
    ]


def wrong_at_marks(value: np.ndarray) -> np.ndarray:
    """``value`` with COUNT_MARK values wrong from INDEX_MARK on (a 1-d array of BIG's size),
    or with VALUE_MARK at its last position."""
    got = np.array(value, dtype=np.float64 if value.dtype.kind != "c" else value.dtype)
    if got.shape == BIG.shape:
        got[INDEX_MARK:INDEX_MARK + COUNT_MARK] = VALUE_MARK
    elif got.size:
        got.reshape(-1)[-1] = VALUE_MARK
    else:
        got = np.full((1, SHAPE_MARK % 5 + 1), VALUE_MARK)
    return got


@st.composite
def hostile(draw: st.DrawFn, expected: Any) -> Any:
    """A received value for ``expected``: a generic marker value, or ``expected`` with a
    marker put into it where the submission could choose what goes."""
    generic = generic_hostiles()
    if draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(generic))()
    return draw(mutation(expected))


@st.composite
def mutation(draw: st.DrawFn, expected: Any) -> Any:
    leak = draw(st.sampled_from(generic_hostiles()))
    kind = type(expected)
    if kind is dict or kind is collections.OrderedDict or isinstance(expected, nnx.State):
        items = dict(nnx.to_pure_dict(expected) if isinstance(expected, nnx.State) else expected)
        key = draw(st.sampled_from(sorted(items)))
        how = draw(st.sampled_from(["replace", "add", "swap-key", "drop"]))
        if how == "replace":
            items[key] = draw(mutation(items[key]))
        elif how == "add":
            items["LEAK_extra_k"] = leak()
        elif how == "swap-key":
            items["LEAK_renamed"] = items.pop(key)
        else:
            del items[key]
        return items
    if kind is list or kind is tuple:
        items = list(expected)
        how = draw(st.sampled_from(["replace", "append", "long"]))
        if how == "replace" and items:
            i = draw(st.integers(0, len(items) - 1))
            items[i] = draw(mutation(items[i]))
        elif how == "long":
            items = ["x"] * LENGTH_MARK
        else:
            items.append(leak())
        return kind(items)
    if isinstance(expected, jax.Array) and isinstance(expected.sharding, NamedSharding):
        host = np.asarray(expected)
        spec = expected.sharding.spec
        options: list[Callable[[], Any]] = [
            lambda: put(host, P(*(["LEAK_ax_d", "LEAK_ax_m"][:host.ndim])), leak_mesh()),
            lambda: put(host, spec, reversed_mesh()),
            lambda: put(wrong_at_marks(host).astype(host.dtype), spec),
            lambda: put(host, P(*reversed(["data", "model"][:host.ndim]))),
            lambda: host,
            lambda: jax.device_put(host, jax.devices()[5]),
            lambda: np.zeros((0, SHAPE_MARK), host.dtype),
        ]
        return draw(st.sampled_from(options))()
    if isinstance(expected, np.ndarray | np.generic | jax.Array):
        host = np.asarray(expected)
        options = [
            lambda: wrong_at_marks(host),
            lambda: np.zeros((0, SHAPE_MARK), host.dtype),
            lambda: np.zeros((*host.shape, 0)),
            lambda: host.astype(np.bool_) if host.dtype != np.bool_ else host.astype(np.int64),
            lambda: host.astype(np.complex128) + 1j,
            lambda: host.real.astype(np.float64 if host.dtype != np.float64 else np.float32),
            lambda: put(np.zeros((8, 8), np.float32), P("LEAK_ax_d"), leak_mesh()),
        ]
        return draw(st.sampled_from(options))()
    if kind is P:
        return draw(st.sampled_from([P("LEAK_ax_d"), P(None, "LEAK_ax_m"), P("model", "data")]))
    if kind is NamedSharding:
        return draw(st.sampled_from([
            NamedSharding(leak_mesh(), P("LEAK_ax_d")),
            NamedSharding(Mesh(np.array(jax.devices()).reshape(4, 2), ("data", "model")),
                          P("data")),
            NamedSharding(mesh(), P("model")),
        ]))
    return leak()


# -- what a reason may say, from the expected value only ---------------------------------


def allowed(expected: Any) -> tuple[set[str], set[str], set[int]]:
    """The key paths a reason may start ``at``, the keys it may call missing, and the
    devices it may name: all of the expected value, with structure.py's path syntax
    (``['key']`` for a dict key, ``[0]`` for a list item, a pytree's own key paths, and
    the flattened paths used where a pytree stands for a list or a dict)."""
    paths: set[str] = set()
    keys: set[str] = set()
    devices: set[int] = set()

    def walk(value: Any, path: str) -> None:
        if path:
            paths.add(path)
        if isinstance(value, ArrayValue):
            devices.update(value.shards())
        if isinstance(value, ListValue):
            for i, item in enumerate(value.items):
                walk(item, f"{path}[{i}]")
        if isinstance(value, DictValue):
            for key, item in value.items:
                keys.add(key)
                walk(item, path + (key if key.startswith(("[", ".")) else f"[{key!r}]"))
        if isinstance(value, ListValue | DictValue | TreeValue):
            for key, leaf in flatten(value).items():
                keys.add(key)
                walk(leaf, path + key)

    walk(expected, "")
    return paths, keys, devices


def fits(reason: str, paths: set[str], keys: set[str], devices: set[int]) -> bool:
    return reasons.pattern(paths, keys, devices).fullmatch(reason) is not None


def assert_safe(result: CheckResult, expected: Any) -> None:
    if result.passed:
        return
    assert result.reason and result.detail
    assert TEXT not in result.reason, result
    for number in NUMBERS:
        assert not re.search(rf"\b{number}\b", result.reason), (number, result)
    assert fits(result.reason, *allowed(expected)), result


# -- the property ------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_hidden_reasons_carry_nothing_the_submission_chose(data: st.DataObject) -> None:
    expected = data.draw(expected_values, label="expected")
    received = data.draw(hostile(expected), label="received")
    exp, got = wire_value(expected), wire_value(received)
    for checker in CHECKERS:
        assert_safe(checker.check(exp, got), exp)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_reasons_inside_structures_name_only_expected_paths(data: st.DataObject) -> None:
    """Every expected value wrapped in a dict and a list, so that a failure deep inside
    is reported ``at`` a path the expected value has."""
    inner = data.draw(expected_values, label="inner")
    expected = {"outer": [inner, "fixed"], "n": 1}
    received = {"outer": [data.draw(hostile(inner), label="received"), "fixed"], "n": 1}
    exp, got = wire_value(expected), wire_value(received)
    for checker in CHECKERS:
        result = checker.check(exp, got)
        assert_safe(result, exp)
        if not result.passed and result.reason.startswith("at "):
            assert result.reason.startswith("at ['outer'][0]")


# -- the markers do reach the checkers (so the property is not vacuous) -------------------


@pytest.mark.parametrize(
    "expected, received, marker",
    [
        (BIG, lambda: wrong_at_marks(BIG), str(INDEX_MARK)),
        (BIG, lambda: wrong_at_marks(BIG), f"{COUNT_MARK} of 4096"),
        (HOST, lambda: np.zeros((0, SHAPE_MARK)), str(SHAPE_MARK)),
        (["a", "b"], lambda: ["a"] * LENGTH_MARK, str(LENGTH_MARK)),
        (np.zeros(2), lambda: np.full(2, VALUE_MARK), str(VALUE_MARK)),
        (np.zeros(2), LeakObject, "LEAK_cls_7f3a"),
        ({"w": 1}, lambda: {"w": 1, "LEAK_key_a1": 2}, "LEAK_key_a1"),
        ({"w": 1}, lambda: {"w": 1, LeakKey(): 2}, "LEAK_keycls_91c"),
        (P("data"), lambda: P("LEAK_ax_d"), "LEAK_ax_d"),
        (lambda: put(HOST, P("data")), lambda: put(HOST, P("LEAK_ax_d"), leak_mesh()),
         "LEAK_ax_d"),
        (lambda: NamedSharding(mesh(), P("data")),
         lambda: NamedSharding(leak_mesh(), P("LEAK_ax_d")), "LEAK_ax_m"),
        ("gelu", lambda: "LEAK_str_33e", "LEAK_str_33e"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_the_markers_reach_the_detail_and_not_the_reason(expected: Any, received: Any,
                                                         marker: str) -> None:
    exp = wire_value(expected() if callable(expected) else expected)
    got = wire_value(received())
    results = [checker.check(exp, got) for checker in CHECKERS]
    failed = [r for r in results if not r.passed]  # values or layout, as the case is
    assert any(marker in r.detail for r in failed), results
    for result in results:
        assert_safe(result, exp)


def test_a_length_reason_fits_the_pattern() -> None:
    result = get_checker("exact").check(wire_value(["a", "b"]), wire_value(["a"]))
    assert result.reason == "the list has the wrong number of items"
    assert reasons.pattern(set(), set(), set()).fullmatch(result.reason)
