"""Attacks on the probes' boundary (judge/probes.py, docs/security.md "Probes"). The
submission's sandbox only traces its function and hands over a serialized ``jax.export``
program; a clean sandbox that loads no submission code reads the program (custom calls,
effects, operations), compiles it on the test's mesh, reads its HLO, memory and cost
analyses, then runs it; the trusted side decides. So nothing the submission does to its
own process (to ``jax.export``, to ``Compiled``, to the harness's modules) changes what
is graded: only the program it hands over is, and as what it is.

Problems: demo/probed (tests/fixtures/problemsets: ``loss(w, x)``, a custom_vjp whose
gradient into ``x @ w`` is clipped; probes, in the order they are judged: ``gradient``,
``batched`` (vmap over x's rows), ``shapes``, ``no-loops`` (no while), ``split-rows`` (8
devices, x split over 'rows': one all-reduce, no all-gather, flops and temporaries bounded
by the reference's); 1 sample test, 2 hidden), a copy of it with 3 s a test for the time
attacks, and jax-sharding/tensor-parallel-mlp (problemsets/: probe ``one-program``, one
all-reduce over 'model') where the mesh matters, and demo/out-layout (tests/fixtures/probes,
built for the suite: probe ``rows-out`` gives the outputs' layouts) for out_specs. A probe is judged only on a test whose
value passed, so every attack returns the right value from its eager call.

Each test asserts the verdict and the reason the defence gives: the sample test's
message (its details) and the hidden tests' (fixed sentences, ``judge.probe_checks.REASONS``
prefixed by the probe's name)."""

from __future__ import annotations

import re
import shutil
import textwrap
from collections.abc import Iterator

import pytest
import yaml

from judge.catalog import Catalog
from judge.grading import grade
from judge.judging import HIDDEN_MESSAGES
from judge.probe_checks import REASONS
from judge.problem import Problem
from judge.report import VerdictReport
from judge.sandbox.base import Sandbox
from judge.sandbox.supervisor import INTERFERED
from judge.settings import Settings
from judge.verdict import Verdict
from tests_support import FIXTURE_PROBLEMS, PROBE_FIXTURES, built_probe_fixture

from .support import Judge, describe, facts, verdicts

pytestmark = pytest.mark.slow

EXPORT_CAP = (1 << 20) * 3 // 4  # three quarters of Settings.result_bytes
CALLBACK_TARGET = "xla_ffi_python_cpu_callback"  # what every host callback lowers to

# demo/probed's reference, also under another name: each attack redefines ``loss``
# around ``honest``.
HONEST = (FIXTURE_PROBLEMS / "demo" / "probed" / "reference.py").read_text() \
    + "\n\nhonest = loss\n"

# Switches off, in the submission's process, jax.export's own refusals (host callbacks,
# custom calls without a stability guarantee, effects it cannot serialize), so that such a
# program does reach the clean sandbox: its vet is what is attacked.
NO_EXPORT_CHECKS = """
import dataclasses
import jax.export
from jax._src.export import _export

_export._check_lowering = lambda lowering: None
_export._CUSTOM_CALL_TARGETS_GUARANTEED_STABLE.update(ALSO_ALLOWED)
_serialize = jax.export.Exported.serialize
jax.export.Exported.serialize = lambda self, vjp_order=0: _serialize(
    dataclasses.replace(self, ordered_effects=(), unordered_effects=()), vjp_order)
"""


def reason(probe: str, key: str, **fill: str) -> str:
    """What a hidden test says when ``probe`` fails for ``key``."""
    return f"probe '{probe}': " + REASONS[key].format(**fill)


def sample_message(report: VerdictReport) -> str:
    return next(t.message for t in report.tests if t.visibility == "sample")


def hidden_messages(report: VerdictReport) -> set[str]:
    return {t.message for t in report.tests if t.visibility == "hidden"}


def judge_for(problem: Problem, sandbox: Sandbox, settings: Settings) -> Judge:
    def run(code: str, **consts: object) -> VerdictReport:
        header = "".join(f"{name} = {value!r}\n" for name, value in consts.items())
        return grade(problem, header + textwrap.dedent(code), sandbox=sandbox,
                     settings=settings)

    return run


@pytest.fixture(scope="session")
def judge_probed(catalog: Catalog, docker_sandbox: Sandbox, settings: Settings) -> Judge:
    return judge_for(catalog.get("demo/probed"), docker_sandbox, settings)


