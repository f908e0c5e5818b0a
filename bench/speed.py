"""Issue 12's goals, side by side in one run: the zygote sandbox against a fresh hardened
container per submission, through the whole service, on this machine's cores.

Each configuration is a real stack (bench/stack.py: Redis, SQLite, Celery grading
workers, gunicorn) started, measured, stopped and cleaned up in turn:

  baseline   sandbox docker, no warm pool, one worker of concurrency 1: a fresh container
             per submission, XLA's default compile flags (the service before issue 12)
  zygote     sandbox zygote, one worker of concurrency = the cores (the new default),
             with the judge's XLA flags (JAXJUDGE_XLA_FLAGS, or --xla-flags)

and, for scale-out, each sandbox with one worker of concurrency 1, one of concurrency 2,
and two separate ``celery worker`` processes of concurrency 1 sharing Redis and the
database, as two hosts would. What is timed:

  1. class batch  a round-robin mix of 6 problems (the seed problems and the 4
     compile-heavy ones) and of their accepted and wrong_answer examples: one
     ``POST /v1/batches`` per problem (a batch grades one problem), sent back to back,
     until ``GET /v1/batches/{id}`` says done for all; also the small problems alone.
     The baseline grades a smaller batch of the same mix (--baseline-batch): its
     throughput is per submission, extrapolated to the full batch.
  2. compile-heavy latency  ``POST /v1/submissions?wait=60`` to verdict, each
     compile-heavy problem's reference, median of --runs, one at a time on idle workers.
  3. small problems latency  the same for partitionspec-layout and mesh-init-simulation,
     against the in-process lower bound (bench/sandbox.py's, JAX's caches cleared).
  4. scale out  throughput of a batch of the small problems (--scale-batch) and their
     latency, against worker processes.

Each batch's "bound" is the most its grading processes could reach: the batch's size times
the processes, over the sum of its submissions' own grading times (each report's
``total_ms``), i.e. every process grading all the time with nothing between gradings.

Every verdict is checked against the folder its example is filed under. Prints tables,
writes them with a plot (docs/performance-speed.png) into docs/performance.md between the
bench:speed markers. Everything it starts is stopped and removed at the end, even on error.

    .venv/bin/python bench/speed.py [--batch 200] [--baseline-batch 40] [--runs 5]
        [--scale-batch 60] [--quick] [--xla-flags '...'] [--doc docs/performance.md]
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from docsection import command_line, measured, replace_section
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from stack import Stack, remove_leftovers  # noqa: E402

from judge.catalog import Catalog  # noqa: E402
from judge.settings import Settings  # noqa: E402

SMALL = ["jax-sharding/partitionspec-layout", "jax-sharding/mesh-init-simulation"]
HEAVY = ["jax-sharding/with-partitioning", "jax-sharding/state-sharding",
         "jax-sharding/logical-axis-rules", "jax-sharding/fsdp-step"]
# The class batch's problems in round-robin order: the seed problems (partitionspec-layout,
# mesh-init-simulation, state-sharding, with-partitioning) and the compile-heavy ones.
MIX = [SMALL[0], HEAVY[0], SMALL[1], HEAVY[1], HEAVY[2], HEAVY[3]]
FILED = ("accepted", "wrong_answer")
GOAL_BATCH, GOAL_SMALL_BATCH = 5.0, 10.0  # throughput ratios, at least
GOAL_HEAVY = 0.5  # zygote median over the baseline's, at most
GOAL_GAP_MS = 100.0  # zygote median over the in-process bound, at most
GOAL_SCALE = 1.1  # two grading processes over one, at least ("grows", with a margin)
SEED_PROFILE = ROOT / "var" / "zygote-seccomp.json"
PLOT_NAME = "performance-speed.png"


@dataclass(frozen=True)
class Example:
    problem: str
    name: str  # <verdict>/<file>
    code: str
    expected: str


@dataclass(frozen=True)
class Config:
    sandbox: str  # "docker" (a fresh container per submission) or "zygote"
    workers: int
    concurrency: int

    @property
    def processes(self) -> int:
        return self.workers * self.concurrency

    @property
    def shape(self) -> str:
        if self.workers == 1:
            return f"1 worker, concurrency {self.concurrency}"
        return f"{self.workers} workers, concurrency {self.concurrency} each"


@dataclass
class BatchRun:
    submissions: int
    seconds: float
    as_filed: int  # verdicts equal to the folder the example is filed under
    grading: float  # seconds: the sum of the submissions' own grading times (total_ms)
    processes: int  # grading processes that shared the work

    @property
    def rate(self) -> float:
        return self.submissions / self.seconds

    @property
    def bound(self) -> float:
        """The most these processes could reach on this batch: every process grading all
        the time, nothing else (no service, no waiting) between the gradings."""
        return self.submissions * self.processes / self.grading


@dataclass
class Measures:
    """What one configuration's stack measured."""

    latency: dict[str, list[float]] = field(default_factory=dict)  # problem: ms
    grading: dict[str, list[float]] = field(default_factory=dict)  # the report's total_ms
    batches: dict[str, BatchRun] = field(default_factory=dict)  # mix, small, tiny, scale

    def small_latency(self) -> float | None:
        values = [v for p in SMALL for v in self.latency.get(p, [])]
        return statistics.median(values) if values else None


