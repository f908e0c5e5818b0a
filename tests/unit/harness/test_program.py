"""The sandbox halves of a probe, run in this process (8 CPU devices, tests/conftest.py):
export a function from abstract inputs, then compile and run the program as the clean
sandbox does (judge/harness/program.py). The backends' end to end runs are in
tests/integration/test_probes.py; the attacks on the boundary in tests/security."""

from __future__ import annotations

import base64
import re
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from judge import hlo, probe_requests
from judge.harness import program
from judge.harness.codec import encode
from judge.harness.inputs import decode_input
from judge.probes import ProbeSpec
from judge.sandbox.protocol import ProgramFacts

PARAMS = {"hidden": {"kernel": np.arange(64, dtype=np.float32).reshape(8, 8) / 10,
                     "bias": np.ones(8, np.float32)},
          "out": {"kernel": np.ones((8, 2), np.float32), "bias": np.zeros(2, np.float32)}}
FSDP = {"hidden": {"kernel": ["data", None], "bias": []},
        "out": {"kernel": ["data", None], "bias": []}}


def step(params: dict[str, Any], x: Any, mesh_shape: Any) -> Any:
    """An MLP's loss, its parameters handed over sharded (a tree), its batch split."""
    h = jax.nn.relu(x @ params["hidden"]["kernel"] + params["hidden"]["bias"])
    return jnp.mean((h @ params["out"]["kernel"] + params["out"]["bias"]) ** 2)


def exchange(fn: Any, spec: ProbeSpec, args: dict[str, Any], kinds: list[str]
             ) -> tuple[Any, ProgramFacts, list[str]]:
    """Both halves, with the requests the trusted side makes, as JSON would carry them."""
    names = list(args)
    encoded = {n: encode(v) for n, v in args.items()}
    export, export_args, request, values, value_kinds = probe_requests.requests(spec, names, kinds,
                                                                        encoded)
    decoded = [a if a.get("t") in ("aval", "dict") and n not in spec.static else
               decode_input(a) for n, a in zip(names, export_args, strict=True)]
    out = program.export(fn, export.model_dump(), decoded, 1 << 22)
    inputs = [decode_input(v) for v in values]
    run = request.model_copy(update={  # as judge.grading sends it
        "program": out["program"],
        "out_paths": out["paths"] if request.out_specs is not None else None}).model_dump()
    value, facts = program.run(run, inputs, encode, 1 << 22, 1 << 22)
    return value, ProgramFacts.model_validate(facts), out["paths"]


def test_a_tree_of_parameters_is_traced_and_placed_leaf_by_leaf() -> None:
    spec = ProbeSpec(name="p", static=["mesh_shape"],
                     mesh={"axes": ["data", "model"], "shape": [8, 1]},
                     in_specs={"params": FSDP, "x": ["data", None]})
    x = np.ones((8, 8), np.float32)
    value, facts, paths = exchange(step, spec, {"params": PARAMS, "x": x, "mesh_shape": [8]},
                                   ["any", "array", "any"])
    assert paths == [""]
    want = float(step(PARAMS, x, None))
    (leaf,) = value["items"]
    assert np.isclose(np.frombuffer(base64.b64decode(leaf["data"]), "<f4")[0], want)
    # Each kernel arrived split over 'data': its row blocks are gathered for the matmul.
    found = hlo.collectives(facts.hlo, mesh_axes=["data", "model"], mesh_shape=[8, 1],
                            assignment=facts.assignment, mesh_devices=facts.mesh_devices)
    assert any(c.kind == "all-gather" and c.axes == ("data",) for c in found) or any(
        c.kind == "all-reduce" and c.axes == ("data",) for c in found), found
    # Arguments per device: an eighth of each kernel and of the batch, whole biases.
    assert facts.memory is not None
    per_device = (8 * 8 + 8 * 2) // 8 * 4 + (8 + 2) * 4 + 8 * 8 // 8 * 4
    assert facts.memory.arguments == per_device


