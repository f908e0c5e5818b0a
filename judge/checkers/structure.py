"""Walk an expected value and a received one side by side.

Used by every checker for values that are not plain arrays: lists and tuples (either
matches either), dicts (same keys, in any order), pytrees (``nnx.State`` and friends:
compared leaf by leaf at their key paths, so a nested dict with the same leaves at the same
paths matches too; the ``.value`` step of an ``nnx.Variable`` is ignored, so
``nnx.State`` matches ``state.to_pure_dict()``), PartitionSpecs and NamedShardings (normalised), strings and None
(equal). Numeric leaves go to the checker's
own ``leaf`` function. A failure's ``reason`` names the path in the *expected* value and
one of the fixed sentences of :mod:`judge.checkers.reasons`; what the submission returned
(its keys, its spec, its mesh, its type) is only in the ``detail``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from judge.checkers import reasons
from judge.checkers.base import CheckResult
from judge.values import (
    ArrayValue,
    BoolValue,
    DictValue,
    FloatValue,
    IntValue,
    ListValue,
    NamedShardingValue,
    NoneValue,
    PSpecValue,
    StrValue,
    TreeValue,
    format_spec,
    normalize_spec,
    render,
)

Leaf = Callable[[Any, Any, str], CheckResult]  # expected, received, the leaf's key path
_STEP = re.compile(r"\['((?:[^'\\]|\\.)*)'\]|\[(\d+)\]|\.([^.\[]+)")


def dotted(path: str) -> str:
    """A key path as the checkers write it (``['params']['hidden'][0]``, or a pytree's
    ``.hidden.kernel``) in the dotted form a problem names it by: ``params.hidden.0``."""
    return ".".join(next(g for g in m.groups() if g is not None) for m in _STEP.finditer(path))
NUMERIC = (ArrayValue, BoolValue, IntValue, FloatValue)


def _at(path: str, result: CheckResult) -> CheckResult:
    if result.passed or not path:
        return result
    return CheckResult(False, f"at {path}: {result.reason}", f"at {path}: {result.detail}")


def compare_structure(expected: Any, received: Any, leaf: Leaf) -> CheckResult:
    return _compare(expected, received, leaf, "")


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaves by key path, as ``jax.tree_util.keystr`` writes them (``['a'][0]``), so that
    a dict, a list and a pytree holding the same leaves at the same paths compare equal."""
    if isinstance(value, DictValue):
        out: dict[str, Any] = {}
        for key, item in value.items:
            out.update(flatten(item, f"{prefix}[{key!r}]"))
        return out
    if isinstance(value, ListValue):
        out = {}
        for i, item in enumerate(value.items):
            out.update(flatten(item, f"{prefix}[{i}]"))
        return out
    if isinstance(value, TreeValue):
        out = {}
        for path, item in value.items:
            # An nnx.Variable flattens to its `.value`; a pure dict of the state has none.
            out.update(flatten(item, prefix + path.replace(".value", "")))
        return out
    return {prefix: value}


