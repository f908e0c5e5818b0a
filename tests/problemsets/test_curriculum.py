"""The sharding curriculum keeps the promises of docs/curriculum.md.

`jaxjudge verify` (run by `make test`) proves that every example gets its verdict; these
tests check that the set is complete: enough problems, each with its tests, discriminating
examples and a real statement; the curriculum document lists every problem in teaching
order with the checker it really uses; a problem whose skill is sharding is graded on the
sharding itself; and no statement or solution teaches an API the pinned versions removed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from judge.catalog import Catalog
from judge.testdata import load_tests
from judge.verify import examples

ROOT = Path(__file__).resolve().parents[2]
CATALOG = Catalog(ROOT / "problemsets")
PROBLEMS = [pid for pid in CATALOG.ids() if pid.startswith("jax-sharding/")]
CURRICULUM = ROOT / "docs" / "curriculum.md"
SECTIONS = ("## Why this matters", "## The API", "## Pitfalls", "## Task")
# Spellings that jax 0.10 / flax 0.12 removed or replaced (see ../shared/JAX-NOTES.md).
REMOVED = {
    "jax.sharding.use_mesh": "use jax.set_mesh",
    "jax.experimental.shard_map": "use jax.shard_map",
    "sharding_names=": "use out_sharding=",
    "with mesh:": "use with jax.set_mesh(mesh):",
    ".value =": "use var[...] = or set_value",
}


def curriculum_rows(section: str = "## In teaching order") -> list[dict[str, str]]:
    """The rows of a table in docs/curriculum.md (the one under ``section``, up to the next
    heading of its level): #, problem, skill, checker."""
    rows = []
    text = CURRICULUM.read_text()
    start = text.index(section + "\n")
    level = section.split(" ")[0] + " "
    end = text.find("\n" + level, start + len(section))
    for line in text[start:end if end >= 0 else None].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0].isdigit():
            rows.append({"n": cells[0], "problem": cells[1].strip("`[]").split("]")[0],
                         "skill": cells[2], "checker": cells[3].strip("`")})
    return rows


def test_at_least_eighteen_problems_four_seeds_and_fourteen_new() -> None:
    assert len(PROBLEMS) >= 18, PROBLEMS


def test_the_curriculum_lists_every_problem_once_in_teaching_order() -> None:
    rows = curriculum_rows()
    listed = [r["problem"] for r in rows]
    assert sorted(listed) == sorted(PROBLEMS), set(listed) ^ set(PROBLEMS)
    assert [int(r["n"]) for r in rows] == list(range(1, len(rows) + 1))
    assert all(len(r["skill"]) > 20 for r in rows)


@pytest.mark.parametrize("problem_id", PROBLEMS)
def test_the_curriculum_names_the_checker_the_problem_uses(problem_id: str) -> None:
    row = next(r for r in curriculum_rows() if r["problem"] == problem_id)
    assert row["checker"] == CATALOG.get(problem_id).spec.checker.name


@pytest.mark.parametrize("problem_id", PROBLEMS)
def test_each_problem_has_its_tests_examples_and_statement(problem_id: str) -> None:
    problem = CATALOG.get(problem_id)
    tests = load_tests(problem)
    assert sum(t.visibility == "sample" for t in tests) >= 2
    assert sum(t.visibility == "hidden" for t in tests) >= 10
    assert all(t.points == 0 for t in tests if t.visibility == "sample")
    filed: dict[str, list[str]] = {}
    for rel, verdict in examples(problem):
        filed.setdefault(verdict, []).append(rel)
    assert len(filed.get("wrong_answer", [])) >= 3, filed
    reference = problem.reference_path.read_text()
    assert any((problem.path / rel).read_text() != reference
               for rel in filed.get("accepted", [])), "no accepted example beside the reference"
    for rel in [r for rels in filed.values() for r in rels]:
        first = (problem.path / rel).read_text().lstrip().splitlines()[0]
        assert first.startswith(("#", '"""')), f"{rel} does not say what it does"
    assert len(problem.statement) > 1500
    for heading in SECTIONS:
        assert heading in problem.statement, f"{problem_id}: no '{heading}' section"


def _layouts(enc: Any) -> int:
    """How many NamedSharding layouts (of arrays, or specs and shardings on their own) an
    encoded value holds."""
    if isinstance(enc, dict):
        own = (enc.get("t") in ("pspec", "named_sharding")
               or (enc.get("t") == "array"
                   and (enc.get("sharding") or {}).get("kind") == "NamedSharding"))
        return int(own) + sum(_layouts(v) for v in enc.values())
    if isinstance(enc, list):
        return sum(_layouts(v) for v in enc)
    return 0


