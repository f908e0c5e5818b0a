"""A warm pool of sandbox containers, for the service.

The pool keeps ``pool_size`` containers started, each with its harness past the jax and
flax imports and waiting for a job on standard input. A container is handed out only
after its ``ready`` line arrived and named this judge's harness version; it serves exactly
one submission and is removed; a replacement starts in the background.

Containers are created with the most generous limits the pool serves
(``pool_memory_mb``, ``pool_output_bytes``). At hand-out the memory limit is lowered to the
problem's (``docker update``) and the harness lowers its own file-size limit to the
problem's output limit before it loads the submission. A job that needs more than the pool
offers gets a fresh container instead.

The filler thread drops containers that died (a crash, an engine restart), retries with
backoff while the engine is away, and reaps orphans now and then; ``acquire`` never blocks
on it: with no ready container, the caller starts a fresh one.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from typing import Any

from docker.api import APIClient

from judge.errors import SandboxError
from judge.harness import HARNESS_VERSION
from judge.sandbox.channel import max_line
from judge.sandbox.docker import DockerChannel
from judge.sandbox.engine import ENGINE_ERRORS, ContainerSpec, create, reap, remove, retry_removals
from judge.sandbox.protocol import Job, ReadyEvent
from judge.sandbox.supervisor import EVENT
from judge.settings import Settings

log = logging.getLogger(__name__)
REAP_EVERY_SECONDS = 60.0


class WarmPool:
    ready_queue: type[queue.Queue[Any]] = queue.Queue  # oldest first
    def __init__(self, api: APIClient, settings: Settings, size: int | None = None) -> None:
        self.api = api
        self.settings = settings
        self.size = settings.pool_size if size is None else size
        self.ready: queue.Queue[Any] = self.ready_queue()
        self.wanted = threading.Event()
        self.stopping = threading.Event()
        self.failures = 0
        self.started = 0  # containers ever made ready, for tests and metrics
        self._thread = threading.Thread(target=self._fill, name="jaxjudge-pool", daemon=True)
        self._thread.start()

    # -- hand-out ------------------------------------------------------------------------

    def fits(self, job: Job) -> bool:
        return (job.limits.memory_mb <= self.settings.pool_memory_mb
                and job.limits.output_bytes < self.settings.pool_output_bytes)

    def acquire(self, job: Job) -> DockerChannel | None:
        """A ready container for ``job``, or None (then start a fresh one)."""
        if not self.fits(job):
            return None
        while True:
            try:
                channel = self.ready.get_nowait()
            except queue.Empty:
                self.wanted.set()
                return None
            self.wanted.set()
            if not channel.alive:
                channel.kill()
                continue
            try:
                mem = f"{job.limits.memory_mb}m"
                self.api.update_container(channel.cid, mem_limit=mem, memswap_limit=mem)
                if job.label:
                    self.api.rename(channel.cid, _name(job.label))
            except ENGINE_ERRORS as exc:
                log.warning("pooled sandbox %s refused its limits: %s", channel.cid[:12], exc)
                channel.kill()
                continue
            if not channel.alive:  # died while we updated it
                channel.kill()
                continue
            return channel

    def _enough(self) -> bool:
        return self.ready.qsize() >= self.size

    def available(self) -> int:
        return self.ready.qsize()

    # -- filling -------------------------------------------------------------------------

    def _fill(self) -> None:
        last_reap = 0.0
        while not self.stopping.is_set():
            self._drop_dead()
            with contextlib.suppress(*ENGINE_ERRORS):
                retry_removals(self.api)
            if time.monotonic() - last_reap > REAP_EVERY_SECONDS:
                with contextlib.suppress(*ENGINE_ERRORS):
                    reap(self.api, self.settings.docker_reap_after_seconds)
                last_reap = time.monotonic()
            if self._enough():
                self.wanted.wait(timeout=1.0)
                self.wanted.clear()
                continue
            channel = self._start_one()
            if channel is None:
                self.failures += 1
                self.stopping.wait(min(2.0 ** min(self.failures, 5), 30.0))
                continue
            self.failures = 0
            if self.stopping.is_set():
                channel.kill()
                break
            self.started += 1
            self.ready.put(channel)

    def _start_one(self) -> Any:
        spec = ContainerSpec(memory_mb=self.settings.pool_memory_mb,
                             fsize_bytes=self.settings.pool_output_bytes)
        cid = None
        try:
            cid = create(self.api, self.settings, spec)
            channel = DockerChannel(self.api, cid, max_line(self.settings.result_bytes),
                                    self.settings.harness_stderr_bytes,
                                    self.settings.cgroup_root).start()
        except (*ENGINE_ERRORS, SandboxError) as exc:
            log.warning("could not start a pooled sandbox: %s", exc)
            if cid:
                remove(self.api, cid)
            return None
        line = channel.read_line(self.settings.startup_seconds)
        try:
            ready = EVENT.validate_json(line) if isinstance(line, bytes) else None
        except ValueError:
            ready = None
        if not isinstance(ready, ReadyEvent) or ready.harness_version != HARNESS_VERSION:
            log.warning("a pooled sandbox did not become ready: %r %s", line,
                        channel.diagnostics()[-500:])
            channel.kill()
            return None
        assert isinstance(line, bytes)
        channel.push_back(line)
        return channel

    def _drop_dead(self) -> None:
        with self.ready.mutex:  # in place: the queue keeps its order
            dead = [c for c in self.ready.queue if not c.alive]
            for channel in dead:
                self.ready.queue.remove(channel)
        for channel in dead:
            channel.kill()

    def close(self) -> None:
        self.stopping.set()
        self.wanted.set()
        self._thread.join(timeout=self.settings.startup_seconds + 5)
        while True:
            try:
                self.ready.get_nowait().kill()
            except queue.Empty:
                break
        retry_removals(self.api)


def _name(label: str) -> str:
    safe = "".join(c if c.isalnum() or c in "_.-" else "-" for c in label)[:100]
    return f"jaxjudge-{safe}-{int(time.time() * 1000) % 100000}"
