"""Encode Python, NumPy and JAX values as tagged JSON.

This is the sandbox side of the value format (test inputs are decoded by
:mod:`judge.harness.inputs`). The trusted side never trusts it: it
validates what arrives with the pydantic models in ``judge.values``, rebuilds NumPy
arrays from the bytes itself and works out array layouts itself. The format (one JSON
object per value, tag ``t``):

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
                   carries ``"sharding"``: its kind, and for a NamedSharding the spec and
                   the mesh (axis names, sizes, device ids in mesh order), and the device
                   and shape of every per-device buffer
``list``/``tuple`` ``{"items": [...]}``
``dict``           ``{"items": [[key, value], ...]}``, keys turned into strings
``pspec``          a ``PartitionSpec``: ``{"v": [null, "model", ["data", "model"]]}``
``named_sharding`` ``{"spec": [...], "mesh_axes": [...], "mesh_shape": [...]}``
``tree``           any other registered pytree (``nnx.State``, ...):
                   ``{"type": "State", "items": [[path, value], ...]}``
``opaque``         anything else: ``{"type": "module.Class"}``; never compared
=================  =============================================================

**Binding.** The submission runs in the same interpreter as the harness and may replace
anything reachable by name: ``jax.Array.sharding``, a function of this module through
``sys.modules``, ``np.asarray``. So :func:`make_encoder` is called before the submission
loads and binds everything encoding uses (builtins, NumPy functions, JAX's types and the
C++ getters of ``ArrayImpl``, ``NamedSharding``, ``PartitionSpec``) in a closure; a
``jax.Array`` is only read if its type is exactly JAX's ``ArrayImpl``, its layout only
through that type's own C++ members, and its data from its per-device buffers, put
together by a function :func:`judge.harness.layout.make_assembler` binds at the same time.
Values of any other type that claim to be arrays, shardings or specs are opaque. What the
binding cannot stop (a submission rewriting the closure, writing protocol lines by hand)
the integrity check catches or docs/security.md lists.

Encoding stops with :class:`EncodeLimit` when the value is nested deeper than
``max_depth``, has more than ``max_nodes`` parts, or its JSON would exceed ``max_bytes``.
"""

from __future__ import annotations

import base64
import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from judge.harness.layout import make_assembler

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
MAX_KEY = 200

Encoder = Callable[..., dict[str, Any]]


class EncodeLimit(Exception):
    """The value is too large or too deeply nested to be sent back."""


class _Budget:
    def __init__(self, max_depth: int, max_nodes: int, max_bytes: int) -> None:
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self.max_bytes = max_bytes
        self.nodes = 0
        self.bytes = 0


def _jax_parts() -> dict[str, Any] | None:
    """JAX's types and the C++ getters the encoder reads layouts with; None without JAX."""
    jax = sys.modules.get("jax")
    if jax is None:
        return None
    from jax._src.array import ArrayImpl
    from jax._src.lib import _jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

    device_type = _jax.Device
    array = ArrayImpl.__dict__
    return {
        "ArrayImpl": ArrayImpl,
        "raw_sharding": array["_sharding"].fget,
        "raw_buffers": array["_arrays"].fget,
        "buffer_to_numpy": array["_single_device_array_to_np_array_did_copy"],
        "NamedSharding": NamedSharding,
        "ns_spec": NamedSharding.__dict__["spec"].fget,
        "ns_mesh": NamedSharding.__dict__["mesh"].fget,
        "SingleDeviceSharding": SingleDeviceSharding,
        "sds_device": SingleDeviceSharding.__dict__["_device"].fget,
        "PartitionSpec": PartitionSpec,
        "spec_parts": PartitionSpec.__dict__["_partitions"].__get__,
        "Mesh": Mesh,
        "Device": device_type,
        "device_id": device_type.__dict__["id"].fget,
        "flatten": jax.tree_util.tree_flatten_with_path,
        "keystr": jax.tree_util.keystr,
    }


