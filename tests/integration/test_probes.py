"""Probes in every backend: the entry point is traced and exported in the submission's
sandbox, the program compiled and run in a clean one, and what the compiler made of it
decides (judge.probes).

demo/probed (tests/fixtures/problemsets) is a custom_vjp exercise: ``loss(w, x)`` whose
gradient into ``x @ w`` is clipped. Its probes: ``gradient`` (jax.grad wrt w),
``batched`` (vmap over x's rows), ``shapes`` (eval_shape), ``no-loops`` (no while loop in
the program) and ``split-rows`` (on 8 devices with x split over 'rows': one all-reduce, no
all-gather, at most 1.5 times the reference's flops per device).

demo/out-layout (tests/fixtures/probes, built here) returns ``{h: x @ w, norm}``; its probe
``rows-out`` gives the outputs' layouts (``out_specs``: h split over 'rows' as x is, the
norm replicated) and allows no all-gather.
"""

from __future__ import annotations

import base64
import json
import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judge.build import build
from judge.catalog import Catalog
from judge.errors import BuildFailed
from judge.grading import grade
from judge.problem import Problem
from judge.report import VerdictReport
from judge.sandbox import get_sandbox
from judge.sandbox.base import Sandbox
from judge.settings import Settings
from judge.testdata import load_tests
from judge.verdict import Verdict
from tests_support import FIXTURE_PROBLEMS, built_probe_fixture

pytestmark = [pytest.mark.slow, pytest.mark.service]

BACKENDS = ("process", "docker", "zygote")

HONEST = """
import jax
import jax.numpy as jnp


@jax.custom_vjp
def clip_gradient(z):
    return z


clip_gradient.defvjp(lambda z: (z, None), lambda _, g: (jnp.clip(g, -1.0, 1.0),))


def loss(w, x):
    return jnp.sum(clip_gradient(x @ w) ** 2)
"""


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox(request: pytest.FixtureRequest, settings: Settings) -> Iterator[Sandbox]:
    box = get_sandbox(request.param, settings.model_copy(update={"zygote_count": 1}))
    yield box
    box.close()


def run(sandbox: Sandbox, catalog: Catalog, settings: Settings, code: str) -> VerdictReport:
    return grade(catalog.get("demo/probed"), textwrap.dedent(code), sandbox=sandbox,
                 settings=settings)


def sample_message(report: VerdictReport) -> str:
    return next(t.message for t in report.tests if t.visibility == "sample")


def test_an_honest_custom_vjp_passes_every_probe(sandbox: Sandbox, catalog: Catalog,
                                                  settings: Settings) -> None:
    report = run(sandbox, catalog, settings, HONEST)
    assert report.verdict is Verdict.ACCEPTED, [t.message for t in report.tests]


def test_the_right_values_without_the_custom_vjp_fail_the_gradient(
        sandbox: Sandbox, catalog: Catalog, settings: Settings) -> None:
    report = run(sandbox, catalog, settings, """
        import jax.numpy as jnp

        def loss(w, x):
            return jnp.sum((x @ w) ** 2)
    """)
    assert report.verdict is Verdict.WRONG_ANSWER
    assert sample_message(report).startswith(
        "probe 'gradient': the compiled program's results: ")
    hidden = {t.name: t.message for t in report.tests if t.visibility == "hidden"}
    # The tiny weights never reach the clipping: that test's gradient is right.
    assert hidden == {"wide": "probe 'gradient': the compiled program's results are not "
                              "the expected ones", "tiny-values": ""}
    # The report names the probe that failed each test whose value passed.
    assert {t.name: t.probe for t in report.tests} == {
        "small": "gradient", "wide": "gradient", "tiny-values": None}


def test_a_function_the_judge_cannot_trace_fails_its_probes(
        sandbox: Sandbox, catalog: Catalog, settings: Settings) -> None:
    report = run(sandbox, catalog, settings, """
        import numpy as np

        def loss(w, x):
            z = np.asarray(x) @ np.asarray(w)
            return float(np.sum(z ** 2))
    """)
    assert report.verdict is Verdict.WRONG_ANSWER
    message = sample_message(report)
    assert message.startswith("probe 'gradient': the judge could not trace your function")
    assert "TracerArrayConversionError" in message and "(line 5)" in message
    assert {t.message for t in report.tests if t.visibility == "hidden"} == {
        "probe 'gradient': the function could not be compiled as one program"}