@pytest.mark.parametrize("problem_id", [
    pid for pid in PROBLEMS if CATALOG.get(pid).spec.checker.name == "sharding"])
def test_a_sharding_checker_has_layouts_to_check_in_every_test(problem_id: str) -> None:
    problem = CATALOG.get(problem_id)
    for path in sorted(problem.data_dir.glob("*/*.json")):
        expected = json.loads(path.read_text())["expected"]
        assert _layouts(expected) > 0, f"{path.name}: the expected output has no layout"


# The problems whose skill is a parallel computation or a sharded creation of arrays:
# each is graded on the program XLA compiles from the submission, not only on what it
# returns. (The others return layouts of abstract values or arithmetic: docs/curriculum.md,
# "Problems with no program to compile".)
COMPILED = ["column-row-parallel-linear", "data-parallel-step", "explicit-reshard",
            "fsdp-step", "sharded-init", "sharding-constraint-jit", "tensor-parallel-mlp"]


@pytest.mark.parametrize("slug", COMPILED)
def test_a_parallelism_problem_is_graded_on_its_compiled_program_per_device(slug: str) -> None:
    problem = CATALOG.get(f"jax-sharding/{slug}")
    assert problem.spec.probes, f"{slug} has no probe"
    tests = load_tests(problem)
    names = {t.name for t in tests}
    samples = {t.name for t in tests if t.visibility == "sample"}
    for probe in problem.spec.probes:
        # On the test's mesh, with a bound on what each device does or holds.
        assert probe.mesh is not None
        assert probe.collectives or probe.memory or probe.flops, probe.name
        assert set(probe.tests or names) <= names
        # A sample test among them, so that a student can read the figures.
        assert samples & set(probe.tests or names), probe.name
    row = next(r for r in curriculum_rows() if r["problem"] == problem.id)
    assert all(f"`{p.name}`" in row["skill"] for p in problem.spec.probes), row


@pytest.mark.parametrize("problem_id", PROBLEMS)
def test_statements_and_solutions_use_the_pinned_apis(problem_id: str) -> None:
    problem = CATALOG.get(problem_id)
    texts = {"reference.py": problem.reference_path.read_text()}
    texts.update({rel: (problem.path / rel).read_text() for rel, verdict in examples(problem)
                  if verdict == "accepted"})
    # A statement may warn against an old spelling in its pitfalls.
    texts["statement.md"] = re.sub(r"## Pitfalls.*?(?=\n## |\Z)", "", problem.statement,
                                   flags=re.S)
    for name, text in texts.items():
        for old, instead in REMOVED.items():
            assert old not in text, f"{problem_id}/{name} uses {old!r}: {instead}"


# -- the JAX fundamentals set, in teaching order ------------------------------------------

FUNDAMENTALS = [pid for pid in CATALOG.ids() if pid.startswith("jax-fundamentals/")]


def test_the_fundamentals_cover_the_twelve_skills() -> None:
    # grad/value_and_grad, custom_vjp, vmap, jit with static arguments, pytrees, PRNG
    # keys, scan, checkpoint, shard_map with psum, donation, optax: at least one each.
    assert len(FUNDAMENTALS) >= 12
    transforms = {p.transform for pid in FUNDAMENTALS for p in CATALOG.get(pid).spec.probes}
    assert {"jit", "grad", "own_jit"} <= transforms


def test_the_fundamentals_are_listed_in_teaching_order_with_their_checkers() -> None:
    rows = curriculum_rows("## JAX fundamentals in teaching order")
    assert sorted(r["problem"] for r in rows) == sorted(FUNDAMENTALS)
    assert [int(r["n"]) for r in rows] == list(range(1, len(rows) + 1))
    for row in rows:
        assert len(row["skill"]) > 20
        assert row["checker"] == CATALOG.get(row["problem"]).spec.checker.name


@pytest.mark.parametrize("problem_id", FUNDAMENTALS)
def test_a_fundamentals_problem_checks_the_computation_with_a_probe(problem_id: str) -> None:
    # The set exists to grade how a result is computed: every problem has a probe, and a
    # wrong answer that computes the right values (it passes the value checks of every
    # sample test) is caught by one.
    problem = CATALOG.get(problem_id)
    assert problem.spec.probes, f"{problem_id} has no probe"
    assert sum(t.visibility == "hidden" for t in load_tests(problem)) >= 5
    filed = [verdict for _, verdict in examples(problem)]
    for verdict in ("accepted", "wrong_answer", "runtime_error"):
        assert verdict in filed, f"{problem_id}: no {verdict} example"
    for heading in SECTIONS:
        assert heading in problem.statement, f"{problem_id}: no '{heading}' section"
