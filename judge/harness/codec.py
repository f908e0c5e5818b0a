"""Encode Python, NumPy and JAX values as tagged JSON, and decode test inputs.

This is the sandbox side of the value format. The trusted side never trusts it: it
validates what arrives with the pydantic models in ``judge.values`` and rebuilds NumPy
arrays from the bytes itself. The format (one JSON object per value, tag ``t``):

=================  =============================================================
``none``           ``None``
``bool``           ``{"v": true}``
``int``            ``{"v": 3}`` (Python ints of up to 4,000 digits); a Python ``complex``
                   travels as a 0-d complex128 array
``float``          ``{"v": 1.5}``; NaN and infinities as ``"nan"``, ``"inf"``, ``"-inf"``
``str``            ``{"v": "..."}``
``array``          ``{"dtype", "shape", "data"}``: ``data`` is base64 of the C-order,
                   little-endian bytes; NumPy scalars and ``jax.Array`` too; bfloat16
                   travels as float32 with ``"orig_dtype": "bfloat16"``; a ``jax.Array``
                   carries ``"sharding"`` (kind, spec, mesh axes and shape, and each
                   device's shard shape and index)
``list``/``tuple`` ``{"items": [...]}``
``dict``           ``{"items": [[key, value], ...]}``, keys turned into strings
``pspec``          a ``PartitionSpec``: ``{"v": [null, "model", ["data", "model"]]}``
``named_sharding`` ``{"spec": [...], "mesh_axes": [...], "mesh_shape": [...]}``
``tree``           any other registered pytree (``nnx.State``, ...):
                   ``{"type": "State", "items": [[path, value], ...]}``
``opaque``         anything else: ``{"type": "module.Class"}``; never compared
=================  =============================================================

Encoding stops with :class:`EncodeLimit` when the value is nested deeper than
``max_depth``, has more than ``max_nodes`` parts, or its JSON would exceed ``max_bytes``.
"""

from __future__ import annotations

import base64
import math
import sys
from typing import Any

import numpy as np

ALLOWED_DTYPES = frozenset(
    [
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    ]
)
MAX_STR = 10_000
MAX_INT_BITS = 13_288  # 4,000 decimal digits, under Python's int_max_str_digits (4,300)


class EncodeLimit(Exception):
    """The value is too large or too deeply nested to be sent back."""


class _Budget:
    def __init__(self, max_depth: int, max_nodes: int, max_bytes: int) -> None:
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self.max_bytes = max_bytes
        self.nodes = 0
        self.bytes = 0

    def charge(self, depth: int, nbytes: int = 16) -> None:
        self.nodes += 1
        self.bytes += nbytes
        if depth > self.max_depth:
            raise EncodeLimit(f"the value is nested more than {self.max_depth} levels deep")
        if self.nodes > self.max_nodes:
            raise EncodeLimit(f"the value has more than {self.max_nodes} parts")
        if self.bytes > self.max_bytes:
            raise EncodeLimit(f"the encoded value exceeds {self.max_bytes} bytes")


def encode(
    value: Any, *, max_depth: int = 32, max_nodes: int = 100_000, max_bytes: int = 1 << 20
) -> dict[str, Any]:
    """Encode ``value``; raise :class:`EncodeLimit` when it is over the limits."""
    return _encode(value, _Budget(max_depth, max_nodes, max_bytes), 0)


def _jax() -> Any:
    return sys.modules.get("jax")


def _encode(value: Any, budget: _Budget, depth: int) -> dict[str, Any]:
    budget.charge(depth)
    jax = _jax()
    # Exact types first: subclasses of bool/int/str could lie about themselves.
    kind = type(value)
    if value is None:
        return {"t": "none"}
    if kind is bool:
        return {"t": "bool", "v": value}
    if kind is int:
        if value.bit_length() > MAX_INT_BITS:
            raise EncodeLimit("an int of more than 4,000 digits")
        return {"t": "int", "v": value}
    if kind is float:
        return {"t": "float", "v": _float(value)}
    if kind is complex:
        return _array(np.asarray(value), budget, depth, None)
    if kind is str:
        if len(value) > MAX_STR:
            raise EncodeLimit(f"a string longer than {MAX_STR} characters")
        budget.charge(depth, len(value))
        return {"t": "str", "v": value}
    if isinstance(value, np.ndarray | np.generic):
        return _array(np.asarray(value), budget, depth, None)
    if jax is not None:
        if isinstance(value, jax.Array):
            return _array(_to_host(value), budget, depth, _sharding(value))
        from jax.sharding import NamedSharding, PartitionSpec

        if isinstance(value, PartitionSpec):
            return {"t": "pspec", "v": _spec(value)}
        if isinstance(value, NamedSharding):
            return {
                "t": "named_sharding",
                "spec": _spec(value.spec),
                "mesh_axes": [str(a) for a in value.mesh.axis_names],
                "mesh_shape": [int(s) for s in value.mesh.devices.shape],
            }
    if kind is list or kind is tuple or isinstance(value, tuple) and hasattr(value, "_fields"):
        tag = "list" if kind is list else "tuple"
        return {"t": tag, "items": [_encode(v, budget, depth + 1) for v in list(value)]}
    if kind is dict:
        return {
            "t": "dict",
            "items": [[_key(k), _encode(v, budget, depth + 1)] for k, v in list(value.items())],
        }
    if jax is not None:
        tree = _tree(value, budget, depth, jax)
        if tree is not None:
            return tree
    return {"t": "opaque", "type": f"{kind.__module__}.{kind.__qualname__}"[:200]}