@pytest.fixture(scope="session")
def judge_mlp(seed_catalog: Catalog, docker_sandbox: Sandbox, settings: Settings) -> Judge:
    return judge_for(seed_catalog.get("jax-sharding/tensor-parallel-mlp"), docker_sandbox,
                     settings)


@pytest.fixture(scope="session")
def judge_tight(catalog: Catalog, docker_sandbox: Sandbox, settings: Settings,
                tmp_path_factory: pytest.TempPathFactory) -> Judge:
    """demo/probed with 3 s of CPU time a test (its stored tests unchanged): the time
    attacks end soon."""
    root = tmp_path_factory.mktemp("problems")
    copy = root / "demo" / "probed"
    shutil.copytree(catalog.get("demo/probed").path, copy)
    spec = yaml.safe_load((copy / "problem.yaml").read_text())
    spec["limits"] = {**spec["limits"], "test_seconds": 3, "total_seconds": 30}
    (copy / "problem.yaml").write_text(yaml.safe_dump(spec))
    return judge_for(Catalog(root).get("demo/probed"), docker_sandbox, settings)



def test_the_fixture_has_the_probes_these_attacks_expect(catalog: Catalog) -> None:
    # The attacks below pin probe names and their order; a changed fixture fails here
    # first, not as a puzzling verdict.
    names = [p.name for p in catalog.get("demo/probed").spec.probes]
    assert names == ["gradient", "batched", "shapes", "no-loops", "split-rows"]

# -- 1. a patched jax.export hands over another program: it is graded as what it is -----

PATCHED_EXPORTS = {
    # The control: the patch hands over the function's own program.
    "passes it through": """
        _real_export = jax.export.export
        jax.export.export = lambda fun, **kwargs: _real_export(fun, **kwargs)
    """,
    # Every input replicated before the function sees it: every device computes all, and
    # the judge's export gets a program with no all-reduce over 'rows'.
    "every device computes all": """
        from jax.sharding import NamedSharding, PartitionSpec
        _real_export = jax.export.export

        def _export(fun, **kwargs):
            def trace(*avals):
                def everywhere(*args):
                    return fun(*[
                        jax.lax.with_sharding_constraint(
                            a, NamedSharding(s.sharding.mesh, PartitionSpec()))
                        if isinstance(getattr(s, "sharding", None), NamedSharding) else a
                        for a, s in zip(args, avals)])
                return _real_export(jax.jit(everywhere), **kwargs)(*avals)
            return trace

        jax.export.export = _export
    """,
    # Not a program at all.
    "garbage bytes": """
        jax.export.Exported.serialize = lambda self, vjp_order=0: bytearray(b"?" * 900)
    """,
}


@pytest.mark.parametrize("patch", list(PATCHED_EXPORTS))
def test_a_patched_export_is_graded_by_the_program_it_hands_over(judge_probed: Judge,
                                                                 patch: str) -> None:
    # The eager call is honest throughout; jax.export is replaced at import time.
    report = judge_probed(HONEST + "import jax.export\n"
                          + textwrap.dedent(PATCHED_EXPORTS[patch]) + "\nloss = honest\n")
    if patch == "passes it through":
        assert report.verdict is Verdict.ACCEPTED, describe(report)
        return
    assert report.verdict is Verdict.WRONG_ANSWER, describe(report)
    assert set(verdicts(report)) == {Verdict.WRONG_ANSWER}, describe(report)
    if patch == "every device computes all":
        # The clean sandbox compiled what it got: the collectives show what it is.
        assert sample_message(report).startswith(
            "probe 'split-rows': your compiled program has 0 all-reduces over 'rows', at "
            "least 1 expected"), describe(report)
        assert hidden_messages(report) == {reason("split-rows", "too_few", op="all-reduce")}
    else:
        assert sample_message(report).startswith(
            "probe 'gradient': the program could not be read"), describe(report)
        assert hidden_messages(report) == {reason("gradient", "refused")}


# -- 1b. a program that ignores the outputs' layouts the probe asks for -----------------

