"""The ``allclose`` checker: |got - exp| <= atol + rtol * |exp| (judge/checkers/allclose.py)."""

from __future__ import annotations

import collections
from fractions import Fraction
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from jax.sharding import PartitionSpec as P

from judge.checkers import get_checker, reasons
from judge.checkers.base import CheckResult
from judge.errors import ConfigError

from ..conftest import wire_value as w
from .support import assert_fails, assert_passes

DEFAULT = get_checker("allclose")


def check(expected: Any, received: Any, **params: Any) -> CheckResult:
    return get_checker("allclose", params).check(w(expected), w(received))


def passes(expected: Any, received: Any, **params: Any) -> None:
    assert_passes(get_checker("allclose", params), expected, received)


def fails(expected: Any, received: Any, *secrets: str, **params: Any) -> CheckResult:
    return assert_fails(get_checker("allclose", params), expected, received, *secrets)


def test_defaults() -> None:
    assert DEFAULT.params.rtol == 1e-5
    assert DEFAULT.params.atol == 1e-8
    assert DEFAULT.params.equal_nan is True


@pytest.mark.parametrize(
    "params",
    [
        {"rtol": -1e-3},
        {"atol": -1.0},
        {"rtol": "tight"},
        {"tolerance": 1e-3},
        {"strict_dtype": True},
        {"equal_nan": "maybe"},
    ],
    ids=repr,
)
def test_bad_params_are_config_errors(params: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="allclose"):
        get_checker("allclose", params)


# -- tolerance ---------------------------------------------------------------------------


def test_within_default_tolerance() -> None:
    passes(np.array([1.0, 2.0]), np.array([1.0 + 5e-6, 2.0 - 1e-5]))
    passes(np.float32(0.1), 0.1)
    passes(0.0, 5e-9)
    fails(0.0, 2e-8)
    fails(1234.5678, 1234.6, "1234.5678")


@pytest.mark.parametrize(
    "exp, got, rtol, atol, ok",
    [
        (100.0, 100.5, 0.01, 0.0, True),
        (100.0, 101.0, 0.01, 0.0, True),  # exactly on the boundary
        (100.0, 101.25, 0.01, 0.0, False),
        (100.0, 98.75, 0.01, 0.0, False),
        (0.0, 0.25, 0.0, 0.25, True),
        (0.0, -0.5, 0.0, 0.25, False),
        (10.0, 10.75, 0.05, 0.25, True),  # 0.25 + 0.5
        (10.0, 10.875, 0.05, 0.25, False),
        (5.0, 5.0, 0.0, 0.0, True),
        (5.0, np.nextafter(5.0, 6.0), 0.0, 0.0, False),
    ],
)
def test_tolerance_boundaries(exp: float, got: float, rtol: float, atol: float, ok: bool) -> None:
    result = check(np.array([exp]), np.array([got]), rtol=rtol, atol=atol)
    assert result.passed is ok


def test_tolerance_is_relative_to_the_expected_value() -> None:
    # |19 - 10| = 9 > 0.5 * 10, but |10 - 19| = 9 <= 0.5 * 19
    fails(10.0, 19.0, rtol=0.5, atol=0.0)
    passes(19.0, 10.0, rtol=0.5, atol=0.0)


finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(
    exp=finite,
    got=finite,
    rtol=st.sampled_from([0.0, 1e-7, 1e-5, 1e-3, 0.1]),
    atol=st.sampled_from([0.0, 1e-8, 1e-4, 1.0]),
)
def test_tolerance_rule_matches_exact_arithmetic(exp: float, got: float, rtol: float,
                                                 atol: float) -> None:
    diff = abs(Fraction(got) - Fraction(exp))
    bound = Fraction(atol) + Fraction(rtol) * abs(Fraction(exp))
    # away from the boundary, where float64 rounding cannot decide it
    assume(diff == 0 or diff <= bound * Fraction(99, 100) or diff >= bound * Fraction(101, 100))
    result = check(exp, got, rtol=rtol, atol=atol)
    assert result.passed is (diff <= bound)
    if not result.passed:
        assert repr(exp) not in result.reason


