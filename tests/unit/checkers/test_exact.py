"""The ``exact`` checker (policy in judge/checkers/exact.py) and the structure walk."""

from __future__ import annotations

import collections
from typing import Any

import hypothesis.extra.numpy as hnp
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.sharding import PartitionSpec as P

from judge.checkers import CHECKERS, get_checker, reasons
from judge.checkers.base import CheckResult
from judge.errors import ConfigError
from judge.harness.codec import encode
from judge.values import format_spec

from .support import assert_fails, assert_passes

EXACT = get_checker("exact")
STRICT = get_checker("exact", {"strict_dtype": True})
NAN_UNEQUAL = get_checker("exact", {"nan_equal": False})


def passes(expected: Any, received: Any, checker=EXACT) -> None:
    assert_passes(checker, expected, received)


def fails(expected: Any, received: Any, *secrets: str, checker=EXACT) -> CheckResult:
    return assert_fails(checker, expected, received, *secrets)


# -- configuration -----------------------------------------------------------------------


def test_registry() -> None:
    assert set(CHECKERS) == {"exact", "allclose", "sharding"}
    assert get_checker("exact").name == "exact"
    assert get_checker("exact", None).params.strict_dtype is False


@pytest.mark.parametrize(
    "name, params",
    [
        ("exakt", {}),
        ("", {}),
        ("exact", {"rtol": 1e-3}),
        ("exact", {"strict_dtype": "sometimes"}),
        ("exact", {"nan_equal": [1]}),
    ],
)
def test_bad_configuration_is_a_config_error(name: str, params: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        get_checker(name, params)


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="allclose, exact, sharding"):
        get_checker("nope")


# -- numbers and arrays ------------------------------------------------------------------


def test_equal_arrays_pass() -> None:
    passes(np.arange(6).reshape(2, 3), np.arange(6).reshape(2, 3))
    passes(np.array(31337), np.array(31337))
    passes(np.zeros((0, 3)), np.zeros((0, 3)))


def test_one_wrong_element_fails_with_a_fixed_reason_and_says_where_in_the_detail() -> None:
    exp = np.array([[1001, 2002], [3003, 4004]], dtype=np.int32)
    got = exp.copy()
    got[1, 0] = 9
    # where the wrong value is depends on the submission: only the detail says it
    result = fails(exp, got, "3003", "1001", "4004", "(1, 0)", "1 of 4")
    assert result.reason == reasons.VALUES
    assert result.detail == "1 of 4 values differ (first at index (1, 0)): expected 3003, got 9"


def test_scalars() -> None:
    passes(7, 7)
    passes(7, np.int32(7))
    passes(2.5, jnp.float32(2.5))
    passes(True, True)
    passes(True, np.bool_(True))
    fails(777, 778, "777")
    fails(True, False, "True")


def test_int_and_float_compare_by_value() -> None:
    passes(4, 4.0)
    passes(np.array([1, 2], np.int64), np.array([1.0, 2.0], np.float32))
    passes(np.array([1.0, 2.0]), np.array([1, 2], np.uint8))
    fails(4, 4.5, "4")


@pytest.mark.parametrize(
    "expected, received",
    [
        (np.array([True, False]), np.array([1, 0])),
        (np.array([1, 0]), np.array([True, False])),
        (np.array([1.0, 0.0]), np.array([True, False])),
        (True, 1),
        (1, True),
        (np.array([1.0, 2.0]), np.array([1 + 0j, 2 + 0j])),
        (3, np.complex128(3)),
    ],
    ids=["bool-int", "int-bool", "float-bool", "True-1", "1-True", "float-complex", "int-complex"],
)
def test_dtype_kinds_must_match(expected: Any, received: Any) -> None:
    result = fails(expected, received)
    assert result.reason == reasons.KIND
    assert result.detail.startswith("the result holds ")


def test_complex_expected_accepts_real_values_equal_to_it() -> None:
    passes(np.array([1 + 2j, 3 + 0j]), np.array([1 + 2j, 3 + 0j], np.complex64))
    passes(np.array([3 + 0j]), np.array([3.0]))
    passes(np.complex64(1 + 2j), np.complex128(1 + 2j))
    fails(np.array([1 + 2j]), np.array([1 + 3j]), "2j")