def test_a_loop_is_seen_in_the_program(sandbox: Sandbox, catalog: Catalog,
                                       settings: Settings) -> None:
    report = run(sandbox, catalog, settings, HONEST.replace(
        "return jnp.sum(clip_gradient(x @ w) ** 2)",
        "z = clip_gradient(x @ w) ** 2\n"
        "    return jax.lax.fori_loop(0, z.shape[0], lambda i, a: a + jnp.sum(z[i]), 0.0)"))
    assert report.verdict is Verdict.WRONG_ANSWER
    assert sample_message(report) == ("probe 'no-loops': the compiled program uses while "
                                      "(1 time), which this problem rules out")


def test_work_every_device_repeats_is_seen_in_the_collectives(
        sandbox: Sandbox, catalog: Catalog, settings: Settings) -> None:
    # The rows arrive split over 'rows'; replicating them so that every device computes the
    # whole loss gives the right numbers, and no all-reduce.
    report = run(sandbox, catalog, settings, HONEST.replace(
        "def loss(w, x):\n", """def loss(w, x):
    if isinstance(x, jax.core.Tracer) and jax.typeof(x).sharding.mesh.shape:
        import numpy as np
        from jax.sharding import Mesh, NamedSharding, PartitionSpec
        mesh = Mesh(np.array(jax.devices()), ("rows",))
        x = jax.lax.with_sharding_constraint(x, NamedSharding(mesh, PartitionSpec()))
"""))
    assert report.verdict is Verdict.WRONG_ANSWER
    message = sample_message(report)
    assert message.startswith("probe 'split-rows': your compiled program has 0 all-reduces "
                              "over 'rows', at least 1 expected"), message


def test_strict_verify_asks_for_a_wrong_answer_that_only_a_probe_catches(
        catalog: Catalog, settings: Settings) -> None:
    """A package with probes shows them at work with a wrong answer whose values pass
    and whose program does not; wrong answers that return wrong values show nothing
    about the probes."""
    from judge.verify import Check, weaknesses

    problem = catalog.get("demo/probed")
    only_probes = "no wrong answer that only a probe catches"
    wrong_values = HONEST.replace("** 2)", "** 2) * 2.0")  # a wrong loss, the clip kept
    box = get_sandbox("process", settings)
    try:
        def check(rel: str, code: str) -> Check:
            report = grade(problem, textwrap.dedent(code), sandbox=box, settings=settings)
            return Check(problem.id, rel, "wrong_answer", report.verdict.value, report)

        # The package's two wrong answers, graded as if each returned wrong values.
        loop, no_vjp = ("submissions/wrong_answer/loop_over_rows.py",
                        "submissions/wrong_answer/no_custom_vjp.py")
        values_wrong = [check(loop, wrong_values),
                        check(no_vjp, wrong_values.replace("* 2.0", "* 3.0"))]
        assert all(c.ok for c in values_wrong)
        assert all(t.probe is None for c in values_wrong for t in c.report.tests)
        assert any(only_probes in w for w in weaknesses(problem, values_wrong))
        # As filed, no_custom_vjp.py returns the right losses and fails on the gradient.
        computed_wrong = check(no_vjp, (problem.path / no_vjp).read_text())
        assert computed_wrong.ok
        assert not any(only_probes in w
                       for w in weaknesses(problem, [values_wrong[0], computed_wrong]))
    finally:
        box.close()


def test_build_stores_each_probes_result_on_the_reference(
        tmp_path: Path, settings: Settings) -> None:
    root = tmp_path / "problems"
    shutil.copytree(FIXTURE_PROBLEMS / "demo" / "probed", root / "demo" / "probed")
    shutil.rmtree(root / "demo" / "probed" / "data")
    problem = Problem.load("demo/probed", root / "demo" / "probed")
    box = get_sandbox("process", settings)
    try:
        build(problem, sandbox=box, settings=settings)
    finally:
        box.close()
    stored = load_tests(problem)
    original = load_tests(Catalog(FIXTURE_PROBLEMS).get("demo/probed"))
    for mine, theirs in zip(stored, original, strict=True):
        assert set(mine.probes) == {"gradient", "batched", "shapes", "no-loops", "split-rows"}
        assert mine.probes["split-rows"].memory is not None
        assert mine.probes["split-rows"].flops
        assert mine.probes["shapes"].expected == theirs.probes["shapes"].expected
        # The same reference gives the same results (the package carries its own proof),
        # up to the last bits of a float that another CPU's XLA code rounds otherwise.
        assert same_but_rounding(json.loads(mine.model_dump_json()),
                                 json.loads(theirs.model_dump_json()))