@settings(max_examples=100, deadline=None)
@given(
    exp=st.floats(min_value=1e-3, max_value=1e6),
    rtol=st.floats(min_value=1e-6, max_value=0.1),
    atol=st.floats(min_value=0.0, max_value=1.0),
    sign=st.sampled_from([-1.0, 1.0]),
)
def test_tolerance_just_inside_and_just_outside(exp: float, rtol: float, atol: float,
                                                sign: float) -> None:
    tol = atol + rtol * exp
    passes(np.array([exp]), np.array([exp + sign * tol * 0.98]), rtol=rtol, atol=atol)
    fails(np.array([exp]), np.array([exp + sign * tol * 1.02]), repr(exp), rtol=rtol, atol=atol)


def test_zero_tolerance_means_exact() -> None:
    passes(np.array([0.1, 0.2]), np.array([0.1, 0.2]), rtol=0, atol=0)
    fails(np.array([0.1]), np.array([0.1 + 1e-17 + 2**-56]), rtol=0, atol=0)


# -- NaN and inf -------------------------------------------------------------------------


def test_nan_equals_nan_by_default() -> None:
    passes(np.array([1.0, np.nan]), np.array([1.0, np.nan]))
    passes(float("nan"), np.float32("nan"))
    passes(np.array([complex(np.nan, np.nan)]), np.array([complex(np.nan, np.nan)]))


def test_nan_with_equal_nan_off() -> None:
    result = fails(np.array([1.0, np.nan]), np.array([1.0, np.nan]), equal_nan=False)
    assert result.reason == reasons.VALUES
    assert result.detail.startswith("1 of 2 values differ (first at index (1,))")
    fails(float("nan"), float("nan"), equal_nan=False)


def test_nan_never_matches_a_number() -> None:
    fails(np.array([np.nan]), np.array([0.0]), atol=1e300)
    fails(np.array([0.0]), np.array([np.nan]), atol=1e300)
    fails(np.array([np.nan]), np.array([np.inf]))
    fails(np.array([1.0, np.nan]), np.array([np.nan, 1.0]))


def test_inf_matches_only_inf_of_the_same_sign() -> None:
    passes(np.array([np.inf, -np.inf]), np.array([np.inf, -np.inf]))
    passes(np.float32("inf"), float("inf"))
    fails(np.array([np.inf]), np.array([-np.inf]), atol=1e300, rtol=1.0)
    fails(np.array([-np.inf]), np.array([np.inf]), atol=1e300, rtol=1.0)
    fails(np.array([np.inf]), np.array([1e308]), atol=1e300, rtol=1.0)
    fails(np.array([1e308]), np.array([np.inf]), rtol=1.0)


# -- shapes and kinds --------------------------------------------------------------------


@pytest.mark.parametrize(
    "expected, received",
    [
        (np.zeros(2), np.zeros((1, 2))),
        (np.zeros((1, 2)), np.zeros(2)),
        (np.zeros((3, 1)), np.zeros((3, 3))),
        (np.array(1.0), np.array([1.0])),
        (np.array([1.0]), 1.0),
        ([1.0, 2.0], [[1.0, 2.0]]),
    ],
    ids=lambda a: str(np.shape(a)),
)
def test_no_broadcasting(expected: Any, received: Any) -> None:
    result = fails(expected, received, str(np.shape(expected)), str(np.shape(received)),
                   rtol=1.0, atol=1.0)
    assert result.reason == reasons.SHAPE
    assert result.detail == (f"the result has shape {np.shape(received)}, "
                             f"expected shape {np.shape(expected)}")


def test_int_and_float_are_interchangeable() -> None:
    passes(np.array([1, 2, 3]), np.array([1.0, 2.0, 3.0 + 1e-6]))
    passes(np.array([1.0, 2.0]), np.array([1, 2], np.int8))
    passes(3, jnp.float32(3.0))
    passes(np.array([2**40], np.uint64), np.array([2.0**40]))


