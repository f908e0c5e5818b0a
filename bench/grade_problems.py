"""How long `jaxjudge grade` takes per problem, from a cold process.

Runs `jaxjudge grade ID <reference> --format json` as a fresh process, RUNS times for
every problem in problemsets/ (or the ids given), and splits each run's wall time into:

  cli        the jaxjudge process itself: interpreter, judge imports, loading the problem
             and its test data, printing (wall time minus the grading function's time)
  spawn      starting the harness's interpreter in the sandbox
  import     importing jax and flax and bringing up the 8 CPU devices in the harness
  load       loading the submission
  tests      running every test (calls, transfers, encoding), wall clock
  wall       the whole command

The budget a problem must keep is its whole test run (spawn + import + load + tests)
under 20 s in the Docker sandbox; the `run` column is that sum and `budget` says whether
the slowest run kept it.

Prints a table (median, and the slowest run in brackets) and writes it into
docs/performance.md between the bench:grade_problems markers.

    .venv/bin/python bench/grade_problems.py [--runs 3] [--sandbox docker] [ID ...]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

from docsection import replace_section
from rich.console import Console
from rich.table import Table

from judge.catalog import Catalog

ROOT = Path(__file__).resolve().parent.parent

COLUMNS = ["cli", "spawn", "import", "load", "tests", "run", "wall"]
BUDGET_MS = 20_000


def _ms(value: float) -> str:
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def one_run(problem: str, sandbox: str) -> dict[str, float]:
    reference = ROOT / "problemsets" / problem / "reference.py"
    exe = Path(sys.executable).parent / "jaxjudge"
    started = time.perf_counter()
    done = subprocess.run(
        [str(exe), "grade", problem, str(reference), "--format", "json", "--sandbox", sandbox],
        capture_output=True, check=True, cwd=ROOT,
    )
    wall = (time.perf_counter() - started) * 1000
    report = json.loads(done.stdout)
    if report["verdict"] != "accepted":
        raise SystemExit(f"{problem}: the reference got {report['verdict']}")
    t = report["timings"]
    return {
        "cli": wall - t["total_ms"],
        "spawn": t["startup_ms"],
        "import": t["import_ms"],
        "load": t["load_ms"],
        "tests": t["tests_ms"],
        "run": t["startup_ms"] + t["import_ms"] + t["load_ms"] + t["tests_ms"],
        "wall": wall,
        "n_tests": len(report["tests"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sandbox", default="docker")
    parser.add_argument("ids", nargs="*", help="problem ids (default: every problem)")
    args = parser.parse_args()

    rows = []
    for problem in args.ids or Catalog(ROOT / "problemsets").ids():
        runs = [one_run(problem, args.sandbox) for _ in range(args.runs)]
        cells = []
        for col in COLUMNS:
            values = [r[col] for r in runs]
            cells.append(f"{_ms(statistics.median(values))} ({_ms(max(values))})")
        kept = max(r["run"] for r in runs) < BUDGET_MS
        cells.append("ok" if kept else "OVER")
        rows.append((problem, int(runs[0]["n_tests"]), cells))

    table = Table(title=f"jaxjudge grade, cold process, {args.sandbox} sandbox, ms: "
                        f"median (slowest) of {args.runs}")
    for name in ["problem", "tests", *COLUMNS, "budget"]:
        table.add_column(name, justify="left" if name == "problem" else "right")
    for problem, n, cells in rows:
        table.add_row(problem, str(n), *cells)
    Console().print(table)

    replace_section("grade_problems", [
        f"Measured {date.today()} on {platform.node() or 'this machine'} "
        f"({platform.processor() or platform.machine()}, Python {platform.python_version()}) "
        f"by `bench/grade_problems.py --runs {args.runs} --sandbox {args.sandbox}`: "
        "milliseconds, median (slowest); `budget`: the slowest `run` under 20 s.",
        "",
        "| problem | tests | " + " | ".join(COLUMNS) + " | budget |",
        "|---|---:|" + "---:|" * len(COLUMNS) + "---|",
        *(f"| `{p}` | {n} | " + " | ".join(c) + " |" for p, n, c in rows),
    ])


if __name__ == "__main__":
    main()
