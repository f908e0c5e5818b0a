"""The two halves of a probe inside sandboxes (see :mod:`judge.probes` for the whole).

:func:`export` runs in the submission's sandbox: it applies the probe's transformation to
the entry point and exports it with ``jax.export``, from abstract inputs only (shapes,
dtypes, and their layout on the test's mesh), so no input value reaches it. Whatever the
submission does to this function or to JAX, all it can hand over is a program; the
program is what gets graded.

:func:`run` runs in a clean sandbox, a harness that loads no submission code: it
deserializes the program, refuses one that calls outside an allow-list, compiles it on the
test's mesh with the inputs in the probe's layout, reads the compiled program's HLO text,
memory analysis and device order, and only then runs it on the test's inputs.

A probe's ``out_specs`` (judge.probes) travel in both requests: :func:`export` compiles
``jax.jit`` with them as its out_shardings, and :func:`run`, which cannot trust what the
submission's process made, refuses a program that does not declare exactly those output
layouts or does not compile to them.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

# Custom calls an exported program may make: XLA's own sharding markers, shape assertions
# and the CPU linear-algebra kernels jnp.linalg lowers to. Host callbacks
# (jax.pure_callback, jax.debug.print, io_callback) and anything else are refused.
ALLOWED_CUSTOM_CALLS = frozenset({
    "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "shape_assertion",
    "annotate_device_placement", "ducc_fft",
})
ALLOWED_CUSTOM_CALL = re.compile(r"^lapack_[a-z0-9]+(_ffi)?$")
# What the trusted side takes of a program (judge.sandbox.protocol: ExportedProgram's
# paths, ProgramFacts' ops): beyond it, the export fails or the program is refused here.
MAX_PATH_CHARS = 500
MAX_OUTPUTS = 100_000
MAX_OP_NAME_CHARS = 100
MAX_OP_KINDS = 2000


class Refused(Exception):
    """The program is not one the judge runs (its message says why)."""


def _mesh(jax: Any, np: Any, spec: dict[str, Any] | None) -> Any:
    if spec is None:
        return None
    from jax.sharding import AxisType, Mesh

    shape = [int(s) for s in spec["shape"]]
    count = int(np.prod(shape))
    devices = jax.devices()
    if count > len(devices):
        raise Refused(f"the mesh needs {count} devices, there are {len(devices)}")
    return Mesh(np.array(devices[:count]).reshape(shape), tuple(spec["axes"]),
                axis_types=(AxisType.Auto,) * len(shape))


def _sharding(jax: Any, mesh: Any, spec: list[Any] | None) -> Any:
    from jax.sharding import NamedSharding, PartitionSpec

    if mesh is None:
        return jax.sharding.SingleDeviceSharding(jax.devices()[0])
    entries = [tuple(e) if isinstance(e, list) else e for e in (spec or [])]
    return NamedSharding(mesh, PartitionSpec(*entries))


def out_layouts(out_specs: list[dict[str, Any]], paths: list[str]) -> list[Any]:
    """Each flat output's PartitionSpec (a list), by its key path: the one of the
    ``out_specs`` entry whose prefix starts the path (a prefix tree of layouts, as
    ``jax.jit``'s ``out_shardings`` takes one). ValueError, naming the first output or
    layout that does not fit, when an output has no layout or a layout no output."""
    used = [False] * len(out_specs)
    layouts = []
    for path in paths:
        found = [i for i, o in enumerate(out_specs) if path.startswith(o["prefix"])]
        if len(found) != 1:
            have = ", ".join(o["prefix"] or "the whole output" for o in out_specs[:8])
            raise ValueError(f"output {path[:100] or '(the whole output)'} has "
                             f"{'no' if not found else 'more than one'} layout among the "
                             f"probe's out_specs ({have})")
        used[found[0]] = True
        layouts.append(out_specs[found[0]]["spec"])
    for o, hit in zip(out_specs, used, strict=True):
        if not hit:
            raise ValueError(f"out_specs lays out {o['prefix'] or 'the whole output'}, "
                             "which the function does not return")
    return layouts


def _same_layout(theirs: Any, ours: Any) -> bool:
    """Two HloShardings the same (replicated ones are, however written)."""
    return bool(theirs == ours or (theirs.is_replicated() and ours.is_replicated()))


def _explicit(sharding: Any) -> bool:
    from jax.sharding import AxisType

    return any(t == AxisType.Explicit for t in getattr(sharding.mesh, "axis_types", ()))


@contextlib.contextmanager
def _on_mesh(mesh: Any) -> Iterator[None]:
    """The test's mesh's devices as the current ones while the function is traced and its
    program compiled: a function whose only layouts are a bare PartitionSpec under its own
    ``jax.set_mesh``, or that takes no traced input at all, would otherwise make a program
    for one device. Only the concrete devices: the abstract mesh stays the function's own
    (``jax.shard_map`` over a mesh of other axes checks it against its own)."""
    if mesh is None:
        yield
        return
    from jax._src import config

    previous = config.device_context.swap_local(mesh)
    try:
        yield
    finally:
        config.device_context.set_local(previous)


@contextlib.contextmanager
def _traced_as_run() -> Iterator[None]:
    """Make the function's host-level steps mean inside the trace what they mean when it
    runs, for the CPU and while the judge traces only:

    - ``jax.set_mesh`` refuses to run under a trace, and the course's functions call it
      around their jitted steps; here it sets the same two contexts without that check.
    - ``jax.device_put(x, NamedSharding)`` of a traced value lowers to nothing on the CPU,
      so a function that places its batch on every device would compile as if it had
      split it; here it is a sharding constraint, the layout the value has when it runs.
      Onto a single device of a several-device program it is an error: no layout of the
      program says "this device only", and the problem asks for the mesh's layout.
    """
    from jax._src import config, dispatch, pjit, sharding_impls
    from jax._src.interpreters import mlir
    from jax.sharding import NamedSharding

    original_init = sharding_impls.set_mesh.__init__
    table = mlir._platform_specific_lowerings["cpu"]
    original_rule = table.get(dispatch.device_put_p)

    def init(self: Any, mesh: Any) -> None:
        abstract = (sharding_impls.empty_abstract_mesh if mesh is None
                    else mesh.abstract_mesh)
        concrete = sharding_impls.empty_concrete_mesh if mesh is None else mesh
        self.prev_abstract_mesh = config.abstract_mesh_context_manager.swap_local(abstract)
        self.prev_mesh = config.device_context.swap_local(concrete)

    def lower_device_put(ctx: Any, *xs: Any, devices: Any, srcs: Any,
                         copy_semantics: Any) -> list[Any]:
        out = []
        several = getattr(ctx.module_context.axis_context, "num_devices", 1) > 1
        for x, target, aval_in, aval_out in zip(xs, devices, ctx.avals_in, ctx.avals_out,
                                                strict=True):
            if isinstance(target, NamedSharding):
                if _explicit(target):
                    out.append(x)  # on an Explicit mesh the layout is in the value's type
                    continue
                one = ctx.replace(avals_in=[aval_in], avals_out=[aval_out])
                x = pjit._sharding_constraint_hlo_lowering(
                    one, x, sharding=target, layout=None, context_mesh=target.mesh,
                    unconstrained_dims=set())[0]
            elif target is not None and several and not isinstance(target, str):
                raise ValueError(
                    "jax.device_put onto a single device inside a program on several "
                    "devices: the judge compiles your function as one program on the "
                    "test's mesh, where data is laid out with NamedShardings")
            out.append(x)
        return out

    sharding_impls.set_mesh.__init__ = init  # type: ignore[method-assign]
    mlir.register_lowering(dispatch.device_put_p, lower_device_put, platform="cpu")
    try:
        yield
    finally:
        sharding_impls.set_mesh.__init__ = original_init  # type: ignore[method-assign]
        if original_rule is None:
            table.pop(dispatch.device_put_p, None)
        else:
            table[dispatch.device_put_p] = original_rule


def export(entry: Callable[..., Any], request: dict[str, Any], args: list[Any],
           max_bytes: int) -> dict[str, Any]:
    """Export ``entry`` under the probe's transformation. ``args`` holds, per argument, the
    static value or an abstract ``{"t": "aval", ...}``. Returns the program (base64) and the
    key paths of its flat outputs."""
    import jax
    import numpy as np

    mesh = _mesh(jax, np, request.get("mesh"))
    specs = request.get("specs") or [None] * len(args)
    static = request.get("static") or [False] * len(args)
    layout = mesh is not None and request.get("traced_layout")

    def abstract(arg: Any, spec: Any) -> Any:
        """An aval, or a dict or list of them (its spec a dict or list alike)."""
        if arg.get("t") == "aval":
            dtype = jax.dtypes.canonicalize_dtype(np.dtype(arg["dtype"]))
            sharding = _sharding(jax, mesh, spec) if layout else None
            return jax.ShapeDtypeStruct(tuple(arg["shape"]), dtype, sharding=sharding,
                                        weak_type=bool(arg.get("weak")))
        if arg.get("t") == "dict":
            return {k: abstract(v, spec.get(k) if isinstance(spec, dict) else None)
                    for k, v in arg["items"]}
        items = [abstract(v, None) for v in arg["items"]]
        return tuple(items) if arg.get("t") == "tuple" else items

    avals = [abstract(arg, spec) for arg, spec, s in zip(args, specs, static, strict=True)
             if not s]

    def call(*traced: Any) -> Any:
        it = iter(traced)
        full = [next(it) if not s else _hashable(a) for a, s in zip(args, static, strict=True)]
        return entry(*full)

    transform = request["transform"]
    if transform == "own_jit":
        return _export_own_jit(jax, entry, args, avals, static, mesh, max_bytes)
    if transform in ("grad", "value_and_grad", "jacobian"):
        argnums = tuple(request.get("argnums") or [0])
        fn = {"grad": jax.grad, "value_and_grad": jax.value_and_grad,
              "jacobian": jax.jacobian}[transform](call, argnums=argnums)
    elif transform == "vmap":
        fn = jax.vmap(call, in_axes=tuple(request.get("in_axes") or [0] * len(avals)))
    else:  # jit, eval_shape
        fn = call
    paths: list[str] = []

    def flat(*traced: Any) -> tuple[Any, ...]:
        leaves = jax.tree_util.tree_flatten_with_path(fn(*traced))[0]
        paths[:] = [jax.tree_util.keystr(p) for p, _ in leaves]
        return tuple(leaf for _, leaf in leaves)

    with _traced_as_run(), _on_mesh(mesh):
        jitted = jax.jit(flat)
        if request.get("out_specs") is not None:
            # The output tree is known once traced: the layouts follow it by key path.
            jax.eval_shape(flat, *avals)
            try:
                layouts = out_layouts(request["out_specs"], paths)
            except ValueError as exc:
                raise ValueError(f"the function's outputs do not fit the layouts the "
                                 f"problem gives them: {exc}") from None
            jitted = jax.jit(flat, out_shardings=tuple(_sharding(jax, mesh, spec)
                                                       for spec in layouts))
        exported = jax.export.export(jitted, platforms=("cpu",))(*avals)
    return _serialized(exported, paths, max_bytes)


def _export_own_jit(jax: Any, entry: Callable[..., Any], args: list[Any], avals: list[Any],
                    static: list[bool], mesh: Any, max_bytes: int) -> dict[str, Any]:
    """Export the entry point's own ``jax.jit`` as the submission declared it: what it
    makes static and which buffers it donates are the submission's, and donation survives
    only in a jit that is exported itself (one called inside another jit is inlined, its
    donation dropped). Static arguments are passed as values: the submission's jit must
    name them static."""
    if not (callable(getattr(entry, "lower", None)) and callable(getattr(entry, "trace", None))):
        raise ValueError("the function is not a jax.jit function: this problem compiles "
                         "your function's own jax.jit (decorate it with @jax.jit or "
                         "functools.partial(jax.jit, ...))")
    it = iter(avals)
    full = [next(it) if not s else _hashable(a) for a, s in zip(args, static, strict=True)]
    with _traced_as_run(), _on_mesh(mesh):
        exported = jax.export.export(entry, platforms=("cpu",))(*full)
    n = exported.out_tree.num_leaves
    tree = jax.tree_util.tree_unflatten(exported.out_tree, list(range(n)))
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]
    return _serialized(exported, paths, max_bytes)


def _serialized(exported: Any, paths: list[str], max_bytes: int) -> dict[str, Any]:
    longest = max((len(p) for p in paths), default=0)
    if longest > MAX_PATH_CHARS:
        raise ValueError(f"an output's key path is {longest} characters long, over the limit "
                         f"of {MAX_PATH_CHARS}")
    if len(paths) > MAX_OUTPUTS:
        raise ValueError(f"the function returns {len(paths)} arrays, over the limit of "
                         f"{MAX_OUTPUTS}")
    data = bytes(exported.serialize())
    if len(data) > max_bytes:
        raise ValueError(f"the exported program is {len(data)} bytes, over the limit of "
                         f"{max_bytes}")
    return {"program": base64.b64encode(data).decode(), "paths": paths}


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


def vet(exported: Any, inputs: int, devices: int) -> tuple[dict[str, int], list[int]]:
    """Refuse what the judge does not run; return the module's operation counts and the
    inputs it donates (by flat position: a ``jax.jit(donate_argnums=...)`` exported as
    itself marks them). All are read from the module's operations (MLIR's own walk), never
    from its text, where locations, scope names and output paths the submission chose
    appear too, and where a custom call's target may be printed quoted."""
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    ops: dict[str, int] = {}
    targets: list[str | None] = []
    donated: list[int] = []

    def visit(op: Any) -> Any:
        name = op.name
        if name == "func.func" and "arg_attrs" in op.attributes and (
                ir.StringAttr(op.attributes["sym_name"]).value == "main"):
            donated[:] = [i for i, attrs in enumerate(op.attributes["arg_attrs"])
                          if any(k in ir.DictAttr(attrs)
                                 for k in ("tf.aliasing_output", "jax.buffer_donor"))]
        key = name.removeprefix("stablehlo.")
        ops[key] = ops.get(key, 0) + 1
        if key.endswith("custom_call"):
            attr = op.attributes.get("call_target_name", None)
            targets.append(None if attr is None else ir.StringAttr(attr).value)
        return ir.WalkResult.ADVANCE

    try:
        with mlir.make_ir_context():
            ir.Module.parse(exported.mlir_module()).operation.walk(visit)
    except Exception as exc:
        raise Refused(f"the program could not be read: {type(exc).__name__}") from None
    for target in targets:
        if target is None or (target not in ALLOWED_CUSTOM_CALLS
                              and not ALLOWED_CUSTOM_CALL.match(target)):
            raise Refused(f"the program makes a custom call to {str(target)[:100]!r} (host "
                          "callbacks and foreign kernels are not run)")
    if len(ops) > MAX_OP_KINDS or any(len(k) > MAX_OP_NAME_CHARS for k in ops):
        raise Refused("the program's operations could not be listed")
    if exported.ordered_effects or exported.unordered_effects:
        raise Refused("the program has side effects (a host callback or I/O)")
    if "cpu" not in exported.platforms:
        raise Refused("the program was not exported for the CPU")
    if len(exported.in_avals) != inputs:
        raise Refused(f"the program takes {len(exported.in_avals)} inputs, the test gives "
                      f"{inputs}")
    if exported.nr_devices != devices:
        raise Refused(f"the program runs on {exported.nr_devices} devices, the test's mesh "
                      f"has {devices}")
    return ops, donated