# demo/out-layout (tests/fixtures/probes, built for the suite): ``layer(w, x)`` returns
# ``{h: x @ w, norm}``; probe ``rows-out`` gives h the layout P('rows', None) and the norm
# P() (out_specs), no all-gather allowed. XLA keeps h split over 'rows' by itself, so a
# program with no out_shardings, or with its own, computes the same numbers with the same
# collectives: only the clean sandbox's check of the declared and compiled output
# layouts against the trusted side's request stands in its way.
OUT_LAYOUT_HONEST = (PROBE_FIXTURES / "out-layout" / "reference.py").read_text()
IGNORED_OUT_SHARDINGS = {
    # The control: jax.jit replaced by a pass-through.
    "jax.jit passed through": """
        _real_jit = jax.jit
        jax.jit = lambda fun=None, **kwargs: _real_jit(fun, **kwargs)
    """,
    # The judge's jax.jit(flat, out_shardings=...) made without its out_shardings.
    "jax.jit drops out_shardings": """
        _real_jit = jax.jit

        def _jit(fun=None, **kwargs):
            kwargs.pop("out_shardings", None)
            return _real_jit(fun, **kwargs)

        jax.jit = _jit
    """,
    # jax.export handed the judge's function re-jitted without them ...
    "jax.export re-jits without them": """
        _real_export = jax.export.export
        jax.export.export = lambda fun, **kwargs: _real_export(
            jax.jit(getattr(fun, "__wrapped__", fun)), **kwargs)
    """,
    # ... or with every output replicated.
    "jax.export re-jits with its own": """
        from jax.sharding import NamedSharding, PartitionSpec
        _real_export = jax.export.export

        def _export(fun, **kwargs):
            def trace(*avals):
                mesh = next(a.sharding.mesh for a in avals
                            if isinstance(getattr(a, "sharding", None), NamedSharding))
                own = jax.jit(getattr(fun, "__wrapped__", fun),
                              out_shardings=NamedSharding(mesh, PartitionSpec()))
                return _real_export(own, **kwargs)(*avals)
            return trace

        jax.export.export = _export
    """,
}


@pytest.fixture(scope="session")
def judge_out_layout(docker_sandbox: Sandbox, settings: Settings,
                     tmp_path_factory: pytest.TempPathFactory) -> Judge:
    problem = built_probe_fixture("out-layout", tmp_path_factory.mktemp("problems"), settings)
    return judge_for(problem, docker_sandbox, settings)


@pytest.mark.parametrize("patch", list(IGNORED_OUT_SHARDINGS))
def test_a_program_that_ignores_the_asked_output_layouts_is_refused(
        judge_out_layout: Judge, patch: str) -> None:
    report = judge_out_layout("import jax\nimport jax.export\n"
                              + textwrap.dedent(IGNORED_OUT_SHARDINGS[patch])
                              + OUT_LAYOUT_HONEST)
    if patch == "jax.jit passed through":
        assert report.verdict is Verdict.ACCEPTED, describe(report)
        return
    assert report.verdict is Verdict.WRONG_ANSWER, describe(report)
    assert set(verdicts(report)) == {Verdict.WRONG_ANSWER}, describe(report)
    assert sample_message(report) == (
        "probe 'rows-out': the program does not declare output 0 (['h']) in the layout the "
        "probe asks for (P('rows', None))"), describe(report)
    assert hidden_messages(report) == {reason("rows-out", "refused")}, describe(report)


# -- 2. what the submission's process says about compiled programs is never read --------

# Every way the submission's process describes a compiled program, made to describe the
# reference's (one all-reduce over 'model', little memory, little work), and stand-ins for
# the trusted side's modules in sys.modules. The submission checks that they are live in
# its own process and says what its own compiled program now claims.
FORGED_FACTS = """
import json
import sys
import types
from types import SimpleNamespace

import jax
import jax.export
from jax._src import stages
from jax._src.interpreters import pxla
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

FORGED_HLO = ("HloModule forged\\n\\nENTRY main {\\n  p = f32[4,3] parameter(0)\\n"
              "  ROOT r = f32[4,3] all-reduce(p), replica_groups={{0,1,2,3},{4,5,6,7}}, "
              "to_apply=add\\n}\\n")
STATS = SimpleNamespace(argument_size_in_bytes=64, output_size_in_bytes=48,
                        temp_size_in_bytes=0, alias_size_in_bytes=0)
for cls in (stages.Compiled, pxla.MeshExecutable):
    cls.as_text = lambda self, *a, **k: FORGED_HLO
    cls.memory_analysis = lambda self, *a, **k: STATS
    cls.cost_analysis = lambda self, *a, **k: {"flops": 1.0}
_real_deserialize = jax.export.deserialize
jax.export.deserialize = lambda data: _real_deserialize(data)
jax.export.Exported.mlir_module = lambda self, *a, **k: "module @forged {}"
for name in ("judge.hlo", "judge.probes", "judge.grading"):
    fake = types.ModuleType(name)
    fake.collectives = lambda *a, **k: []
    fake.check_facts = lambda *a, **k: None
    sys.modules[name] = fake

compiled = jax.jit(lambda a: a * 2).lower(1.0).compile()
print("@@", json.dumps({"as_text": compiled.as_text(),
                        "flops": compiled.cost_analysis()["flops"],
                        "temporaries": compiled.memory_analysis().temp_size_in_bytes}))
"""