def same_but_rounding(mine: Any, theirs: Any) -> bool:
    """Two encoded values equal in everything, float arrays' data to within a few ulps."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        if (mine.get("t") == theirs.get("t") == "array"
                and str(mine.get("dtype")).startswith("float")):
            rest = {k: v for k, v in mine.items() if k != "data"}
            if rest != {k: v for k, v in theirs.items() if k != "data"}:
                return False
            a, b = (np.frombuffer(base64.b64decode(x["data"]), dtype=x["dtype"])
                    for x in (mine, theirs))
            return bool(np.allclose(a, b, rtol=1e-5, atol=1e-7))
        return mine.keys() == theirs.keys() and all(
            same_but_rounding(mine[k], theirs[k]) for k in mine)
    if isinstance(mine, list) and isinstance(theirs, list):
        return len(mine) == len(theirs) and all(
            same_but_rounding(x, y) for x, y in zip(mine, theirs, strict=True))
    return bool(mine == theirs)


TREE_PROBLEM = """
title: A loss over a parameter tree (test)
entry_point:
  name: loss
  args:
    - {name: params, type: any, doc: "{hidden: {kernel, bias}, out: {kernel}}"}
    - {name: x, type: array, doc: "float32 inputs (N, 8)"}
  returns: a scalar
limits: {test_seconds: 10, total_seconds: 60, memory_mb: 2048, output_kb: 64}
checker: {name: allclose, params: {rtol: 1.0e-5, atol: 1.0e-6}}
tests:
  seed: 12
  sample:
    - {name: small, args: {params: {tree: {hidden: {kernel: {normal: [8, 16]}, bias: {normal: [16]}}, out: {kernel: {normal: [16, 2]}}}}, x: {normal: [8, 8]}}}
  hidden:
    - {name: wide, args: {params: {tree: {hidden: {kernel: {normal: [8, 32]}, bias: {normal: [32]}}, out: {kernel: {normal: [32, 2]}}}}, x: {normal: [16, 8]}}}
probes:
  - name: split-kernels
    mesh: {axes: [rows], shape: [8]}
    in_specs: {params: {hidden: {kernel: [rows, null]}, out: {kernel: [rows, null]}}, x: [rows, null]}
    memory:
      temporaries: {reference_times: 1.5, plus: 1024}
"""

TREE_REFERENCE = """
import jax
import jax.numpy as jnp


def loss(params, x):
    h = jax.nn.relu(x @ params["hidden"]["kernel"] + params["hidden"]["bias"])
    return jnp.mean((h @ params["out"]["kernel"]) ** 2)