def test_a_program_that_takes_another_layout_is_refused() -> None:
    # Exported with its inputs replicated (the layout in the trace), run where the test
    # gives them split: the program's own layout is not the probe's.
    spec = ProbeSpec(name="p", mesh={"axes": ["rows"], "shape": [8]}, in_specs={"x": ["rows"]})
    encoded = {"x": encode(np.ones((8, 2), np.float32))}
    mesh = jax.make_mesh((8,), ("rows",), axis_types=(jax.sharding.AxisType.Auto,))
    replicated = NamedSharding(mesh, P())
    exported = jax.export.export(jax.jit(lambda x: (x * 2,), in_shardings=replicated))(
        jax.ShapeDtypeStruct((8, 2), jnp.float32, sharding=replicated))
    _, _, request, values, _ = probe_requests.requests(spec, ["x"], ["array"], encoded)
    run = request.model_copy(update={
        "program": base64.b64encode(bytes(exported.serialize())).decode()}).model_dump()
    with pytest.raises(program.Refused, match="layout"):
        program.run(run, [decode_input(v) for v in values], encode, 1 << 22, 1 << 22)


@pytest.mark.parametrize("callback", [
    lambda x: jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x),
    lambda x: (jax.debug.print("{}", x), x)[1],
])
def test_host_callbacks_do_not_export(callback: Any) -> None:
    # jax.export refuses them itself (the trace fails: the probe's "could not be compiled
    # as one program"); vet refuses a hand-made module that calls one (tests/security).
    spec = ProbeSpec(name="p")
    with pytest.raises(NotImplementedError, match="host_callbacks"):
        exchange(lambda x: jnp.sum(callback(x)), spec, {"x": np.ones(3, np.float32)},
                 ["array"])


class Module:
    """What vet reads of an exported program, around a module's text."""

    ordered_effects = unordered_effects = ()
    platforms = ("cpu",)
    in_avals = (None,)
    nr_devices = 1

    def __init__(self, *body: str, result: str = "") -> None:
        lines = "\n".join(f"    %{i + 1} = {op.replace('%IN', f'%{i}')}"
                          for i, op in enumerate(body))
        self.text = (f'module {{\n  func.func public @main(%0: tensor<f32>) -> (tensor<f32> '
                     f'{{jax.result_info = "{result}"}}) {{\n{lines}\n'
                     f"    return %{len(body)} : tensor<f32>\n  }}\n}}")

    def mlir_module(self) -> str:
        return self.text


CALL = "stablehlo.custom_call @{target}(%IN) : (tensor<f32>) -> tensor<f32>"


def test_vet_refuses_custom_calls_outside_the_allow_list() -> None:
    ok = Module(CALL.format(target="Sharding"),
                '"stablehlo.custom_call"(%IN) {call_target_name = "lapack_sgetrf_ffi"} : '
                "(tensor<f32>) -> tensor<f32>")
    assert program.vet(ok, 1, 1)[0]["custom_call"] == 2
    for target in ("xla_ffi_python_cpu_callback", "xla_python_cpu_callback", "anything",
                   '"a name the printer quotes"'):
        with pytest.raises(program.Refused, match=target.strip('"')):
            program.vet(Module(CALL.format(target=target)), 1, 1)
    with pytest.raises(program.Refused, match="could not be read"):
        program.vet(Module("stablehlo.custom_call @x("), 1, 1)


def test_vet_counts_operations_not_the_names_in_the_text() -> None:
    # Output paths, scope names and locations are the submission's text: a key that says
    # "stablehlo.while" is no while loop, and a long made-up name is no operation.
    ops, _ = program.vet(Module("stablehlo.add %IN, %IN : tensor<f32> "
                             'loc("jit(f)/stablehlo.sort_' + "x" * 200 + '")',
                             result="['stablehlo.while custom_call @anything']"), 1, 1)
    assert ops == {"add": 1, "func.return": 1, "func.func": 1, "builtin.module": 1}


def test_garbage_is_refused() -> None:
    request = {"program": base64.b64encode(b"not a program").decode(), "transform": "jit",
               "mesh": None, "specs": None}
    with pytest.raises(program.Refused, match="could not be read"):
        program.run(request, [np.ones(3, np.float32)], encode, 1 << 22, 1 << 22)


def _sgd(params: dict[str, Any], grads: dict[str, Any], lr: float) -> dict[str, Any]:
    return jax.tree.map(lambda p, g: p - lr * g, params, grads)


TREE = {"w": np.arange(64, dtype=np.float32).reshape(8, 8), "b": np.ones(8, np.float32)}
ONES = {"w": np.ones((8, 8), np.float32), "b": np.ones(8, np.float32)}


