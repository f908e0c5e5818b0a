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
3. **Check**, here on the trusted side (:mod:`judge.probe_checks`): the program's outputs
   against the reference's program's outputs with the problem's checker, the collectives
   parsed from the HLO (:mod:`judge.hlo`) against the probe's bounds, memory per device
   against bounds that may be relative to the reference's own program, and StableHLO
   operations required or forbidden.

This module declares probes (what ``problem.yaml`` may say, what is stored per test);
:mod:`judge.probe_requests` makes the requests of steps 1 and 2 for one test.

A probe's failure makes its test ``wrong_answer``: the function returned the right value,
but is not the program the problem asks for. A function that cannot be traced at all
(NumPy on a traced value, Python branching on one) fails its probes the same way.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator
from typing_extensions import TypeAliasType

from judge.checkers import Checker, get_checker
from judge.sandbox.protocol import MAX_OUT_SPECS, MemoryStats, OutSpec, SpecTree, Transform
from judge.values import Value

Slug = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=80)]
Name = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=100)]
Collectives = Literal["all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                      "collective-permute"]
# fresh_outputs: output bytes not written over donated inputs (what donation saves).
MemoryMetric = Literal["arguments", "outputs", "temporaries", "total", "fresh_outputs"]
SpecEntry = str | None | list[str]
# out_specs: a PartitionSpec (a list), or a mapping from an output's keys, or positions in
# a list or tuple it returns (integers), to more of them: a prefix of the output's tree.
OutSpecTree = TypeAliasType(
    "OutSpecTree", "Annotated[list[SpecEntry], Field(max_length=64)] "
    "| dict[Annotated[str, Field(max_length=100)] | StrictInt, OutSpecTree]")
MAX_OUT_DEPTH = 8
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
    out_specs: OutSpecTree | None = Field(
        default=None, description="The outputs' PartitionSpecs on the mesh, given to jax.jit "
        "as out_shardings: one for every output, or a tree of them that is a prefix of the "
        "output's (dict keys; positions in a list or tuple as integer keys).")
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
        if (self.in_specs or self.collectives or self.out_specs is not None) \
                and self.mesh is None:
            raise ValueError(f"probe {self.name!r}: in_specs, out_specs and collectives need "
                             "a mesh")
        if self.transform == "eval_shape" and (self.collectives or self.memory or self.flops
                                               or self.out_specs is not None):
            raise ValueError(f"probe {self.name!r}: eval_shape compiles nothing to inspect")
        if self.out_specs is not None:
            if self.transform == "own_jit":
                raise ValueError(f"probe {self.name!r}: out_specs is for the jit the judge "
                                 "composes; own_jit keeps the submission's own out_shardings")
            if not self.values:
                # Each output is given its layout by the key path its value is checked at
                # (judge.harness.program.out_layouts): unchecked values, unchecked paths.
                raise ValueError(f"probe {self.name!r}: out_specs needs values: true (each "
                                 "output's layout is matched to it by the key path its "
                                 "value is checked at)")
            for out in self.out_spec_list():
                self._on_the_mesh(out.spec, f"out_specs{out.prefix or ''}")
        for name, tree in self.in_specs.items():
            for path, spec in _spec_leaves(tree, ""):
                self._on_the_mesh(spec, f"in_specs {name}{path}")
        return self

    def _on_the_mesh(self, spec: list[Any], where: str) -> None:
        """A PartitionSpec names only axes of the probe's mesh, each at most once."""
        axes = self.mesh.axes if self.mesh is not None else []
        named = [a for e in spec for a in ([e] if isinstance(e, str) else e or [])]
        unknown = [a for a in named if a not in axes]
        if unknown:
            raise ValueError(f"probe {self.name!r}: {where} names {unknown[0]!r}, which is "
                             f"not an axis of the mesh ({', '.join(axes)})")
        if len(set(named)) != len(named):
            raise ValueError(f"probe {self.name!r}: {where} uses a mesh axis twice")

    def out_spec_list(self) -> list[OutSpec]:
        """``out_specs`` as the harness takes it: each PartitionSpec with the key path
        prefix (as :func:`jax.tree_util.keystr` writes it) of the outputs it lays out;
        ValueError for a tree that is empty somewhere, too deep or too large."""
        found: list[OutSpec] = []

        def walk(node: Any, prefix: str, depth: int) -> None:
            if depth > MAX_OUT_DEPTH:
                raise ValueError(f"probe {self.name!r}: out_specs is nested more than "
                                 f"{MAX_OUT_DEPTH} deep")
            if isinstance(node, dict):
                if not node:
                    raise ValueError(f"probe {self.name!r}: out_specs{prefix} is an empty "
                                     "mapping, which lays out nothing")
                for key, child in node.items():
                    walk(child, prefix + (f"[{key}]" if isinstance(key, int)
                                          else f"[{key!r}]"), depth + 1)
                return
            if len(found) >= MAX_OUT_SPECS:
                raise ValueError(f"probe {self.name!r}: out_specs gives more than "
                                 f"{MAX_OUT_SPECS} layouts")
            found.append(OutSpec(prefix=prefix, spec=list(node)))

        if self.out_specs is not None:
            walk(self.out_specs, "", 0)
        return found

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
        if self.out_specs is not None:
            lines.append("outputs laid out: " + (
                "; ".join(f"{k} {_spec_text(v)}" for k, v in self.out_specs.items())
                if isinstance(self.out_specs, dict) else f"all {_spec_text(self.out_specs)}"))
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


def _spec_leaves(tree: Any, path: str) -> list[tuple[str, list[Any]]]:
    """The PartitionSpecs of an ``in_specs`` entry (a spec, or a dict of them), with the
    key path each lays out."""
    if isinstance(tree, dict):
        return [leaf for key, child in tree.items()
                for leaf in _spec_leaves(child, f"{path}[{key!r}]")]
    return [(path, list(tree))]


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