def _compare(expected: Any, received: Any, leaf: Leaf, path: str) -> CheckResult:
    """Failures found at this level get ``path`` once; deeper ones come back whole."""
    if isinstance(expected, NUMERIC):
        return _at(path, leaf(expected, received, path))
    if isinstance(expected, ListValue) and not isinstance(received, TreeValue):
        if not isinstance(received, ListValue):
            return _at(path, _wrong_type(expected, received))
        if len(received.items) != len(expected.items):
            return _at(path, CheckResult.fail(
                reasons.LENGTH.format(expected_sequence=expected.t),
                f"the {expected.t} has {len(received.items)} items, expected {len(expected.items)}",
            ))
        for i, (e, r) in enumerate(zip(expected.items, received.items, strict=True)):
            result = _compare(e, r, leaf, f"{path}[{i}]")
            if not result.passed:
                return result
        return CheckResult.ok()
    if isinstance(expected, DictValue) and isinstance(received, DictValue):
        return _compare_keyed(dict(expected.items), dict(received.items), leaf, path, _key)
    if isinstance(expected, ListValue | DictValue | TreeValue):
        # A pytree may stand for a list or a dict (and a dict for a pytree); a list for a
        # dict may not.
        fits = (ListValue | DictValue | TreeValue) if isinstance(expected, TreeValue) else (
            TreeValue if isinstance(expected, ListValue) else DictValue | TreeValue)
        if not isinstance(received, fits):
            return _at(path, _wrong_type(expected, received))
        return _compare_keyed(flatten(expected), flatten(received), leaf, path, lambda k: k)
    if isinstance(expected, PSpecValue):
        if not isinstance(received, PSpecValue):
            return _at(path, _wrong_type(expected, received))
        if normalize_spec(expected.v) != normalize_spec(received.v):
            return _at(path, CheckResult.fail(
                reasons.PSPEC, f"got {format_spec(received.v)}, expected {format_spec(expected.v)}"))
        return CheckResult.ok()
    if isinstance(expected, NamedShardingValue):
        if not isinstance(received, NamedShardingValue):
            return _at(path, _wrong_type(expected, received))
        return _at(path, compare_layout(
            expected.spec, expected.mesh_axes, expected.mesh_shape,
            received.spec, received.mesh_axes, received.mesh_shape,
        ))
    if isinstance(expected, NoneValue | StrValue):
        if type(received) is not type(expected) or received != expected:
            return _at(path, CheckResult.fail(
                reasons.NOT_EQUAL,
                f"got {render(received, 200)}, expected {render(expected, 200)}",
            ))
        return CheckResult.ok()
    return _at(path, CheckResult.fail(reasons.CANNOT_COMPARE))


def _wrong_type(expected: Any, received: Any) -> CheckResult:
    kind = reasons.EXPECTED_KINDS[expected.t]
    return CheckResult.fail(reasons.WRONG_TYPE.format(expected_kind=kind),
                            f"expected {kind}, got {_kind(received)}")


def _compare_keyed(exp: dict[str, Any], got: dict[str, Any], leaf: Leaf, path: str,
                   step: Callable[[str], str]) -> CheckResult:
    missing, extra = sorted(set(exp) - set(got)), sorted(set(got) - set(exp))
    if missing or extra:
        names = ", ".join(missing[:5])
        reason = (reasons.KEYS_BOTH if missing and extra else
                  reasons.KEYS_MISSING if missing else reasons.KEYS_EXTRA)
        parts = [f"missing {names}"] if missing else []
        if extra:
            parts.append(f"unexpected {', '.join(extra[:5])}")
        return _at(path, CheckResult.fail(reason.format(expected_keys=names), "the keys differ: "
                                          + "; ".join(parts)))
    for key in exp:
        result = _compare(exp[key], got[key], leaf, f"{path}{step(key)}")
        if not result.passed:
            return result
    return CheckResult.ok()


def compare_layout(
    exp_spec: list[Any] | None, exp_axes: list[str] | None, exp_shape: list[int] | None,
    got_spec: list[Any] | None, got_axes: list[str] | None, got_shape: list[int] | None,
) -> CheckResult:
    """Compare mesh axes and sizes, then the normalised specs (axes of size 1 split
    nothing, so a spec that names one means the same as one that does not)."""
    exp_mesh = dict(zip(exp_axes or [], exp_shape or [], strict=False))
    got_mesh = dict(zip(got_axes or [], got_shape or [], strict=False))
    if list(exp_mesh.items()) != list(got_mesh.items()):
        return CheckResult.fail(reasons.MESH,
                                f"the mesh is {_mesh(got_mesh)}, expected {_mesh(exp_mesh)}")
    trivial = {axis for axis, size in exp_mesh.items() if size == 1}
    if normalize_spec(exp_spec, trivial) != normalize_spec(got_spec, trivial):
        return CheckResult.fail(reasons.PSPEC,
                                f"got {format_spec(got_spec)}, expected {format_spec(exp_spec)}")
    return CheckResult.ok()


def _mesh(mesh: dict[str, int]) -> str:
    return "(" + ", ".join(f"{a}={s}" for a, s in mesh.items()) + ")" if mesh else "none"


def _key(key: str) -> str:
    return key if key.startswith(("[", ".")) else f"[{key!r}]"


def _kind(value: Any) -> str:
    """What a received value is, for a sample test's detail (names its type)."""
    kind = getattr(value, "t", "?")
    if kind == "opaque":
        return f"an object of type {value.type}"
    return reasons.EXPECTED_KINDS.get(kind, "a value")
