"""What probes cost: a submission graded with its problem's probes and without them.

A probe adds, per test it applies to, a trace and export in the submission's sandbox and a
compile and run in a clean one (a second sandbox run per submission: judge/probes.py).
This grades each problem's reference in the zygote sandbox (what the service runs), with
the problem as it is and with its probes removed, alternating, and reports the medians:

  total         grading's wall-clock time (report.timings.total_ms)
  per probe     (with - without) / the number of probe runs (probes x tests they apply to)

Prints a table and writes it into docs/performance.md between the bench:probes markers.

    .venv/bin/python bench/probes.py [--runs 5] [--problem ID ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics

from docsection import measured, replace_section
from rich.console import Console
from rich.table import Table

from judge.catalog import Catalog
from judge.grading import grade
from judge.problem import Problem
from judge.sandbox import get_sandbox
from judge.settings import REPO_ROOT, Settings
from judge.testdata import load_tests
from judge.verdict import Verdict

PROBLEMS = ["jax-sharding/tensor-parallel-mlp", "jax-sharding/data-parallel-step",
            "jax-sharding/fsdp-step", "demo/probed"]


def without_probes(problem: Problem) -> Problem:
    spec = problem.spec.model_copy(update={"probes": []})
    return dataclasses.replace(problem, spec=spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--problem", action="append")
    args = parser.parse_args()
    settings = Settings()
    catalogs = [Catalog(REPO_ROOT / "problemsets"),
                Catalog(REPO_ROOT / "tests" / "fixtures" / "problemsets")]
    sandbox = get_sandbox("zygote", settings)
    rows = []
    try:
        for problem_id in args.problem or PROBLEMS:
            catalog = next(c for c in catalogs if problem_id in c.ids())
            problem = catalog.get(problem_id)
            code = problem.reference_path.read_text()
            bare = without_probes(problem)
            runs = sum(len(problem.probes_for(t.name)) for t in load_tests(problem))
            grade(problem, code, sandbox=sandbox, settings=settings)  # warm the pool
            times: dict[str, list[float]] = {"with": [], "without": []}
            for _ in range(args.runs):
                for label, subject in (("with", problem), ("without", bare)):
                    report = grade(subject, code, sandbox=sandbox, settings=settings)
                    assert report.verdict is Verdict.ACCEPTED, report.message
                    times[label].append(report.timings.total_ms)
            with_ms = statistics.median(times["with"])
            without_ms = statistics.median(times["without"])
            rows.append((problem_id, len(problem.spec.probes), runs, without_ms, with_ms,
                         (with_ms - without_ms) / max(runs, 1)))
    finally:
        sandbox.close()

    table = Table(title="Probes: one reference graded with and without them (zygote)")
    for column in ("problem", "probes", "probe runs", "total without", "total with",
                   "per probe run"):
        table.add_column(column)
    lines = [measured(f"python bench/probes.py --runs {args.runs}"), "",
             "| problem | probes | probe runs | total without | total with | per probe run |",
             "|---|---|---|---|---|---|"]
    for problem_id, probes, runs, without_ms, with_ms, per in rows:
        cells = [problem_id, str(probes), str(runs), f"{without_ms / 1000:.2f} s",
                 f"{with_ms / 1000:.2f} s", f"{per:.0f} ms"]
        table.add_row(*cells)
        lines.append("| " + " | ".join(f"`{c}`" if i == 0 else c
                                         for i, c in enumerate(cells)) + " |")
    Console().print(table)
    replace_section("probes", lines)


if __name__ == "__main__":
    main()