MLP = {
    # The right numbers and layout with every input replicated: every device computes
    # the whole block (the problem's every_device_computes_all.py).
    "every device computes all": """
def tensor_parallel_mlp(x, w1, b1, w2, b2, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"))
    rep = NamedSharding(mesh, P())
    x, w1, b1, w2, b2 = (jax.device_put(a, rep) for a in (x, w1, b1, w2, b2))
    y = jax.jit(lambda x, w1, b1, w2, b2: jax.nn.relu(x @ w1 + b1) @ w2 + b2)(
        x, w1, b1, w2, b2)
    return jax.device_put(y, NamedSharding(mesh, P("data", None)))
""",
    # The control: a tensor-parallel block (shard_map, one psum over 'model').
    "tensor parallel": """
IN_SPECS = (P("data", None), P(None, "model"), P("model"), P("model", None), P())


def block(x, w1, b1, w2, b2):
    return jax.lax.psum(jax.nn.relu(x @ w1 + b1) @ w2, "model") + b2


def tensor_parallel_mlp(x, w1, b1, w2, b2, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"))
    args = [jax.device_put(a, NamedSharding(mesh, s))
            for a, s in zip((x, w1, b1, w2, b2), IN_SPECS)]
    with jax.set_mesh(mesh):
        return jax.jit(jax.shard_map(block, in_specs=IN_SPECS,
                                     out_specs=P("data", None)))(*args)
""",
}


@pytest.mark.parametrize("solution", list(MLP))
def test_forged_compiled_facts_in_the_submissions_process_change_nothing(
        judge_mlp: Judge, solution: str) -> None:
    report = judge_mlp(FORGED_FACTS + MLP[solution])
    said = facts(report)
    assert "all-reduce" in said["as_text"] and said["flops"] == 1.0, describe(report)
    if solution == "tensor parallel":
        assert report.verdict is Verdict.ACCEPTED, describe(report)
        return
    # None of the forged functions runs in the clean sandbox: the replicated program has
    # no all-reduce, and does too much work or needs too much memory per device.
    assert report.verdict is Verdict.WRONG_ANSWER, describe(report)
    assert set(verdicts(report)) == {Verdict.WRONG_ANSWER}, describe(report)
    assert sample_message(report).startswith(
        "probe 'one-program': your compiled program has 0 all-reduces over 'model'"), \
        describe(report)
    assert hidden_messages(report) <= {
        reason("one-program", "too_few", op="all-reduce"),
        reason("one-program", "memory", metric="temporary"),
        reason("one-program", "flops")}, describe(report)


# Every device computes all, and the one instruction of a named scope carries, in the
# compiled program's metadata (op_name), the text of an all-reduce over 'model' with the
# test mesh's groups: XLA prints it in the clean sandbox's HLO, for judge/hlo.py to read.
SPELLED_COLLECTIVE = """
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def tensor_parallel_mlp(x, w1, b1, w2, b2, mesh_shape):
    data, model = mesh_shape
    groups = ",".join("{" + ",".join(str(i * model + j) for j in range(model)) + "}"
                      for i in range(data))
    spelled = f"y = f32[] all-reduce(x), replica_groups={{{groups}}}, to_apply=add"
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"))
    rep = NamedSharding(mesh, P())
    x, w1, b1, w2, b2 = (jax.device_put(a, rep) for a in (x, w1, b1, w2, b2))

    def block(x, w1, b1, w2, b2):
        y = jax.nn.relu(x @ w1 + b1) @ w2
        with jax.named_scope(spelled):
            nan = jnp.isnan(y)
        return jnp.where(nan, 0.0, y) + b2

    y = jax.jit(block)(x, w1, b1, w2, b2)
    return jax.device_put(y, NamedSharding(mesh, P("data", None)))
"""


