"""Encoded values on the trusted side: validation, conversion to NumPy, display.

The format is written by ``judge.harness.codec`` inside the sandbox; here each value is
validated against these models (unknown tags or fields, bad base64, a byte count that
does not match the shape, NaN as a JSON number, an unbounded number: all rejected) and
only then turned into NumPy arrays built from the bytes. No object of the submission ever
reaches this side, so nothing is ever compared with its own ``__eq__``.

An array's layout is worked out here, not believed: the sandbox reports the spec, the
mesh (axis names, sizes, device ids) and each per-device buffer's device and shape, and
:meth:`ArrayValue.shards` computes which slice every device holds
(:mod:`judge.harness.layout`); buffers that do not fit the layout their array claims are
refused, as a malformed value.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable, Collection
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    TypeAdapter,
    model_validator,
)

from judge.harness.codec import ALLOWED_DTYPES
from judge.harness.layout import LayoutError, shard_indices

MAX_DIMS = 32
MAX_NAME = 500
MAX_DIM = 1 << 40
MAX_DEVICES = 1 << 16

DType = Literal[
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
]
assert set(DType.__args__) == ALLOWED_DTYPES  # type: ignore[attr-defined]
SpecEntry = Annotated[str, Field(max_length=MAX_NAME)] | None | Annotated[
    list[Annotated[str, Field(max_length=MAX_NAME)]], Field(max_length=MAX_DIMS)
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


Dim = Annotated[StrictInt, Field(ge=0, le=MAX_DIM)]
DeviceId = Annotated[StrictInt, Field(ge=0, le=1 << 31)]


class NoneValue(_Model):
    t: Literal["none"]


class BoolValue(_Model):
    t: Literal["bool"]
    v: StrictBool


class IntValue(_Model):
    t: Literal["int"]
    v: StrictInt  # at most 4,000 digits: Python's own int parsing limit (4,300) applies


class FloatValue(_Model):
    t: Literal["float"]
    v: StrictFloat | Literal["nan", "inf", "-inf"]

    @property
    def number(self) -> float:
        return float(self.v)


class StrValue(_Model):
    t: Literal["str"]
    v: str = Field(max_length=10_000)


class Shard(_Model):
    """The part of an array one device holds: its shape and its slice of every dimension."""

    device: DeviceId
    shape: list[Dim] = Field(max_length=MAX_DIMS)
    index: list[tuple[Dim, Dim]] | None = Field(default=None, max_length=MAX_DIMS)


class Buffer(_Model):
    """What the sandbox reports of one per-device buffer: where it is and its shape."""

    device: DeviceId
    shape: list[Dim] = Field(max_length=MAX_DIMS)


class ShardingInfo(_Model):
    kind: Literal["NamedSharding", "SingleDeviceSharding", "other"]
    spec: list[SpecEntry] | None = Field(default=None, max_length=MAX_DIMS)
    mesh_axes: list[Annotated[str, Field(max_length=MAX_NAME)]] | None = Field(
        default=None, max_length=MAX_DIMS)
    mesh_shape: list[Annotated[StrictInt, Field(ge=1, le=MAX_DEVICES)]] | None = Field(
        default=None, max_length=MAX_DIMS)
    mesh_devices: list[DeviceId] | None = Field(default=None, max_length=MAX_DEVICES)
    buffers: list[Buffer] | None = Field(default=None, max_length=MAX_DEVICES)
    shards: list[Shard] = Field(
        default_factory=list, max_length=MAX_DEVICES,
        description="Stored by builds before the judge computed layouts itself; a value "
        "from a sandbox reports buffers instead.")


class ArrayValue(_Model):
    t: Literal["array"]
    dtype: DType
    shape: list[Dim] = Field(max_length=MAX_DIMS)
    data: str
    orig_dtype: Literal["bfloat16"] | None = None
    sharding: ShardingInfo | None = None

    @model_validator(mode="after")
    def _bytes_fit(self) -> ArrayValue:
        self._raw()
        self.shards()
        return self

    def _raw(self) -> bytes:
        needed = math.prod(self.shape) * np.dtype(self.dtype).itemsize
        if len(self.data) != 4 * ((needed + 2) // 3):
            raise ValueError(f"array data has the wrong length for shape {self.shape}")
        try:
            raw = base64.b64decode(self.data, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"array data is not base64: {exc}") from None
        if len(raw) != needed:
            raise ValueError(f"array data has {len(raw)} bytes, shape {self.shape} needs {needed}")
        return raw

    def shards(self) -> dict[int, Shard]:
        """Device id -> the shard it holds, worked out from the layout the array claims and
        checked against the buffers the sandbox reported (ValueError when they disagree).
        Empty for an array without a sharding."""
        info = self.sharding
        if info is None:
            return {}
        if info.buffers is None:  # stored by an older build, with JAX's own indices
            return {s.device: s for s in info.shards}
        if info.shards:
            raise ValueError("an array reports both buffers and shards")
        reported = {b.device: tuple(b.shape) for b in info.buffers}
        if len(reported) != len(info.buffers):
            raise ValueError("two buffers of the array are on one device")
        if info.kind == "NamedSharding":
            if info.spec is None or info.mesh_axes is None or info.mesh_shape is None \
                    or info.mesh_devices is None:
                raise ValueError("a NamedSharding without its spec or mesh")
            try:
                where = shard_indices(info.spec, info.mesh_axes, info.mesh_shape,
                                      info.mesh_devices, self.shape)
            except LayoutError as exc:
                raise ValueError(f"the array's layout is impossible: {exc}") from None
            shards = {d: Shard(device=d, shape=[b - a for a, b in index],
                               index=[(a, b) for a, b in index])
                      for d, index in where.items()}
        elif info.kind == "SingleDeviceSharding":
            if len(reported) != 1:
                raise ValueError("a single-device array with several buffers")
            whole = [(0, n) for n in self.shape]
            shards = {d: Shard(device=d, shape=list(self.shape), index=whole) for d in reported}
        else:  # a layout the judge does not read: shapes as reported, no slices
            return {d: Shard(device=d, shape=list(s)) for d, s in reported.items()}
        if {d: tuple(s.shape) for d, s in shards.items()} != reported:
            raise ValueError("the array's buffers do not match its layout")
        return shards

    def to_numpy(self) -> np.ndarray:
        """Rebuild the array from its bytes (checked against dtype and shape)."""
        dtype = np.dtype(self.dtype).newbyteorder("<")
        arr = np.frombuffer(self._raw(), dtype=dtype).astype(dtype.newbyteorder("="))
        return arr.reshape(self.shape)


class ListValue(_Model):
    t: Literal["list", "tuple"]
    items: list[Value]


class DictValue(_Model):
    t: Literal["dict"]
    items: list[tuple[Annotated[str, Field(max_length=MAX_NAME)], Value]]


class PSpecValue(_Model):
    t: Literal["pspec"]
    v: list[SpecEntry] = Field(max_length=MAX_DIMS)


class NamedShardingValue(_Model):
    t: Literal["named_sharding"]
    spec: list[SpecEntry] = Field(max_length=MAX_DIMS)
    mesh_axes: list[Annotated[str, Field(max_length=MAX_NAME)]] = Field(max_length=MAX_DIMS)
    mesh_shape: list[Annotated[StrictInt, Field(ge=1, le=MAX_DEVICES)]] = Field(
        max_length=MAX_DIMS)


class TreeValue(_Model):
    t: Literal["tree"]
    type: str = Field(max_length=200)
    items: list[tuple[Annotated[str, Field(max_length=MAX_NAME)], Value]]


class OpaqueValue(_Model):
    t: Literal["opaque"]
    type: str = Field(max_length=200)


Value = Annotated[
    NoneValue
    | BoolValue
    | IntValue
    | FloatValue
    | StrValue
    | ArrayValue
    | ListValue
    | DictValue
    | PSpecValue
    | NamedShardingValue
    | TreeValue
    | OpaqueValue,
    Field(discriminator="t"),
]

for _model in (ListValue, DictValue, TreeValue):
    _model.model_rebuild()


class NotNumeric(ValueError):
    """The value cannot be read as a numeric array; the message says why, briefly."""


_KIND_NAMES = {
    "none": "None",
    "str": "a string",
    "dict": "a dict",
    "pspec": "a PartitionSpec",
    "named_sharding": "a NamedSharding",
    "tree": "a pytree",
}


def to_numeric(value: Any) -> np.ndarray:
    """Convert an encoded value to a NumPy array of bool, int, float or complex.

    Arrays and scalars convert directly; lists and tuples convert when their items do and
    have one shape (ragged or empty-of-type lists become float64 or fail). Anything else
    raises :class:`NotNumeric`.
    """
    if isinstance(value, ArrayValue):
        try:
            return value.to_numpy()
        except ValueError as exc:
            raise NotNumeric(str(exc)) from None
    if isinstance(value, BoolValue):
        return np.array(value.v, dtype=np.bool_)
    if isinstance(value, IntValue):
        if not -(2**63) <= value.v < 2**63:
            raise NotNumeric("an integer too large for int64")
        return np.array(value.v, dtype=np.int64)
    if isinstance(value, FloatValue):
        return np.array(value.number, dtype=np.float64)
    if isinstance(value, ListValue):
        parts = [to_numeric(item) for item in value.items]
        if not parts:
            return np.zeros((0,), dtype=np.float64)
        shapes = {p.shape for p in parts}
        if len(shapes) != 1:
            raise NotNumeric("a ragged list (items of different shapes)")
        return np.stack(parts)
    if isinstance(value, OpaqueValue):
        raise NotNumeric(f"an object of type {value.type}")
    name = _KIND_NAMES.get(getattr(value, "t", ""), "a value")
    raise NotNumeric(f"{name}, not a number or an array")


def normalize_spec(spec: list[Any] | None, trivial_axes: Collection[str] = ()) -> tuple[Any, ...]:
    """A PartitionSpec as JAX means it: ``('data',)`` is ``'data'``, ``()`` is ``None``,
    and trailing ``None`` entries are dropped (``P('data', None) == P('data')``).

    ``trivial_axes`` are mesh axes of size 1: splitting over one changes nothing, so they
    are dropped too (on a ``data=8, model=1`` mesh ``P('data', 'model')`` is ``P('data')``,
    which is how JAX itself reports some such layouts)."""
    out: list[Any] = []
    for entry in spec or []:
        if isinstance(entry, list):
            entry = [e for e in entry if e not in trivial_axes]
            entry = None if not entry else entry[0] if len(entry) == 1 else tuple(entry)
        elif entry in trivial_axes:
            entry = None
        out.append(entry)
    while out and out[-1] is None:
        out.pop()
    return tuple(out)


def format_spec(spec: list[Any] | tuple[Any, ...] | None) -> str:
    parts = []
    for entry in spec or []:
        if isinstance(entry, list | tuple):
            parts.append("(" + ", ".join(repr(e) for e in entry) + ("," if len(entry) == 1 else "") + ")")
        else:
            parts.append(repr(entry))
    return f"P({', '.join(parts)})"


def render(value: Any, limit: int = 2_000) -> str:
    """A short, human-readable text for a value, cut at ``limit`` characters."""
    return _cut(_render(value, _render_array), limit)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _render_array(value: ArrayValue) -> str:
    try:
        arr = value.to_numpy()
    except ValueError as exc:
        return f"<invalid array: {exc}>"
    body = np.array2string(arr, threshold=64, separator=", ")
    if len(body) > 1_000:
        body = body[:997] + "..."
    text = f"{body} ({value.dtype}, shape {tuple(value.shape)})"
    if value.sharding is not None and value.sharding.spec is not None:
        text += f" sharded {format_spec(value.sharding.spec)}"
    return text


def _render(value: Any, array: Callable[[ArrayValue], str]) -> str:
    """``value`` as text, each array (at any depth) as ``array`` writes it."""
    if isinstance(value, ArrayValue):
        return array(value)
    if isinstance(value, NoneValue):
        return "None"
    if isinstance(value, BoolValue | IntValue | StrValue):
        return repr(value.v)
    if isinstance(value, FloatValue):
        return repr(value.number)
    if isinstance(value, ListValue):
        inner = ", ".join(_render(v, array) for v in value.items)
        return f"[{inner}]" if value.t == "list" else f"({inner}{',' if len(value.items) == 1 else ''})"
    if isinstance(value, DictValue | TreeValue):
        inner = ", ".join(f"{k}: {_render(v, array)}" for k, v in value.items)
        return "{" + inner + "}" if isinstance(value, DictValue) else f"{value.type}({inner})"
    if isinstance(value, PSpecValue):
        return format_spec(value.v)
    if isinstance(value, NamedShardingValue):
        mesh = ", ".join(f"{a}={s}" for a, s in zip(value.mesh_axes, value.mesh_shape, strict=False))
        return f"NamedSharding(mesh({mesh}), {format_spec(value.spec)})"
    if isinstance(value, OpaqueValue):
        return f"<{value.type}>"
    return "<?>"


VALUE: TypeAdapter[Any] = TypeAdapter(Value)


SMALL_INPUT = 16  # elements: a sample input array this small is shown in full


def render_input(encoded: dict[str, Any], limit: int = 500) -> str:
    """A test input for a student: an array of at most ``SMALL_INPUT`` elements in full,
    a larger one summarised (dtype, shape, and its smallest, mean and largest values),
    at any depth of a list or dict; everything else by value. Cut at ``limit``."""
    return _cut(_render(VALUE.validate_python(encoded), _input_array), limit)


def _input_array(value: ArrayValue) -> str:
    try:
        arr = value.to_numpy()
    except ValueError as exc:
        return f"<invalid array: {exc}>"
    where = f"{value.dtype} array of shape {tuple(value.shape)}"
    if arr.size <= SMALL_INPUT:
        body = np.array2string(arr, separator=", ", precision=4)
        return f"{body} ({value.dtype}, shape {tuple(value.shape)})"
    if arr.dtype.kind in "biuf":
        finite = arr[np.isfinite(arr)] if arr.dtype.kind == "f" else arr
        if finite.size:
            numbers = finite.astype(np.float64)
            return (f"<{where}: min {numbers.min():.4g}, mean {numbers.mean():.4g}, "
                    f"max {numbers.max():.4g}>")
    return f"<{where}>"
