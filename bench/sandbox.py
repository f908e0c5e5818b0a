"""From "submission in hand" to "verdict", per seed problem, three ways:

  fresh      a new hardened container per submission (create, start, jax/flax import,
             tests, removal): what `jaxjudge grade --sandbox docker` does
  pool       a warm-pool container, its harness already past its imports (timed once the
             pool holds a ready container: the steady state of a pool sized for the load)
  in-process the lower bound: the same tests in this already-warm interpreter, no
             isolation, no protocol (load the module, call, encode, validate, check),
             twice: with JAX's caches cleared first (the same compilations a sandbox does:
             the like-for-like bound) and with them warm from the run before (the floor,
             reachable only by sharing compiled code between submissions)

Each is graded with the problem's reference solution, RUNS times; prints median and p95
and writes them into docs/performance.md between the bench:sandbox markers.

    .venv/bin/python bench/sandbox.py [--runs 20]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import types
from datetime import date
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

from docsection import replace_section  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge.catalog import Catalog  # noqa: E402
from judge.grading import grade  # noqa: E402
from judge.harness import codec, inputs  # noqa: E402
from judge.problem import Problem  # noqa: E402
from judge.sandbox import get_sandbox  # noqa: E402
from judge.settings import Settings  # noqa: E402
from judge.testdata import load_tests  # noqa: E402
from judge.values import VALUE  # noqa: E402

SEEDS = [
    "jax-sharding/partitionspec-layout",
    "jax-sharding/state-sharding",
    "jax-sharding/with-partitioning",
    "jax-sharding/mesh-init-simulation",
]


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def in_process(problem: Problem, code: str, cold_caches: bool) -> float:
    """Grade without any isolation in this warm interpreter; returns milliseconds."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    if cold_caches:
        jax.clear_caches()
    started = time.perf_counter()
    tests = load_tests(problem)
    module = types.ModuleType("submission")
    exec(compile(code, "submission.py", "exec"), module.__dict__)
    entry = getattr(module, problem.spec.entry_point.name)
    for test in tests:
        args = []
        for arg in problem.spec.entry_point.args:
            value = inputs.decode_input(test.args[arg.name])
            args.append(jnp.asarray(value) if arg.type == "array" else
                        float(value) if arg.type == "float" else np.asarray(value)
                        if arg.type == "numpy" else value)
        received = VALUE.validate_python(codec.encode(entry(*args)))
        if not problem.checker.check(test.expected, received).passed:
            raise SystemExit(f"{problem.id}: the reference failed in-process on {test.name}")
    return (time.perf_counter() - started) * 1000


def timed_grade(problem: Problem, code: str, sandbox, settings: Settings) -> float:
    started = time.perf_counter()
    report = grade(problem, code, sandbox=sandbox, settings=settings)
    elapsed = (time.perf_counter() - started) * 1000
    if report.verdict != "accepted":
        raise SystemExit(f"{problem.id}: the reference got {report.verdict}: {report.message}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()

    settings = Settings(problems_dir=ROOT / "problemsets")
    catalog = Catalog(settings.problems_dir)
    fresh = get_sandbox("docker", settings)
    pooled = get_sandbox("docker", settings.model_copy(update={"pool_size": 2}))
    pool = pooled.pool  # type: ignore[attr-defined]
    results: dict[str, dict[str, list[float]]] = {}
    try:
        for problem_id in SEEDS:
            problem = catalog.get(problem_id)
            code = problem.reference_path.read_text()
            in_process(problem, code, False)  # warm this process's imports
            row: dict[str, list[float]] = {"fresh": [], "pool": [], "in-process": [],
                                           "in-process, warm caches": []}
            for _ in range(args.runs):
                row["fresh"].append(timed_grade(problem, code, fresh, settings))
                while pool.available() < 1:
                    time.sleep(0.05)
                row["pool"].append(timed_grade(problem, code, pooled, settings))
                row["in-process"].append(in_process(problem, code, True))
                row["in-process, warm caches"].append(in_process(problem, code, False))
            results[problem_id] = row
            print(f"{problem_id}: done", file=sys.stderr)
    finally:
        fresh.close()
        pooled.close()

    table = Table(title=f"submission in hand to verdict, ms: median / p95 of {args.runs}")
    for name in ("problem", "fresh", "pool", "in-process", "in-process, warm caches",
                 "pool - in-process"):
        table.add_column(name, justify="left" if name == "problem" else "right")
    lines = []
    for problem_id, row in results.items():
        cells = [f"{statistics.median(v):.0f} / {p95(v):.0f}" for v in row.values()]
        gap = statistics.median(row["pool"]) - statistics.median(row["in-process"])
        table.add_row(problem_id, *cells, f"{gap:.0f}")
        lines.append(f"| `{problem_id}` | " + " | ".join(cells) + f" | {gap:.0f} |")
    Console().print(table)

    replace_section("sandbox", [
        f"Measured {date.today()} on {platform.node() or 'this machine'} "
        f"({os.cpu_count()} cores, Python {platform.python_version()}) by "
        f"`bench/sandbox.py --runs {args.runs}` with each problem's reference solution: "
        "milliseconds, median / p95.",
        "",
        "| problem | fresh container | warm pool | in-process, caches cleared | "
        "in-process, warm caches | pool - in-process (median) |",
        "|---|---:|---:|---:|---:|---:|",
        *lines,
    ])


if __name__ == "__main__":
    main()