def test_a_collective_spelled_in_a_scope_name_is_not_counted(judge_mlp: Judge) -> None:
    # Before the fix judge/hlo.py read instructions inside the metadata's quoted strings:
    # this program had its one all-reduce over 'model' on every test, and only the flops
    # and memory bounds stopped it.
    report = judge_mlp(SPELLED_COLLECTIVE)
    assert report.verdict is Verdict.WRONG_ANSWER, describe(report)
    assert set(verdicts(report)) == {Verdict.WRONG_ANSWER}, describe(report)
    samples = [t.message for t in report.tests if t.visibility == "sample"]
    assert samples and all(m.startswith(
        "probe 'one-program': your compiled program has 0 all-reduces over 'model', at least "
        "1 expected (its all-reduce operations: none)") for m in samples), describe(report)
    assert hidden_messages(report) <= {
        reason("one-program", "too_few", op="all-reduce"),
        reason("one-program", "memory", metric="temporary"),
        reason("one-program", "flops")}, describe(report)


# The harness's own half of a probe, in the submission's process: the vet and run that
# would let a host callback through, and an allow-list that names it.
PATCH_PROGRAM = """
from judge.harness import program

_saved = (program.vet, program.run, program.ALLOWED_CUSTOM_CALLS)

def patch():
    program.vet = lambda exported, inputs, devices: {}
    program.run = lambda *args, **kwargs: ({"t": "list", "items": []}, {})
    program.ALLOWED_CUSTOM_CALLS = frozenset({"xla_ffi_python_cpu_callback"})

def put_back():
    program.vet, program.run, program.ALLOWED_CUSTOM_CALLS = _saved
"""

HOST_SUM = """
import numpy as np

RESULT = jax.ShapeDtypeStruct((), jnp.float32)


def on_the_host(z):  # NumPy, on the host
    return np.float32(np.sum(np.asarray(z, np.float32) ** 2))


@jax.custom_jvp
def host_sum(z):  # sum(z ** 2), through THROUGH
    return THROUGH(z)


@host_sum.defjvp
def _jvp(primals, tangents):  # the clipped gradient, in jnp: it traces under jax.grad
    (z,), (dz,) = primals, tangents
    return host_sum(z), jnp.sum(jnp.clip(2 * z, -1.0, 1.0) * dz)
"""


@pytest.mark.parametrize("when", ["left in place", "put back before the harness looks"])
def test_the_harness_program_module_patched_in_the_submissions_process(
        judge_probed: Judge, when: str) -> None:
    # The submission exports a program with a host callback (jax.export's own refusal
    # switched off) and replaces the harness's vet and run, which the clean sandbox uses.
    through = "THROUGH = lambda z: jax.pure_callback(on_the_host, RESULT, z, " \
              "vmap_method='sequential')\n"
    code = HONEST + NO_EXPORT_CHECKS + PATCH_PROGRAM + through + HOST_SUM
    if when == "left in place":
        report = judge_probed(code + "patch()\n\ndef loss(w, x):\n    return host_sum(x @ w)\n",
                              ALSO_ALLOWED=[CALLBACK_TARGET])
        # The tripwire sees the harness's module changed after loading.
        assert report.verdict is Verdict.RUNTIME_ERROR, describe(report)
        assert report.interfered and report.message == INTERFERED, describe(report)
        return
    # Patched while the judge traces, put back before the harness's tripwire looks: the
    # tripwire sees nothing, and the clean sandbox ran its own vet all along.
    report = judge_probed(code + """
def loss(w, x):
    if isinstance(x, jax.core.Tracer):
        patch()
        try:
            return host_sum(x @ w)
        finally:
            put_back()
    return honest(w, x)
""", ALSO_ALLOWED=[CALLBACK_TARGET])
    assert report.verdict is Verdict.WRONG_ANSWER and not report.interfered, describe(report)
    assert sample_message(report) == (
        f"probe 'batched': the program makes a custom call to '{CALLBACK_TARGET}' (host "
        "callbacks and foreign kernels are not run)"), describe(report)
    assert hidden_messages(report) == {reason("batched", "refused")}


# -- 3. a function that is one thing when traced and another when run ------------------
#
# What holds: the eager call's value is checked against the expected one, and each
# probe's verdict rests on the *traced* program, compiled and run in the clean sandbox on
# the test's inputs and checked against the reference's program. A function must be
# right both ways; whichever way it lies is the way it fails.

TWO_FACED = {
    # Honest when called, zeros in the program the judge traces.
    "zeros when traced": """
        def loss(w, x):
            if isinstance(w, jax.core.Tracer) or isinstance(x, jax.core.Tracer):
                return jnp.zeros((), jnp.float32) * jnp.sum(x @ w)
            return honest(w, x)
    """,
    # Honest when traced, forged numbers (off by one, from NumPy) when called.
    "forged when called": """
        import numpy as np

        def loss(w, x):
            if isinstance(w, jax.core.Tracer) or isinstance(x, jax.core.Tracer):
                return honest(w, x)
            return jnp.float32(np.sum((np.asarray(x) @ np.asarray(w)) ** 2) + 1.0)
    """,
}


