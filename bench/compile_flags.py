"""XLA compile flags, measured on every problem, and checked against every example.

For each flag set, every problem's reference solution is graded RUNS times in the zygote
sandbox (a child per grading, so every grading compiles from nothing, as a submission's
does) and the median of the report's ``tests_ms`` (the calls, mostly compiling) is kept.
Then ``jaxjudge verify`` runs under XLA's defaults and under the fastest set: every
example submission must get the verdict it is filed under, and every reference must still
be accepted against its stored expected outputs. Prints a table and writes it
into docs/performance.md between the bench:compile_flags markers.

    .venv/bin/python bench/compile_flags.py [--runs 2] [--no-verify]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from docsection import measured, replace_section
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge.catalog import Catalog  # noqa: E402
from judge.grading import grade  # noqa: E402
from judge.sandbox import get_sandbox  # noqa: E402
from judge.settings import Settings  # noqa: E402

O0 = "--xla_backend_optimization_level=0"
FLAG_SETS = {
    "XLA defaults": "",
    "O0": O0,
    "O0 + cheap LLVM": f"{O0} --xla_llvm_disable_expensive_passes=true",
    "O0 + no fusion emitters": f"{O0} --xla_cpu_use_fusion_emitters=false",
}


def time_references(settings: Settings, runs: int) -> dict[str, dict[str, float]]:
    """{flag set: {problem: median tests_ms}}, each flag set in a zygote of its own."""
    catalog = Catalog(settings.problems_dir)
    times: dict[str, dict[str, float]] = {}
    for name, flags in FLAG_SETS.items():
        sandbox = get_sandbox("zygote", settings.model_copy(update={"xla_flags": flags}))
        try:
            times[name] = {}
            for problem in catalog.all():
                code = (problem.path / "reference.py").read_text()
                samples = []
                for _ in range(runs):
                    report = grade(problem, code, sandbox=sandbox, settings=settings)
                    if report.verdict.value != "accepted":
                        raise SystemExit(f"{problem.id} under {name}: {report.verdict.value}")
                    samples.append(report.timings.tests_ms)
                times[name][problem.id] = statistics.median(samples)
                print(f"{name:16} {problem.id:45} {times[name][problem.id]:8.0f} ms",
                      flush=True)
        finally:
            sandbox.close()
    return times


def verify(flags: str) -> tuple[bool, float, int]:
    """``jaxjudge verify`` under ``flags``: (green, seconds, failed checks)."""
    started = time.monotonic()
    run = subprocess.run([str(ROOT / ".venv" / "bin" / "jaxjudge"), "verify"], cwd=ROOT,
                         env={**os.environ, "JAXJUDGE_XLA_FLAGS": flags,
                              "JAXJUDGE_SANDBOX": "zygote"},
                         capture_output=True, text=True)
    failed = sum(line.startswith("FAIL") for line in run.stdout.splitlines())
    return run.returncode == 0, time.monotonic() - started, failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--no-verify", action="store_true")
    args = parser.parse_args()
    settings = Settings(problems_dir=ROOT / "problemsets",
                        docker_seccomp_profile=ROOT / "var" / "zygote-seccomp.json")
    times = time_references(settings, args.runs)
    names = list(FLAG_SETS)
    base = times[names[0]]
    problems = list(base)

    # verify under XLA's defaults and under the fastest set (the one to adopt).
    fastest = min(names, key=lambda n: sum(times[n].values()))
    checks: dict[str, str] = {}
    for name in names:
        if args.no_verify or name not in (names[0], fastest):
            checks[name] = "not run" if args.no_verify else "not run (not the fastest)"
            continue
        green, seconds, failed = verify(FLAG_SETS[name])
        checks[name] = (f"green, {seconds:.0f} s" if green
                        else f"{failed} check(s) failed, {seconds:.0f} s")
        print(f"verify under {name}: {checks[name]}", flush=True)

    table = Table("problem", *names, title="tests_ms of the reference, median")
    lines = [
        measured(f"bench/compile_flags.py --runs {args.runs}") + ": the reference's "
        "`tests_ms` (its calls in the sandbox, mostly compiling), median, in the zygote "
        "sandbox; each flag set's ratio to XLA's defaults in brackets.",
        "",
        "| flag set | flags |", "|---|---|",
        *[f"| {n} | `{FLAG_SETS[n] or '(none)'}` |" for n in names],
        "",
        "| problem | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for problem in problems:
        cells = [f"{base[problem]:.0f}"] + [
            f"{times[n][problem]:.0f} ({times[n][problem] / base[problem]:.2f})"
            for n in names[1:]]
        table.add_row(problem, *cells)
        lines.append(f"| `{problem}` | " + " | ".join(cells) + " |")
    totals = [sum(times[n].values()) for n in names]
    total_cells = [f"{totals[0]:.0f}"] + [f"{t:.0f} ({t / totals[0]:.2f})" for t in totals[1:]]
    table.add_row("all", *total_cells)
    lines.append("| **all** | " + " | ".join(total_cells) + " |")
    lines.append("| `jaxjudge verify` | " + " | ".join(checks[n] for n in names) + " |")
    Console().print(table)
    replace_section("compile_flags", lines)


if __name__ == "__main__":
    main()