def test_own_jit_keeps_the_submissions_donation_and_the_clean_side_honours_it() -> None:
    spec = ProbeSpec(name="p", transform="own_jit", static=["lr"])
    args = {"params": TREE, "grads": ONES, "lr": 0.5}
    kinds = ["any", "any", "float"]
    donating = jax.jit(_sgd, static_argnames="lr", donate_argnums=0)
    value, donated, paths = exchange(donating, spec, args, kinds)
    _, kept, _ = exchange(jax.jit(_sgd, static_argnames="lr"), spec, args, kinds)
    assert paths == ["['b']", "['w']"]
    got = [np.asarray(decode_input(leaf)).ravel() for leaf in value["items"]]
    assert np.allclose(got[1], (TREE["w"] - 0.5).ravel()) and np.allclose(got[0], 0.5)
    # The parameters' buffers (8x8 + 8 floats) are written over: that much less in all.
    assert donated.memory is not None and kept.memory is not None
    size = (64 + 8) * 4
    assert (donated.memory.aliased, kept.memory.aliased) == (size, 0)
    assert kept.memory.metric("total") - donated.memory.metric("total") == size
    # The same function inside the judge's own jit loses its donation (it is inlined).
    _, wrapped, _ = exchange(donating, ProbeSpec(name="p", static=["lr"]), args, kinds)
    assert wrapped.memory is not None and wrapped.memory.aliased == 0
    # The test's own inputs are not written over: they are copied before a donation.
    assert TREE["w"][0, 1] == 1.0


def test_own_jit_needs_a_jit_function_with_its_statics_declared() -> None:
    spec = ProbeSpec(name="p", transform="own_jit", static=["lr"])
    args = {"params": TREE, "grads": ONES, "lr": 0.5}
    with pytest.raises(ValueError, match="not a jax.jit function"):
        exchange(_sgd, spec, args, ["any", "any", "float"])
    # lr not static in the submission's jit: its trace sees a traced lr, and the program
    # takes an input the test does not give.
    with pytest.raises((program.Refused, TypeError, ValueError)):
        exchange(jax.jit(lambda params, grads, lr: _sgd(params, grads, int(lr))), spec, args,
                 ["any", "any", "float"])


def test_a_program_whose_only_layouts_come_from_its_own_mesh_is_for_the_tests_mesh() -> None:
    # No traced input (everything static), and a bare PartitionSpec under the function's
    # own jax.set_mesh: the program is still traced and compiled for the test's 8 devices.
    def init(rows: int, mesh_shape: list[int]) -> Any:
        mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"),
                             axis_types=(jax.sharding.AxisType.Auto,) * 2)
        with jax.set_mesh(mesh):
            x = jnp.arange(rows * 8, dtype=jnp.float32).reshape(rows, 8)
            return jax.lax.with_sharding_constraint(x * 2, P("data", "model"))

    spec = ProbeSpec(name="p", static=["rows", "mesh_shape"],
                     mesh={"axes": ["data", "model"], "shape_arg": "mesh_shape"})
    value, facts, _ = exchange(init, spec, {"rows": 16, "mesh_shape": [2, 4]}, ["int", "any"])
    (leaf,) = value["items"]
    assert np.array_equal(np.asarray(decode_input(leaf)),
                          np.arange(128, dtype=np.float32).reshape(16, 8) * 2)
    assert len(facts.assignment) == 8
    # Each device writes its (8, 2) block only.
    assert facts.memory is not None and facts.memory.outputs == 8 * 2 * 4


def forward(w: Any, x: Any) -> dict[str, Any]:
    h = x @ w
    return {"h": h, "norm": jnp.sum(h ** 2)}


COLUMNS = {"name": "p", "mesh": {"axes": ["rows"], "shape": [8]},
           "in_specs": {"w": [None, "rows"]}, "out_specs": {"h": ["rows", None], "norm": []}}
WX = {"w": np.arange(64, dtype=np.float32).reshape(4, 16) / 64, "x": np.ones((16, 4), np.float32)}