@pytest.mark.parametrize("face", list(TWO_FACED))
def test_a_function_that_differs_between_tracing_and_running(judge_probed: Judge,
                                                             face: str) -> None:
    report = judge_probed(HONEST + textwrap.dedent(TWO_FACED[face]))
    assert report.verdict is Verdict.WRONG_ANSWER, describe(report)
    assert set(verdicts(report)) == {Verdict.WRONG_ANSWER}, describe(report)
    if face == "zeros when traced":
        assert sample_message(report).startswith(
            "probe 'gradient': the compiled program's results: "), describe(report)
        assert hidden_messages(report) == {reason("gradient", "values")}
    else:  # the value's own check fails first: no probe is judged on a wrong value
        assert sample_message(report).startswith("1 of 1 values differ"), describe(report)
        assert not any(m.startswith("probe ") for m in hidden_messages(report))


# -- 4. host callbacks: never exported by jax, refused by the clean sandbox if forced ----

# Every host callback jax offers, computing in NumPy inside the function (the debug ones
# can only print: the value then comes from jnp).
CALLBACKS = {
    "pure_callback": "jax.pure_callback(on_the_host, RESULT, z, vmap_method='sequential')",
    "io_callback": "io_callback(on_the_host, RESULT, z)",
    "ordered io_callback": "io_callback(on_the_host, RESULT, z, ordered=True)",
    "debug.callback": "(jax.debug.callback(lambda v: print(on_the_host(v)), z), "
                      "jnp.sum(z ** 2))[1]",
    "debug.print": "(jax.debug.print('{}', z), jnp.sum(z ** 2))[1]",
}
# jax drops a pure callback whose result the gradient does not use (no effect keeps it):
# its gradient program is clean, its vmapped one is not.
FIRST_REFUSED = {"pure_callback": "batched"}

EXPORT_EACH = """
import json
import re

from jax.experimental import io_callback

THROUGHS = {""" + ", ".join(f"{k!r}: lambda z: {v}" for k, v in CALLBACKS.items()) + """}
seen = {}
for kind, through in THROUGHS.items():
    fn = lambda w, x, through=through: through(x @ w)
    args = (jax.ShapeDtypeStruct((4, 3), jnp.float32), jax.ShapeDtypeStruct((8, 4), jnp.float32))
    try:
        exported = jax.export.export(jax.jit(fn), platforms=("cpu",))(*args)
    except Exception as exc:
        seen[kind] = {"refused": f"{type(exc).__name__}: {exc}"}
        continue
    seen[kind] = {
        "targets": sorted(set(re.findall(r"custom_call @([\\w.$-]+)", exported.mlir_module()))),
        "effects": len(exported.ordered_effects) + len(exported.unordered_effects)}
print("@@", json.dumps(seen))
"""


def test_host_callbacks_are_not_exported(judge_probed: Judge) -> None:
    # What jax 0.10.2 does with each, in the submission's own process (reported at load
    # time): jax.export refuses every one. The graded function prints with jax.debug.print
    # inside: its probes cannot be traced as one program.
    report = judge_probed(HONEST + "import jax.export\n" + HOST_SUM.replace("THROUGH(z)",
                          "(jax.debug.print('{}', z), jnp.sum(z ** 2))[1]")
                          + EXPORT_EACH + "\ndef loss(w, x):\n    return host_sum(x @ w)\n")
    said = facts(report)
    assert set(said) == set(CALLBACKS), describe(report)
    for kind, what in said.items():
        assert what == {"refused": "NotImplementedError: serialization of host_callbacks is "
                                   "not yet implemented"}, (kind, what)
    assert report.verdict is Verdict.WRONG_ANSWER, describe(report)
    assert sample_message(report).startswith(
        "probe 'gradient': the judge could not trace your function with jax.jit as one "
        "program: NotImplementedError: serialization of host_callbacks"), describe(report)
    assert hidden_messages(report) == {reason("gradient", "untraceable")}


