"""A test's inputs: decoded from the value format and made the call's arguments.

Inputs come from the trusted side (``judge.generate`` encodes them with
:mod:`judge.harness.codec`) and use a subset of the format: ``none``, ``bool``, ``int``,
``float``, ``str``, ``array``, ``list``, ``tuple`` and ``dict``. Each argument is then made
the kind its parameter declares: ``float``, ``int``, ``array`` (a ``jax.Array``),
``numpy`` (a NumPy array); ``str``, ``bool`` and ``any`` as decoded.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np


def decode_input(enc: dict[str, Any]) -> Any:
    """Turn an encoded test input back into Python and NumPy values."""
    tag = enc["t"]
    if tag == "none":
        return None
    if tag in ("bool", "int", "str"):
        return enc["v"]
    if tag == "float":
        v = enc["v"]
        return float(v) if isinstance(v, str) else v
    if tag == "array":
        dtype = np.dtype(enc["dtype"]).newbyteorder("<")
        raw = base64.b64decode(enc["data"])
        return np.frombuffer(raw, dtype=dtype).astype(dtype.newbyteorder("=")).reshape(enc["shape"])
    if tag == "list":
        return [decode_input(v) for v in enc["items"]]
    if tag == "tuple":
        return tuple(decode_input(v) for v in enc["items"])
    if tag == "dict":
        return {k: decode_input(v) for k, v in enc["items"]}
    raise ValueError(f"cannot decode an input tagged {tag!r}")


def convert(value: Any, kind: str, jnp: Any, np: Any) -> Any:
    """A decoded value as the kind its parameter declares."""
    if kind == "float":
        return float(value)
    if kind == "int":
        return int(value)
    if kind == "array":
        return jnp.asarray(value)
    if kind == "numpy":
        return np.asarray(value)
    return value


def arguments(test: dict[str, Any], jnp: Any, np: Any) -> list[Any]:
    """The call's arguments from a ``test`` message (its ``args`` and their ``kinds``)."""
    return [convert(decode_input(a), k, jnp, np)
            for a, k in zip(test["args"], test["kinds"], strict=True)]