@pytest.mark.parametrize(
    "expected, received",
    [
        (np.zeros(2), np.zeros((1, 2))),
        (np.zeros((1, 2)), np.zeros(2)),
        (np.zeros((2, 1)), np.zeros((1, 2))),
        (np.array(5.0), np.array([5.0])),
        (np.array([5.0]), np.array(5.0)),
        (5, [5]),
        (np.zeros((0,)), np.zeros((0, 0))),
        (np.zeros(3), np.zeros(4)),
    ],
    ids=lambda a: str(np.shape(a)),
)
def test_shapes_must_be_equal_no_broadcasting(expected: Any, received: Any) -> None:
    # the received shape is the submission's to choose: in the detail, never the reason
    result = fails(expected, received, str(np.shape(expected)), str(np.shape(received)))
    assert result.reason == reasons.SHAPE
    assert result.detail == (f"the result has shape {np.shape(received)}, "
                             f"expected shape {np.shape(expected)}")


def test_nan_policy() -> None:
    nan = np.array([1.5, np.nan, 3.5])
    passes(nan, nan.copy())
    passes(float("nan"), float("nan"))
    passes(np.array([np.nan], np.float32), np.array([np.nan], np.float16))
    passes(np.array([complex(np.nan, 0)]), np.array([complex(np.nan, 0)]))
    fails(nan, nan.copy(), checker=NAN_UNEQUAL)
    fails(float("nan"), float("nan"), checker=NAN_UNEQUAL)
    fails(nan, np.array([1.5, 2.0, 3.5]), "nan")  # NaN expected, a number received
    fails(np.array([1.5, 2.5, 3.5]), nan, "2.5")  # and the other way round
    fails(np.array([1001, 2002]), np.array([1001, np.nan]), "2002")  # int: NaN never equal


def test_inf_signs() -> None:
    passes(np.array([np.inf, -np.inf]), np.array([np.inf, -np.inf], np.float32))
    fails(np.array([np.inf]), np.array([-np.inf]), "inf")
    fails(np.array([-np.inf]), np.array([np.inf]), "-inf")
    fails(np.array([np.inf]), np.array([np.finfo(np.float64).max]), "inf")
    fails(np.array([np.inf]), np.array([np.nan]), "inf")


def test_strict_dtype() -> None:
    passes(np.array([1, 2], np.int32), np.array([1, 2], np.int32), checker=STRICT)
    passes(5, 5, checker=STRICT)
    result = fails(np.array([1, 2], np.int32), np.array([1, 2], np.int64), "int32", "int64",
                   checker=STRICT)
    assert result.reason == reasons.DTYPE
    assert result.detail == "the result has dtype int64, expected int32"
    fails(np.array([1.0], np.float32), np.array([1.0], np.float64), "float32", checker=STRICT)
    fails(5, 5.0, checker=STRICT)
    fails(np.array([1], np.uint8), np.array([1], np.int8), checker=STRICT)
    passes(np.array([1], np.int32), np.array([1.0]))  # not strict: by value


def test_strict_dtype_tells_bfloat16_from_float32() -> None:
    # bfloat16 travels as float32 with orig_dtype="bfloat16"; "the very same dtype" must
    # still tell them apart (think "cast the activations to bfloat16" exercises).
    expected = jnp.array([1.0, 2.0, 0.5], dtype=jnp.bfloat16)
    fails(expected, np.array([1.0, 2.0, 0.5], dtype=np.float32), checker=STRICT)
    fails(np.array([1.0, 2.0, 0.5], dtype=np.float32), expected, checker=STRICT)
    passes(expected, jnp.array([1.0, 2.0, 0.5], dtype=jnp.bfloat16), checker=STRICT)


def test_big_ints() -> None:
    passes(2**62, 2**62)
    result = fails(5, 2**70, "5", "too large")
    assert result.reason == reasons.NOT_NUMERIC
    assert "an integer too large for int64" in result.detail


# -- lists, tuples, arrays ---------------------------------------------------------------


@pytest.mark.parametrize(
    "received",
    [[16, 8], (16, 8), np.array([16, 8]), jnp.array([16, 8]), [np.int32(16), 8.0]],
    ids=["list", "tuple", "numpy", "jax", "mixed"],
)
@pytest.mark.parametrize(
    "expected", [[16, 8], (16, 8), np.array([16, 8], np.int32)], ids=["list", "tuple", "numpy"]
)
def test_lists_tuples_and_arrays_are_interchangeable(expected: Any, received: Any) -> None:
    passes(expected, received)