@pytest.mark.parametrize("kind", list(CALLBACKS))
def test_a_host_callback_forced_through_export_is_refused(judge_probed: Judge,
                                                          kind: str) -> None:
    # jax.export's checks switched off and the effects left out of the serialized program:
    # the program reaches the clean sandbox, whose vet finds the callback's custom call
    # (reported at load time: every kind lowers to the same one; the io and debug kinds
    # carry effects too, which jax cannot serialize).
    report = judge_probed(HONEST + NO_EXPORT_CHECKS + HOST_SUM + EXPORT_EACH
                          + f"\nTHROUGH = THROUGHS[{kind!r}]\n"
                          + "\ndef loss(w, x):\n    return host_sum(x @ w)\n",
                          ALSO_ALLOWED=[CALLBACK_TARGET])
    said = facts(report)
    assert said[kind]["targets"] == [CALLBACK_TARGET], describe(report)
    assert bool(said[kind]["effects"]) == (kind != "pure_callback"), describe(report)
    probe = FIRST_REFUSED.get(kind, "gradient")
    assert report.verdict is Verdict.WRONG_ANSWER, describe(report)
    assert set(verdicts(report)) == {Verdict.WRONG_ANSWER}, describe(report)
    assert sample_message(report) == (
        f"probe '{probe}': the program makes a custom call to '{CALLBACK_TARGET}' (host "
        "callbacks and foreign kernels are not run)"), describe(report)
    assert hidden_messages(report) == {reason(probe, "refused")}


# -- 5. programs that are too large, too long or too hungry -----------------------------

RESOURCES = {
    # A Python loop unrolling ten million additions into the trace: the export never ends.
    "a trace that never ends": """
        def loss(w, x):
            if isinstance(x, jax.core.Tracer):
                z = x @ w
                for _ in range(10_000_000):
                    z = z + 1.0
            return honest(w, x)
    """,
    # A small program that loops 2**31 times when the clean sandbox runs it.
    "a program that never ends": """
        def loss(w, x):
            if isinstance(x, jax.core.Tracer):
                spin = jax.lax.fori_loop(0, 2**31 - 1, lambda i, c: c * 1.0000001 + 1e-9,
                                         jnp.sum(x))
                return honest(w, x) + spin * 0.0
            return honest(w, x)
    """,
    # 1.2 MB of constants baked into the program: over the export's size cap.
    "a program too large to hand over": """
        import numpy as np

        NOISE = np.random.default_rng(0).standard_normal(300_000).astype(np.float32)

        def loss(w, x):
            if isinstance(x, jax.core.Tracer):
                return honest(w, x) + jnp.sum(jnp.asarray(NOISE)) * 0.0
            return honest(w, x)
    """,
    # A 4 GiB buffer the program fills (a scatter into zeros), against 2048 MiB.
    "a program that fills 4 GiB": """
        def loss(w, x):
            if isinstance(x, jax.core.Tracer):
                rows = x[..., 0, :] if x.ndim > 1 else x
                big = jnp.zeros((1 << 30,), jnp.float32).at[
                    jnp.arange(x.shape[-1]) * 1000].set(rows)
                return honest(w, x) + jnp.sum(big[:: 1 << 20]) * 0.0
            return honest(w, x)
    """,
}


@pytest.fixture
def still_accepting(judge_tight: Judge) -> Iterator[None]:
    """After the attack, the honest function is still accepted (a zygote lives on)."""
    yield
    report = judge_tight(HONEST + "loss = honest\n")
    assert report.verdict is Verdict.ACCEPTED, describe(report)


@pytest.mark.usefixtures("still_accepting")
@pytest.mark.parametrize("attack", list(RESOURCES))
def test_resource_attacks_in_the_program_get_their_limits_verdict(judge_tight: Judge,
                                                                  attack: str) -> None:
    report = judge_tight(HONEST + textwrap.dedent(RESOURCES[attack]))
    assert Verdict.INTERNAL_ERROR not in verdicts(report), describe(report)
    sample = sample_message(report)
    if attack == "a trace that never ends":  # in the submission's sandbox: its run ends
        assert set(verdicts(report)) == {Verdict.TIME_LIMIT_EXCEEDED}, describe(report)
        assert re.match(r"probe 'gradient': the test (ran over its time limit of|used "
                        r"over) 3 s", sample), describe(report)
    elif attack == "a program that never ends":  # in the clean sandbox: its run ends
        assert set(verdicts(report)) == {Verdict.TIME_LIMIT_EXCEEDED}, describe(report)
        assert re.match(r"probe 'batched': the test (ran over its time limit of|used "
                        r"over) 3 s", sample), describe(report)
    elif attack == "a program too large to hand over":
        assert set(verdicts(report)) == {Verdict.WRONG_ANSWER}, describe(report)
        assert sample.startswith("probe 'batched': the judge could not trace your "
                                 "function with jax.jit as one program: ValueError: the "
                                 "exported program is "), describe(report)
        assert sample.endswith(f"bytes, over the limit of {EXPORT_CAP}"), describe(report)
        assert hidden_messages(report) == {reason("batched", "untraceable")}
    else:
        # The first program meets the memory limit. Filling memory also costs CPU time (the
        # kernel's, faulting pages in), so on a loaded machine a later program of the same
        # clean run may reach the 3 s CPU limit first: its own limit's verdict, and the
        # programs after it are not run for that reason. Never anything else.
        assert verdicts(report)[0] is Verdict.MEMORY_LIMIT_EXCEEDED, describe(report)
        assert set(verdicts(report)) <= {Verdict.MEMORY_LIMIT_EXCEEDED,
                                         Verdict.TIME_LIMIT_EXCEEDED}, describe(report)
        assert sample.startswith("probe 'batched': " + HIDDEN_MESSAGES["memory"]), \
            describe(report)


