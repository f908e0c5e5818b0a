"""Probes: what the judge checks about the program a submission's function compiles to.

A problem lists probes in ``problem.yaml`` (docs/problem-format.md). For each test a probe
applies to, grading has three steps, and only the first runs the submission's Python:

1. **Trace**, in the submission's sandbox: the harness applies the probe's transformation
   (``jit``, ``grad``, ``value_and_grad``, ``jacobian``, ``vmap``, ``eval_shape``) to the
   entry point and exports it with ``jax.export``, given only the inputs' shapes, dtypes and
   layout on the test's mesh (static arguments as values). No input value goes in.
   ``own_jit`` exports the entry point's own ``jax.jit`` as the submission wrote it (its
   static arguments and donated buffers), for problems that teach jit's options.
2. **Compile and run**, in a clean sandbox that loads no submission code: the exported
   program is deserialized, refused if it calls anything outside an allow-list (host
   callbacks, foreign custom calls), compiled on the test's mesh with the inputs in the
   probe's layout, and its HLO text, memory analysis and device order are read *before* it
   runs on the test's real inputs.
3. **Check**, here on the trusted side (:func:`check`): the program's outputs against the
   reference's program's outputs with the problem's checker, the collectives parsed from the
   HLO (:mod:`judge.hlo`) against the probe's bounds, memory per device against bounds that
   may be relative to the reference's own program, and StableHLO operations required or
   forbidden.

A probe's failure makes its test ``wrong_answer``: the function returned the right value,
but is not the program the problem asks for. A function that cannot be traced at all
(NumPy on a traced value, Python branching on one) fails its probes the same way.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from judge import hlo
from judge.checkers import Checker, get_checker
from judge.checkers.base import CheckResult
from judge.sandbox.protocol import (
    ExportRequest,
    MemoryStats,
    MeshOnTest,
    ProgramFacts,
    ProgramRequest,
    SpecTree,
    Transform,
)
from judge.values import ArrayValue, StrValue, TreeValue, Value

Slug = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=80)]
Name = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=100)]
Collectives = Literal["all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                      "collective-permute"]
# fresh_outputs: output bytes not written over donated inputs (what donation saves).
MemoryMetric = Literal["arguments", "outputs", "temporaries", "total", "fresh_outputs"]
SpecEntry = str | None | list[str]
OP_NAME = re.compile(r"^[a-z_][a-z0-9_.]*$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProbeChecker(_Model):
    name: str = "exact"
    params: dict[str, Any] = Field(default_factory=dict)


class MeshSpec(_Model):
    axes: list[Name] = Field(min_length=1, max_length=4)
    shape: list[StrictInt] | None = Field(default=None, description="Fixed sizes, or:")
    shape_arg: Name | None = Field(default=None, description="The argument that gives the "
                                   "sizes (a list of ints; missing trailing axes are 1).")
    inputs_on_mesh: bool = Field(default=False, description="With shape_arg: the trace "
                                 "sees each traced input in its layout on the test's mesh "
                                 "(replicated unless in_specs says otherwise), as a fixed "
                                 "shape gives it, for a function that reshards its inputs "
                                 "(jax.sharding.reshard needs them on a mesh). Default: "
                                 "shapes and dtypes only, so a function that builds its "
                                 "own mesh of other axes meets no conflict.")

    @model_validator(mode="after")
    def _one_shape(self) -> MeshSpec:
        if (self.shape is None) == (self.shape_arg is None):
            raise ValueError("a probe's mesh takes either shape or shape_arg")
        if self.shape is not None and len(self.shape) != len(self.axes):
            raise ValueError("a probe's mesh shape needs one size per axis")
        return self


class CollectiveRule(_Model):
    op: Collectives
    axes: list[Name] | None = Field(default=None, description="Count only collectives over "
                                    "exactly these mesh axes (size-1 axes ignored).")
    at_most: int | None = Field(default=None, ge=0)
    at_least: int | None = Field(default=None, ge=1, description="Required only where the "
                                 "axes (or the mesh) have more than one device.")

    @model_validator(mode="after")
    def _bounded(self) -> CollectiveRule:
        if self.at_most is None and self.at_least is None:
            raise ValueError("a collectives rule needs at_most or at_least")
        return self


class Bound(_Model):
    """An upper bound: a number, or a multiple of the reference program's own figure on the
    same test plus a margin (the reference is the problem's statement of what is enough)."""

    at_most: int | None = Field(default=None, ge=0)
    reference_times: float | None = Field(default=None, gt=0)
    plus: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _bounded(self) -> Bound:
        if self.at_most is None and self.reference_times is None:
            raise ValueError("a bound needs at_most or reference_times")
        return self

    def limit(self, reference: int | None) -> tuple[int, str] | None:
        """The bound in units, and how it was reached; None when it needs a reference
        figure that is not stored."""
        limits = []
        if self.at_most is not None:
            limits.append((self.at_most, f"{self.at_most}"))
        if self.reference_times is not None:
            if reference is None:
                return None
            allowed = math.floor(self.reference_times * reference) + self.plus
            limits.append((allowed, f"{allowed} ({self.reference_times:g} x the reference's "
                           f"{reference}" + (f" + {self.plus}" if self.plus else "") + ")"))
        return min(limits)


class OpsRule(_Model):
    present: list[Annotated[str, Field(pattern=OP_NAME.pattern)]] = Field(default_factory=list)
    absent: list[Annotated[str, Field(pattern=OP_NAME.pattern)]] = Field(default_factory=list)


class ProbeSpec(_Model):
    name: Slug
    doc: str = Field(default="", max_length=2000, description="What it checks, for students.")
    transform: Transform = "jit"
    argnums: list[Name | StrictInt] = Field(default_factory=list, description="grad, "
                                            "value_and_grad, jacobian: the arguments to "
                                            "differentiate (names or positions); default the "
                                            "first.")
    in_axes: dict[Name, int | None] = Field(default_factory=dict, description="vmap: each "
                                            "traced argument's batch axis (default 0).")
    static: list[Name] = Field(default_factory=list, description="Arguments passed as Python "
                               "values rather than traced (shapes, mesh sizes, flags).")
    mesh: MeshSpec | None = None
    in_specs: dict[Name, SpecTree] = Field(
        default_factory=dict, description="Each traced array's PartitionSpec on the mesh "
        "(default: replicated); for an argument that is a dict of arrays, a dict of them.")
    tests: list[Slug] | None = Field(default=None, description="Default: every test.")
    values: bool = Field(default=True, description="Check the program's outputs on the "
                         "test's inputs against the reference's.")
    checker: ProbeChecker | None = Field(default=None, description="Default: the "
                                         "problem's checker.")
    collectives: list[CollectiveRule] = Field(default_factory=list)
    memory: dict[MemoryMetric, Bound] = Field(default_factory=dict, description="Bytes "
                                              "per device, from XLA's memory analysis.")
    flops: Bound | None = Field(default=None, description="Floating-point operations per "
                                "device, from XLA's cost analysis.")
    ops: OpsRule = OpsRule()

    @model_validator(mode="after")
    def _consistent(self) -> ProbeSpec:
        if self.argnums and self.transform not in ("grad", "value_and_grad", "jacobian"):
            raise ValueError(f"probe {self.name!r}: argnums is for grad, value_and_grad, "
                             "jacobian")
        if self.in_axes and self.transform != "vmap":
            raise ValueError(f"probe {self.name!r}: in_axes is for vmap")
        if (self.in_specs or self.collectives) and self.mesh is None:
            raise ValueError(f"probe {self.name!r}: in_specs and collectives need a mesh")
        if self.transform == "eval_shape" and (self.collectives or self.memory or self.flops):
            raise ValueError(f"probe {self.name!r}: eval_shape compiles nothing to inspect")
        return self

    def summary(self) -> list[str]:
        """What the probe does and checks, in lines for a student (``jaxjudge show``): the
        author's words, then the declared transformation, mesh and bounds."""
        how = {"jit": "jax.jit", "grad": "jax.grad", "value_and_grad": "jax.value_and_grad",
               "jacobian": "jax.jacobian", "vmap": "jax.vmap",
               "eval_shape": "jax.eval_shape"}.get(self.transform)
        if self.argnums:
            how = f"{how} (argnums {', '.join(str(a) for a in self.argnums)})"
        if self.in_axes:
            how = f"{how} (in_axes " + ", ".join(f"{k}={v}" for k, v in self.in_axes.items()) + ")"
        what = (f"{how} of your function" if how else "your function's own jax.jit (its static "
                "arguments and donated buffers as you declared them)")
        lines = [f"{what}, compiled as one program"
                 + (f" (static: {', '.join(self.static)})" if self.static else "")]
        if self.mesh is not None:
            size = (" x ".join(str(n) for n in self.mesh.shape) if self.mesh.shape else
                    f"sizes from {self.mesh.shape_arg}")
            lines.append(f"on a mesh ({', '.join(self.mesh.axes)}) of {size}")
        if self.in_specs:
            lines.append("inputs laid out: " + "; ".join(
                f"{k} {_spec_text(v)}" for k, v in self.in_specs.items()))
        lines.append("on tests: " + (", ".join(self.tests) if self.tests else "every test"))
        if self.values:
            lines.append("checks: the program's results")
        for rule in self.collectives:
            over = f" over {', '.join(rule.axes)}" if rule.axes else ""
            bounds = [f"at least {rule.at_least}" if rule.at_least is not None else "",
                      f"at most {rule.at_most}" if rule.at_most is not None else ""]
            lines.append(f"checks: {' and '.join(b for b in bounds if b)} {rule.op}{over}")
        for metric, bound in self.memory.items():
            lines.append(f"checks: {metric} memory per device {_bound_text(bound, 'bytes')}")
        if self.flops is not None:
            lines.append(f"checks: work per device {_bound_text(self.flops, 'flops')}")
        lines += [f"checks: the program has {op}" for op in self.ops.present]
        lines += [f"checks: the program has no {op}" for op in self.ops.absent]
        return lines

    def checker_for(self, default: Checker) -> Checker:
        if self.checker is None:
            return default
        return get_checker(self.checker.name, self.checker.params)


def _spec_text(spec: Any) -> str:
    if isinstance(spec, dict):
        return "{" + ", ".join(f"{k}: {_spec_text(v)}" for k, v in spec.items()) + "}"
    return "P(" + ", ".join("None" if a is None else repr(a) for a in spec) + ")"


def _bound_text(bound: Bound, unit: str) -> str:
    parts = []
    if bound.reference_times is not None:
        parts.append(f"at most {bound.reference_times:g} x the reference's on the same test"
                     + (f" + {bound.plus} {unit}" if bound.plus else ""))
    if bound.at_most is not None:
        parts.append(f"at most {bound.at_most} {unit}")
    return " and ".join(parts)


class StoredProbe(_Model):
    """A probe's result on the reference, stored with the test at build time."""

    expected: Value | None = None
    memory: MemoryStats | None = None
    flops: int | None = None


# -- the trusted side's checks ----------------------------------------------------------

# A hidden test's reasons: fixed sentences naming only the judge's own words.
REASONS = {
    "untraceable": "the function could not be compiled as one program",
    "refused": "the compiled program calls something outside what the judge runs",
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


def mesh_of(spec: ProbeSpec, args: dict[str, Any]) -> tuple[list[str], list[int]] | None:
    """The probe's mesh on one test: axis names and sizes."""
    if spec.mesh is None:
        return None
    if spec.mesh.shape is not None:
        return list(spec.mesh.axes), list(spec.mesh.shape)
    raw = args.get(spec.mesh.shape_arg or "")
    sizes = [int(v["v"]) for v in raw.get("items", [])] if isinstance(raw, dict) else []
    if not sizes or len(sizes) > len(spec.mesh.axes) or any(s < 1 for s in sizes):
        raise ValueError(f"probe {spec.name!r}: argument {spec.mesh.shape_arg!r} is not a "
                         f"list of at most {len(spec.mesh.axes)} sizes")
    return list(spec.mesh.axes), sizes + [1] * (len(spec.mesh.axes) - len(sizes))


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




# -- requests: what goes into the sandboxes ---------------------------------------------


# Python scalars trace as weakly typed scalars, as jax.jit would make them.
_SCALARS = {"float": "float32", "int": "int32", "bool": "bool"}


def _aval(encoded: dict[str, Any], kind: str, probe: str, name: str) -> dict[str, Any]:
    """An argument's abstract value (shape, dtype; weak for Python scalars) from its stored
    encoding: what the trace is given instead of the value. A dict or list of arrays (a
    parameter tree) keeps its structure, with an abstract value at every leaf."""
    import numpy as np

    from judge.harness.codec import decode_input

    if kind in _SCALARS:
        return {"t": "aval", "shape": [], "dtype": _SCALARS[kind], "weak": True}
    tag = encoded.get("t")
    if tag == "dict":
        return {"t": "dict", "items": [[k, _aval(v, "any", probe, f"{name}[{k!r}]")]
                                       for k, v in encoded["items"]]}
    if tag in ("list", "tuple") and kind == "any":
        return {"t": tag, "items": [_aval(v, "any", probe, f"{name}[{i}]")
                                    for i, v in enumerate(encoded["items"])]}
    if tag in ("float", "int"):  # a number inside a tree
        return {"t": "aval", "shape": [], "dtype": _SCALARS[tag], "weak": True}
    value = decode_input(encoded)
    if kind in ("array", "numpy") or isinstance(value, np.ndarray):
        arr = np.asarray(value)
        if arr.dtype == object:
            raise ValueError(f"probe {probe!r}: argument {name} is not an array")
        return {"t": "aval", "shape": list(arr.shape), "dtype": arr.dtype.name}
    raise ValueError(f"probe {probe!r}: argument {name} is not an array, a number or a "
                     "dict of them; list it under static")


def requests(spec: ProbeSpec, arg_names: list[str], kinds: list[str],
             args: dict[str, Any]) -> tuple[ExportRequest, list[dict[str, Any]],
                                            ProgramRequest, list[dict[str, Any]], list[str]]:
    """For one probe on one test: the export request and its args (avals and static
    values), and the program request (without its program) with the traced args' real
    values and kinds. ValueError for a probe that does not fit the entry point (a problem
    bug, found by ``jaxjudge build``)."""
    unknown = [n for n in [*spec.static, *spec.in_specs, *spec.in_axes,
                           *(a for a in spec.argnums if isinstance(a, str))]
               if n not in arg_names]
    if unknown:
        raise ValueError(f"probe {spec.name!r}: the entry point has no argument {unknown[0]!r}")
    traced = [n for n in arg_names if n not in spec.static]
    mesh = mesh_of(spec, args)
    on_test = MeshOnTest(axes=mesh[0], shape=mesh[1]) if mesh else None
    export_args: list[dict[str, Any]] = []
    specs: list[SpecTree | None] = []
    traced_specs: list[SpecTree | None] = []
    values: list[dict[str, Any]] = []
    value_kinds: list[str] = []
    for name, kind in zip(arg_names, kinds, strict=True):
        if name in spec.static:
            export_args.append(args[name])
            specs.append(None)
            continue
        export_args.append(_aval(args[name], kind, spec.name, repr(name)))
        entry = spec.in_specs.get(name)
        specs.append(entry)
        traced_specs.append(entry)
        values.append(args[name])
        value_kinds.append(kind)
    argnums = []
    for a in spec.argnums:
        name = arg_names[a] if isinstance(a, int) and 0 <= a < len(arg_names) else str(a)
        if name not in traced:
            raise ValueError(f"probe {spec.name!r}: argnums names {a!r}, which is not a "
                             "traced argument")
        argnums.append(traced.index(str(name)))
    export = ExportRequest(transform=spec.transform, argnums=argnums,
                           in_axes=[spec.in_axes.get(n, 0) for n in traced]
                           if spec.transform == "vmap" else [],
                           mesh=on_test, specs=specs if mesh else None,
                           static=[n in spec.static for n in arg_names],
                           # A function told the mesh's shape builds its own mesh and lays
                           # out its inputs itself (unless the probe hands them over on the
                           # mesh); one on a fixed mesh is handed them laid out.
                           traced_layout=spec.mesh is not None and (
                               spec.mesh.shape is not None or spec.mesh.inputs_on_mesh))
    program = ProgramRequest(program="", transform=spec.transform, mesh=on_test,
                             specs=traced_specs if mesh else None)
    return export, export_args, program, values, value_kinds


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
