"""What a probe asks of the sandboxes for one test (steps 1 and 2 of :mod:`judge.probes`):
the export request, given the inputs' abstract values (no input value goes into the
trace), and the program request with the traced inputs' real values for the clean run.
"""

from __future__ import annotations

from typing import Any

from judge.probes import ProbeSpec, mesh_of
from judge.sandbox.protocol import ExportRequest, MeshOnTest, ProgramRequest, SpecTree

# Python scalars trace as weakly typed scalars, as jax.jit would make them.
_SCALARS = {"float": "float32", "int": "int32", "bool": "bool"}


def _aval(encoded: dict[str, Any], kind: str, probe: str, name: str) -> dict[str, Any]:
    """An argument's abstract value (shape, dtype; weak for Python scalars) from its stored
    encoding: what the trace is given instead of the value. A dict or list of arrays (a
    parameter tree) keeps its structure, with an abstract value at every leaf."""
    import numpy as np

    from judge.harness.inputs import decode_input

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
    values), and the program request (without its program and its outputs' paths, which
    the export gives) with the traced args' real values and kinds. ValueError for a probe that does not fit the entry point (a problem
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
    # The outputs' layouts go to both: the trace exports jax.jit with them as its
    # out_shardings, and the clean run checks the program it gets declares them.
    out_specs = spec.out_spec_list() if spec.out_specs is not None and mesh else None
    export = ExportRequest(transform=spec.transform, argnums=argnums,
                           in_axes=[spec.in_axes.get(n, 0) for n in traced]
                           if spec.transform == "vmap" else [],
                           mesh=on_test, specs=specs if mesh else None,
                           static=[n in spec.static for n in arg_names],
                           # A function told the mesh's shape builds its own mesh and lays
                           # out its inputs itself (unless the probe hands them over on the
                           # mesh); one on a fixed mesh is handed them laid out.
                           traced_layout=spec.mesh is not None and (
                               spec.mesh.shape is not None or spec.mesh.inputs_on_mesh),
                           out_specs=out_specs)
    program = ProgramRequest(program="", transform=spec.transform, mesh=on_test,
                             specs=traced_specs if mesh else None, out_specs=out_specs)
    return export, export_args, program, values, value_kinds
