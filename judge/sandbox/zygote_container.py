"""One container running the zygote (``judge.harness.zygote`` is what runs inside), and
the child it serves now, if any.

The container is made by :func:`judge.sandbox.engine.create` with every hardening a fresh
one has, plus the zygote's seccomp rules. On start it finds its control group and whether
its children may have groups of their own (``zygote_accounting``). Frames come out of its
attach stream (``READY`` once, then ``DATA``, ``DIAG`` and ``EXIT`` for the child); one
out of place, or one too large, and the container is not used again. Frames go in under a
lock: ``SPAWN`` for a child, the child's input, and ``DONE`` to fence it off.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from docker.api import APIClient

from judge.errors import SandboxUnavailable
from judge.harness.frames import CHUNK, DATA, DIAG, DONE, EXIT, HEADER, READY, SPAWN
from judge.sandbox import cgroups
from judge.sandbox.channel import max_line
from judge.sandbox.engine import ENGINE_ERRORS, Attachment, container_cgroup, remove
from judge.sandbox.protocol import Job
from judge.sandbox.zygote_child import ChildChannel
from judge.settings import Settings

log = logging.getLogger(__name__)
MAX_CONTROL = 64 << 10  # a READY or EXIT frame (the zygote sends data in CHUNK pieces)


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