def test_nested_lists_read_as_one_array() -> None:
    passes([[1, 2], [3, 4]], np.array([[1, 2], [3, 4]]))
    fails([[1, 2], [3, 4]], [1, 2, 3, 4])
    fails([[1, 2], [3, 4004]], [[1, 2], [3, 5]], "4004")
    result = fails([[1, 2], [3, 4]], [[1, 2], [3]], "ragged")
    assert result.reason == reasons.NOT_NUMERIC
    assert "ragged" in result.detail


def test_empty_list_expected() -> None:
    passes([], [])
    passes([], ())
    passes([], np.zeros(0))
    fails([], [0])


@pytest.mark.parametrize(
    "received, words",
    [
        (None, "None"),
        ("31337", "string"),
        (object(), "builtins.object"),
        ({"a": 31337}, "dict"),
        (P("x"), "PartitionSpec"),
        ([31337, None], "None"),
        (np.array([31337], dtype=object), "object"),
    ],
    ids=repr,
)
def test_non_numeric_results_fail_with_a_reason(received: Any, words: str) -> None:
    # what the result is (a type name the submission may choose) is for the detail only
    result = fails(np.array([31337]), received, "31337", words)
    assert result.reason == reasons.NOT_NUMERIC
    assert result.detail.startswith("the result is not a numeric array: it is ")
    assert words in result.detail


@settings(max_examples=100, deadline=None)
@given(
    hnp.arrays(np.int64, hnp.array_shapes(max_dims=3, max_side=4),
               elements=st.integers(10**6, 10**7)),
    st.data(),
)
def test_any_wrong_value_fails_without_showing_expected(exp: np.ndarray, data) -> None:
    got = exp.copy()
    flat = got.reshape(-1)
    k = data.draw(st.integers(0, flat.size - 1))
    flat[k] = data.draw(st.integers(0, 10**6 - 1))
    fails(exp, got, *(str(v) for v in exp.reshape(-1)))
    passes(exp, exp.copy())
    passes(exp, exp.astype(np.float64))


# -- structure ---------------------------------------------------------------------------


def test_dicts_compare_by_keys_in_any_order() -> None:
    passes({"a": 1, "b": [2, 3]}, {"b": (2, 3), "a": 1})
    # missing keys are the expected value's (ours to name); extra keys are the submission's
    result = fails({"a": 1, "b": 2}, {"a": 1})
    assert result.reason == "the keys differ: missing b"
    result = fails({"a": 1}, {"a": 1, "extra_k9": 2}, "extra_k9")
    assert result.reason == reasons.KEYS_EXTRA
    assert result.detail == "the keys differ: unexpected extra_k9"
    result = fails({"a": 1, "b": 2}, {"a": 1, "extra_k9": 2}, "extra_k9")
    assert result.reason == "the keys differ: missing b; there are keys that are not expected"
    assert result.detail == "the keys differ: missing b; unexpected extra_k9"


def test_wrong_leaf_names_its_path_once() -> None:
    result = fails({"w": [1, 2], "b": 7}, {"w": [1, 2], "b": 8}, "7", "8")
    assert result.reason == f"at ['b']: {reasons.VALUES}"
    assert result.detail == "at ['b']: 1 of 1 values differ: expected 7, got 8"
    # nested: the full path, once (not "at ['layer']: at ['layer']['b']: ...")
    result = fails({"layer": {"w": [1, 2], "b": 7}}, {"layer": {"w": [1, 2], "b": 8}}, "7")
    assert result.reason == f"at ['layer']['b']: {reasons.VALUES}"
    assert result.detail.startswith("at ['layer']['b']: 1 of 1")
    result = fails([P("a"), {"s": "x"}], [P("a"), {"s": "y"}], "'x'", "'y'")
    assert result.reason == f"at [1]['s']: {reasons.NOT_EQUAL}"
    assert result.detail == "at [1]['s']: got 'y', expected 'x'"


