"""The ``zygote`` sandbox: long-lived hardened containers that fork one isolated child per
submission (``judge.harness.zygote`` is what runs inside; docs/security.md states the
boundary).

A submission no longer pays a container start and the jax and flax imports: a zygote
container has imported them once, and each child only brings the devices up (tens of
milliseconds). Isolation between submissions is the child's fresh namespaces, tmpfs and
address space instead of a fresh container; the container keeps every hardening a fresh
one has (``judge.sandbox.docker.create``) and adds only the zygote's seccomp rules
(``judge.sandbox.seccomp``).

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

import contextlib
import json
import logging
import queue
import threading
import time
from typing import Any

from docker.api import APIClient

from judge.errors import SandboxError, SandboxUnavailable
from judge.harness import HARNESS_VERSION
from judge.harness.zygote import (
    CHUNK,
    CLOSE,
    DATA,
    DIAG,
    DONE,
    EXIT,
    HEADER,
    KEEPER_FAILED,
    READY,
    SPAWN,
)
from judge.sandbox import cgroups, seccomp
from judge.sandbox.docker import (
    ENGINE_ERRORS,
    Attachment,
    ContainerSpec,
    DockerSandbox,
    _ended_abnormally,
    container_cgroup,
    create,
    remove,
)
from judge.sandbox.pool import WarmPool
from judge.sandbox.protocol import Job, RunOutcome
from judge.sandbox.supervisor import EOF, ExitInfo, QueuedLines, max_line, supervise
from judge.settings import Settings

log = logging.getLogger(__name__)
EXIT_WAIT_SECONDS = 2.0  # from the last result to the child's exit, at most
MAX_CONTROL = 64 << 10  # a READY or EXIT frame (the zygote sends data in CHUNK pieces)


class ChildChannel(QueuedLines):
    """The supervisor's channel to one child of a zygote: its protocol lines arrive in
    ``DATA`` frames, its diagnostics in ``DIAG``, its end in ``EXIT``."""

    def __init__(self, zygote: ZygoteContainer, max_line: int, max_stderr: int,
                 memory_mb: int) -> None:
        super().__init__()
        self.zygote = zygote
        self.max_line = max_line
        self.max_stderr = max_stderr
        self.memory_mb = memory_mb
        self.stderr = bytearray()
        self.ended = threading.Event()
        self.status: int | None = None
        self.exit_kills = 0  # by the memory limit, as the child's end reported them
        self.released = False
        self.overflowed = False
        self.group: cgroups.Cgroup | None = None  # the child's own, once admitted
        self._cpu = 0.0
        self._kills = 0
        self._own_kills = 0  # by the child's own group, kept once the group is gone
        self._group_lock = threading.Lock()

    # -- from the zygote ---------------------------------------------------------------

    def data(self, payload: bytes) -> None:
        if not self.overflowed and not self.feed(payload):
            self.overflowed = True

    def diag(self, payload: bytes) -> None:
        room = self.max_stderr - len(self.stderr)
        if room > 0:
            self.stderr += payload[:room]

    def exited(self, status: int | None, oom_kills: int) -> None:
        """The child ended (``status`` None: its zygote went away with it)."""
        oom_kills += self._release_group()
        if status is None and self.zygote.ran_out_of_memory():
            oom_kills += 1  # the memory limit took the zygote while this child ran
        self.status, self.exit_kills = status, oom_kills
        self.ended.set()
        self.lines.put(EOF)

    # -- accounting ----------------------------------------------------------------------

    def admit(self) -> None:
        """Before any submission code runs: where this judge may, the child is moved into
        control groups of its own (memory limit, CPU counter, process limit). Raises
        SandboxUnavailable when that fails: no code of the submission runs then."""
        zygote = self.zygote
        if not zygote.child_groups:
            return  # accounted in the container's groups (docs/security.md)
        try:
            pids = cgroups.processes_below(zygote.cgroup, zygote.depth)
            if not pids:
                raise SandboxUnavailable("the zygote's child is not in its container's group")
            if zygote.child_groups:
                group = cgroups.child_of(zygote.cgroup, self.memory_mb << 20,
                                         zygote.settings.docker_pids_limit)
                with self._group_lock:
                    self.group = group
                    self._cpu = 0.0
                for pid in pids:
                    group.add(pid)
        except OSError as exc:
            raise SandboxUnavailable(f"could not account the zygote's child: {exc}") from None

    def cpu_seconds(self) -> float:
        with self._group_lock:
            group = self.group if self.zygote.child_groups else self.zygote.cgroup
            if group is not None:
                with contextlib.suppress(OSError, ValueError):
                    self._cpu = group.cpu_ns() / 1e9
            return self._cpu

    def oom_kills(self) -> int:
        """Kills by the child's own memory limit and by its container's (one child runs
        at a time: whatever the container's limit killed meanwhile was the child's)."""
        with self._group_lock:
            with contextlib.suppress(OSError, ValueError):
                own = self.group.oom_kills() if self.group is not None else self._own_kills
                self._own_kills = own
                self._kills = own + self.zygote.cgroup.oom_kills()
            return self._kills

    def run_delays(self) -> dict[int, int] | None:
        with self._group_lock:
            group = self.group if self.zygote.child_groups else self.zygote.cgroup
        try:
            return group.run_delays() if group is not None else None
        except (OSError, KeyError):
            return None

    def _release_group(self) -> int:
        """Remove the child's own groups (it has ended): how many processes their memory
        limit killed."""
        with self._group_lock:
            group, self.group = self.group, None
            if group is None:
                return 0
            kills = self._own_kills = group.oom_kills()
        if not group.remove():
            log.warning("zygote %s: a child's control group could not be removed yet",
                        self.zygote.cid[:12])
        return kills

    # -- the supervisor's side ---------------------------------------------------------

    def _write_input(self, data: bytes) -> None:
        self.zygote.write(DATA, data, child=self)

    def _end_input(self) -> None:
        self.zygote.write(CLOSE, b"", child=self)

    def kill(self) -> None:
        """The supervisor is done with the child: nothing more goes in. Whether the child
        ended, and whether its container may serve again, the sandbox decides."""
        self.released = True

    def exit_info(self) -> ExitInfo:
        if not self.ended.wait(EXIT_WAIT_SECONDS):
            return ExitInfo()
        if self.exit_kills:
            return ExitInfo(code=self.status, oom_killed=True)
        if self.status is None:
            return ExitInfo()
        if self.status > 128:
            return ExitInfo(signal=self.status - 128)
        return ExitInfo(code=self.status)

    def ended_cleanly(self) -> bool:
        return (self.ended.wait(EXIT_WAIT_SECONDS) and self.status == 0
                and not self.exit_kills and not self.overflowed)

    def diagnostics(self) -> str:
        return bytes(self.stderr).decode("utf-8", "replace")


class ZygoteContainer:
    """One container running the zygote, and the child it serves now, if any."""

    def __init__(self, api: APIClient, settings: Settings, cid: str) -> None:
        self.api = api
        self.settings = settings
        self.cid = cid
        self.info: dict[str, Any] = {}
        self.ready = threading.Event()
        self.served = 0
        self.memory_mb = settings.pool_memory_mb
        self.child: ChildChannel | None = None
        self.cgroup = cgroups.Cgroup(0)  # the container's, found at start
        self.depth = 0  # PID namespaces of the container's own processes, from here
        self.child_groups = False  # whether each child gets control groups of its own
        self._pending = bytearray()
        self._lock = threading.Lock()
        self._removed = False
        self._stream = Attachment(api, cid, self._frames, self._diag, self._ended)

    def start(self) -> ZygoteContainer:
        """Start the container; find its control group and whether its children may have
        their own (SandboxError when the setting asks for them and they may not)."""
        self.api.start(self.cid)
        self._stream.start()
        root = self.settings.cgroup_root
        self.cgroup = container_cgroup(self.api, self.cid, root)
        wanted = self.settings.zygote_accounting
        if wanted == "container":  # as a judge that only reads the container's groups
            return self
        try:
            main = int(self.api.inspect_container(self.cid)["State"]["Pid"])
        except (*ENGINE_ERRORS, KeyError, ValueError) as exc:
            raise SandboxUnavailable(f"could not inspect zygote {self.cid[:12]}: {exc}") from None
        self.child_groups = cgroups.can_make_children(self.cgroup, main, root)
        if self.child_groups:
            self.depth = cgroups.namespace_depth(main)
        elif wanted == "children":
            raise SandboxUnavailable(
                "zygote_accounting is children, but this judge cannot make control groups "
                f"below {self.cgroup.dirs.get('memory', root)} (it needs cgroup v1, root, "
                "and the host's process ids)")
        return self

    def ran_out_of_memory(self) -> bool:
        """Whether the engine says the container's memory limit struck (asked when the
        zygote ended while a child ran)."""
        try:
            return bool(self.api.inspect_container(self.cid)["State"].get("OOMKilled"))
        except ENGINE_ERRORS:
            return False

    @property
    def alive(self) -> bool:
        return not self._stream.dead.is_set() and not self._removed

    # -- frames out of the zygote -------------------------------------------------------

    def _frames(self, chunk: bytes) -> bool:
        pending = self._pending
        pending += chunk
        at = 0
        while len(pending) - at >= HEADER.size:
            kind, size = HEADER.unpack_from(pending, at)
            if size > max(CHUNK, MAX_CONTROL):
                return self._broken(f"a frame of {size} bytes")
            if len(pending) - at < HEADER.size + size:
                break
            payload = bytes(pending[at + HEADER.size:at + HEADER.size + size])
            at += HEADER.size + size
            if not self._dispatch(kind, payload):
                return False
        del pending[:at]
        return True

    def _dispatch(self, kind: int, payload: bytes) -> bool:
        child = self.child
        if kind == READY and not self.ready.is_set():
            try:
                self.info = json.loads(payload)
            except ValueError:
                return self._broken("an unreadable ready frame")
            self.ready.set()
        elif kind == DATA and child is not None:
            child.data(payload)
        elif kind == DIAG and child is not None:
            child.diag(payload)
        elif kind == EXIT and child is not None:
            try:
                end = json.loads(payload)
                status, kills = int(end["status"]), int(end["oom_kills"])
            except (ValueError, KeyError, TypeError):
                return self._broken("an unreadable exit frame")
            self.child = None
            # Nothing more for this child, then the fence: its relay reads up to DONE and
            # no further, so the zygote's next read is the next SPAWN.
            self.write(DONE, b"", fence=child)
            child.exited(status, kills)
        else:
            return self._broken(f"a frame of kind {kind} out of place")
        return True

    def _broken(self, what: str) -> bool:
        log.warning("zygote %s sent %s; it is removed", self.cid[:12], what)
        return False  # stop reading: the stream ends, and the container is not used again

    def _diag(self, chunk: bytes) -> bool:
        child = self.child
        if child is not None:
            child.diag(chunk)
        return True

    def _ended(self) -> None:
        self.ready.set()  # nobody waits for a ready that cannot come
        child, self.child = self.child, None
        if child is not None:
            child.exited(None, 0)

    # -- into the zygote ----------------------------------------------------------------

    def write(self, kind: int, payload: bytes, child: ChildChannel | None = None,
              fence: ChildChannel | None = None) -> None:
        """One frame in. A child's frames are dropped once it is released or fenced;
        ``fence`` releases it and sends DONE, under the same lock."""
        with self._lock:
            if child is not None and child.released:
                return
            if fence is not None:
                fence.released = True
            self._stream.write(HEADER.pack(kind, len(payload)) + payload)

    def spawn(self, job: Job) -> ChildChannel:
        """A child for ``job``, then SPAWN. Its memory limit is its own group's (set when
        it is admitted), or else the container's, set to the job's here."""
        if not self.child_groups and job.limits.memory_mb != self.memory_mb:
            mem = f"{job.limits.memory_mb}m"
            self.api.update_container(self.cid, mem_limit=mem, memswap_limit=mem)
            self.memory_mb = job.limits.memory_mb
        child = ChildChannel(self, max_line(job.limits.result_bytes),
                             self.settings.harness_stderr_bytes, job.limits.memory_mb)
        self.child = child
        self.served += 1
        self.write(SPAWN, json.dumps({"tmpfs_mb": self.settings.docker_tmpfs_mb,
                                      "xla_flags": self.settings.xla_flags}).encode())
        return child

    def kill(self) -> None:
        if self._removed:
            return
        self._removed = True
        self._stream.close()
        remove(self.api, self.cid)


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
        if _ended_abnormally(outcome) and not self._engine_answers():
            raise SandboxUnavailable("the Docker engine went away during the run")
        return outcome

    def warm(self) -> dict[str, int]:
        return {"size": self.zygotes.size, "ready": self.zygotes.available(),
                "started": self.zygotes.started}

    def close(self) -> None:
        self.zygotes.close()
        super().close()


__all__ = ["ZygoteSandbox"]