def _declared_outputs(jax: Any, exported: Any, mesh: Any,
                      request: dict[str, Any]) -> list[Any] | None:
    """With the probe's ``out_specs``: each output's NamedSharding, once the program is
    found to declare exactly these out_shardings (else Refused). The layouts are the
    trusted side's; the outputs' paths are the ones their values are checked by."""
    out_specs = request.get("out_specs")
    if out_specs is None:
        return None
    paths = list(request.get("out_paths") or [])
    avals = list(exported.out_avals)
    if len(paths) != len(avals) or len(set(paths)) != len(paths):
        raise Refused(f"the program has {len(avals)} outputs, for {len(paths)} output paths "
                      f"({len(set(paths))} distinct)")
    try:
        specs = out_layouts(out_specs, paths)
    except ValueError as exc:
        raise Refused(f"the program's outputs do not fit the probe's out_specs: {exc}") from None
    wanted = [_sharding(jax, mesh, spec) for spec in specs]
    declared = list(getattr(exported, "out_shardings_hlo", ()) or ())
    if len(declared) != len(avals):
        raise Refused("the program does not declare its outputs' layouts")
    for i, (want, theirs, aval) in enumerate(zip(wanted, declared, avals, strict=True)):
        try:
            ours = want._to_xla_hlo_sharding(len(aval.shape))
        except Exception:  # a spec longer than the output's rank: no such layout
            ours = None
        if theirs is None or ours is None or not _same_layout(theirs, ours):
            where = paths[i][:100] or "the whole output"
            raise Refused(f"the program does not declare output {i} ({where}) in the layout "
                          f"the probe asks for ({_spec_words(specs[i])})")
    return wanted