def examples(catalog: Catalog) -> dict[str, list[Example]]:
    """Each problem's accepted and wrong_answer examples, alternating, in name order."""
    found: dict[str, list[Example]] = {}
    for problem_id in dict.fromkeys(MIX + SMALL):
        root = catalog.get(problem_id).submissions_dir
        columns = [sorted((root / verdict).glob("*.py")) for verdict in FILED]
        found[problem_id] = [
            Example(problem_id, f"{path.parent.name}/{path.name}", path.read_text(),
                    path.parent.name)
            for path in itertools.chain(*itertools.zip_longest(*columns)) if path is not None]
        if not found[problem_id]:
            raise SystemExit(f"{problem_id}: no accepted or wrong_answer examples")
    return found


def mix(pool: dict[str, list[Example]], problems: Sequence[str], n: int) -> list[Example]:
    """``n`` examples: problems in turn, each problem's examples in turn."""
    taken = dict.fromkeys(problems, 0)
    chosen = []
    for i in range(n):
        problem = problems[i % len(problems)]
        chosen.append(pool[problem][taken[problem] % len(pool[problem])])
        taken[problem] += 1
    return chosen


class Bench:
    def __init__(self, args: argparse.Namespace, folder: Path) -> None:
        self.args, self.folder = args, folder
        self.catalog = Catalog(ROOT / "problemsets")
        self.pool = examples(self.catalog)
        self.references = {p: self.catalog.get(p).reference_path.read_text()
                           for p in SMALL + HEAVY}
        self.owners = {f"{socket.gethostname()}:{os.getpid()}"}
        self.off: list[str] = []  # verdicts not as filed
        self.results: dict[Config, Measures] = {}

    def settings(self, sandbox: str) -> dict[str, object]:
        if sandbox == "docker":
            return {"xla_flags": ""}
        return {"xla_flags": self.args.xla_flags,
                "docker_seccomp_profile": self.args.seccomp_profile}

    def measure(self, config: Config, work: Callable[[Stack, Measures], None]) -> None:
        """Start ``config``'s stack, run ``work`` on it, stop it and remove its containers."""
        started = time.monotonic()
        print(f"-- {config.sandbox}, {config.shape}", file=sys.stderr)
        folder = self.folder / f"{config.sandbox}-{config.workers}x{config.concurrency}"
        stack = Stack(folder, pool_size=0, concurrency=config.concurrency,
                      sandbox=config.sandbox, workers=config.workers,
                      settings=self.settings(config.sandbox))
        try:
            stack.start()
            work(stack, self.results.setdefault(config, Measures()))
        finally:
            stack.stop()
            self.owners |= stack.owners
            remove_leftovers(stack.owners)
        print(f"   {time.monotonic() - started:.0f} s", file=sys.stderr)

    def latency(self, stack: Stack, measures: Measures, problems: Iterable[str]) -> None:
        """Each problem's reference, one at a time on idle workers."""
        for problem in problems:
            for _ in range(self.args.runs):
                stack.settle()
                ms, body = stack.submit(problem, self.references[problem])
                self.check(body["verdict"], "accepted", f"{problem} reference")
                measures.latency.setdefault(problem, []).append(ms)
                if body.get("report"):
                    measures.grading.setdefault(problem, []).append(
                        body["report"]["timings"]["total_ms"])

    def batch(self, stack: Stack, measures: Measures, key: str, chosen: list[Example]) -> None:
        groups: dict[str, list[dict[str, str]]] = {}
        expected: dict[tuple[str, str], Example] = {}
        for i, example in enumerate(chosen):
            student = f"s{i:04d}"
            groups.setdefault(example.problem, []).append({"student_id": student,
                                                           "code": example.code})
            expected[example.problem, student] = example
        stack.settle()
        seconds, bodies = stack.batches(groups)
        as_filed = 0
        for body in bodies:
            for member in body["submissions"]:
                example = expected[body["problem"], member["student_id"]]
                as_filed += self.check(member["verdict"], example.expected,
                                       f"{example.problem} {example.name}")
        grading = stack.grading_seconds(m["submission_id"] for body in bodies
                                        for m in body["submissions"])
        measures.batches[key] = BatchRun(len(chosen), seconds, as_filed, grading,
                                         stack.processes)
        print(f"   {key}: {len(chosen)} in {seconds:.1f} s", file=sys.stderr)

    def check(self, verdict: str | None, expected: str, what: str) -> bool:
        if verdict == expected:
            return True
        self.off.append(f"{what}: {verdict}, filed as {expected}")
        print(f"   verdict off: {self.off[-1]}", file=sys.stderr)
        return False


