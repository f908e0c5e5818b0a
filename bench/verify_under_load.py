"""`jaxjudge verify` on a busy machine: are the verdicts the same?

Starts PER_CORE processes per core that spin (`while True: pass`, each as hungry as a
submission, each in a session of its own so that the scheduler weighs each as one
process), then runs what `jaxjudge verify` runs (every package's reference and
example submissions, `--jobs` the number of cores, in the sandbox the CLI picks) RUNS
times in a row, and reports for each run: the checks that failed, how long it took, and
for the tests of the examples that should pass (references and accepted examples) the
largest CPU time of one test (which the limit is on, and which the load should not
change) and the largest wall-clock time of one test (which the load stretches, and
which the wall-clock net must leave room for), each as a share of what it is held to.

Prints a table and writes it into docs/performance.md between the
bench:verify_under_load markers.

    .venv/bin/python bench/verify_under_load.py [--runs 3] [--per-core 4] [ID ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass

from docsection import measured, replace_section
from rich.console import Console
from rich.table import Table

from judge.catalog import Catalog
from judge.sandbox import get_sandbox, resolve
from judge.settings import REPO_ROOT, Settings
from judge.verify import verify


@dataclass
class Run:
    checks: int = 0
    failed: int = 0
    seconds: float = 0.0
    cpu_share: float = 0.0  # largest test CPU time / the problem's CPU limit
    cpu_worst: str = ""
    wall_share: float = 0.0  # largest test wall time / the problem's wall-clock net
    wall_worst: str = ""
    stretch: float = 0.0  # largest wall time / CPU time of a test using 0.1 s or more


def one_run(catalog: Catalog, ids: list[str], settings: Settings, jobs: int) -> Run:
    sandbox = get_sandbox("auto", settings.model_copy(update={"zygote_count": jobs}))
    run = Run()
    started = time.monotonic()
    try:
        for problem_id in ids:
            problem = catalog.get(problem_id)
            limit = problem.spec.limits.test_seconds * 1000
            net = limit * settings.wall_time_factor
            for check in verify(problem, sandbox=sandbox, settings=settings, jobs=jobs):
                run.checks += 1
                if not check.ok:
                    run.failed += 1
                    print(f"FAIL {check.problem} {check.subject}: {check.got}", flush=True)
                if check.report is None or check.expected != "accepted":
                    continue
                for test in check.report.tests:
                    where = f"{problem_id} {check.subject.rsplit('/', 1)[-1]} {test.name}"
                    if test.cpu_ms / limit > run.cpu_share:
                        run.cpu_share, run.cpu_worst = test.cpu_ms / limit, where
                    if test.time_ms / net > run.wall_share:
                        run.wall_share, run.wall_worst = test.time_ms / net, where
                    if test.cpu_ms >= 100:
                        run.stretch = max(run.stretch, test.time_ms / test.cpu_ms)
    finally:
        sandbox.close()
    run.seconds = time.monotonic() - started
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--per-core", type=int, default=4)
    parser.add_argument("ids", nargs="*")
    args = parser.parse_args()
    settings = Settings(problems_dir=REPO_ROOT / "problemsets")
    catalog = Catalog(settings.problems_dir)
    ids = args.ids or catalog.ids()
    cores = os.cpu_count() or 1
    backend = resolve("auto", settings)
    # Each in a session of its own: the kernel schedules the processes of one session as
    # one group (autogroups), so spinners started from one shell weigh as one process.
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                 start_new_session=True)
                for _ in range(args.per_core * cores)]
    runs = []
    try:
        for number in range(1, args.runs + 1):
            print(f"run {number} of {args.runs} ...", flush=True)
            runs.append(one_run(catalog, ids, settings, cores))
            load = os.getloadavg()[0]
            print(f"  {runs[-1]} (load {load:.1f})", flush=True)
    finally:
        for proc in spinners:
            proc.kill()
            proc.wait()

    table = Table(title=f"jaxjudge verify beside {len(spinners)} spinning processes")
    for column in ("run", "checks", "failed", "minutes", "largest CPU time / limit",
                   "largest wall time / wall net", "wall / CPU, at most"):
        table.add_column(column, justify="right")
    lines = [
        "## `jaxjudge verify` on a busy machine (issue 20)",
        "",
        measured("python bench/verify_under_load.py") + f": {len(ids)} problems, "
        f"`--jobs {cores}`, the `{backend}` sandbox, beside {args.per_core} spinning "
        f"processes per core ({len(spinners)}), {args.runs} runs in a row. Time limits are "
        "on CPU time, measured by the judge outside the sandbox; the wall-clock net is "
        f"{settings.wall_time_factor:g} times the limit. For the tests of the examples "
        "that must pass (references, accepted examples): the largest CPU time of one test "
        "as a share of its limit, and the largest wall time of one test as a share of its "
        "net (the test and the example it was in).",
        "",
        "| run | checks | failed | minutes | largest CPU time / limit | largest wall time "
        "/ wall net | wall / CPU, at most |",
        "|---:|---:|---:|---:|---|---|---:|",
    ]
    for number, run in enumerate(runs, 1):
        cpu = f"{run.cpu_share:.1%} ({run.cpu_worst})"
        wall = f"{run.wall_share:.1%} ({run.wall_worst})"
        row = [str(number), str(run.checks), str(run.failed), f"{run.seconds / 60:.1f}",
               cpu, wall, f"{run.stretch:.1f}"]
        table.add_row(*row)
        lines.append("| " + " | ".join(row) + " |")
    Console().print(table)
    replace_section("verify_under_load", lines)
    sys.exit(1 if any(r.failed for r in runs) else 0)


if __name__ == "__main__":
    main()
