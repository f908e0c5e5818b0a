"""What counting CPU time outside the sandbox costs per test.

The supervisor reads the kernel's counters of the sandbox (CPU time and memory-limit
kills) before a test's input goes in, while it waits (every 20-250 ms), and when the
result arrives (judge/sandbox/supervisor.py). This measures:

  read       one read of each counter: a control group's files on the host (what the
             docker and zygote sandboxes read) and the process sandbox's scan of /proc
  reads      how many reads one test makes, counted in real gradings of a problem
             (zygote sandbox; its reference, every test fast)
  per test   the two multiplied: the cost of the accounting per test
  tests_ms   the grading's own time per test (median), for scale; with --old, the same
             grading by a checkout of the judge before CPU accounting (its own harness
             image), side by side

Prints a table and writes it into docs/performance.md between the
bench:cpu_accounting markers.

    .venv/bin/python bench/cpu_accounting.py [--runs 15] [--problem ID]
        [--old /path/to/checkout --old-image jaxjudge-sandbox:old]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from docsection import measured, replace_section
from rich.console import Console
from rich.table import Table

import docker
from judge.catalog import Catalog
from judge.grading import grade
from judge.sandbox import cgroups, get_sandbox
from judge.sandbox.engine import container_cgroup
from judge.sandbox.process import Session
from judge.sandbox.zygote_child import ChildChannel
from judge.settings import REPO_ROOT, Settings


def per_read_us(read, n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        read()
    return (time.perf_counter() - started) / n * 1e6


def read_costs(settings: Settings) -> dict[str, float]:
    """Microseconds per read of each counter."""
    api = docker.APIClient()
    container = api.create_container(settings.sandbox_image, entrypoint=["sleep", "300"],
                                     host_config=api.create_host_config(network_mode="none"),
                                     network_disabled=True)
    cid = container["Id"]
    try:
        api.start(cid)
        group = container_cgroup(api, cid, settings.cgroup_root)
        costs = {"cgroup CPU time": per_read_us(group.cpu_ns, 20_000),
                 "cgroup memory kills": per_read_us(group.oom_kills, 20_000)}
        if cgroups.can_make_children(group, int(api.inspect_container(cid)["State"]["Pid"]),
                                     settings.cgroup_root):
            child = cgroups.child_of(group, 1 << 30, 128)
            try:
                costs["zygote child: its group + the container's kills"] = per_read_us(
                    lambda: (child.oom_kills(), group.oom_kills()), 20_000)
            finally:
                child.remove()
    finally:
        api.remove_container(cid, force=True)
        api.close()
    sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        def search() -> float:
            session = Session(sleeper.pid)  # a fresh one searches all of /proc
            return session.cpu_seconds()

        session = Session(sleeper.pid)
        costs["process sandbox: its session, searched in /proc"] = per_read_us(search, 500)
        costs["process sandbox: its session, between searches"] = per_read_us(
            session.cpu_seconds, 20_000)
    finally:
        sleeper.kill()
        sleeper.wait()
    return costs


def counted_gradings(problem_id: str, settings: Settings, runs: int) -> tuple[float, float, list[float]]:
    """Reads of the CPU counter and of the kill count per test, and tests_ms per test of
    each grading, grading the problem's reference in the zygote sandbox."""
    calls = {"cpu": 0, "oom": 0}
    cpu, oom = ChildChannel.cpu_seconds, ChildChannel.oom_kills

    def counted_cpu(self: ChildChannel) -> float:
        calls["cpu"] += 1
        return cpu(self)

    def counted_oom(self: ChildChannel) -> int:
        calls["oom"] += 1
        return oom(self)

    ChildChannel.cpu_seconds = counted_cpu  # type: ignore[method-assign]
    ChildChannel.oom_kills = counted_oom  # type: ignore[method-assign]
    problem = Catalog(settings.problems_dir).get(problem_id)
    code = problem.reference_path.read_text()
    sandbox = get_sandbox("zygote", settings.model_copy(update={"zygote_count": 1}))
    per_test, tests = [], 0
    try:
        grade(problem, code, sandbox=sandbox, settings=settings)  # warm: compiles cached
        calls.update(cpu=0, oom=0)
        for _ in range(runs):
            report = grade(problem, code, sandbox=sandbox, settings=settings)
            tests += len(report.tests)
            per_test.append(report.timings.tests_ms / len(report.tests))
    finally:
        sandbox.close()
        ChildChannel.cpu_seconds, ChildChannel.oom_kills = cpu, oom  # type: ignore[method-assign]
    return calls["cpu"] / tests, calls["oom"] / tests, per_test