def in_process_bound(catalog: Catalog, runs: int) -> dict[str, list[float]]:
    """bench/sandbox.py's in-process lower bound (caches cleared) for the small problems,
    in this process: no isolation, no protocol, no service."""
    from sandbox import in_process

    found = {}
    for problem_id in SMALL:
        problem = catalog.get(problem_id)
        code = problem.reference_path.read_text()
        in_process(problem, code, False)  # this process's imports, once
        found[problem_id] = [in_process(problem, code, True) for _ in range(runs)]
    return found


# -- the report --------------------------------------------------------------------------


class Report:
    """One table, for the terminal (rich) and for docs/performance.md (markdown)."""

    def __init__(self, title: str, *columns: str) -> None:
        self.title, self.columns = title, columns
        self.rows: list[list[str]] = []

    def row(self, *cells: str) -> None:
        self.rows.append(list(cells))

    def rich(self) -> Table:
        table = Table(title=self.title)
        for i, name in enumerate(self.columns):
            table.add_column(name, justify="left" if i == 0 else "right")
        for cells in self.rows:
            table.add_row(*(c.replace("`", "").replace("**", "") for c in cells))
        return table

    def markdown(self) -> list[str]:
        return [f"**{self.title}**", "",
                "| " + " | ".join(self.columns) + " |",
                "|---|" + "---:|" * (len(self.columns) - 1),
                *("| " + " | ".join(cells) + " |" for cells in self.rows), ""]


def med(values: Sequence[float]) -> str:
    return f"{statistics.median(values):.0f}" if values else "-"


def met(ok: bool) -> str:
    return "yes" if ok else "**no**"