# -- 6. a hidden test's probe message holds only the judge's words ----------------------

CHOSEN = {
    # The trace raises an exception whose message the submission spelled.
    "exception message": ("gradient", "untraceable", """
        def loss(w, x):
            if isinstance(x, jax.core.Tracer):
                raise ValueError("LEAK_" + "spelled out by the submission")
            return honest(w, x)
    """),
    # The traced output is keyed by the submission's text: the export's paths.
    "output keys": ("batched", "values", """
        def loss(w, x):
            if isinstance(x, jax.core.Tracer) and x.ndim == 1:  # under jax.vmap only
                return {"LEAK_" + "x" * 100: honest(w, x)}
            return honest(w, x)
    """),
    # Keys longer than the judge takes: refused at the export, not a broken protocol line
    # (which used to make the probe 'the submission interfered with the judge').
    "long output keys": ("batched", "untraceable", """
        def loss(w, x):
            if isinstance(x, jax.core.Tracer) and x.ndim == 1:
                return {"LEAK_" + "x" * 1000: honest(w, x)}
            return honest(w, x)
    """),
    # A custom call whose target the submission named (with a space, so that the MLIR
    # printer quotes it: vet used to miss it, and XLA's compile error named it).
    "custom call target": ("batched", "refused", NO_EXPORT_CHECKS + textwrap.dedent("""
        def loss(w, x):
            if isinstance(x, jax.core.Tracer) and x.ndim == 1:
                return jax.ffi.ffi_call("LEAK target", jax.ShapeDtypeStruct((), jnp.float32),
                                        vmap_method="sequential")(x @ w)
            return honest(w, x)
    """)),
}
SAMPLE_SAYS = {
    "exception message": "ValueError: LEAK_spelled out by the submission",
    "output keys": "unexpected ['LEAK_xxxx",
    "long output keys": "ValueError: an output's key path is 1009 characters long, over the "
                        "limit of 500",
    "custom call target": "the program makes a custom call to 'LEAK target'",
}


@pytest.mark.parametrize("vector", list(CHOSEN))
def test_a_hidden_tests_probe_message_holds_only_the_judges_words(judge_probed: Judge,
                                                                  vector: str) -> None:
    probe, key, code = CHOSEN[vector]
    report = judge_probed(HONEST + textwrap.dedent(code), ALSO_ALLOWED=["LEAK target"])
    assert report.verdict is Verdict.WRONG_ANSWER, describe(report)
    assert set(verdicts(report)) == {Verdict.WRONG_ANSWER}, describe(report)
    # The sample test's message gives the details, the submission's text among them ...
    assert sample_message(report).startswith(f"probe '{probe}': "), describe(report)
    assert SAMPLE_SAYS[vector] in sample_message(report), describe(report)
    # ... a hidden test's is the fixed sentence, and the report holds no other copy.
    assert hidden_messages(report) == {reason(probe, key)}, describe(report)
    assert "LEAK" not in report.message, describe(report)


def test_operations_are_read_from_the_program_not_from_its_text(judge_probed: Judge) -> None:
    # An honest function inside named scopes that spell StableHLO operations: the names
    # reach the program's locations, not its operations. Before the fix the first failed
    # no-loops ('uses while') and the second, too long to report, made the clean run's
    # result line invalid (runtime_error, 'interfered').
    report = judge_probed(HONEST + """
def loss(w, x):
    with jax.named_scope("stablehlo.while"), jax.named_scope("stablehlo.x" + "y" * 200):
        return honest(w, x)
""")
    assert report.verdict is Verdict.ACCEPTED, describe(report)