def test_bool_matches_only_bool() -> None:
    passes(np.array([True, False]), np.array([True, False]))
    fails(np.array([True, False]), np.array([True, True]))
    result = fails(np.array([True, False]), np.array([1.0, 0.0]))
    assert result.reason == reasons.KIND
    assert result.detail == "the result holds float values, expected bool"
    result = fails(np.array([1.0, 0.0]), np.array([True, False]))
    assert result.reason == reasons.KIND
    assert result.detail == "the result holds bool values, expected float"
    fails(1, True)


def test_complex() -> None:
    passes(np.array([1 + 1j]), np.array([1 + 1j + 1e-7], np.complex64))
    passes(np.array([2 + 0j]), np.array([2.0]))  # real result for a complex expected value
    fails(np.array([1 + 1j]), np.array([1 + 1.1j]))
    result = fails(np.array([2.0]), np.array([2 + 0j]))  # complex result, real expected
    assert result.reason == reasons.KIND
    assert result.detail == "the result holds complex values, expected float"


def test_bfloat16_results_are_compared_by_value() -> None:
    x = np.array([0.1, 1.7, -3.3], np.float32)
    got = jnp.asarray(x, dtype=jnp.bfloat16)
    passes(x, got, rtol=1e-2)
    fails(x, got, rtol=1e-6, atol=0)


def test_lists_tuples_arrays() -> None:
    passes([0.5, 1.5], (0.5, 1.5 + 1e-9))
    passes((0.5, 1.5), jnp.array([0.5, 1.5]))
    passes(np.array([[0.5], [1.5]]), [[0.5], [1.5]])


@pytest.mark.parametrize(
    "received, words",
    [
        (None, "None"),
        ("0.7071", "string"),
        (object(), "builtins.object"),
        ({"x": 0.7071}, "dict"),
        ([0.7071, "x"], "string"),
    ],
    ids=repr,
)
def test_non_numeric_results(received: Any, words: str) -> None:
    result = fails(np.array([0.7071]), received, "0.7071", words)
    assert result.reason == reasons.NOT_NUMERIC
    assert result.detail.startswith("the result is not a numeric array: it is ")
    assert words in result.detail


def test_reason_is_fixed_and_the_detail_counts_and_locates() -> None:
    exp = np.array([[123.456, 789.012], [345.678, 901.234]])
    got = exp.copy()
    got[0, 1] += 1
    got[1, 1] -= 1
    # the count and the index depend on what the submission returned: detail only
    result = fails(exp, got, "123.456", "789.012", "345.678", "901.234", "789", "901",
                   "790", "900", "2 of 4", "(0, 1)")
    assert result.reason == reasons.VALUES
    assert result.detail.startswith("2 of 4 values differ (first at index (0, 1)): ")
    assert "789.012" in result.detail and "790.012" in result.detail


# -- structure ---------------------------------------------------------------------------


def test_tolerance_applies_to_leaves_of_a_structure() -> None:
    exp = {"loss": 0.25, "grads": {"w": np.ones((2, 2)), "b": np.zeros(2)}, "name": "mlp"}
    good = {"loss": 0.25 + 1e-7, "grads": {"w": np.ones((2, 2)) + 1e-7, "b": np.zeros(2)},
            "name": "mlp"}
    passes(exp, good)
    bad = {**good, "loss": 0.3}
    result = fails(exp, bad, "0.25", "0.3")
    assert result.reason == f"at ['loss']: {reasons.VALUES}"
    result = fails(exp, {**good, "name": "cnn"}, "mlp", "cnn")
    assert result.reason == f"at ['name']: {reasons.NOT_EQUAL}"
    assert "'cnn'" in result.detail
    result = fails(exp, {"loss": 0.25, "grads": good["grads"]})
    assert result.reason == "the keys differ: missing name"  # an expected key: ours to name


