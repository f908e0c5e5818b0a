"""A probe's checks on the trusted side (step 3 of :mod:`judge.probes`): a compiled
program's outputs in the tree the function returned, and its collectives, memory, work and
operations against the probe's bounds, with fixed reasons for a hidden test.
"""

from __future__ import annotations

import math
from typing import Any

from judge import hlo
from judge.checkers.base import CheckResult
from judge.probes import CollectiveRule, ProbeSpec, StoredProbe
from judge.sandbox.protocol import ProgramFacts
from judge.values import ArrayValue, StrValue, TreeValue, Value

# A hidden test's reasons: fixed sentences naming only the judge's own words.
REASONS = {
    "untraceable": "the function could not be compiled as one program",
    # A program the clean sandbox will not run: a call outside what the judge runs, or
    # inputs or outputs not in the layouts the test gives and the probe asks for.
    "refused": "the compiled program is not one the judge runs: it calls something outside "
               "what the judge runs, or does not take or give the layouts the test asks for",
    "values": "the compiled program's results are not the expected ones",
    "too_many": "the compiled program has more {op} operations than allowed",
    "too_few": "the compiled program has fewer {op} operations than required",
    "memory": "the compiled program needs more {metric} memory per device than allowed",
    "flops": "the compiled program computes more per device than allowed",
    "present": "the compiled program lacks a required operation",
    "absent": "the compiled program uses an operation the problem rules out",
    "failed": "the compiled program failed on the test's inputs",
}


def program_value(paths: list[str], leaves: list[Any]) -> TreeValue:
    """The flat outputs of an exported program, back in the tree the function returned
    (key paths as :func:`jax.tree_util.keystr` writes them; the checkers' structure walk
    matches a tree, a dict or a list that hold the same leaves at the same paths)."""
    return TreeValue(t="tree", type="program", items=list(zip(paths, leaves, strict=True)))


def program_result(spec: ProbeSpec, paths: list[str], leaves: list[Any]) -> TreeValue:
    """What a probe compares of a program's outputs: the tree, or for ``eval_shape`` only
    its dtypes and shapes. The same for the reference (at build) and a submission."""
    value = program_value(paths, leaves)
    return shapes_only(value) if spec.transform == "eval_shape" else value


def _fail(key: str, detail: str, **fill: str) -> CheckResult:
    return CheckResult(False, REASONS[key].format(**fill), detail)


def check_facts(spec: ProbeSpec, facts: ProgramFacts, mesh: tuple[list[str], list[int]] | None,
                reference: StoredProbe | None) -> CheckResult:
    """The program's collectives, memory and operations against the probe's bounds."""
    for op in spec.ops.present:
        if facts.ops.get(op, 0) == 0:
            return _fail("present", f"the compiled program has no {op} operation")
    for op in spec.ops.absent:
        if facts.ops.get(op, 0):
            return _fail("absent", f"the compiled program uses {op} "
                         f"({facts.ops[op]} time{'s' if facts.ops[op] > 1 else ''}), which "
                         "this problem rules out")
    if spec.collectives and mesh is not None:
        axes, shape = mesh
        try:
            found = hlo.collectives(facts.hlo, mesh_axes=axes, mesh_shape=shape,
                                    assignment=facts.assignment,
                                    mesh_devices=facts.mesh_devices)
        except hlo.HloError as exc:
            return _fail("refused", f"the judge cannot read the compiled program: {exc}")
        for rule in spec.collectives:
            result = _count(rule, found, axes, shape)
            if not result.passed:
                return result
    for metric, bound in spec.memory.items():
        words = _METRIC_WORDS[metric]
        if facts.memory is None:
            return _fail("memory", "the compiled program has no memory analysis", metric=words)
        used = facts.memory.metric(metric)
        limit = bound.limit(reference.memory.metric(metric) if reference is not None
                            and reference.memory is not None else None)
        if limit is None:
            return _fail("memory", "the reference's memory is not stored: rebuild the problem",
                         metric=words)
        if used > limit[0]:
            return _fail("memory", f"your compiled program needs {used} bytes of {words} "
                         f"memory per device, at most {limit[1]} expected", metric=words)
    if spec.flops is not None:
        limit = spec.flops.limit(reference.flops if reference is not None else None)
        if facts.flops is None or limit is None:
            return _fail("flops", "the compiled program's cost analysis, or the reference's, "
                         "is missing: rebuild the problem")
        if facts.flops > limit[0]:
            return _fail("flops", f"your compiled program computes {facts.flops} "
                         f"floating-point operations per device, at most {limit[1]} expected "
                         "(does every device compute all of it?)")
    return CheckResult.ok()


