"""judge.harness.inputs: a test's encoded inputs decoded and made the call's arguments."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from judge.harness.codec import encode
from judge.harness.inputs import arguments, decode_input


def test_decode_input_gives_writable_native_arrays() -> None:
    arr = np.arange(6, dtype=">f4").reshape(3, 2)
    back = decode_input(encode(arr))
    assert back.dtype == np.float32 and back.dtype.isnative
    assert back.flags.writeable
    np.testing.assert_array_equal(back, arr)


def test_decode_input_scalars() -> None:
    assert math.isnan(decode_input({"t": "float", "v": "nan"}))
    assert decode_input({"t": "float", "v": "-inf"}) == -math.inf
    assert decode_input({"t": "float", "v": 2.5}) == 2.5
    assert decode_input({"t": "dict", "items": [["a", {"t": "tuple", "items": []}]]}) == {"a": ()}


@pytest.mark.parametrize("tag", ["pspec", "opaque", "tree", "named_sharding", "nope"])
def test_decode_input_refuses_output_only_tags(tag: str) -> None:
    with pytest.raises(ValueError, match=tag):
        decode_input({"t": tag, "v": [], "type": "x", "items": []})


def test_each_argument_becomes_the_kind_its_parameter_declares() -> None:
    host = np.arange(4, dtype=np.float32)
    test = {"args": [encode(2), encode(3.0), encode(host), encode(host), encode([1, "a"])],
            "kinds": ["float", "int", "array", "numpy", "any"]}
    x, n, arr, ndarray, anything = arguments(test, jnp, np)
    assert type(x) is float and x == 2.0
    assert type(n) is int and n == 3
    assert isinstance(arr, jax.Array)
    np.testing.assert_array_equal(np.asarray(arr), host)
    assert type(ndarray) is np.ndarray and ndarray.dtype == np.float32
    assert anything == [1, "a"]
    with pytest.raises(ValueError):
        arguments({"args": [encode(1)], "kinds": []}, jnp, np)  # one kind per argument