def make_encoder() -> Encoder:
    """An ``encode(value, *, max_depth=32, max_nodes=100_000, max_bytes=1 << 20)`` with
    every name it uses bound now (see the module docstring)."""
    _type, _len, _int, _str, _float = type, len, int, str, float
    _list, _tuple, _dict, _sorted = list, tuple, dict, sorted
    _isinstance, _vars, _hasattr = isinstance, vars, hasattr
    _none, _bool, _complex, _bytes = type(None), bool, complex, bytes
    isnan, isinf = math.isnan, math.isinf
    b64encode = base64.b64encode
    ndarray, generic, np_asarray = np.ndarray, np.generic, np.asarray
    ascontiguous = np.ascontiguousarray
    view_as_ndarray = np.ndarray.view
    allowed, max_str, max_int_bits = ALLOWED_DTYPES, MAX_STR, MAX_INT_BITS
    limit, assemble = EncodeLimit, make_assembler()
    jx = _jax_parts()

    def charge(budget: _Budget, depth: int, nbytes: int = 16) -> None:
        budget.nodes += 1
        budget.bytes += nbytes
        if depth > budget.max_depth:
            raise limit(f"the value is nested more than {budget.max_depth} levels deep")
        if budget.nodes > budget.max_nodes:
            raise limit(f"the value has more than {budget.max_nodes} parts")
        if budget.bytes > budget.max_bytes:
            raise limit(f"the encoded value exceeds {budget.max_bytes} bytes")

    def opaque(value: Any) -> dict[str, Any]:
        kind = _type(value)
        return {"t": "opaque", "type": f"{kind.__module__}.{kind.__qualname__}"[:200]}

    def number(value: float) -> float | str:
        if isnan(value):
            return "nan"
        if isinf(value):
            return "inf" if value > 0 else "-inf"
        return value

    def key(k: Any) -> str:
        if _type(k) in (_str, _int, _float, _bool) or k is None:
            return _str(k)[:MAX_KEY]
        return f"<{_type(k).__name__}>"[:MAX_KEY]

    def array(arr: Any, budget: _Budget, depth: int, sharding: Any = None) -> dict[str, Any]:
        if _type(arr) is not ndarray:  # a subclass may override anything: take its buffer
            arr = view_as_ndarray(arr, ndarray)
        orig = None
        name = arr.dtype.name
        if name == "bfloat16":
            orig, arr = name, arr.astype(np.float32)
        elif name not in allowed:
            return {"t": "opaque", "type": f"numpy.ndarray[{name}]"[:200]}
        charge(budget, depth, arr.nbytes * 4 // 3 + 64)
        data = ascontiguous(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
        out: dict[str, Any] = {
            "t": "array",
            "dtype": arr.dtype.name,
            "shape": [_int(s) for s in arr.shape],
            "data": b64encode(data).decode("ascii"),
        }
        if orig:
            out["orig_dtype"] = orig
        if sharding is not None:
            out["sharding"] = sharding
        return out

    def spec(value: Any) -> list[Any] | None:
        """A PartitionSpec's entries; None if it is not exactly JAX's PartitionSpec."""
        assert jx is not None
        if _type(value) is not jx["PartitionSpec"]:
            return None
        entries: list[Any] = []
        for entry in jx["spec_parts"](value):
            if entry is None or _type(entry) is _str:
                entries.append(entry)
            elif _type(entry) is _tuple and all(_type(e) is _str for e in entry):
                entries.append([e for e in entry])
            else:  # PartitionSpec.UNCONSTRAINED and friends
                entries.append(f"<{_type(entry).__name__}>"[:100])
        return entries

    def mesh(value: Any) -> tuple[list[str], list[int], list[int]] | None:
        """A Mesh's axis names, sizes and device ids; None if it is not exactly a Mesh."""
        assert jx is not None
        if _type(value) is not jx["Mesh"]:
            return None
        fields = _vars(value)
        axes, devices = fields.get("axis_names"), fields.get("devices")
        if _type(axes) is not _tuple or _type(devices) is not ndarray:
            return None
        if not all(_type(a) is _str for a in axes) or _len(axes) != devices.ndim:
            return None
        ids = []
        for device in devices.flat:
            if _type(device) is not jx["Device"]:
                return None
            ids.append(_int(jx["device_id"](device)))
        return [a for a in axes], [_int(s) for s in devices.shape], ids

    def named(value: Any) -> dict[str, Any] | None:
        assert jx is not None
        if _type(value) is not jx["NamedSharding"]:
            return None
        entries, grid = spec(jx["ns_spec"](value)), mesh(jx["ns_mesh"](value))
        if entries is None or grid is None:
            return None
        return {"spec": entries, "mesh_axes": grid[0], "mesh_shape": grid[1],
                "mesh_devices": grid[2]}

    def buffer_device(where: Any) -> int | None:
        """The device of a one-device buffer: a SingleDeviceSharding's, or the one device
        of a NamedSharding over a mesh of one (an array on one device is its own buffer)."""
        assert jx is not None
        if _type(where) is jx["SingleDeviceSharding"]:
            return _int(jx["device_id"](jx["sds_device"](where)))
        if _type(where) is jx["NamedSharding"]:
            grid = mesh(jx["ns_mesh"](where))
            if grid is not None and _len(grid[2]) == 1:
                return grid[2][0]
        return None

    def jax_array(value: Any, budget: _Budget, depth: int) -> dict[str, Any]:
        """Read through ArrayImpl's own C++ members only; put the data together here
        (with the bound ``assemble``)."""
        assert jx is not None
        buffers = jx["raw_buffers"](value)
        if _type(buffers) is not _list or not buffers:
            return {"t": "opaque", "type": "jax.Array (deleted)"}
        parts = []
        for buf in buffers:
            if _type(buf) is not jx["ArrayImpl"]:
                return opaque(value)
            device = buffer_device(jx["raw_sharding"](buf))
            if device is None:
                return opaque(value)
            host, _ = jx["buffer_to_numpy"](buf)
            if _type(host) is not ndarray:
                return opaque(value)
            parts.append((device, host))
        sharding = jx["raw_sharding"](value)
        info: dict[str, Any]
        if _type(sharding) is jx["NamedSharding"]:
            described = named(sharding)
            if described is None:
                return opaque(value)
            info = {"kind": "NamedSharding", **described}
        elif _type(sharding) is jx["SingleDeviceSharding"]:
            info = {"kind": "SingleDeviceSharding"}
        else:
            info = {"kind": "other"}
        info["buffers"] = _sorted(({"device": d, "shape": [_int(s) for s in h.shape]}
                                   for d, h in parts), key=lambda b: b["device"])
        host = assemble(info, parts)
        return array(host, budget, depth, info)

    def tree(value: Any, budget: _Budget, depth: int) -> dict[str, Any] | None:
        assert jx is not None

        def is_leaf(x: Any) -> bool:
            return _type(x) in (jx["PartitionSpec"], jx["NamedSharding"])

        try:
            leaves, treedef = jx["flatten"](value, is_leaf=is_leaf)
        except Exception:
            return None
        if treedef.num_nodes == 1 and _len(leaves) == 1 and leaves[0][1] is value:
            return None  # not a container
        items = [[_str(jx["keystr"](path))[:500], encode_one(leaf, budget, depth + 1)]
                 for path, leaf in leaves]
        return {"t": "tree", "type": _str(_type(value).__qualname__)[:200], "items": items}

    def encode_one(value: Any, budget: _Budget, depth: int) -> dict[str, Any]:
        charge(budget, depth)
        kind = _type(value)  # exact types: subclasses could lie about themselves
        if kind is _none:
            return {"t": "none"}
        if kind is _bool:
            return {"t": "bool", "v": value}
        if kind is _int:
            if value.bit_length() > max_int_bits:
                raise limit("an int of more than 4,000 digits")
            return {"t": "int", "v": value}
        if kind is _float:
            return {"t": "float", "v": number(value)}
        if kind is _complex:
            return array(np_asarray(value), budget, depth)
        if kind is _str:
            if _len(value) > max_str:
                raise limit(f"a string longer than {max_str} characters")
            charge(budget, depth, _len(value))
            return {"t": "str", "v": value}
        if _isinstance(value, ndarray | generic):
            return array(np_asarray(value), budget, depth)
        if jx is not None:
            if kind is jx["ArrayImpl"]:
                return jax_array(value, budget, depth)
            if kind is jx["PartitionSpec"]:
                entries = spec(value)
                return {"t": "pspec", "v": entries}
            if kind is jx["NamedSharding"]:
                described = named(value)
                if described is None:
                    return opaque(value)
                described.pop("mesh_devices")
                return {"t": "named_sharding", **described}
        if kind is _list or kind is _tuple or _isinstance(value, _tuple) and _hasattr(
                kind, "_fields"):  # a namedtuple (a jnp.linalg result, an optax state)
            tag = "list" if kind is _list else "tuple"
            return {"t": tag, "items": [encode_one(v, budget, depth + 1) for v in _list(value)]}
        if kind is _dict:
            return {"t": "dict",
                    "items": [[key(k), encode_one(v, budget, depth + 1)]
                              for k, v in _list(value.items())]}
        if jx is not None:
            found = tree(value, budget, depth)
            if found is not None:
                return found
        return opaque(value)

    def encode(value: Any, *, max_depth: int = 32, max_nodes: int = 100_000,
               max_bytes: int = 1 << 20) -> dict[str, Any]:
        return encode_one(value, _Budget(max_depth, max_nodes, max_bytes), 0)

    return encode


def encode(value: Any, *, max_depth: int = 32, max_nodes: int = 100_000,
           max_bytes: int = 1 << 20) -> dict[str, Any]:
    """Encode ``value`` with a freshly bound encoder (the trusted side's convenience; the
    harness binds its own once, before the submission loads)."""
    return make_encoder()(value, max_depth=max_depth, max_nodes=max_nodes, max_bytes=max_bytes)