OLD_GRADING = """
import json, sys
from judge.catalog import Catalog
from judge.grading import grade
from judge.sandbox import get_sandbox
from judge.settings import Settings
settings = Settings()
problem = Catalog(settings.problems_dir).get(sys.argv[1])
code = problem.reference_path.read_text()
sandbox = get_sandbox("zygote", settings.model_copy(update={"zygote_count": 1}))
grade(problem, code, sandbox=sandbox, settings=settings)
out = []
for _ in range(int(sys.argv[2])):
    report = grade(problem, code, sandbox=sandbox, settings=settings)
    out.append(report.timings.tests_ms / len(report.tests))
sandbox.close()
print(json.dumps(out))
"""


def old_gradings(old: Path, image: str, problem_id: str, runs: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(old), "JAXJUDGE_SANDBOX_IMAGE": image,
           "JAXJUDGE_PROBLEMS_DIR": str(REPO_ROOT / "problemsets"),
           "JAXJUDGE_DOCKER_SECCOMP_PROFILE": str(REPO_ROOT / "var" / "zygote-seccomp.json")}
    done = subprocess.run([sys.executable, "-c", OLD_GRADING, problem_id, str(runs)], env=env,
                          cwd=old, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--problem", default="jax-sharding/partitionspec-layout")
    parser.add_argument("--old", type=Path, help="a checkout of the judge before CPU accounting")
    parser.add_argument("--old-image", default="jaxjudge-sandbox:old")
    args = parser.parse_args()
    settings = Settings(problems_dir=REPO_ROOT / "problemsets")

    costs = read_costs(settings)
    cpu_reads, oom_reads, tests_ms = counted_gradings(args.problem, settings, args.runs)
    child_read = costs.get("zygote child: its group + the container's kills",
                           costs["cgroup memory kills"])
    per_test_us = cpu_reads * costs["cgroup CPU time"] + oom_reads * child_read
    old_ms = old_gradings(args.old, args.old_image, args.problem, args.runs) if args.old else []

    table = Table(title="CPU accounting, per test")
    table.add_column("what")
    table.add_column("value", justify="right")
    rows = [(f"one read: {name}", f"{us:.1f} µs") for name, us in costs.items()]
    rows += [
        (f"reads per test ({args.problem}, zygote)",
         f"{cpu_reads:.1f} CPU time, {oom_reads:.1f} memory kills"),
        ("accounting per test (zygote)", f"{per_test_us:.0f} µs"),
        ("tests_ms per test, median (this judge)", f"{statistics.median(tests_ms):.1f} ms"),
    ]
    if old_ms:
        rows.append((f"tests_ms per test, median (before: {args.old.name})",
                     f"{statistics.median(old_ms):.1f} ms"))
    for row in rows:
        table.add_row(*row)
    Console().print(table)

    lines = [
        "## What CPU accounting costs per test (issue 20)",
        "",
        measured("python bench/cpu_accounting.py" + (" --old ..." if old_ms else "")) + ". "
        "Time limits are on CPU time read from the kernel's counters on the host "
        "(docs/security.md, \"Time limits\"): the supervisor reads the CPU counter and the "
        "memory-kill count before each test's input goes in, while it waits (every 20-250 "
        "ms) and when the result arrives. One read of each, the reads one test makes "
        f"(counted over {args.runs} gradings of `{args.problem}`'s reference in the zygote "
        "sandbox), their product, and the grading's own time per test for scale"
        + (" beside the same grading by the judge before CPU accounting, with its own "
           "harness image" if old_ms else "") + ".",
        "",
        "| what | value |",
        "|---|---:|",
    ]
    lines += [f"| {what} | {value} |" for what, value in rows]
    replace_section("cpu_accounting", lines)


if __name__ == "__main__":
    main()