_METRIC_WORDS = {"arguments": "argument", "outputs": "output", "temporaries": "temporary",
                 "total": "total", "fresh_outputs": "new output (not written over donated "
                 "inputs)"}


def _plural(n: int, op: str) -> str:
    return f"{n} {op}{'' if n == 1 else 's'}"


def _count(rule: CollectiveRule, found: list[hlo.Collective], axes: list[str],
           shape: list[int]) -> CheckResult:
    size = dict(zip(axes, shape, strict=True))
    wanted = None if rule.axes is None else tuple(a for a in rule.axes if size.get(a, 1) > 1)
    of_kind = [c for c in found if c.kind == rule.op]
    if wanted is None:
        matching = of_kind
    else:
        # Fail closed: a collective whose groups follow no axes counts against at_most.
        matching = [c for c in of_kind if c.axes is None or set(c.axes) == set(wanted)]
    where = "" if rule.axes is None else f" over {', '.join(repr(a) for a in rule.axes)}"
    listing = "; ".join(c.describe() for c in of_kind) or "none"
    if rule.at_most is not None and len(matching) > rule.at_most:
        return _fail("too_many", f"your compiled program has {_plural(len(matching), rule.op)}"
                     f"{where}, at most {rule.at_most} expected (its {rule.op} operations: "
                     f"{listing})", op=rule.op)
    devices = math.prod(size[a] for a in wanted) if wanted is not None else math.prod(shape)
    if rule.at_least is not None and devices > 1:
        certain = [c for c in matching if c.axes is not None]
        if len(certain) < rule.at_least:
            return _fail("too_few", f"your compiled program has {_plural(len(certain), rule.op)}"
                         f"{where}, at least {rule.at_least} expected (its {rule.op} "
                         f"operations: {listing})", op=rule.op)
    return CheckResult.ok()


def describe_value(value: Value) -> str:
    if isinstance(value, ArrayValue):
        return f"{value.dtype}[{','.join(str(d) for d in value.shape)}]"
    return value.t


def shapes_only(value: TreeValue) -> TreeValue:
    """An ``eval_shape`` probe compares dtypes and shapes only."""
    return TreeValue(t="tree", type=value.type,
                     items=[(p, StrValue(t="str", v=describe_value(v))) for p, v in value.items])


def without_unit_axes(value: Any) -> Any:
    """``value`` with every array's mesh stripped of its size-1 axes (and its spec of their
    names). A compiled program's outputs sit on whichever mesh the function named, the
    judge's ``(data=8, model=1)`` or the function's own ``(data=8,)``: the same layout."""
    if isinstance(value, ArrayValue) and value.sharding is not None \
            and value.sharding.mesh_axes is not None and value.sharding.mesh_shape is not None:
        info = value.sharding
        axes, shape = list(info.mesh_axes or []), list(info.mesh_shape or [])
        unit = {a for a, n in zip(axes, shape, strict=False) if n == 1}
        if not unit:
            return value

        def keep(entry: Any) -> Any:
            if isinstance(entry, list):
                kept = [e for e in entry if e not in unit]
                return kept if len(kept) > 1 else (kept[0] if kept else None)
            return None if entry in unit else entry

        pairs = [(a, n) for a, n in zip(axes, shape, strict=False) if a not in unit]
        sharding = info.model_copy(update={
            "spec": None if info.spec is None else [keep(e) for e in info.spec],
            "mesh_axes": [a for a, _ in pairs], "mesh_shape": [n for _, n in pairs]})
        return value.model_copy(update={"sharding": sharding})
    if isinstance(value, TreeValue):
        return value.model_copy(update={"items": [(p, without_unit_axes(v))
                                                  for p, v in value.items]})
    return value
