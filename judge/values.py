"""Encoded values on the trusted side: validation, conversion to NumPy, display.

The format is written by ``judge.harness.codec`` inside the sandbox; here each value is
validated against these models (unknown tags or fields, bad base64, a byte count that
does not match the shape: all rejected) and only then turned into NumPy arrays built from
the bytes. No object of the submission ever reaches this side, so nothing is ever
compared with its own ``__eq__``.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Collection
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

MAX_DIMS = 32
MAX_NAME = 500
DType = Literal[
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
]
assert set(DType.__args__) == ALLOWED_DTYPES  # type: ignore[attr-defined]
SpecEntry = Annotated[str, Field(max_length=MAX_NAME)] | None | list[
    Annotated[str, Field(max_length=MAX_NAME)]
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NoneValue(_Model):
    t: Literal["none"]


class BoolValue(_Model):
    t: Literal["bool"]
    v: StrictBool


class IntValue(_Model):
    t: Literal["int"]
    v: StrictInt


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
    device: StrictInt
    shape: list[StrictInt] = Field(max_length=MAX_DIMS)
    index: list[tuple[StrictInt, StrictInt]] = Field(max_length=MAX_DIMS)


class ShardingInfo(_Model):
    kind: str = Field(max_length=200)
    spec: list[SpecEntry] | None = Field(default=None, max_length=MAX_DIMS)
    mesh_axes: list[Annotated[str, Field(max_length=MAX_NAME)]] | None = None
    mesh_shape: list[StrictInt] | None = None
    shards: list[Shard] = Field(default_factory=list, max_length=4096)


class ArrayValue(_Model):
    t: Literal["array"]
    dtype: DType
    shape: list[Annotated[int, Field(ge=0)]] = Field(max_length=MAX_DIMS)
    data: str
    orig_dtype: str | None = Field(default=None, max_length=50)
    sharding: ShardingInfo | None = None

    @model_validator(mode="after")
    def _bytes_fit(self) -> ArrayValue:
        self._raw()
        return self

    def _raw(self) -> bytes:
        try:
            raw = base64.b64decode(self.data, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"array data is not base64: {exc}") from None
        needed = math.prod(self.shape) * np.dtype(self.dtype).itemsize
        if len(raw) != needed:
            raise ValueError(f"array data has {len(raw)} bytes, shape {self.shape} needs {needed}")
        return raw

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
    mesh_axes: list[Annotated[str, Field(max_length=MAX_NAME)]]
    mesh_shape: list[StrictInt]


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
    text = _render(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _render(value: Any) -> str:
    if isinstance(value, ArrayValue):
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
    if isinstance(value, NoneValue):
        return "None"
    if isinstance(value, BoolValue | IntValue | StrValue):
        return repr(value.v)
    if isinstance(value, FloatValue):
        return repr(value.number)
    if isinstance(value, ListValue):
        inner = ", ".join(_render(v) for v in value.items)
        return f"[{inner}]" if value.t == "list" else f"({inner}{',' if len(value.items) == 1 else ''})"
    if isinstance(value, DictValue | TreeValue):
        inner = ", ".join(f"{k}: {_render(v)}" for k, v in value.items)
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


def render_input(encoded: dict[str, Any], limit: int = 500) -> str:
    """A test input, briefly: arrays by dtype and shape, everything else by value."""
    value = VALUE.validate_python(encoded)
    if isinstance(value, ArrayValue):
        return f"<{value.dtype} array of shape {tuple(value.shape)}>"
    return render(value, limit)
