"""Throughput through compose as worker containers are added (issue 25), in one run.

compose.yaml's stack (the images from ``scripts/compose-check.sh --images-only``; the
project ``jaxjudgebench``, the check's settings from scripts/compose_check.py's OVERRIDE)
grades the same batch of filed examples with one worker container, then with two
(``up -d --no-deps --no-recreate --scale worker=2 worker``: the first keeps its warm
zygotes), and with ``--aba`` with one again. Each container runs ``--concurrency``
grading processes (default 1, as the check: a container stands for a one-core host).

Each phase waits until ``jaxjudge_workers`` counts its grading processes and ``/readyz``
answers, grades a warm-up batch (``--warmup``) so every zygote has served, then times the
batch: one ``POST /v1/batches`` per problem, back to back, until ``GET /v1/batches/{id}``
says done for every one. Every verdict is compared with the folder its example is filed
under. Measured per phase, from the kernel's CPU counters of each container's control
group (judge.sandbox.engine.container_cgroup, as the sandboxes' time limits are read):

  wall          seconds from the first POST to the last verdict stored
  gradings/s    the batch over that, and its ratio to the one-container phases' (with
                --aba, phases 1 and 3 pooled: what drifts over the run shows there)
  worker CPU    per grading: the worker containers (Celery and its grading processes) and
                the sandbox containers they own (zygotes and their children; found as
                they appear, each read until it is removed)
  service CPU   per grading: api, postgres, redis, sweeper; and beyond what they use
                idle (measured over --idle seconds before the batch: health checks,
                heartbeats, the sweeper's rounds). The webhook worker is logged apart.
  engine CPU    per grading: dockerd and containerd (the machine's, others' work included)
  host busy     the machine's busy CPU time over the phase, as a share of its cores

The batch's wall time is the database's last ``finished_at`` less the first POST's time
(polling, once a second, only checks it is done). On paper, from the one-container
phases' costs c_w (worker) and c_s (service, beyond idle): k hosts of C cores
(C = --concurrency) behind a service of C_api cores (--service-cores) sustain
min(k C / c_w, (C_api - idle) / c_s) gradings/s. On this machine the containers share
its cores.

Prints the tables and writes them into docs/performance.md between the
bench:compose_scale markers. ``down -v`` at the end, whatever happened.

    .venv/bin/python bench/compose_scale.py [--batch 120] [--warmup 10] [--idle 30] [--aba]
        [--concurrency 1] [--service-cores N] [--keep] [--no-doc] [--note TEXT]
"""

from __future__ import annotations

import argparse
import os
import secrets
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docker.api import APIClient
from docker.errors import APIError
from docsection import command_line, measured, replace_section
from rich.console import Console
from rich.table import Table

from judge.errors import SandboxUnavailable
from judge.sandbox.cgroups import Cgroup
from judge.sandbox.engine import OWNER_LABEL, SANDBOX_LABEL, container_cgroup

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))  # scripts/ is not a package
import compose_check as cc  # noqa: E402

PROJECT = "jaxjudgebench"
# The service side: what every grading passes through, whatever the number of worker hosts.
SERVICES = ("api", "postgres", "redis", "sweeper")
# Measured and logged, left out of the service side: it delivers no webhook here, and its
# CPU is its health check (`celery inspect ping` every 30 s, ~1.7 CPU-s each).
ASIDE = ("webhooks",)
ENGINE = ("dockerd", "containerd")
CGROUP_ROOT = Path("/sys/fs/cgroup")
TICK = 0.5  # seconds between reads of the sandboxes' counters
CONCURRENCY_LINE = 'JAXJUDGE_WORKER_CONCURRENCY: "1"'


def log(message: str) -> None:
    print(f"compose-scale: {message}", file=sys.stderr, flush=True)


