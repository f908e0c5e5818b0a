"""The supervisor's channel to one child of a zygote (``judge.sandbox.zygote``), and the
child's accounting.

The child's protocol lines arrive in ``DATA`` frames, its diagnostics in ``DIAG``, its end
in ``EXIT`` (its container, :class:`~judge.sandbox.zygote_container.ZygoteContainer`,
reads the frames and hands them here). Where this judge may make control groups below its
container's, the child is moved into groups of its own once it is ready and before any
submission code runs (:meth:`ChildChannel.admit`): its own memory limit (so the memory
limit kills the child's processes, never the zygote), CPU counter and process limit,
removed after it. Elsewhere it is accounted in its container's groups (one child runs at
a time), and a zygote that died while a child ran, when the engine says the container ran
out of memory, is that child's memory limit.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import TYPE_CHECKING

from judge.errors import SandboxUnavailable
from judge.harness.frames import CLOSE, DATA
from judge.sandbox import cgroups
from judge.sandbox.channel import EOF, ExitInfo, QueuedLines

if TYPE_CHECKING:
    from judge.sandbox.zygote_container import ZygoteContainer

log = logging.getLogger(__name__)
EXIT_WAIT_SECONDS = 2.0  # from the last result to the child's exit, at most


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
