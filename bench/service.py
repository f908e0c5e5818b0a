"""The grading service end to end through its HTTP API, against a fresh container each.

Starts, in a temporary folder, Redis, a SQLite database, one grading worker (`celery -A
workers.app worker -Q interactive,batch`) with its warm pool and gunicorn serving
`app:create_app()`, then times on `jax-sharding/partitionspec-layout` with its accepted
`arithmetic.py`: `POST /v1/submissions?wait=60` to verdict, one at a time, with the pool
refilled between submissions (untimed) and back to back; one `POST /v1/batches` of 200
copies until it is done; and the baseline, `judge.grading.grade` in this process with a
new container per submission. Prints tables and writes them into docs/performance.md
between the bench:service markers. Everything it starts is stopped and removed at the end.

    .venv/bin/python bench/service.py [--runs 30] [--pool-size 2] [--concurrency 1]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

from docsection import measured, replace_section
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from servers import wait_for  # noqa: E402
from stack import HEARTBEAT, Stack, remove_leftovers  # noqa: E402

from judge.catalog import Catalog  # noqa: E402
from judge.grading import grade  # noqa: E402
from judge.sandbox.docker import DockerSandbox  # noqa: E402
from judge.settings import Settings  # noqa: E402

PROBLEM = "jax-sharding/partitionspec-layout"
SOLUTION = ROOT / "problemsets" / PROBLEM / "submissions" / "accepted" / "arithmetic.py"


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def fresh_baseline(code: str, runs: int, back_to_back: int) -> tuple[list, float]:
    """A new container per submission: (latency, grading) ms pairs, and seconds for
    ``back_to_back`` more in a row."""
    settings = Settings(problems_dir=ROOT / "problemsets", sandbox="docker", pool_size=0)
    problem = Catalog(settings.problems_dir).get(PROBLEM)
    sandbox = DockerSandbox(settings)
    try:
        def one() -> tuple[float, float]:
            started = time.perf_counter()
            report = grade(problem, code, sandbox=sandbox, settings=settings)
            if report.verdict != "accepted":
                raise SystemExit(f"fresh container: {report.verdict}: {report.message}")
            return (time.perf_counter() - started) * 1000, report.timings.total_ms

        latencies = [one() for _ in range(runs)]
        started = time.perf_counter()
        for _ in range(back_to_back):
            one()
        return latencies, time.perf_counter() - started
    finally:
        sandbox.close()


def submit(stack: Stack, code: str) -> tuple[float, float]:
    """Milliseconds from POST to verdict, and the worker's grading time in them."""
    elapsed, body = stack.submit(PROBLEM, code)
    if body["verdict"] != "accepted":
        raise SystemExit(f"{body['id']}: {body['verdict']}")
    return elapsed, body["report"]["timings"]["total_ms"]


def batch(stack: Stack, code: str, n: int) -> float:
    """Seconds from POST /v1/batches to done; every verdict must be accepted."""
    entries = [{"student_id": f"s{i:03d}", "code": code} for i in range(n)]
    elapsed, [body] = stack.batches({PROBLEM: entries})
    if body["verdicts"] != {"accepted": n}:
        raise SystemExit(f"batch verdicts: {body['verdicts']}")
    return elapsed


def table(title: str, *columns: str) -> Table:
    found = Table(title=title)
    for i, name in enumerate(columns):
        found.add_column(name, justify="left" if i == 0 else "right")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="warm and back-to-back runs")
    parser.add_argument("--batch", type=int, default=200, help="submissions in the batch")
    parser.add_argument("--fresh-runs", type=int, default=30)
    parser.add_argument("--fresh-batch", type=int, default=20)
    parser.add_argument("--pool-size", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()
    code = SOLUTION.read_text()

    folder = Path(tempfile.mkdtemp(prefix="jaxjudge-bench-"))
    owners = {f"{socket.gethostname()}:{os.getpid()}"}
    stack = Stack(folder, args.pool_size, args.concurrency)
    try:
        stack.start()
        warm = []
        for _ in range(args.runs):
            warm.append(submit(stack, code))
            time.sleep(HEARTBEAT * 1.5)  # let the announcement catch up with the hand-out
            wait_for(stack.ready, 120, "the pool to refill", every=0.1)
        back = [submit(stack, code) for _ in range(args.runs)]
        wait_for(stack.ready, 120, "the pool to refill", every=0.1)
        batch_s = batch(stack, code, args.batch)
        stack.stop()
        fresh, fresh_s = fresh_baseline(code, args.fresh_runs, args.fresh_batch)
    finally:
        stack.stop()
        owners |= stack.owners
        shutil.rmtree(folder, ignore_errors=True)
        remove_leftovers(owners)

    setup = f"pool size {args.pool_size}, concurrency {args.concurrency}, {os.cpu_count()} cores"
    latency = table(f"{PROBLEM}, submission to verdict, ms ({setup})",
                    "path", "n", "median", "p95", "grading alone")
    throughput = table(f"{PROBLEM}, throughput ({setup})",
                       "path", "submissions", "seconds", "per second")
    lines = ["| path | n | median ms | p95 ms | grading alone, median ms |",
             "|---|---:|---:|---:|---:|"]
    for name, pairs in [("service, warm pool (refilled between)", warm),
                        ("service, back-to-back", back),
                        ("fresh container per submission, no service", fresh)]:
        total = [t for t, _ in pairs]
        row = [name, str(len(pairs)), f"{statistics.median(total):.0f}", f"{p95(total):.0f}",
               f"{statistics.median(g for _, g in pairs):.0f}"]
        latency.add_row(*row)
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "| path | submissions | seconds | per second |", "|---|---:|---:|---:|"]
    fresh_rate = args.fresh_batch / fresh_s
    for row in [[f"service, one batch of {args.batch}", str(args.batch), f"{batch_s:.1f}",
                 f"{args.batch / batch_s:.2f}"],
                [f"fresh container, sequential (extrapolated from {args.fresh_batch})",
                 str(args.batch), f"{args.batch / fresh_rate:.1f}", f"{fresh_rate:.2f}"]]:
        throughput.add_row(*row)
        lines.append("| " + " | ".join(row) + " |")
    Console().print(latency, throughput)

    replace_section("service", [
        "## The service: HTTP API to verdict, and batch throughput",
        "",
        measured(f"bench/service.py --runs {args.runs} --pool-size {args.pool_size} "
                 f"--concurrency {args.concurrency}") + ": gunicorn (gevent, 2 processes), one Celery grading worker (concurrency "
        f"{args.concurrency}, a warm pool of {args.pool_size} per grading process), Redis, "
        f"SQLite, on `{PROBLEM}` with its accepted `arithmetic.py`. Latency runs from "
        "`POST /v1/submissions?wait=60` to the verdict, as the client sees it; \"warm pool\" "
        "waits (untimed) for the pool to refill between submissions, \"back-to-back\" does "
        "not. \"Grading alone\" is the report's `total_ms` (code in hand to report, in the "
        "worker or in this process). The baseline grades with `judge.grading.grade` in the "
        "bench's own process, a new container per submission, no service.",
        "",
        *lines,
        "",
        f"The batch is one `POST /v1/batches` of {args.batch} copies, timed until "
        f"`GET /v1/batches/{{id}}` says done (every verdict accepted). The fresh-container "
        f"throughput is measured over {args.fresh_batch} sequential submissions and "
        f"extrapolated to {args.batch}.",
    ])


if __name__ == "__main__":
    main()
