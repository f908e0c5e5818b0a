"""Real Redis, PostgreSQL and Celery worker processes for the service tests.

Each is started by the tests themselves (CI starts nothing but the Docker engine), on a
free 127.0.0.1 port and in a private folder, and can be stopped, killed and restarted
to prove what the service does meanwhile.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import redis

from judge.settings import REPO_ROOT

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(predicate: Any, timeout: float, what: str, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)


class RedisServer:
    """redis-server with an append-only file synced on every write: a restart, even
    after kill -9, keeps every queued message."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [shutil.which("redis-server") or "redis-server", "--port", str(self.port),
             "--bind", "127.0.0.1", "--dir", str(self.folder), "--appendonly", "yes",
             "--appendfsync", "always", "--save", "", "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        wait_for(lambda: _pings(client), 10, "redis")

    def stop(self, kill: bool = False) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        self.proc.wait(10)
        self.proc = None

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


class PostgresServer:
    """A private PostgreSQL 15 cluster (initdb as the ``postgres`` user, trust auth on
    127.0.0.1), so a test can stop and start it."""

    def __init__(self) -> None:
        # Not under pytest's 0700 temporary root: the postgres user must reach it.
        self.folder = Path(tempfile.mkdtemp(prefix="jaxjudge-pg-"))
        self.data = self.folder / "data"
        self.port = free_port()
        self._n = 0

    def _as_postgres(self, *args: str) -> None:
        prefix: list[str] = []
        if os.geteuid() == 0:
            prefix = ["runuser", "-u", "postgres", "--"]
        subprocess.run(prefix + list(args), check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=120)

    def init(self) -> None:
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self._as_postgres(str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres",
                          "--auth=trust", "-E", "UTF8", "--no-sync")

    def start(self) -> None:
        opts = (f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 "
                "-c fsync=off -c max_connections=300")
        self._as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-o", opts, "-w",
                          "-t", "60", "-l", str(self.folder / "log"), "start")

    def stop(self) -> None:
        self._as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w",
                          "stop")

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        import psycopg

        self._n += 1
        name = f"t{self._n}_{os.getpid()}"
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def service_env(values: Mapping[str, Any]) -> dict[str, str]:
    """Settings as the JAXJUDGE_* environment of a worker process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXJUDGE_")}
    for name, value in values.items():
        if isinstance(value, list | dict):
            value = json.dumps(value)
        elif isinstance(value, Path):
            value = str(value)
        env[f"JAXJUDGE_{name.upper()}"] = str(value)
    env["PYTHONPATH"] = str(REPO_ROOT)
    return env


class Worker:
    """``celery -A workers.app worker`` as a real process in its own process group."""

    def __init__(self, env: dict[str, str], log: Path, *args: str) -> None:
        self.log = log
        self.args = args
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "workers.app", "worker", "--loglevel",
             "INFO", *args],
            env=env, cwd=REPO_ROOT, stdout=log.open("ab"), stderr=subprocess.STDOUT,
            start_new_session=True)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def children(self) -> list[int]:
        out = subprocess.run(["pgrep", "-P", str(self.pid)], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]

    def kill9(self) -> None:
        """SIGKILL the whole worker: main process and its pool children at once."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        try:
            os.killpg(self.pid, signal.SIGTERM)
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.kill9()
        except ProcessLookupError:
            pass


class Sweeper(Worker):
    """``python -m workers.sweeper`` as a real process in its own process group."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.log = log
        self.args = ()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "workers.sweeper", "--loglevel", "DEBUG"], env=env,
            cwd=REPO_ROOT, stdout=log.open("ab"), stderr=subprocess.STDOUT,
            start_new_session=True)

    def rounds(self) -> int:
        """Rounds it has finished (swept, or stood by)."""
        text = self.log.read_text(errors="replace")
        return text.count(": swept") + text.count(": standing by")


class Gunicorn:
    """The API served as ``make up`` and compose serve it: gunicorn's gevent worker (a
    greenlet per request, so long-polls hold no thread), 2 processes by default, on a
    free port (or ``port``, when the URL must be known first); returns once ``/healthz``
    answers."""

    def __init__(self, env: dict[str, str], log: Path, workers: int = 2,
                 worker_class: str = "gevent", threads: int = 1, port: int = 0) -> None:
        import requests

        self.base = f"http://127.0.0.1:{port or free_port()}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--bind", self.base.removeprefix("http://"),
             "--worker-class", worker_class, "--workers", str(workers),
             "--worker-connections", "1000", "--threads", str(threads), "app:create_app()"],
            env=env, cwd=REPO_ROOT, stdout=log.open("ab"), stderr=subprocess.STDOUT,
            start_new_session=True)

        def healthy() -> bool:
            try:
                return requests.get(f"{self.base}/healthz", timeout=2).ok
            except requests.RequestException:
                return False

        wait_for(healthy, 60, "gunicorn /healthz", every=0.2)

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