def test_out_specs_are_the_programs_out_shardings() -> None:
    spec = ProbeSpec.model_validate(COLUMNS)
    value, facts, paths = exchange(forward, spec, WX, ["array", "array"])
    assert paths == ["['h']", "['norm']"]
    h, norm = value["items"]
    assert h["sharding"]["spec"] == ["rows"] and norm["sharding"]["spec"] == []
    assert [b["shape"] for b in h["sharding"]["buffers"]] == [[2, 16]] * 8
    assert np.allclose(np.asarray(decode_input(h)), WX["x"] @ WX["w"])
    # Each device holds 2 of h's 16 rows: the layout is the program's (h whole on each
    # device is 14 rows more).
    whole = ProbeSpec.model_validate({**COLUMNS, "out_specs": []})
    _, replicated, _ = exchange(forward, whole, WX, ["array", "array"])
    assert facts.memory is not None and replicated.memory is not None
    assert replicated.memory.outputs - facts.memory.outputs == 14 * 16 * 4
    # Without them XLA keeps h split as w is, over its columns: the same bytes, another
    # layout (and no resharding, so fewer temporaries).
    free = ProbeSpec.model_validate({**COLUMNS, "out_specs": None})
    value, _, _ = exchange(forward, free, WX, ["array", "array"])
    assert value["items"][0]["sharding"]["spec"] == [None, "rows"]


@pytest.mark.parametrize(("out_specs", "words"), [
    ({"h": ["rows", None]}, "output ['norm'] has no layout among the probe's out_specs (['h'])"),
    ({"h": [], "norm": [], "loss": []}, "out_specs lays out ['loss'], which the function does "
     "not return"),
    ({0: [], 1: []}, "output ['h'] has no layout"),
])
def test_outputs_that_do_not_fit_the_out_specs_fail_the_export(out_specs: Any,
                                                               words: str) -> None:
    spec = ProbeSpec.model_validate({**COLUMNS, "out_specs": out_specs})
    with pytest.raises(ValueError, match=re.escape(
            "the function's outputs do not fit the layouts the problem gives them: " + words)):
        exchange(forward, spec, WX, ["array", "array"])


def _forged(out_shardings: Any) -> str:
    """``forward`` exported the way a submission's process could hand it over: its inputs
    in the probe's layout, its outputs in whatever ``out_shardings`` says."""
    mesh = jax.make_mesh((8,), ("rows",), axis_types=(jax.sharding.AxisType.Auto,))
    kwargs = {} if out_shardings is None else {
        "out_shardings": tuple(NamedSharding(mesh, s) for s in out_shardings)}
    exported = jax.export.export(jax.jit(lambda w, x: tuple(forward(w, x).values()),
                                         **kwargs))(
        jax.ShapeDtypeStruct((4, 16), jnp.float32, sharding=NamedSharding(mesh, P(None, "rows"))),
        jax.ShapeDtypeStruct((16, 4), jnp.float32, sharding=NamedSharding(mesh, P())))
    return base64.b64encode(bytes(exported.serialize())).decode()


@pytest.mark.parametrize(("out_shardings", "paths", "words"), [
    # The control: the layouts asked for, at the paths the values are checked by.
    ((P("rows"), P()), ["['h']", "['norm']"], None),
    # Exported without out_shardings (a patched jax.jit), or with other ones.
    (None, ["['h']", "['norm']"], r"does not declare output 0 \(\['h'\]\) in the layout the "
     r"probe asks for \(P\('rows', None\)\)"),
    ((P(None, "rows"), P()), ["['h']", "['norm']"], "does not declare output 0"),
    ((P(), P()), ["['h']", "['norm']"], "does not declare output 0"),
    # Its outputs' paths made up to fit other layouts, or not to fit at all.
    ((P(), P()), ["['norm']", "['h']"], "does not declare output 1"),
    ((P("rows"), P()), ["['h']"], "2 outputs, for 1 output paths"),
    ((P("rows"), P()), ["['h']", "['h']"], r"2 output paths \(1 distinct\)"),
    ((P("rows"), P()), ["['h']", "['loss']"], "outputs do not fit the probe's out_specs"),
])
def test_the_clean_side_refuses_a_program_without_the_asked_output_layouts(
        out_shardings: Any, paths: list[str], words: str | None) -> None:
    spec = ProbeSpec.model_validate(COLUMNS)
    encoded = {n: encode(v) for n, v in WX.items()}
    _, _, request, values, _ = probe_requests.requests(spec, ["w", "x"], ["array", "array"],
                                                       encoded)
    run = request.model_copy(update={"program": _forged(out_shardings),
                                     "out_paths": paths}).model_dump()
    inputs = [decode_input(v) for v in values]
    if words is None:
        program.run(run, inputs, encode, 1 << 22, 1 << 22)
        return
    with pytest.raises(program.Refused, match=words):
        program.run(run, inputs, encode, 1 << 22, 1 << 22)