def test_dict_against_non_mapping() -> None:
    result = fails({"a": 1}, [1])
    assert result.reason == "the result is not a dict"
    assert result.detail == "expected a dict, got a list"
    result = fails({"a": 1}, None)
    assert result.reason == "the result is not a dict"


def test_trees_and_dicts_compare_by_paths() -> None:
    tree = collections.OrderedDict(a=np.arange(3), b=P("x", None))
    passes(tree, collections.OrderedDict(b=P("x"), a=np.arange(3)))
    fails(tree, collections.OrderedDict(a=np.arange(3), b=P(None, "x")))
    result = fails(tree, collections.OrderedDict(a=np.arange(3)))
    assert result.reason == "the keys differ: missing ['b']"


def test_a_dict_matches_a_pytree_with_the_same_keys() -> None:
    # structure.py accepts a dict for a pytree and back ("dicts and pytrees (same keys, in
    # any order)"), but pytree keys travel as key paths ("['a']") and dict keys as they are
    # ("a"), so the keys never agree and the message lists the same key as both missing and
    # unexpected.
    tree = collections.OrderedDict(a=31337, b="relu")
    passes(tree, {"b": "relu", "a": 31337})
    passes({"a": 31337, "b": "relu"}, tree)


def test_lists_and_tuples_of_non_numbers() -> None:
    passes(["a", None], ("a", None))
    passes(("a", P("x")), ["a", P("x")])
    result = fails(["a", "b"], ["a"])
    assert result.reason == "the list has the wrong number of items"
    assert result.detail == "the list has 1 items, expected 2"
    result = fails(("a", "b"), ["a"] * 1013, "1013")  # a count the submission chose
    assert result.reason == "the tuple has the wrong number of items"
    assert "1013" in result.detail
    result = fails(["a", "b"], "ab", "'ab'")
    assert result.reason == "the result is not a list"
    assert result.detail == "expected a list, got a string"


def test_strings_and_none() -> None:
    passes("relu", "relu")
    passes(None, None)
    passes({"act": "gelu"}, {"act": "gelu"})
    fails("secret-answer", "other", "secret-answer")
    fails("secret-answer", None, "secret-answer")
    fails(None, "None")
    fails(None, 0)
    fails(None, [])


@pytest.mark.parametrize(
    "expected, received",
    [
        (P("a", None), P("a")),
        (P("a"), P("a", None)),
        (P("a", None, None), P("a")),
        (P(("a",)), P("a")),
        (P("a"), P(("a",))),
        (P(("a", "b"), None), P(("a", "b"))),
        (P(), P(None, None)),
        (P(None), P()),
        (P(()), P()),
    ],
    ids=str,
)
def test_partition_specs_are_normalised(expected: P, received: P) -> None:
    passes(expected, received)


@pytest.mark.parametrize(
    "expected, received",
    [
        (P("a"), P(None, "a")),
        (P(None, "a"), P("a")),
        (P("a", "b"), P("b", "a")),
        (P(("a", "b")), P(("b", "a"))),
        (P(("a", "b")), P("a", "b")),
        (P("a"), P()),
        (P("secret"), P("other")),
    ],
    ids=str,
)
def test_different_partition_specs_fail(expected: P, received: P) -> None:
    got = format_spec(encode(received)["v"])
    result = fails(expected, received, repr(tuple(expected)), str(expected), got)
    assert result.reason == reasons.PSPEC
    assert result.detail.startswith(f"got {got}, expected P(")


def test_partition_spec_against_other_kinds() -> None:
    result = fails(P("a"), "a")
    assert result.reason == "the result is not a PartitionSpec"
    assert result.detail == "expected a PartitionSpec, got a string"
    assert fails(P("a"), None).reason == "the result is not a PartitionSpec"
    assert fails(P("a"), ["a"]).detail == "expected a PartitionSpec, got a list"


def test_nnx_state_matches_its_pure_dict() -> None:
    import jax
    from flax import nnx

    _, state = nnx.split(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    specs = jax.tree_util.tree_map(lambda v: P(None, "m") if v.ndim == 2 else P("m"), state)
    pure = {"kernel": P(None, "m"), "bias": P("m")}
    passes(specs, pure)
    passes(pure, specs)
    result = fails(specs, {"kernel": P("m"), "bias": P("m")})
    assert result.reason == f"at ['kernel']: {reasons.PSPEC}"
