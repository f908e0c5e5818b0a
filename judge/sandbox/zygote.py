"""The ``zygote`` sandbox: long-lived hardened containers that fork one isolated child per
submission (``judge.harness.zygote`` is what runs inside; docs/security.md states the
boundary).

A submission no longer pays a container start and the jax and flax imports: a zygote
container has imported them once, and each child only brings the devices up (tens of
milliseconds). Isolation between submissions is the child's fresh namespaces, tmpfs and
address space instead of a fresh container; the container keeps every hardening a fresh
one has (``judge.sandbox.engine.create``) and adds only the zygote's seccomp rules
(``judge.sandbox.seccomp``). One container and its frames are
``judge.sandbox.zygote_container``'s; one child's channel and accounting,
``judge.sandbox.zygote_child``'s.

Each child is accounted where it cannot reach (``judge.sandbox.cgroups``): where this
judge may make control groups below its container's (``zygote_accounting``), the child
is moved into groups of its own once it is ready and before any submission code runs:
its own memory limit (so the memory limit kills the child's processes, never the
zygote), CPU counter and process limit, removed after it. Elsewhere it is accounted in
its container's groups (one child runs at a time), and a zygote that died while a child
ran, when the engine says the container ran out of memory, is that child's memory limit.

Each judge process keeps ``zygote_count`` containers (:class:`ZygotePool`); a container
serves one child at a time, and is removed after ``zygote_children`` children or after any
run that did not end cleanly: a child that did not exit by itself with status 0 (killed at
a deadline the supervisor enforced, killed for memory, crashed), a harness that broke the
protocol or was tampered with, a frame out of place. Jobs that need more memory
or output than a zygote container offers get a fresh container (the ``docker`` backend).
"""

from __future__ import annotations

import logging
import queue
import threading
import time

from docker.api import APIClient

from judge.errors import SandboxError, SandboxUnavailable
from judge.harness import HARNESS_VERSION
from judge.harness.keeper import KEEPER_FAILED
from judge.sandbox import seccomp
from judge.sandbox.docker import DockerSandbox
from judge.sandbox.engine import ENGINE_ERRORS, ContainerSpec, create, ended_abnormally, remove
from judge.sandbox.pool import WarmPool
from judge.sandbox.protocol import Job, RunOutcome
from judge.sandbox.supervisor import supervise
from judge.sandbox.zygote_container import ZygoteContainer
from judge.settings import Settings

log = logging.getLogger(__name__)


class ZygotePool(WarmPool):
    """Keeps ``zygote_count`` zygote containers, idle or serving; hands out the idle one
    used last (the others stand by)."""

    ready_queue = queue.LifoQueue

    def __init__(self, api: APIClient, settings: Settings, profile: str) -> None:
        self.profile = profile
        self.last_failure = ""  # why the last start failed, for the caller's error
        self.busy = 0
        self._busy_lock = threading.Lock()
        super().__init__(api, settings, size=settings.zygote_count)

    def _enough(self) -> bool:
        return self.ready.qsize() + self.busy >= self.size

    def take(self, timeout: float) -> ZygoteContainer | None:
        """An idle zygote, waiting up to ``timeout`` for one to be ready."""
        deadline = time.monotonic() + timeout
        while True:
            self.wanted.set()
            try:
                zygote = self.ready.get(timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                return None
            if zygote.alive:
                with self._busy_lock:
                    self.busy += 1
                return zygote
            zygote.kill()

    def give_back(self, zygote: ZygoteContainer, reuse: bool) -> None:
        with self._busy_lock:
            self.busy -= 1
        if reuse and zygote.alive and zygote.served < self.settings.zygote_children:
            self.ready.put(zygote)
        else:
            zygote.kill()
        self.wanted.set()

    def _start_one(self) -> ZygoteContainer | None:
        spec = ContainerSpec(memory_mb=self.settings.pool_memory_mb,
                             fsize_bytes=self.settings.pool_output_bytes,
                             zygote=True, seccomp=self.profile)
        cid = None
        try:
            cid = create(self.api, self.settings, spec)
            zygote = ZygoteContainer(self.api, self.settings, cid).start()
        except (*ENGINE_ERRORS, SandboxError, OSError) as exc:
            log.warning("could not start a zygote: %s", exc)
            self.last_failure = str(exc)
            if cid:
                remove(self.api, cid)
            return None
        zygote.ready.wait(self.settings.startup_seconds)
        if not zygote.alive or zygote.info.get("harness_version") != HARNESS_VERSION:
            log.warning("a zygote did not become ready: %r", zygote.info)
            zygote.kill()
            return None
        return zygote


def _anomalous(outcome: RunOutcome) -> bool:
    """A run after which the container is not used again, whatever the child's exit:
    the harness never reached the end of its protocol, the memory limit struck, the
    harness died, or the submission tampered with it. (A time or output limit the harness
    reported itself, followed by a clean exit, is a verdict like any other; one the
    supervisor had to enforce leaves a child that did not exit cleanly.)"""
    if outcome.status not in ("completed", "compile_error"):
        return True
    return any(t.status in ("memory", "crashed", "interfered") for t in outcome.tests)


class ZygoteSandbox(DockerSandbox):
    name = "zygote"
    isolated = True

    def __init__(self, settings: Settings) -> None:
        profile = seccomp.load(settings.docker_seccomp_profile)
        super().__init__(settings.model_copy(update={"pool_size": 0}))
        self.settings = settings
        self.zygotes = ZygotePool(self.api, settings, profile)

    def run(self, job: Job) -> RunOutcome:
        if not self.zygotes.fits(job):
            return super().run(job)  # a fresh container, with the job's own limits
        zygote = self.zygotes.take(self.settings.startup_seconds)
        if zygote is None:
            why = f" (the last start failed: {self.zygotes.last_failure})" if (
                self.zygotes.last_failure) else ""
            raise SandboxUnavailable("no zygote became ready within "
                                     f"{self.settings.startup_seconds:g} s{why}")
        try:
            channel = zygote.spawn(job)
        except (*ENGINE_ERRORS, OSError) as exc:
            # The container refused the job's limits, or its stream is gone: a fresh
            # container serves this job, and the zygote is replaced.
            log.warning("zygote %s could not take a job: %s", zygote.cid[:12], exc)
            self.zygotes.give_back(zygote, reuse=False)
            return super().run(job)
        reuse = False
        try:
            outcome = supervise(channel, job, startup_seconds=self.settings.startup_seconds,
                                grace=self.settings.grace_seconds,
                                transfer_allowance=self.settings.transfer_allowance_seconds)
            reuse = not _anomalous(outcome) and channel.ended_cleanly()
        finally:
            self.zygotes.give_back(zygote, reuse)
        if outcome.status == "internal_error" and channel.status == KEEPER_FAILED:
            # No submission code ran: the child could not be isolated. Fail closed.
            raise SandboxUnavailable(
                f"the zygote could not isolate a child: {channel.diagnostics()[-500:]}")
        if ended_abnormally(outcome) and not self._engine_answers():
            raise SandboxUnavailable("the Docker engine went away during the run")
        return outcome

    def warm(self) -> dict[str, int]:
        return {"size": self.zygotes.size, "ready": self.zygotes.available(),
                "started": self.zygotes.started}

    def close(self) -> None:
        self.zygotes.close()
        super().close()


__all__ = ["ZygoteSandbox"]