def test_tree_with_specs_and_arrays() -> None:
    exp = collections.OrderedDict(w=np.full(3, 0.5), spec=P("data", None))
    passes(exp, collections.OrderedDict(spec=P("data"), w=np.full(3, 0.5 + 1e-9)))
    result = fails(exp, collections.OrderedDict(w=np.full(3, 0.5), spec=P(None, "data")),
                   "P(None, 'data')")
    assert result.reason == f"at ['spec']: {reasons.PSPEC}"
    assert "got P(None, 'data')" in result.detail
    result = fails(exp, collections.OrderedDict(w=np.full(3, 0.6), spec=P("data")))
    assert result.reason == f"at ['w']: {reasons.VALUES}"
    assert result.detail.startswith("at ['w']: 3 of 3 values differ")


def test_list_of_mixed_leaves() -> None:
    passes(["ok", 1.0, None], ("ok", 1.0 + 1e-9, None))
    result = fails(["ok", 1.0, None], ["ok", 1.1, None])
    assert result.reason == f"at [1]: {reasons.VALUES}"


# -- per-path tolerances -----------------------------------------------------------------

STEP = {"loss": np.float32(2.0),
        "params": {"hidden": {"kernel": np.ones((2, 2), np.float32),
                              "bias": np.ones(2, np.float32)},
                   "out": {"kernel": np.ones((2, 1), np.float32)}}}


def off_by(tree: Any, where: tuple[str, ...], delta: float) -> Any:
    """A copy of ``tree`` with the leaf at ``where`` moved by ``delta``."""
    if not where:
        return tree + np.asarray(delta, np.asarray(tree).dtype)
    return {k: off_by(v, where[1:], delta) if k == where[0] else v for k, v in tree.items()}


def test_a_tolerance_set_for_a_subtree_applies_to_its_leaves_only() -> None:
    loose = {"tolerances": {"params.hidden": {"atol": 0.1}}}
    passes(STEP, off_by(STEP, ("params", "hidden", "kernel"), 0.05), **loose)
    passes(STEP, off_by(STEP, ("params", "hidden", "bias"), 0.05), **loose)
    # Not a prefix on a key boundary, and another subtree: the problem's own tolerance.
    result = fails(STEP, off_by(STEP, ("params", "out", "kernel"), 0.05), **loose)
    assert result.reason.startswith("at ['params']['out']['kernel']: ")
    fails(STEP, off_by(STEP, ("params", "hidden", "kernel"), 0.05),
          tolerances={"params.hid": {"atol": 0.1}})


def test_the_longest_path_wins_and_an_unset_bound_is_the_problems() -> None:
    params = {"atol": 0.2, "tolerances": {"params": {"atol": 0.1},
                                          "params.hidden.kernel": {"rtol": 0.0}}}
    # params.hidden.kernel: rtol 0 from its own entry, atol 0.2 from the problem's.
    passes(STEP, off_by(STEP, ("params", "hidden", "kernel"), 0.15), **params)
    # params.hidden.bias: the 'params' entry's atol 0.1.
    fails(STEP, off_by(STEP, ("params", "hidden", "bias"), 0.15), **params)
    passes(STEP, off_by(STEP, ("params", "hidden", "bias"), 0.05), **params)
    passes(STEP, off_by(STEP, ("loss",), 0.15), **params)


def test_tolerances_name_list_items_and_pytree_leaves_by_dotted_paths() -> None:
    # (A list of arrays of one shape is one array: its items are leaves when they differ.)
    two = [np.ones(2, np.float32), np.ones(3, np.float32)]
    passes(two, [two[0], two[1] + 0.5], tolerances={"1": {"atol": 1.0}})
    fails(two, [two[0] + 0.5, two[1]], tolerances={"1": {"atol": 1.0}})
    from judge.checkers.structure import dotted
    assert dotted("['params']['hidden'][0]") == "params.hidden.0"
    assert dotted(".hidden.kernel") == "hidden.kernel"
    assert dotted("['it\\'s']") == "it\\'s"


@pytest.mark.parametrize("bad", [{"": {"atol": 1}}, {"a..b": {"atol": 1}},
                                 {"a": {"atol": -1}}, {"a": {"tol": 1}}])
def test_a_bad_tolerance_is_a_config_error(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        get_checker("allclose", {"tolerances": bad})