def _float(value: float) -> float | str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def _key(key: Any) -> str:
    if type(key) in (str, int, float, bool) or key is None:
        return str(key)[:200]
    return f"<{type(key).__name__}>"


def _to_host(value: Any) -> np.ndarray:
    # Reassemble a (possibly sharded) jax.Array on the host.
    return np.asarray(value)


def _array(arr: np.ndarray, budget: _Budget, depth: int, sharding: Any) -> dict[str, Any]:
    if type(arr) is not np.ndarray:  # a subclass may override anything: take its buffer
        arr = np.ndarray.view(arr, np.ndarray)
    orig = None
    name = arr.dtype.name
    if name == "bfloat16":
        orig, arr = name, arr.astype(np.float32)
    elif name not in ALLOWED_DTYPES:
        return {"t": "opaque", "type": f"numpy.ndarray[{name}]"[:200]}
    budget.charge(depth, arr.nbytes * 4 // 3 + 64)
    data = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
    out: dict[str, Any] = {
        "t": "array",
        "dtype": arr.dtype.name,
        "shape": [int(s) for s in arr.shape],
        "data": base64.b64encode(data).decode("ascii"),
    }
    if orig:
        out["orig_dtype"] = orig
    if sharding is not None:
        out["sharding"] = sharding
    return out


def _spec(spec: Any) -> list[Any]:
    entries: list[Any] = []
    for entry in tuple(spec):
        if entry is None:
            entries.append(None)
        elif isinstance(entry, str):
            entries.append(entry)
        elif isinstance(entry, tuple | list):
            entries.append([str(e) for e in entry])
        else:  # PartitionSpec.UNCONSTRAINED and friends
            entries.append(f"<{entry!s}>"[:100])
    return entries


def _sharding(value: Any) -> dict[str, Any] | None:
    from jax.sharding import NamedSharding

    sharding = value.sharding
    out: dict[str, Any] = {"kind": type(sharding).__name__}
    if isinstance(sharding, NamedSharding):
        out["spec"] = _spec(sharding.spec)
        out["mesh_axes"] = [str(a) for a in sharding.mesh.axis_names]
        out["mesh_shape"] = [int(s) for s in sharding.mesh.devices.shape]
    shards = []
    for shard in value.addressable_shards:
        index = []
        for dim, sl in zip(value.shape, shard.index, strict=False):
            start, stop, _ = sl.indices(dim)
            index.append([int(start), int(stop)])
        shards.append(
            {
                "device": int(shard.device.id),
                "shape": [int(s) for s in shard.data.shape],
                "index": index,
            }
        )
    out["shards"] = sorted(shards, key=lambda s: s["device"])
    return out


def _tree(value: Any, budget: _Budget, depth: int, jax: Any) -> dict[str, Any] | None:
    from jax.sharding import NamedSharding, PartitionSpec

    def is_leaf(x: Any) -> bool:
        return isinstance(x, PartitionSpec | NamedSharding)

    try:
        leaves, treedef = jax.tree_util.tree_flatten_with_path(value, is_leaf=is_leaf)
    except Exception:
        return None
    if treedef.num_nodes == 1 and len(leaves) == 1 and leaves[0][1] is value:
        return None  # not a container
    items = [
        [jax.tree_util.keystr(path)[:500], _encode(leaf, budget, depth + 1)]
        for path, leaf in leaves
    ]
    return {"t": "tree", "type": type(value).__qualname__[:200], "items": items}


# -- inputs ------------------------------------------------------------------------------


def decode_input(enc: dict[str, Any]) -> Any:
    """Turn an encoded test input back into Python and NumPy values.

    Inputs come from the trusted side and use a subset of the format: ``none``,
    ``bool``, ``int``, ``float``, ``str``, ``array``, ``list``, ``tuple`` and ``dict``.
    """
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
