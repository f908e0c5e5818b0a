"""How many long-polls (`GET /v1/submissions/{id}?wait=120`) one API process holds while
it still answers other requests promptly.

Starts, in a temporary folder, Redis, PostgreSQL and gunicorn serving `app:create_app()`
with ONE worker process, as `make up` and compose run it (`--worker-class gevent`), and
for comparison the worker class the API had before (`gthread`, 16 threads). No grading
worker: for each number of waiters N, the bench stores N + 1 queued submissions, opens N
long-polls on the first N (one client thread and connection each), and once every one
of them holds its wait slot (or after a few seconds, where they cannot), times 20
`GET /healthz` and 20 `GET /v1/submissions/{other}` one after the other (5 s timeout).
It then marks the N submissions done in one statement and sends their done notices, as
workers do, and times from the notice to each waiter's answer. Prints a table and writes
it into docs/performance.md between the bench:long_poll markers.

    .venv/bin/python bench/long_poll.py [--waiters 100,200,400,800] [--probes 20]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import requests
from docsection import measured, replace_section
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from servers import Gunicorn, PostgresServer, RedisServer, service_env, wait_for  # noqa: E402
from sqlalchemy import select, update  # noqa: E402

from service import longpoll  # noqa: E402
from service.db import Database, utcnow  # noqa: E402
from service.keys import create_key  # noqa: E402
from service.longpoll import WAITS_KEY  # noqa: E402
from service.migrate import upgrade  # noqa: E402
from service.models import ApiKey, Status, Submission  # noqa: E402
from service.queue import INTERACTIVE  # noqa: E402
from service.submissions import code_digest, new_id  # noqa: E402
from tests_support import FIXTURE_PROBLEMS, LAYOUT_GOOD  # noqa: E402

WAIT = 120  # seconds each long-poll asks for
PROBE_TIMEOUT = 5.0
THREADS = 16  # the gthread worker's threads, as the API ran before


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def rss_mib(master: int) -> float:
    """Resident memory of the gunicorn worker (the master's child), MiB."""
    child = subprocess.run(["pgrep", "-P", str(master)], capture_output=True,
                           text=True).stdout.split()[0]
    for line in Path(f"/proc/{child}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Stack:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.redis = RedisServer(folder / "redis")
        self.postgres = PostgresServer()
        self.url = ""
        self.db: Database | None = None

    def start(self) -> tuple[Database, str, int, int]:
        """The database, a key, its id and tenant."""
        self.redis.start()
        self.postgres.init()
        self.postgres.start()
        self.url = self.postgres.new_database()
        upgrade(self.url)
        self.db = Database(self.url)
        with self.db.session() as s:
            key = create_key(s, "bench", "client")
            key_id, tenant = s.execute(select(ApiKey.id, ApiKey.tenant_id)
                                       .where(ApiKey.prefix == key[:12])).one()
        return self.db, key, key_id, tenant

    def api(self, worker_class: str, waiters: int) -> Gunicorn:
        env = service_env({
            "database_url": self.url, "redis_url": self.redis.url,
            "problems_dir": FIXTURE_PROBLEMS, "rate_limit": "", "submit_rate_limit": "",
            "auth_failure_limit": "", "long_poll_max_per_key": waiters + 10,
            "long_poll_max_seconds": WAIT})
        return Gunicorn(env, self.folder / f"api-{worker_class}.log", workers=1,
                        worker_class=worker_class,
                        threads=THREADS if worker_class == "gthread" else 1)

    def stop(self) -> None:
        if self.db is not None:
            self.db.dispose()
        self.redis.stop()
        try:
            self.postgres.stop()
        finally:
            self.postgres.remove()


def store_queued(db: Database, tenant: int, n: int) -> list[str]:
    ids = [new_id() for _ in range(n)]
    with db.session() as s:
        s.add_all(Submission(id=i, tenant_id=tenant, problem="demo/layout",
                             problem_version="v", code=LAYOUT_GOOD,
                             code_sha256=code_digest(LAYOUT_GOOD), queue=INTERACTIVE,
                             status=Status.QUEUED, enqueued=True, attempt=0) for i in ids)
    return ids


def probe(http: requests.Session, url: str, headers: dict[str, str], n: int) -> list[float]:
    """Milliseconds per request; a timeout counts as PROBE_TIMEOUT and stops the probe."""
    times = []
    for _ in range(n):
        started = time.perf_counter()
        try:
            http.get(url, headers=headers, timeout=PROBE_TIMEOUT).raise_for_status()
        except requests.Timeout:
            times.append(PROBE_TIMEOUT * 1000)
            break
        times.append((time.perf_counter() - started) * 1000)
    return times


def run(stack: Stack, db: Database, key: str, key_id: int, tenant: int, worker_class: str,
        waiters: int, probes: int) -> list[str]:
    api = stack.api(worker_class, waiters)
    headers = {"Authorization": f"Bearer {key}"}
    redis = stack.redis.client()
    ids = store_queued(db, tenant, waiters + 1)
    waiting, other = ids[:waiters], ids[-1]
    answered: dict[str, float] = {}

    def wait(sid: str) -> None:
        with requests.Session() as http:
            r = http.get(f"{api.base}/v1/submissions/{sid}?wait={WAIT}", headers=headers,
                         timeout=WAIT + 30)
        answered[sid] = time.perf_counter()
        assert r.json()["status"] == "done", r.text

    threading.stack_size(512 << 10)
    pool = ThreadPoolExecutor(max_workers=waiters)
    try:
        started = time.perf_counter()
        futures: list[Future[None]] = [pool.submit(wait, sid) for sid in waiting]
        slots = f"{WAITS_KEY}{key_id}"
        held = min(waiters, THREADS) if worker_class == "gthread" else waiters
        wait_for(lambda: redis.zcard(slots) >= held or any(f.done() for f in futures), 120,
                 f"{held} long-polls waiting", every=0.05)
        for f in futures:
            if f.done():
                f.result()  # a long-poll that failed: its error
        settle = time.perf_counter() - started
        if worker_class == "gthread":
            time.sleep(2)  # the rest are queued behind the threads
        held = int(redis.zcard(slots))
        rss = rss_mib(api.proc.pid)
        http = requests.Session()
        health = probe(http, f"{api.base}/healthz", {}, probes)
        read = probe(http, f"{api.base}/v1/submissions/{other}", headers, probes)
        with db.session() as s:
            s.execute(update(Submission).where(Submission.id.in_(waiting)).values(
                status=Status.DONE, verdict="accepted", score=1.0, max_score=1.0,
                finished_at=utcnow()))
        notified = time.perf_counter()
        pipe = redis.pipeline(transaction=False)
        for sid in waiting:
            pipe.publish(longpoll.DONE_CHANNEL + sid, "done")
        pipe.execute()
        for f in futures:
            f.result(timeout=WAIT + 60)
        wake = [(answered[s] - notified) * 1000 for s in waiting]
    finally:
        pool.shutdown(wait=True)
        api.stop()

    def cell(times: list[float]) -> str:
        if max(times) >= PROBE_TIMEOUT * 1000:
            return f"timed out ({PROBE_TIMEOUT:g} s)"
        return f"{statistics.median(times):.1f} / {pct(times, 0.95):.1f} / {max(times):.1f}"

    return [worker_class if worker_class == "gevent" else f"gthread, {THREADS} threads",
            str(waiters), str(held), f"{settle:.1f}", cell(health), cell(read),
            f"{statistics.median(wake):.0f} / {pct(wake, 0.95):.0f} / {max(wake):.0f}",
            f"{rss:.0f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waiters", default="100,200,400,800",
                        help="numbers of concurrent long-polls, comma-separated")
    parser.add_argument("--probes", type=int, default=20)
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the gthread comparison (100 waiters)")
    args = parser.parse_args()
    levels = [int(n) for n in args.waiters.split(",")]

    folder = Path(tempfile.mkdtemp(prefix="jaxjudge-bench-"))
    stack = Stack(folder)
    rows = []
    try:
        db, key, key_id, tenant = stack.start()
        if not args.no_baseline:
            rows.append(run(stack, db, key, key_id, tenant, "gthread", levels[0], args.probes))
        for n in levels:
            rows.append(run(stack, db, key, key_id, tenant, "gevent", n, args.probes))
    finally:
        stack.stop()
        shutil.rmtree(folder, ignore_errors=True)

    columns = ["worker", "waiters", "waiting at once", "s to all waiting",
               "/healthz ms p50 / p95 / max", "GET other ms p50 / p95 / max",
               "notice to answer ms p50 / p95 / max", "worker RSS MiB"]
    shown = Table(title=f"long-polls on one API process ({os.cpu_count()} cores)")
    for i, name in enumerate(columns):
        shown.add_column(name, justify="left" if i == 0 else "right")
    for row in rows:
        shown.add_row(*row)
    Console().print(shown)

    replace_section("long_poll", [
        "## Long-polls held by one API process",
        "",
        measured(f"bench/long_poll.py --waiters {args.waiters} --probes {args.probes}") +
        ": gunicorn with one worker process, PostgreSQL, Redis, the bench's client threads on the same "
        f"machine. Each waiter is `GET /v1/submissions/{{id}}?wait={WAIT}` on a queued "
        "submission; \"waiting at once\" counts the wait slots held in Redis (for gthread, "
        "2 s after its threads filled); the probes run one after another while every "
        "waiter waits; \"notice to answer\" runs from the done notices (published after "
        "one UPDATE marked all N done) to each waiter's answer, the re-read included.",
        "",
        "| " + " | ".join(columns) + " |",
        "|---|" + "---:|" * (len(columns) - 1),
        *["| " + " | ".join(row) + " |" for row in rows],
    ])


if __name__ == "__main__":
    main()