def reports(bench: Bench, base: Config, zygote: Config, bound: dict[str, list[float]],
            scale: list[Config]) -> list[Report]:
    args, results = bench.args, bench.results
    b, z = results[base], results[zygote]
    runs = args.runs
    found = []

    throughput = Report(
        "Class batch throughput, submissions per second", "batch", "configuration",
        "submissions", "seconds", "per second", "as filed", "ratio", "goal", "met",
        "bound", "bound ratio")
    for key, name, goal in [("mix", "mix of 6 problems", GOAL_BATCH),
                            ("small", "small problems only", GOAL_SMALL_BATCH),
                            ("tiny", "partitionspec-layout alone", GOAL_SMALL_BATCH)]:
        old, new = b.batches[key], z.batches[key]
        ratio = new.rate / old.rate
        throughput.row(name, f"baseline: fresh container, {base.shape}",
                       f"{old.submissions}, extrapolated per submission to {new.submissions}",
                       f"{old.seconds:.1f} (~{new.submissions / old.rate:.0f})",
                       f"{old.rate:.2f}", f"{old.as_filed}/{old.submissions}", "1x", "", "",
                       f"{old.bound:.2f}", "")
        throughput.row(name, f"zygote, {zygote.shape}", str(new.submissions),
                       f"{new.seconds:.1f}", f"{new.rate:.2f}",
                       f"{new.as_filed}/{new.submissions}", f"{ratio:.1f}x",
                       f">= {goal:g}x", met(ratio >= goal), f"{new.bound:.2f}",
                       f"{new.bound / old.rate:.1f}x")
    found.append(throughput)

    heavy = Report(
        f"Compile-heavy problems, POST to verdict, median of {runs}, ms", "problem",
        "baseline", "zygote", "zygote grading alone", "ratio", "goal", "met")
    for problem in HEAVY:
        old_ms = statistics.median(b.latency[problem])
        new_ms = statistics.median(z.latency[problem])
        heavy.row(f"`{problem}`", f"{old_ms:.0f}", f"{new_ms:.0f}",
                  med(z.grading.get(problem, [])), f"{new_ms / old_ms:.2f}x", f"<= {GOAL_HEAVY:g}x",
                  met(new_ms <= GOAL_HEAVY * old_ms))
    found.append(heavy)

    small = Report(
        f"Small problems, POST to verdict, median of {runs}, ms", "problem",
        "in-process bound", "zygote", "zygote grading alone", "zygote - bound", "goal",
        "met", "baseline")
    for problem in SMALL:
        floor = statistics.median(bound[problem])
        new_ms = statistics.median(z.latency[problem])
        small.row(f"`{problem}`", f"{floor:.0f}", f"{new_ms:.0f}",
                  med(z.grading.get(problem, [])), f"{new_ms - floor:.0f}", f"<= {GOAL_GAP_MS:.0f}",
                  met(new_ms - floor <= GOAL_GAP_MS), med(b.latency[problem]))
    found.append(small)

    outward = Report(
        f"Scale out: batch of {args.scale_batch} small-problem submissions, per second; "
        f"small-problem latency, median ms", "configuration", "grading processes",
        "baseline /s", "zygote /s", "zygote vs 1 process", "goal", "met",
        "baseline latency", "zygote latency")
    one = results[Config("zygote", 1, 1)].batches["scale"].rate
    for config in scale:
        old_m = results.get(Config("docker", config.workers, config.concurrency))
        new_m = results[Config("zygote", config.workers, config.concurrency)]
        rate = new_m.batches["scale"].rate
        growing = config.processes > 1
        old_rate = old_m.batches["scale"].rate if old_m and "scale" in old_m.batches else None
        old_lat = old_m.small_latency() if old_m else None
        new_lat = new_m.small_latency()
        outward.row(config.shape, str(config.processes),
                    f"{old_rate:.2f}" if old_rate else "-", f"{rate:.2f}",
                    f"{rate / one:.2f}x", f">= {GOAL_SCALE:g}x" if growing else "",
                    met(rate / one >= GOAL_SCALE) if growing else "",
                    f"{old_lat:.0f}" if old_lat else "-",
                    f"{new_lat:.0f}" if new_lat else "-")
    found.append(outward)
    return found