# -- CPU time ----------------------------------------------------------------------------
def host_busy_s() -> float:
    """The machine's busy CPU seconds so far (all cores: /proc/stat less idle and iowait)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def engine_s() -> float:
    """CPU seconds of the engine's processes (dockerd, containerd) so far."""
    total = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (proc / "comm").read_text().strip() not in ENGINE:
                continue
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        after = stat[stat.rindex(")") + 2:].split()
        total += int(after[11]) + int(after[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


@dataclass
class Counter:
    """One container's CPU counter over a phase: ``base`` at the start (0 for one started
    later), ``last`` as last read (kept when the container is gone)."""

    group: Cgroup | None
    base: int = 0
    last: int = 0

    def read(self) -> None:
        if self.group is not None:
            try:
                self.last = max(self.last, self.group.cpu_ns())
            except OSError:  # removed: its CPU time up to the last read stays counted
                self.group = None

    @property
    def seconds(self) -> float:
        return (self.last - self.base) / 1e9


class CpuMeter:
    """CPU time over a phase of named containers (read at the start and the end) and of
    the sandboxes whose owner is one of ``hosts`` (found while the phase runs, read every
    TICK until removed)."""

    def __init__(self, named: dict[str, list[str]], hosts: set[str]) -> None:
        self.api = APIClient()
        self.hosts = hosts
        self.named = {kind: [self._counter(cid) for cid in ids] for kind, ids in named.items()}
        self.sandboxes: dict[str, Counter] = {}
        self._find(at_start=True)
        for counter in [*self.sandboxes.values(),
                        *(c for cs in self.named.values() for c in cs)]:
            counter.read()
            counter.base = counter.last
        self.host0, self.engine0 = host_busy_s(), engine_s()
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _counter(self, cid: str) -> Counter:
        try:
            return Counter(container_cgroup(self.api, cid, CGROUP_ROOT))
        except SandboxUnavailable:  # not started yet, or gone
            return Counter(None)

    def _find(self, at_start: bool = False) -> None:
        try:
            listed = self.api.containers(all=True, filters={"label": SANDBOX_LABEL})
        except APIError:
            return
        for info in listed:
            cid = info["Id"]
            owner = (info.get("Labels") or {}).get(OWNER_LABEL, "")
            if owner.split(":")[0] not in self.hosts:
                continue
            known = self.sandboxes.get(cid)
            if known is None or (known.group is None and known.last == 0):
                # A container found later started during the phase: all its time counts.
                self.sandboxes[cid] = self._counter(cid)

    def _run(self) -> None:
        tick = 0
        while not self._stop.wait(TICK):
            tick += 1
            if tick % 2 == 0:
                self._find()
            for counter in list(self.sandboxes.values()):
                counter.read()

    def stop(self) -> dict[str, float]:
        """CPU seconds since the start: each named kind, ``sandbox``, ``engine`` and the
        machine's ``host``; and ``wall``, the seconds measured."""
        self._stop.set()
        self._thread.join()
        self._find()
        for counter in [*self.sandboxes.values(),
                        *(c for cs in self.named.values() for c in cs)]:
            counter.read()
        found = {kind: sum(c.seconds for c in cs) for kind, cs in self.named.items()}
        found.update(sandbox=sum(c.seconds for c in self.sandboxes.values()),
                     engine=engine_s() - self.engine0, host=host_busy_s() - self.host0,
                     wall=time.monotonic() - self.started, sandboxes=len(self.sandboxes))
        self.api.close()
        return found


# -- the stack ---------------------------------------------------------------------------
def workers_live(stack: cc.Stack) -> int:
    """``jaxjudge_workers`` from /metrics (-1 when it cannot be read)."""
    status, text = stack.http("GET", "/metrics", timeout=10)
    if status != 200 or not isinstance(text, str):
        return -1
    for line in text.splitlines():
        if line.startswith("jaxjudge_workers "):
            return int(float(line.split()[1]))
    return -1


def scale_to(stack: cc.Stack, containers: int, concurrency: int, first: bool) -> None:
    if first:
        stack.compose("up", "-d", "--no-build", "--scale", f"worker={containers}", timeout=900)
    else:
        stack.compose("up", "-d", "--no-deps", "--no-build", "--no-recreate", "--scale",
                      f"worker={containers}", "worker", timeout=900)
    processes = containers * concurrency
    cc.wait_for(f"jaxjudge_workers {processes}", 420,
                lambda: workers_live(stack) == processes, every=2)
    cc.wait_for("/readyz ready", 300,
                lambda: stack.http("GET", "/readyz", timeout=10)[0] == 200, every=2)
    running = stack.containers("worker")
    if len(running) != containers:
        raise cc.CheckFailed(f"{len(running)} worker containers run, {containers} expected")
    log(f"{containers} worker container(s), {processes} grading process(es), ready")


@dataclass
class Batch:
    """A graded batch: when the first POST left (host clock, epoch seconds), the seconds
    until polling saw every batch done, the batch ids, the verdicts not as filed."""

    posted: float
    polled: float
    ids: list[str]
    off: list[str]

    def wall(self, stack: cc.Stack) -> float:
        """Seconds from the first POST to the last verdict stored (the database's
        finished_at: same kernel clock), polling's figure when it cannot be read."""
        try:
            rows = stack.sql("select extract(epoch from max(finished_at)) from submissions "
                             "where batch_id in (" + ",".join(f"'{b}'" for b in self.ids)
                             + ")")
            return float(rows[0][0]) - self.posted
        except (cc.CheckFailed, IndexError, ValueError):
            return self.polled


def grade_batch(stack: cc.Stack, chosen: list[tuple[str, str, str, str]], tag: str) -> Batch:
    """POST one batch per problem, back to back, and wait until all are done (polling one
    batch a second, so that the polling weighs little on the service)."""
    posted, started = time.time(), time.monotonic()
    ids, expected = cc.post_batches(stack, chosen, f"compose-scale {tag}", prefix=f"{tag}-")
    found: list[dict[str, Any]] = []
    pending = list(ids)
    while pending:
        if time.monotonic() - started > 1800:
            raise cc.CheckFailed(f"{tag}: batches not done within 1800 s")
        status, body = stack.http("GET", f"/v1/batches/{pending[0]}", timeout=30)
        if status == 200 and body.get("done"):
            found.append(body)
            pending.pop(0)
        else:
            time.sleep(1.0)
    polled = time.monotonic() - started
    off = []
    for body in found:
        for member in body["submissions"]:
            verdict, name = expected[body["problem"], member["student_id"]]
            if member.get("verdict") != verdict:
                off.append(f"{tag}: {body['problem']} {verdict}/{name} got "
                           f"{member.get('verdict')} ({member.get('status')})")
    return Batch(posted, polled, ids, off)


@dataclass
class Phase:
    """One phase: its batch and the CPU seconds over it (``cpu``) and over an idle
    window before it (``idle``), as CpuMeter.stop gives them."""

    containers: int
    graded: int
    wall: float
    off: list[str]
    cpu: dict[str, float]
    idle: dict[str, float]

    @property
    def rate(self) -> float:
        return self.graded / self.wall

    def per(self, *kinds: str) -> float:
        return sum(self.cpu[k] for k in kinds) / self.graded

    @property
    def c_w(self) -> float:
        """Worker-side CPU seconds per grading: worker containers and their sandboxes."""
        return self.per("worker", "sandbox")

    @property
    def service_idle(self) -> float:
        """Cores the service containers use with nothing to grade."""
        return sum(self.idle[s] for s in SERVICES) / self.idle["wall"]

    @property
    def c_s(self) -> float:
        """Service CPU seconds per grading beyond what it uses idle."""
        extra = sum(self.cpu[s] for s in SERVICES) - self.service_idle * self.cpu["wall"]
        return max(extra, 0.0) / self.graded

    @property
    def busy(self) -> float:
        return self.cpu["host"] / self.cpu["wall"] / (os.cpu_count() or 1)


def run_phase(stack: cc.Stack, containers: int, args: argparse.Namespace, index: int,
              seen: set[str]) -> Phase:
    hosts = cc.hostnames(stack)
    seen.update(hosts.values())
    tag = f"p{index}w{containers}"
    warm = grade_batch(stack, cc.examples(args.warmup), f"{tag}-warm") if args.warmup else None
    log(f"phase {index}: warm-up {args.warmup} in {warm.polled if warm else 0:.1f} s; "
        f"{args.idle:g} s idle")
    named = {"worker": list(hosts), **{s: stack.containers(s) for s in SERVICES + ASIDE}}
    meter = CpuMeter(named, set(hosts.values()))
    time.sleep(args.idle)
    idle = meter.stop()
    meter = CpuMeter(named, set(hosts.values()))
    try:
        batch = grade_batch(stack, cc.examples(args.batch), tag)
    finally:
        cpu = meter.stop()
    phase = Phase(containers, args.batch, batch.wall(stack), (warm.off if warm else [])
                  + batch.off, cpu, idle)
    log(f"phase {index}: {containers} container(s), {args.batch} in {phase.wall:.1f} s "
        f"(polling: {batch.polled:.1f} s; {phase.rate:.2f}/s), worker {phase.c_w:.2f} "
        f"CPU-s per grading ({cpu['sandboxes']:.0f} sandboxes), service "
        + ", ".join(f"{s} {phase.per(s):.3f}" for s in SERVICES + ASIDE)
        + f" (idle {phase.service_idle:.3f} cores: "
        + ", ".join(f"{s} {idle[s] / idle['wall']:.3f}" for s in SERVICES + ASIDE)
        + f"; net {phase.c_s:.3f}), engine "
        f"{phase.per('engine'):.3f}, host busy {phase.busy:.0%}, "
        f"{len(phase.off)} not as filed")
    return phase


def prepare_images() -> dict[str, str]:
    """``scripts/compose-check.sh --images-only``: the images, and what it chose."""
    done = subprocess.run(["bash", str(ROOT / "scripts" / "compose-check.sh"),
                           "--images-only"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"scripts/compose-check.sh --images-only exited {done.returncode}")
    return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)


# -- on paper ------------------------------------------------------------------------------
def projected(k: int, cores: int, c_w: float, api_cores: float, idle: float,
              c_s: float) -> float:
    """Gradings/s of k hosts of ``cores`` cores each behind a service of ``api_cores``."""
    return min(k * cores / c_w, (api_cores - idle) / c_s if c_s > 0 else float("inf"))


def pooled(phases: list[Phase]) -> Phase:
    """Phases of the same shape as one: their batches, CPU and idle windows summed."""
    def total(field: str) -> dict[str, float]:
        return {k: sum(getattr(p, field)[k] for p in phases) for k in getattr(phases[0], field)}

    return Phase(phases[0].containers, sum(p.graded for p in phases),
                 sum(p.wall for p in phases), [o for p in phases for o in p.off],
                 total("cpu"), total("idle"))


def tables(phases: list[Phase], args: argparse.Namespace) -> tuple[Table, Table, list[str]]:
    """The measured table (each phase, and phases of one shape pooled when there are
    several), the on-paper one (from the one-container phases pooled), and both in
    Markdown with the on-paper note."""
    shapes = sorted({p.containers for p in phases})
    named = [(f"{i}", p) for i, p in enumerate(phases, 1)]
    for n in shapes:
        same = [i for i, p in enumerate(phases, 1) if p.containers == n]
        if len(same) > 1:
            named.append((" + ".join(map(str, same)), pooled([phases[i - 1] for i in same])))
    one = pooled([p for p in phases if p.containers == shapes[0]])
    measured_rows = [[
        name, f"{p.containers}", f"{p.graded - len(p.off)}/{p.graded}",
        f"{p.wall:.1f}", f"{p.rate:.2f}", f"{p.rate / one.rate:.2f}",
        f"{p.per('worker'):.2f} + {p.per('sandbox'):.2f} = {p.c_w:.2f}",
        f"{p.per(*SERVICES):.3f} ({p.c_s:.3f})", f"{p.per('engine'):.3f}",
        f"{p.busy:.0%}"] for name, p in named]
    heads = ["phase", "worker containers", "as filed", "wall s", "gradings/s",
             "vs one container", "worker CPU-s per grading: containers + sandboxes",
             "service CPU-s per grading (beyond idle)", "engine CPU-s per grading",
             "host busy"]
    c_w, c_s, idle = one.c_w, one.c_s, one.service_idle
    cores, api = args.concurrency, args.service_cores
    alone = projected(1, cores, c_w, api, idle, c_s)
    twos = [p for p in phases if p.containers == 2]
    paper_rows = []
    for k in (1, 2, 4, 8, 16):
        rate = projected(k, cores, c_w, api, idle, c_s)
        measured_ratio = f"{pooled(twos).rate / one.rate:.2f}" if k == 2 and twos else ""
        paper_rows.append([f"{k}", f"{rate:.2f}", f"{rate / alone:.2f}", measured_ratio])
    paper_heads = [f"hosts of {cores} core(s)", "projected gradings/s", "projected vs one",
                   "measured here vs one"]
    bound = (api - idle) / c_s if c_s > 0 else float("inf")
    source = [str(i) for i, p in enumerate(phases, 1) if p.containers == shapes[0]]
    note = (f"from phase{'s' if len(source) > 1 else ''} {' and '.join(source)} (one "
            f"container), c_w = {c_w:.2f} CPU-s per grading on the "
            f"worker side and c_s = {c_s:.3f} on the service side beyond its idle "
            f"{idle:.2f} cores; k hosts of C = {cores} core(s) behind a service host of "
            f"C_api = {api:g} cores sustain min(k C / c_w, (C_api - idle) / c_s) "
            f"gradings/s: the service bound is {bound:.0f} gradings/s, reached at about "
            f"{bound * c_w / cores:.0f} hosts.")
    t1 = Table(title="Compose scale-out, measured")
    t2 = Table(title="On paper: " + note)
    for table, hs, rows in ((t1, heads, measured_rows), (t2, paper_heads, paper_rows)):
        for h in hs:
            table.add_column(h, justify="right")
        for row in rows:
            table.add_row(*row)
    lines = ["| " + " | ".join(heads) + " |", "|" + "---:|" * len(heads)]
    lines += ["| " + " | ".join(r) + " |" for r in measured_rows]
    lines += ["", "On paper, " + note, "",
              "| " + " | ".join(paper_heads) + " |", "|" + "---:|" * len(paper_heads)]
    lines += ["| " + " | ".join(r) + " |" for r in paper_rows]
    return t1, t2, lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=120, help="submissions per phase")
    parser.add_argument("--warmup", type=int, default=10, help="warm-up submissions per phase")
    parser.add_argument("--concurrency", type=int, default=1,
                        help="grading processes per worker container (its cores, on paper)")
    parser.add_argument("--service-cores", type=float, default=float(os.cpu_count() or 1),
                        help="cores of the service host, on paper (default: this machine's)")
    parser.add_argument("--idle", type=float, default=30.0,
                        help="seconds of idle measurement before each phase's batch")
    parser.add_argument("--aba", action="store_true", help="one container again at the end")
    parser.add_argument("--keep", action="store_true", help="leave the stack running")
    parser.add_argument("--no-doc", action="store_true", help="do not write docs/performance.md")
    parser.add_argument("--note", default="",
                        help="a sentence for the section (the machine's load, say)")
    args = parser.parse_args()
    defaults = parser.parse_args([])
    if args.concurrency < 1 or args.batch < 3 or args.warmup < 0:
        parser.error("--concurrency >= 1, --batch >= 3, --warmup >= 0")
    if CONCURRENCY_LINE not in cc.OVERRIDE:
        raise SystemExit(f"scripts/compose_check.py's OVERRIDE lost `{CONCURRENCY_LINE}`")

    chosen = prepare_images()
    compose = shlex.split(chosen.pop("COMPOSE", "docker-compose"))
    workdir = Path(tempfile.mkdtemp(prefix="compose-scale-"))
    override = workdir / "compose.bench.yaml"
    override.write_text(cc.OVERRIDE.replace(
        CONCURRENCY_LINE, f'JAXJUDGE_WORKER_CONCURRENCY: "{args.concurrency}"'))
    port = cc.free_port()
    env = {**os.environ, **chosen, "JAXJUDGE_PORT": str(port),
           "JAXJUDGE_SECRET_KEY": secrets.token_urlsafe(48),
           "POSTGRES_PASSWORD": secrets.token_hex(16)}
    stack = cc.Stack(compose, PROJECT, override, port, env, profiles=())
    stack.compose("down", "-v", "--remove-orphans", "-t", "30", check=False)  # a past run's
    started = time.monotonic()
    seen: set[str] = set()
    phases: list[Phase] = []
    plan = [1, 2, 1] if args.aba else [1, 2]
    try:
        for i, containers in enumerate(plan, 1):
            scale_to(stack, containers, args.concurrency, first=i == 1)
            if i == 1:
                cc.make_key(stack)
            phases.append(run_phase(stack, containers, args, i, seen))
    except cc.CheckFailed as failure:
        log(f"FAILED: {failure}")
        cc.save_logs(stack, ROOT / "var" / "compose-scale")
        return 1
    finally:
        if args.keep:
            log(f"kept: {stack.url} (docker-compose -p {PROJECT} down -v to remove)")
        else:
            try:
                cc.tear_down(stack, sorted(seen | set(cc.hostnames_safe(stack))))
            except cc.CheckFailed as failure:
                log(f"teardown: {failure}")
    minutes = (time.monotonic() - started) / 60

    t1, t2, lines = tables(phases, args)
    console = Console() if sys.stdout.isatty() else Console(width=200)
    console.print(t1)
    console.print(t2)
    off = [o for p in phases for o in p.off]
    console.print(f"verdicts not as filed: {len(off)}", *off[:20], sep="\n")
    if args.no_doc:
        return 0
    problems = ", ".join(f"`{p.split('/')[1]}`" for p in cc.PROBLEMS)
    replace_section("compose_scale", [
        "## Scale-out through compose",
        "",
        measured(command_line(
        "python bench/compose_scale.py", args, defaults,
        ("batch", "warmup", "idle", "concurrency", "service_cores"), ("aba",))) + f", in {minutes:.0f} minutes. compose.yaml's "
        "stack (PostgreSQL, Redis, the API with 2 gevent processes, the sweeper, the "
        "webhook worker; images from `scripts/compose-check.sh --images-only`, the "
        "check's settings) grades the same batch in each phase: "
        f"{args.batch} filed examples of {problems} (accepted, wrong answer, compile and "
        "runtime errors in turn), one `POST /v1/batches` per problem, timed from the first "
        "POST to the last verdict stored (the database's `finished_at`), after a warm-up "
        f"of {args.warmup} and {args.idle:g} s idle. Phase 1 has one "
        f"worker container, phase 2 two (`up -d --no-deps --no-recreate --scale worker=2 "
        "worker`: the first keeps its warm zygotes)"
        + (", phase 3 one again" if args.aba else "") + f"; each container runs "
        f"{args.concurrency} grading process(es) (`JAXJUDGE_WORKER_CONCURRENCY`), standing "
        f"for a host of {args.concurrency} core(s). CPU time is read from each container's "
        "control group (cpuacct): worker = the worker containers plus the sandbox "
        "containers their processes own (the worker containers' health check, a `celery "
        "inspect ping` every 30 s, included); service = api, postgres, redis, sweeper, in "
        "brackets beyond what they use idle (the webhook worker, which delivers nothing "
        "here, is left out); engine = dockerd and "
        "containerd (whatever else the machine ran included); host busy = the machine's "
        "busy time over the phase, as a share of "
        f"its {os.cpu_count()} cores. **On this machine the two worker containers share the "
        "same cores** (with the service, and with whatever else runs here)."
        + (f" {args.note}" if args.note else ""),
        "",
        *lines,
        "",
        f"Verdicts not as filed: {len(off)}" + (": " + "; ".join(off[:10]) if off else "")
        + ".",
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