"""


@pytest.fixture(scope="module")
def tree_problem(tmp_path_factory: pytest.TempPathFactory, settings: Settings) -> Problem:
    root = tmp_path_factory.mktemp("problems") / "demo" / "tree"
    root.mkdir(parents=True)
    (root / "problem.yaml").write_text(TREE_PROBLEM)
    (root / "reference.py").write_text(TREE_REFERENCE)
    (root / "statement.md").write_text("# A loss over a parameter tree\n")
    problem = Problem.load("demo/tree", root)
    box = get_sandbox("process", settings)
    try:
        build(problem, sandbox=box, settings=settings)
    finally:
        box.close()
    return Problem.load("demo/tree", root)


def test_a_parameter_tree_is_exported_leaf_by_leaf_in_its_layout(
        sandbox: Sandbox, tree_problem: Problem, settings: Settings) -> None:
    # The export's argument is a dict of avals (the runner keeps it abstract, leaf by
    # leaf); each kernel arrives split over 'rows', the bias replicated (left out).
    stored = load_tests(tree_problem)[0]
    memory = stored.probes["split-kernels"].memory
    assert memory is not None
    assert memory.arguments == (8 * 16 // 8 + 16 + 16 * 2 // 8 + 8 * 8 // 8) * 4
    report = grade(tree_problem, TREE_REFERENCE, sandbox=sandbox, settings=settings)
    assert report.verdict is Verdict.ACCEPTED, [t.message for t in report.tests]


def test_the_submissions_own_jit_keeps_its_donation(sandbox: Sandbox, settings: Settings
                                                    ) -> None:
    # jax-fundamentals/buffer-donation's probe is own_jit: the step's own jax.jit is
    # exported and compiled with the inputs it donates donated, so XLA's memory analysis
    # shows the new parameters written over the old; without donate_argnums they are new.
    problem = Catalog(Path(__file__).resolve().parents[2] / "problemsets").get(
        "jax-fundamentals/buffer-donation")
    code = problem.reference_path.read_text()
    report = grade(problem, code, sandbox=sandbox, settings=settings)
    assert report.verdict is Verdict.ACCEPTED, [t.message for t in report.tests]
    kept = code.replace("@partial(jax.jit, donate_argnums=0)", "@jax.jit")
    assert kept != code
    report = grade(problem, kept, sandbox=sandbox, settings=settings)
    assert report.verdict is Verdict.WRONG_ANSWER
    assert "572 bytes of new output (not written over donated inputs)" in sample_message(
        report), sample_message(report)


def test_a_build_refuses_a_reference_over_its_own_probes_bounds(
        tmp_path: Path, settings: Settings) -> None:
    # A bound the reference itself breaks (an absolute one too low) would fail every
    # answer: the build says so instead of writing data that grades nothing right.
    root = tmp_path / "demo" / "tree"
    root.mkdir(parents=True)
    (root / "problem.yaml").write_text(TREE_PROBLEM.replace(
        "temporaries: {reference_times: 1.5, plus: 1024}", "temporaries: {at_most: 8}"))
    (root / "reference.py").write_text(TREE_REFERENCE)
    (root / "statement.md").write_text("# A loss over a parameter tree\n")
    problem = Problem.load("demo/tree", root)
    box = get_sandbox("process", settings)
    try:
        with pytest.raises(BuildFailed) as failed:
            build(problem, sandbox=box, settings=settings)
    finally:
        box.close()
    assert len(failed.value.failures) == 2, failed.value.failures  # both tests
    assert ("probe 'split-kernels' on test 'small': the reference's own program does not "
            "meet the probe's bounds: your compiled program needs") in failed.value.failures[0]
    assert "at most 8 expected" in failed.value.failures[0]
    assert failed.value.passed == [] and not (root / "data").exists()


OUT_LAYOUT = (Path(__file__).resolve().parents[1] / "fixtures" / "probes" / "out-layout"
              / "reference.py").read_text()


@pytest.fixture(scope="module")
def out_layout(tmp_path_factory: pytest.TempPathFactory, settings: Settings) -> Problem:
    return built_probe_fixture("out-layout", tmp_path_factory.mktemp("problems"), settings)


def test_the_outputs_come_back_in_the_layouts_the_probe_gives(
        sandbox: Sandbox, out_layout: Problem, settings: Settings) -> None:
    # The reference's program, stored at build: h split over 'rows' (2 of the sample's
    # 16 rows per device), the norm whole on each.
    stored = load_tests(out_layout)[0].probes["rows-out"].expected
    assert stored is not None and stored.t == "tree"
    layouts = {path: leaf.sharding for path, leaf in stored.items}  # type: ignore[union-attr]
    assert layouts["['h']"].spec == ["rows"] and layouts["['norm']"].spec == []
    assert {tuple(b.shape) for b in layouts["['h']"].buffers} == {(2, 8)}
    report = grade(out_layout, OUT_LAYOUT, sandbox=sandbox, settings=settings)
    assert report.verdict is Verdict.ACCEPTED, [t.message for t in report.tests]
    assert report.tests[0].probe is None


def test_an_output_gathered_on_every_device_is_seen_in_the_collectives(
        sandbox: Sandbox, out_layout: Problem, settings: Settings) -> None:
    # The right numbers, h gathered whole on every device before it is returned: the
    # program the judge compiles still returns it split over 'rows', and gathers first.
    report = grade(out_layout, OUT_LAYOUT.replace("    h = x @ w\n", """    h = x @ w
    import jax
    if isinstance(h, jax.core.Tracer) and jax.typeof(h).sharding.mesh.shape:
        from jax.sharding import NamedSharding, PartitionSpec
        h = jax.lax.with_sharding_constraint(
            h, NamedSharding(jax.typeof(h).sharding.mesh, PartitionSpec()))
"""), sandbox=sandbox, settings=settings)
    assert report.verdict is Verdict.WRONG_ANSWER, [t.message for t in report.tests]
    assert sample_message(report).startswith(
        "probe 'rows-out': your compiled program has 1 all-gather, at most 0 expected"), \
        sample_message(report)
    assert {t.message for t in report.tests if t.visibility == "hidden"} == {
        "probe 'rows-out': the compiled program has more all-gather operations than allowed"}