def plot(bench: Bench, scale: list[Config], base: Config, zygote: Config, path: Path) -> None:
    """Throughput and median latency against grading processes, baseline vs zygote."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    results = bench.results
    labels = [c.shape.replace(", ", "\n") for c in scale]
    xs = list(range(len(scale)))
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 4.2), dpi=90)
    for sandbox, name, color in [("docker", "fresh container", "tab:red"),
                                 ("zygote", "zygote", "tab:blue")]:
        points = [(x, results.get(Config(sandbox, c.workers, c.concurrency)))
                  for x, c in zip(xs, scale, strict=True)]
        rates = [(x, m.batches["scale"].rate) for x, m in points if m and "scale" in m.batches]
        lats = [(x, m.small_latency()) for x, m in points if m and m.small_latency()]
        if rates:
            left.plot(*zip(*rates, strict=True), "o-", color=color,
                      label=f"{name}: small problems")
        if lats:
            right.plot(*zip(*lats, strict=True), "o-", color=color)
        config = base if sandbox == "docker" else zygote
        where = next((x for x, c in zip(xs, scale, strict=True)
                      if (c.workers, c.concurrency) == (config.workers, config.concurrency)),
                     None)
        measures = results[config]
        if where is not None:
            left.plot([where], [measures.batches["mix"].rate], "s", color=color, mfc="none",
                      ms=9, label=f"{name}: mix of 6 problems (left), compile-heavy (right)")
            heavy = [v for p in HEAVY for v in measures.latency.get(p, [])]
            right.plot([where], [statistics.median(heavy)], "s", color=color, mfc="none",
                       ms=9)
    for axis, title, unit in [(left, "Throughput", "submissions per second"),
                              (right, "POST to verdict, median", "milliseconds")]:
        axis.set_yscale("log")
        axis.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        axis.yaxis.set_minor_formatter(ticker.NullFormatter())
        axis.set_xticks(xs, labels, fontsize=8)
        axis.set_title(title, fontsize=10)
        axis.set_ylabel(unit, fontsize=9)
        axis.grid(True, which="both", alpha=0.3)
    fig.suptitle(f"jaxjudge, {os.cpu_count()} cores: fresh container per submission "
                 "vs zygote", fontsize=10)
    fig.legend(*left.get_legend_handles_labels(), loc="lower center", ncol=2, fontsize=8,
               frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(path, dpi=90)
    plt.close(fig)
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=200,
                        help="submissions in the zygote's class batches (mix, small)")
    parser.add_argument("--baseline-batch", type=int, default=40,
                        help="submissions in the baseline's batches, same mix")
    parser.add_argument("--runs", type=int, default=5, help="latency runs per problem")
    parser.add_argument("--scale-batch", type=int, default=60,
                        help="small-problem submissions per scale-out batch")
    parser.add_argument("--quick", action="store_true",
                        help="scale out with the zygote only (the baseline at 1 process)")
    parser.add_argument("--xla-flags", default=None,
                        help="the zygote's XLA flags (default: JAXJUDGE_XLA_FLAGS / Settings)")
    parser.add_argument("--seccomp-profile", type=Path, default=SEED_PROFILE)
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "performance.md",
                        help=f"where the section goes; the plot goes beside it ({PLOT_NAME})")
    args = parser.parse_args()
    defaults = parser.parse_args([])
    if args.xla_flags is None:
        args.xla_flags = Settings().xla_flags
    args.seccomp_profile = args.seccomp_profile.resolve()
    if not args.seccomp_profile.is_file():
        raise SystemExit(f"{args.seccomp_profile}: missing (make sandbox-image writes it)")
    # The in-process bound compiles with the zygote's flags, like for like.
    os.environ["XLA_FLAGS"] = ("--xla_force_host_platform_device_count=8 "
                               + args.xla_flags).strip()
    os.environ["JAX_PLATFORMS"] = "cpu"

    cores = len(os.sched_getaffinity(0))
    base, zygote = Config("docker", 1, 1), Config("zygote", 1, cores)
    scale = [Config("any", 1, 1), Config("any", 1, 2), Config("any", 2, 1)]
    started = time.monotonic()
    folder = Path(tempfile.mkdtemp(prefix="jaxjudge-speed-"))
    bench = Bench(args, folder)
    pool = bench.pool
    try:
        bound = in_process_bound(bench.catalog, args.runs)

        def baseline(stack: Stack, m: Measures) -> None:
            bench.latency(stack, m, SMALL + HEAVY)
            bench.batch(stack, m, "mix", mix(pool, MIX, args.baseline_batch))
            bench.batch(stack, m, "small", mix(pool, SMALL, args.baseline_batch))
            bench.batch(stack, m, "tiny", mix(pool, SMALL[:1], args.baseline_batch))
            bench.batch(stack, m, "scale", mix(pool, SMALL, args.scale_batch))

        def main_zygote(stack: Stack, m: Measures) -> None:
            bench.latency(stack, m, SMALL + HEAVY)
            bench.batch(stack, m, "mix", mix(pool, MIX, args.batch))
            bench.batch(stack, m, "small", mix(pool, SMALL, args.batch))
            bench.batch(stack, m, "tiny", mix(pool, SMALL[:1], args.batch))
            if (zygote.workers, zygote.concurrency) in [(c.workers, c.concurrency)
                                                        for c in scale]:
                bench.batch(stack, m, "scale", mix(pool, SMALL, args.scale_batch))

        def scale_out(stack: Stack, m: Measures) -> None:
            bench.latency(stack, m, SMALL)
            bench.batch(stack, m, "scale", mix(pool, SMALL, args.scale_batch))

        bench.measure(base, baseline)
        bench.measure(zygote, main_zygote)
        for sandbox in ("zygote",) if args.quick else ("docker", "zygote"):
            for shape in scale:
                config = Config(sandbox, shape.workers, shape.concurrency)
                if config not in (base, zygote):
                    bench.measure(config, scale_out)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        remove_leftovers(bench.owners)

    tables = reports(bench, base, zygote, bound, scale)
    console = Console() if sys.stdout.isatty() else Console(width=160)
    for table in tables:
        console.print(table.rich())
    if bench.off:
        console.print(f"[red]{len(bench.off)} verdict(s) not as filed:[/red]",
                      *bench.off, sep="\n")
    minutes = (time.monotonic() - started) / 60
    png = args.doc.parent / PLOT_NAME
    plot(bench, scale, base, zygote, png)

    mixed = ", ".join(f"`{p.split('/')[1]}`" for p in MIX)
    replace_section("speed", [
        "## Speed: the zygote against a fresh container per submission (issue 12)",
        "",
        measured(command_line(
        "bench/speed.py", args, defaults,
        ("batch", "baseline_batch", "runs", "scale_batch"), ("quick",))) + f", in {minutes:.0f} minutes. Each "
        "configuration is the whole service (bench/stack.py: Redis, SQLite, Celery grading "
        "workers, gunicorn with 2 gevent processes) started for it alone. **Baseline**: "
        f"`JAXJUDGE_SANDBOX=docker`, no warm pool, {base.shape}, XLA's default flags: a "
        "fresh hardened container per submission, the service before issue 12. "
        f"**Zygote**: `JAXJUDGE_SANDBOX=zygote`, {zygote.shape} (the cores, the new "
        "default), one zygote per grading process, XLA flags "
        f"`{args.xla_flags or '(none)'}`.",
        "",
        f"Batches: one `POST /v1/batches` per problem (a batch grades one problem), all sent "
        "back to back, timed until `GET /v1/batches/{id}` says done for every one. The mix "
        f"takes the problems {mixed} in turn, and within each its `submissions/accepted` "
        "and `submissions/wrong_answer` examples in turn; \"small problems only\" does the "
        "same with the first two (whose examples include concrete initialisations of "
        "several seconds), \"partitionspec-layout alone\" with the first. The baseline "
        "grades the first "
        f"{args.baseline_batch} of the same round-robin order and its throughput is per "
        "submission, extrapolated to the zygote's batch (its time in brackets). \"As "
        "filed\": verdicts equal to the folder the example is filed under. \"Bound\": "
        "the most the configuration's grading processes could reach on that batch, its "
        "size times the processes over the sum of its submissions' own grading times (the "
        "reports' `total_ms`), as if every process graded all the time with nothing in "
        "between; \"bound ratio\" is that over the baseline. Latency: "
        "`POST /v1/submissions?wait=60` to verdict with each problem's reference, one at a "
        "time on idle workers; \"grading alone\" is the report's `total_ms`; the "
        "in-process bound is bench/sandbox.py's (the same tests in the bench's warm "
        "interpreter, JAX's caches cleared, the zygote's XLA flags). Scale out: "
        f"{args.scale_batch} small-problem submissions as one batch per problem; \"2 "
        "workers\" are two `celery worker` processes (`-n bench0@%h`, `-n bench1@%h`) "
        "sharing Redis and the database, as two hosts would; the goal there is that "
        f"throughput grows (at least {GOAL_SCALE:g}x one process)."
        + (" `--quick`: the baseline is measured at one process only." if args.quick
           else ""),
        "",
        *itertools.chain.from_iterable(t.markdown() for t in tables),
        "Verdicts not as filed: " + ("none." if not bench.off else
                                     "; ".join(bench.off[:20]) + "."),
        "",
        f"![Throughput and median latency against grading processes, fresh container vs "
        f"zygote]({PLOT_NAME})",
    ], doc=args.doc)


if __name__ == "__main__":
    main()
