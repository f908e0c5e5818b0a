"""Probes on the trusted side: the format, the requests sent into the sandboxes, and the
checks of a compiled program's facts (judge.probes). The sandboxes' halves are exercised
against real programs in tests/integration/test_probes.py."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from judge import probe_checks, probe_requests
from judge.checkers import CheckResult, get_checker
from judge.harness.codec import encode
from judge.probe_checks import check_facts
from judge.probes import ProbeSpec, StoredProbe
from judge.problem import ProblemSpec
from judge.sandbox.protocol import MemoryStats, ProgramFacts
from judge.values import ArrayValue, TreeValue

AR_MODEL = ("  %a = f32[4] all-reduce(%x), channel_id=1, replica_groups={{0,1,2,3},{4,5,6,7}}, "
            "use_global_device_ids=true")
AR_DATA = ("  %b = f32[4] all-reduce(%x), channel_id=2, replica_groups={{0,4},{1,5},{2,6},{3,7}}, "
           "use_global_device_ids=true")
AG_MODEL = "  %c = f32[8] all-gather(%x), channel_id=3, replica_groups=[2,4]<=[8], dimensions={0}"
ODD = ("  %d = f32[4] all-reduce(%x), channel_id=4, replica_groups={{0,1,4,5},{2,3,6,7}}, "
       "use_global_device_ids=true")
MESH = (["data", "model"], [2, 4])


def probe(**fields: Any) -> ProbeSpec:
    return ProbeSpec.model_validate({"name": "p", "mesh": {"axes": ["data", "model"],
                                                          "shape": [2, 4]}, **fields})


def facts(*lines: str, memory: dict[str, int] | None = None, flops: int | None = None,
          ops: dict[str, int] | None = None) -> ProgramFacts:
    return ProgramFacts(hlo="\n".join(lines), assignment=list(range(8)),
                        mesh_devices=list(range(8)), flops=flops, ops=ops or {},
                        memory=MemoryStats(**memory) if memory else None)


def reasons_of(result: CheckResult) -> tuple[str, str]:
    assert not result.passed
    return result.reason, result.detail


def test_collective_bounds_count_by_kind_and_axes() -> None:
    rules = [{"op": "all-reduce", "axes": ["model"], "at_least": 1, "at_most": 1},
             {"op": "all-gather", "at_most": 0}]
    spec = probe(collectives=rules)
    assert check_facts(spec, facts(AR_MODEL), MESH, None).passed
    assert check_facts(spec, facts(AR_MODEL, AR_DATA), MESH, None).passed  # data not counted
    reason, detail = reasons_of(check_facts(spec, facts(AR_DATA), MESH, None))
    assert reason == "the compiled program has fewer all-reduce operations than required"
    assert "0 all-reduces over 'model', at least 1 expected" in detail
    assert "all-reduce over 'data'" in detail
    reason, detail = reasons_of(check_facts(spec, facts(AR_MODEL, AR_MODEL), MESH, None))
    assert reason == "the compiled program has more all-reduce operations than allowed"
    reason, detail = reasons_of(check_facts(spec, facts(AR_MODEL, AG_MODEL), MESH, None))
    assert reason == "the compiled program has more all-gather operations than allowed"
    assert "1 all-gather, at most 0 expected" in detail


def test_groups_that_follow_no_axes_count_against_at_most_and_never_for_at_least() -> None:
    at_most = probe(collectives=[{"op": "all-reduce", "axes": ["model"], "at_most": 0}])
    assert not check_facts(at_most, facts(ODD), MESH, None).passed
    at_least = probe(collectives=[{"op": "all-reduce", "axes": ["model"], "at_least": 1}])
    assert not check_facts(at_least, facts(ODD), MESH, None).passed


def test_at_least_is_not_asked_of_an_axis_of_one_device() -> None:
    spec = probe(collectives=[{"op": "all-reduce", "axes": ["model"], "at_least": 1}])
    assert check_facts(spec, facts(), (["data", "model"], [8, 1]), None).passed
    assert not check_facts(spec, facts(), MESH, None).passed


def test_memory_bounds_absolute_and_relative_to_the_reference() -> None:
    reference = StoredProbe(memory=MemoryStats(arguments=100, outputs=10, temporaries=64))
    spec = probe(memory={"temporaries": {"reference_times": 2.0, "plus": 10},
                         "total": {"at_most": 1000}})
    ok = facts(memory={"arguments": 100, "outputs": 10, "temporaries": 138})
    assert check_facts(spec, ok, MESH, reference).passed
    over = facts(memory={"arguments": 100, "outputs": 10, "temporaries": 139})
    reason, detail = reasons_of(check_facts(spec, over, MESH, reference))
    assert reason == "the compiled program needs more temporary memory per device than allowed"
    assert detail == ("your compiled program needs 139 bytes of temporary memory per device, "
                      "at most 138 (2 x the reference's 64 + 10) expected")
    total = facts(memory={"arguments": 900, "outputs": 10, "temporaries": 100})
    reason, _ = reasons_of(check_facts(spec, total, MESH, reference))
    assert reason == "the compiled program needs more total memory per device than allowed"
    # No reference stored (data built before the probe): fail closed, saying so.
    _, detail = reasons_of(check_facts(spec, ok, MESH, None))
    assert "rebuild" in detail


def test_fresh_outputs_are_the_outputs_not_written_over_donated_inputs() -> None:
    # A step that donates its parameters writes its new parameters over them (aliased):
    # only the loss is new memory. One that does not donate needs all its outputs anew.
    reference = StoredProbe(memory=MemoryStats(arguments=932, outputs=572, temporaries=640,
                                               aliased=544))
    spec = probe(memory={"fresh_outputs": {"reference_times": 1.0, "plus": 64}})
    donating = facts(memory={"arguments": 932, "outputs": 572, "temporaries": 640,
                             "aliased": 544})
    assert check_facts(spec, donating, MESH, reference).passed
    kept = facts(memory={"arguments": 932, "outputs": 572, "temporaries": 128})
    reason, detail = reasons_of(check_facts(spec, kept, MESH, reference))
    assert reason == ("the compiled program needs more new output (not written over donated "
                      "inputs) memory per device than allowed")
    assert detail.startswith("your compiled program needs 572 bytes of new output")
    assert "at most 92 (1 x the reference's 28 + 64)" in detail


def test_own_jit_is_described_as_the_students_own_jit() -> None:
    spec = ProbeSpec.model_validate({"name": "p", "transform": "own_jit", "static": ["n"]})
    assert spec.summary()[0] == ("your function's own jax.jit (its static arguments and "
                                 "donated buffers as you declared them), compiled as one "
                                 "program (static: n)")
    grad = ProbeSpec.model_validate({"name": "p", "transform": "grad", "argnums": ["w"]})
    assert grad.summary()[0] == "jax.grad (argnums w) of your function, compiled as one program"


def test_flops_bound() -> None:
    spec = probe(flops={"reference_times": 1.5})
    reference = StoredProbe(flops=1000)
    assert check_facts(spec, facts(flops=1500), MESH, reference).passed
    reason, detail = reasons_of(check_facts(spec, facts(flops=1501), MESH, reference))
    assert reason == "the compiled program computes more per device than allowed"
    assert "1501 floating-point operations per device" in detail


def test_operations_required_and_ruled_out() -> None:
    spec = probe(ops={"present": ["dot_general"], "absent": ["while"]})
    assert check_facts(spec, facts(ops={"dot_general": 2}), MESH, None).passed
    assert reasons_of(check_facts(spec, facts(ops={}), MESH, None))[0] == (
        "the compiled program lacks a required operation")
    assert reasons_of(check_facts(spec, facts(ops={"dot_general": 1, "while": 1}), MESH,
                                  None))[0] == (
        "the compiled program uses an operation the problem rules out")


def test_unreadable_program_text_fails_closed() -> None:
    spec = probe(collectives=[{"op": "all-reduce", "at_most": 5}])
    bad = facts("  %x = f32[4] all-reduce(%a), replica_groups=?")
    reason, _ = reasons_of(check_facts(spec, bad, MESH, None))
    assert reason == probe_checks.REASONS["refused"]


def test_every_hidden_reason_is_a_fixed_sentence() -> None:
    spec = probe(collectives=[{"op": "all-gather", "at_most": 0}],
                 memory={"outputs": {"at_most": 0}}, flops={"at_most": 0},
                 ops={"absent": ["while"]})
    fixed = {r.format(op=op, metric=m) for r in probe_checks.REASONS.values()
             for op in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                        "collective-permute")
             for m in ("argument", "output", "temporary", "total")}
    for program in (facts(AG_MODEL), facts(memory={"arguments": 1, "outputs": 1,
                                                    "temporaries": 1}),
                    facts(flops=5, memory={"arguments": 0, "outputs": 0, "temporaries": 0}),
                    facts(ops={"while": 3}, memory={"arguments": 0, "outputs": 0,
                                                    "temporaries": 0}, flops=0)):
        result = check_facts(spec, program, MESH, StoredProbe())
        assert not result.passed and result.reason in fixed


@pytest.mark.parametrize(("fields", "words"), [
    ({"argnums": [0]}, "argnums is for grad"),
    ({"transform": "grad", "in_axes": {"x": 0}}, "in_axes is for vmap"),
    ({"mesh": None, "in_specs": {"x": []}}, "need a mesh"),
    ({"transform": "eval_shape", "flops": {"at_most": 1}}, "compiles nothing"),
    ({"collectives": [{"op": "all-reduce"}]}, "at_most or at_least"),
    ({"memory": {"temporaries": {"plus": 3}}}, "at_most or reference_times"),
    ({"mesh": {"axes": ["a"]}}, "shape or shape_arg"),
    ({"mesh": {"axes": ["a", "b"], "shape": [8]}}, "one size per axis"),
    ({"ops": {"absent": ["while; rm"]}}, "pattern"),
    ({"mesh": None, "out_specs": []}, "out_specs and collectives need a mesh"),
    ({"transform": "eval_shape", "out_specs": []}, "compiles nothing"),
    ({"transform": "own_jit", "out_specs": []}, "own_jit keeps the submission's own"),
    ({"values": False, "out_specs": []}, "out_specs needs values: true"),
    ({"out_specs": {"h": ["rows"]}}, "out_specs['h'] names 'rows', which is not an axis of "
     "the mesh (data, model)"),
    ({"out_specs": [["data", "model"], "data"]}, "uses a mesh axis twice"),
    ({"in_specs": {"x": ["rows", None]}}, "in_specs x names 'rows', which is not an axis of "
     "the mesh (data, model)"),
    ({"in_specs": {"params": {"w": [None, "model"], "b": ["data", "data"]}}},
     "in_specs params['b'] uses a mesh axis twice"),
    ({"out_specs": {"h": {}}}, "out_specs['h'] is an empty mapping"),
    ({"out_specs": {0: {1: {"a": {"b": {"c": {"d": {"e": {"f": {"g": []}}}}}}}}}},
     "nested more than 8 deep"),
    ({"out_specs": {f"k{i}": [] for i in range(257)}}, "more than 256 layouts"),
    ({"out_specs": [None] * 65}, "at most 64 items"),
    ({"out_specs": {True: []}}, "out_specs"),
])
def test_bad_probes_are_refused_with_a_reason(fields: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(words)):
        probe(**fields)


SPEC = {
    "title": "t", "entry_point": {"name": "f", "args": [
        {"name": "x", "type": "array"}, {"name": "lr", "type": "float"},
        {"name": "mesh_shape", "type": "any"}]},
    "tests": {"seed": 1, "sample": [{"name": "s", "args": {"x": [1.0], "lr": 1.0,
                                                           "mesh_shape": [8]}}],
              "hidden": [{"name": "h", "args": {"x": [1.0], "lr": 1.0, "mesh_shape": [8]}}]},
}


@pytest.mark.parametrize(("probe_fields", "words"), [
    ({"static": ["nope"]}, "no argument nope"),
    ({"tests": ["missing"]}, "names test 'missing'"),
    ({"mesh": {"axes": ["data"], "shape_arg": "mesh_shape"}}, "must be static"),
])
def test_probes_must_fit_the_entry_point_and_tests(probe_fields: dict[str, Any],
                                                   words: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(words)):
        ProblemSpec.model_validate({**SPEC, "probes": [{"name": "p", **probe_fields}]})
    with pytest.raises(ValidationError, match="unique"):
        ProblemSpec.model_validate({**SPEC, "probes": [{"name": "p"}, {"name": "p"}]})


def test_requests_send_abstract_inputs_and_static_values_only() -> None:
    spec = ProbeSpec(name="p", transform="grad", argnums=["x"], static=["mesh_shape"],
                     mesh={"axes": ["data", "model"], "shape_arg": "mesh_shape"},
                     in_specs={"x": ["data"]})
    args = {"x": encode(__import__("numpy").ones((8, 3), "float64")),
            "lr": encode(0.5), "mesh_shape": encode([4, 2])}
    export, export_args, program, values, kinds = probe_requests.requests(
        spec, ["x", "lr", "mesh_shape"], ["array", "float", "any"], args)
    # The trace gets shapes and dtypes (jax's own: float32 for float64), never a value.
    assert export_args[0] == {"t": "aval", "shape": [8, 3], "dtype": "float64"}
    assert export_args[1] == {"t": "aval", "shape": [], "dtype": "float32", "weak": True}
    assert export_args[2] == args["mesh_shape"]
    assert "data" not in str(export_args[0])
    assert export.argnums == [0] and export.specs == [["data"], None, None]
    assert export.mesh is not None and export.mesh.shape == [4, 2]
    assert not export.traced_layout  # told the mesh's shape: it lays out its own inputs
    # The clean run gets the traced arguments' values, in the probe's layout.
    assert values == [args["x"], args["lr"]] and kinds == ["array", "float"]
    assert program.specs == [["data"], None] and program.program == ""
    # Unless the probe hands the inputs over on the mesh (for a function that reshards
    # them): then the trace sees each one's layout, replicated where in_specs is silent.
    on_mesh = spec.model_copy(update={"mesh": spec.mesh.model_copy(
        update={"inputs_on_mesh": True})} if spec.mesh else {})
    export, *_ = probe_requests.requests(on_mesh, ["x", "lr", "mesh_shape"],
                                 ["array", "float", "any"], args)
    assert export.traced_layout and export.specs == [["data"], None, None]


def test_out_specs_are_a_prefix_tree_of_layouts_sent_to_both_sandboxes() -> None:
    # Dict keys, and positions in a tuple as integer keys (a list is a PartitionSpec).
    spec = probe(transform="value_and_grad",
                 out_specs={0: [], 1: {"w": [None, "model"], "b": []}})
    assert [(o.prefix, o.spec) for o in spec.out_spec_list()] == [
        ("[0]", []), ("[1]['w']", [None, "model"]), ("[1]['b']", [])]
    assert spec.summary()[2] == "outputs laid out: 0 P(); 1 {w: P(None, 'model'), b: P()}"
    whole = probe(out_specs=[["data", "model"], None])
    assert [(o.prefix, o.spec) for o in whole.out_spec_list()] == [
        ("", [["data", "model"], None])]
    assert whole.summary()[2] == "outputs laid out: all P(['data', 'model'], None)"
    assert probe().out_spec_list() == [] and not any("outputs" in line
                                                     for line in probe().summary())
    # The trusted side's layouts go into both requests; the outputs' paths are the
    # export's, filled in by judge.grading once it is back.
    args = {"w": encode(__import__("numpy").ones((8, 4), "float32"))}
    export, _, program, _, _ = probe_requests.requests(whole, ["w"], ["array"], args)
    assert export.out_specs == program.out_specs == whole.out_spec_list()
    assert program.out_paths is None
    export, _, program, _, _ = probe_requests.requests(probe(), ["w"], ["array"], args)
    assert export.out_specs is None and program.out_specs is None


def test_requests_refuse_what_cannot_be_traced() -> None:
    spec = ProbeSpec(name="p")
    with pytest.raises(ValueError, match="list it under static"):
        probe_requests.requests(spec, ["s"], ["any"], {"s": encode("text")})
    grad = ProbeSpec(name="p", transform="grad", argnums=["n"], static=["n"])
    with pytest.raises(ValueError, match="not a traced argument"):
        probe_requests.requests(grad, ["n"], ["int"], {"n": encode(3)})


def test_a_mesh_of_size_one_axes_is_the_same_layout() -> None:
    import numpy as np

    def array(axes: list[str], shape: list[int], spec: list[Any]) -> ArrayValue:
        data = encode(np.zeros((8, 2), np.float32))
        data["sharding"] = {"kind": "NamedSharding", "spec": spec, "mesh_axes": axes,
                            "mesh_shape": shape, "mesh_devices": list(range(8)),
                            "buffers": [{"device": d, "shape": [1, 2]} for d in range(8)]}
        return ArrayValue.model_validate(data)

    theirs = TreeValue(t="tree", type="program", items=[("", array(["data"], [8], ["data"]))])
    ours = TreeValue(t="tree", type="program", items=[
        ("", array(["data", "model"], [8, 1], ["data", None]))])
    checker = get_checker("sharding", {"check_placement": True})
    assert not checker.check(ours, theirs).passed  # the meshes' names differ
    assert checker.check(probe_checks.without_unit_axes(ours), probe_checks.without_unit_axes(theirs)).passed
