"""The grading service as real processes, for the benchmarks that time it end to end.

:class:`Stack` starts, in a folder of its own: Redis, a SQLite database with an
instructor key, one or more grading workers (``celery -A workers.app worker -Q
interactive,batch``, each with its own ``-n`` name, sharing Redis and the database as
workers on separate hosts would) and gunicorn serving ``app:create_app()``. It submits
through the HTTP API only. :func:`remove_leftovers` removes the sandbox containers that
the stack's grading processes made and left.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from servers import Gunicorn, RedisServer, Worker, service_env, wait_for  # noqa: E402

from judge.sandbox.engine import OWNER_LABEL, SANDBOX_LABEL  # noqa: E402
from service import metrics  # noqa: E402
from service.db import Database  # noqa: E402
from service.keys import create_key  # noqa: E402
from service.migrate import upgrade  # noqa: E402

HEARTBEAT = 1.0  # seconds between the grading processes' announcements
BATCH_TIMEOUT = 3600.0  # seconds a batch may take before the bench gives up


class Stack:
    """Redis, the database, ``workers`` grading workers of ``concurrency`` processes each,
    and gunicorn, in ``folder``. ``settings`` are more judge settings for the workers
    (``JAXJUDGE_<NAME>``): ``xla_flags``, ``zygote_count``, ...; ``sandbox`` is the
    backend the workers must announce."""

    def __init__(self, folder: Path, pool_size: int, concurrency: int, sandbox: str = "docker",
                 workers: int = 1, settings: Mapping[str, Any] | None = None) -> None:
        self.folder, self.pool_size, self.concurrency = folder, pool_size, concurrency
        self.sandbox, self.workers = sandbox, workers
        self.settings = dict(settings or {})
        self.redis = RedisServer(folder / "redis")
        self.grading: list[Worker] = []
        self.api: Gunicorn | None = None
        self.owners: set[str] = set()  # grading processes seen: owners of our containers
        self.http = requests.Session()
        self.base = ""

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.redis.start()
        database_url = f"sqlite:///{self.folder / 'jaxjudge.db'}"
        upgrade(database_url)
        db = Database(database_url)
        with db.session() as s:
            self.http.headers["Authorization"] = "Bearer " + create_key(s, "bench", "instructor")
        db.dispose()
        env = service_env({
            "database_url": database_url, "redis_url": self.redis.url,
            "sandbox": self.sandbox, "problems_dir": ROOT / "problemsets",
            "pool_size": self.pool_size, "rate_limit": "", "submit_rate_limit": "",
            "heartbeat_seconds": HEARTBEAT, **self.settings})
        for name in ("XLA_FLAGS", "JAX_PLATFORMS"):  # the bench's own, not the workers'
            env.pop(name, None)
        for n in range(self.workers):
            self.grading.append(Worker(
                env, self.folder / f"worker{n}.log", "-Q", "interactive,batch",
                "--concurrency", str(self.concurrency), "-n", f"bench{n}@%h"))
        self.api = Gunicorn(env, self.folder / "api.log")
        self.base = self.api.base
        wait_for(self.ready, 180, f"{self.processes} grading process(es) with a full "
                 f"{self.sandbox} pool", every=0.2)

    @property
    def processes(self) -> int:
        return self.workers * self.concurrency

    def ready(self) -> bool:
        """Every grading process announced, with the expected sandbox and a full pool (of
        warm containers or zygotes; none for a fresh container per submission)."""
        states = metrics.workers(self.redis.client())
        self.owners.update(states)
        for worker in self.grading:
            if worker.proc.poll() is not None:
                raise SystemExit(f"a grading worker exited: see {worker.log}")
        return len(states) >= self.processes and all(
            s.get("sandbox") == self.sandbox and s.get("isolated")
            and s.get("pool_ready", 0) >= s.get("pool_size", 0) for s in states.values())

    def settle(self) -> None:
        """Wait (untimed) until every pool is full, as last announced (a zygote is back in
        its pool before the verdict is stored; an announcement made while it served says
        so until the next heartbeat)."""
        time.sleep(0.1)
        wait_for(self.ready, 180, "the pools to refill", every=0.1)

    def submit(self, problem: str, code: str) -> tuple[float, dict[str, Any]]:
        """``POST /v1/submissions?wait=60`` to verdict: milliseconds, and the submission."""
        started = time.perf_counter()
        r = self.http.post(f"{self.base}/v1/submissions?wait=60", timeout=90,
                           json={"problem": problem, "code": code})
        r.raise_for_status()
        body = r.json()
        while body["status"] != "done":
            body = self.http.get(f"{self.base}/v1/submissions/{body['id']}?wait=60",
                                 timeout=90).json()
        return (time.perf_counter() - started) * 1000, body

    def batches(self, groups: Mapping[str, list[dict[str, str]]]) -> tuple[float, list[dict]]:
        """One ``POST /v1/batches`` per problem (a batch grades one problem), sent back to
        back: seconds from the first POST until ``GET /v1/batches/{id}`` says done for
        every one, and their last documents."""
        started = time.perf_counter()
        urls = []
        for problem, entries in groups.items():
            r = self.http.post(f"{self.base}/v1/batches", timeout=120, json={
                "problem": problem, "name": "bench", "submissions": entries})
            r.raise_for_status()
            urls.append(f"{self.base}/v1/batches/{r.json()['id']}")
        found: dict[str, dict] = {}

        def finished() -> bool:
            for url in urls:
                if url not in found:
                    body = self.http.get(url, timeout=30).json()
                    if not body["done"]:
                        return False
                    found[url] = body
            return True

        wait_for(finished, BATCH_TIMEOUT, "the batches", every=0.2)
        return time.perf_counter() - started, [found[u] for u in urls]

    def grading_seconds(self, submission_ids: Iterable[str]) -> float:
        """The sum of these submissions' own grading times (each report's ``total_ms``)."""
        total = 0.0
        for sid in submission_ids:
            body = self.http.get(f"{self.base}/v1/submissions/{sid}", timeout=30).json()
            total += body["report"]["timings"]["total_ms"] / 1000
        return total

    def stop(self) -> None:
        """Stop everything (again: nothing happens). The grading processes' names are
        kept in ``owners`` first, for :func:`remove_leftovers`."""
        host = socket.gethostname()
        for worker in self.grading:
            self.owners.update(f"{host}:{pid}" for pid in worker.children())
        if self.api is not None:
            self.api.stop()
        for worker in self.grading:
            worker.stop()  # its grading processes close their pools
        self.redis.stop()


def remove_leftovers(owners: set[str]) -> None:
    """Remove sandbox containers that our processes made and left (other users' stay)."""
    for owner in owners:
        ids = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={SANDBOX_LABEL}",
                              "--filter", f"label={OWNER_LABEL}={owner}"],
                             capture_output=True, text=True).stdout.split()
        if ids:
            print(f"removing {len(ids)} container(s) left by {owner}", file=sys.stderr)
            subprocess.run(["docker", "rm", "-f", *ids], capture_output=True)