def _spec_words(spec: list[Any]) -> str:
    return "P(" + ", ".join("None" if e is None else repr(tuple(e) if isinstance(e, list)
                                                          else e) for e in spec) + ")"


_COMPILED: dict[str, Any] = {}  # one clean run's programs, by their bytes and layout


def run(request: dict[str, Any], inputs: list[Any], encode: Callable[..., Any],
        result_bytes: int, max_text: int) -> tuple[Any, dict[str, Any]]:
    """Compile and run one exported program on the test's inputs (already converted):
    (its flat outputs, encoded; the facts read before it ran)."""
    import jax
    import numpy as np

    mesh = _mesh(jax, np, request.get("mesh"))
    try:
        exported = jax.export.deserialize(bytearray(base64.b64decode(request["program"])))
    except Exception as exc:
        raise Refused(f"the program could not be read: {type(exc).__name__}") from None
    devices = 1 if mesh is None else int(mesh.devices.size)
    ops, donated = vet(exported, len(jax.tree.leaves(inputs)), devices)
    specs = request.get("specs") or [None] * len(inputs)

    # The program's donations hold here too: an argument all of whose buffers it donates
    # is donated to the compiled call, so XLA's memory analysis counts the outputs written
    # over them (``aliased``; ``total`` memory is net of it). Its buffers are copies: the
    # program may write over them.
    sizes = [len(jax.tree.leaves(v)) for v in inputs]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    donate = tuple(i for i, (start, size) in enumerate(zip(starts, sizes, strict=True))
                   if size and all(j in donated for j in range(start, start + size)))

    def place(value: Any, spec: Any, copy: bool) -> Any:
        if isinstance(value, dict):
            return {k: place(v, spec.get(k) if isinstance(spec, dict) else None, copy)
                    for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(place(v, None, copy) for v in value)
        return jax.device_put(np.array(value) if copy else value, _sharding(jax, mesh, spec))

    placed = [place(v, s, i in donate)
              for i, (v, s) in enumerate(zip(inputs, specs, strict=True))]
    leaves = jax.tree.leaves(placed)
    wanted_out = _declared_outputs(jax, exported, mesh, request)
    facts: dict[str, Any] = {"ops": ops}
    if mesh is not None:
        facts["mesh_devices"] = [int(d.id) for d in mesh.devices.flat]
    if request["transform"] == "eval_shape":
        shapes = [{"t": "str", "v": f"{a.dtype}[{','.join(str(d) for d in a.shape)}]"}
                  for a in exported.out_avals]
        return {"t": "list", "items": shapes}, facts
    # Tests of the same shapes and mesh often export the very same program: compiled once
    # per clean run (a run serves one submission, so nothing is shared between two).
    key = hashlib.sha256(json.dumps([request["program"], request.get("mesh"), specs,
                                     [str(jax.typeof(p)) for p in leaves]]).encode()).hexdigest()
    # A program exported for its inputs in another layout would have them moved, inside the
    # program, at its own cost; a program that declares another layout is refused outright.
    declared = list(getattr(exported, "in_shardings_hlo", ()) or ())
    for i, (want, theirs) in enumerate(zip(leaves, declared, strict=False)):
        ours = want.sharding._to_xla_hlo_sharding(want.ndim)
        if theirs is not None and not _same_layout(theirs, ours):
            raise Refused(f"the program takes input {i} in another layout than the test gives")
    compiled = _COMPILED.get(key)
    if compiled is None:
        with _on_mesh(mesh):  # a program that takes no input is for the mesh too
            compiled = _COMPILED[key] = jax.jit(exported.call, donate_argnums=donate).lower(
                *placed).compile()
    for i, (want, got) in enumerate(zip(leaves, jax.tree.leaves(compiled.input_shardings[0]),
                                        strict=True)):
        if not got.is_equivalent_to(want.sharding, want.ndim):
            raise Refused(f"the program does not take input {i} in the layout the test gives")
    if wanted_out is not None:
        outs = jax.tree.leaves(compiled.output_shardings)
        if len(outs) != len(wanted_out):
            raise Refused("the compiled program does not have the outputs it declares")
        for i, (want, got, aval) in enumerate(zip(wanted_out, outs, exported.out_avals,
                                                  strict=True)):
            if not got.is_equivalent_to(want, len(aval.shape)):
                raise Refused(f"the compiled program does not give output {i} in the layout "
                              "the probe asks for")
    text: Any = compiled.as_text()
    if not isinstance(text, str) or len(text) > max_text:
        raise Refused(f"the compiled program's text is over {max_text} characters")
    stats: Any = compiled.memory_analysis()
    executable: Any = compiled.runtime_executable()
    if stats is None or executable is None:
        raise Refused("the compiled program has no memory analysis")
    cost = compiled.cost_analysis()
    if isinstance(cost, list):  # older jax: one dict per device program
        cost = cost[0] if cost else {}
    flops = cost.get("flops") if isinstance(cost, dict) else None
    if flops is not None:
        facts["flops"] = max(0, int(flops))
    facts.update(
        hlo=text,
        assignment=[int(d.id) for d in executable.local_devices()],
        memory={"arguments": int(stats.argument_size_in_bytes),
                "outputs": int(stats.output_size_in_bytes),
                "temporaries": int(stats.temp_size_in_bytes),
                "aliased": int(stats.alias_size_in_bytes)})
    out = compiled(*placed)
    jax.block_until_ready(out)
    # Flat, in the order of the paths the export gave (an own jit returns its own tree).
    return encode(jax.tree.leaves(out), max_bytes=result_bytes), facts
