"""What a sandbox backend provides to the supervisor: a :class:`Channel` to one harness.

A backend (a child process, a container, a zygote's child) only has to send bytes in,
read capped lines out with a timeout, kill, and say how the run ended (:class:`ExitInfo`),
and read the kernel's counters of its processes (CPU time, memory-limit kills, CPU
waits). :class:`QueuedLines` is what every backend's channel shares: lines capped as they
stream in, a writer thread that never blocks the supervisor past its deadlines.
"""

from __future__ import annotations

import queue
import signal
import threading
from dataclasses import dataclass
from typing import Protocol as TypingProtocol

PROTOCOL_SLACK = 64 * 1024  # a result line's JSON around its encoded value


def max_line(result_bytes: int) -> int:
    """The longest protocol line a channel accepts for a given result limit."""
    return result_bytes + PROTOCOL_SLACK


class Eof:
    """The channel closed: the harness exited or was killed."""


class Overflow:
    """A line longer than the channel's cap arrived."""


class Timeout:
    """Nothing arrived in time."""


EOF, OVERFLOW, TIMEOUT = Eof(), Overflow(), Timeout()
LineResult = bytes | Eof | Overflow | Timeout


@dataclass(frozen=True)
class ExitInfo:
    code: int | None = None  # exit status, when it exited
    signal: int | None = None  # the signal that killed it, when one did
    oom_killed: bool = False  # the memory limit killed it (where the backend can tell)

    def describe(self) -> str:
        if self.oom_killed:
            return "it was killed for exceeding the memory limit"
        if self.signal is not None:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = f"signal {self.signal}"
            return f"the process was killed by {name}"
        if self.code is not None:
            return f"the process exited with status {self.code}"
        return "the process ended"


class QueuedLines:
    """What every channel shares. A reader thread puts lines (or EOF, OVERFLOW) into
    ``lines``; the supervisor takes them with a timeout. A line read ahead (the pool reads
    ``ready`` before the supervisor does) can be pushed back. What the supervisor sends
    goes through a writer thread, so that a harness that stops reading never blocks the
    supervisor past its deadlines (killing the channel unblocks the writer)."""

    max_line: int = 1 << 20

    def __init__(self) -> None:
        self.lines: queue.Queue[LineResult] = queue.Queue()
        self.pushed: list[bytes] = []
        self._outbox: queue.Queue[bytes | None] = queue.Queue()
        self._writer: threading.Thread | None = None
        self._partial = bytearray()

    def feed(self, chunk: bytes) -> bool:
        """Split what the harness wrote into lines, capped at ``max_line`` as they stream
        in (only new bytes are scanned for a newline: linear time). False once a line ran
        over the cap (OVERFLOW is queued: read no further)."""
        pending = self._partial
        scan = len(pending)
        pending += chunk
        start = 0
        while (newline := pending.find(b"\n", max(scan, start))) >= 0:
            line, start = bytes(pending[start : newline + 1]), newline + 1
            if len(line) > self.max_line:
                self.lines.put(OVERFLOW)
                return False
            self.lines.put(line)
        del pending[:start]
        if len(pending) > self.max_line:
            self.lines.put(OVERFLOW)
            return False
        return True

    def push_back(self, line: bytes) -> None:
        self.pushed.append(line)

    def read_line(self, timeout: float) -> LineResult:
        if self.pushed:
            return self.pushed.pop()
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return TIMEOUT

    def send(self, data: bytes) -> None:
        self._post(data)

    def close_input(self) -> None:
        self._post(None)

    def _post(self, item: bytes | None) -> None:
        if self._writer is None:
            self._writer = threading.Thread(target=self._pump, name="jaxjudge-send",
                                            daemon=True)
            self._writer.start()
        self._outbox.put(item)

    def _pump(self) -> None:
        while True:
            item = self._outbox.get()
            try:
                if item is None:
                    self._end_input()
                    return
                self._write_input(item)
            except (OSError, ValueError):
                return  # the harness is gone: the reader sees end of file

    def _write_input(self, data: bytes) -> None:
        raise NotImplementedError

    def _end_input(self) -> None:
        raise NotImplementedError

    def admit(self) -> None:
        return None

    def oom_kills(self) -> int:
        return 0

    def run_delays(self) -> dict[int, int] | None:
        return None


class Channel(TypingProtocol):
    def send(self, data: bytes) -> None:
        """Queue ``data`` for the harness's standard input; never blocks."""

    def close_input(self) -> None:
        """End of input: the harness reads end of file once what was sent is read."""

    def read_line(self, timeout: float) -> LineResult: ...
    def kill(self) -> None: ...
    def exit_info(self) -> ExitInfo: ...
    def diagnostics(self) -> str: ...

    def admit(self) -> None:
        """The harness is ready and no submission code has run yet: what must be done
        before it does (a zygote's child moved into control groups of its own). Raises
        :class:`~judge.errors.SandboxError` when that cannot be done."""

    def cpu_seconds(self) -> float:
        """The CPU time the sandbox's processes have used so far, all their threads and
        descendants included, as counted where the submission cannot reach (the
        kernel's control group, or the host's /proc). Never decreases."""
        ...

    def oom_kills(self) -> int:
        """How many of the sandbox's processes its memory limit has killed so far, as the
        kernel counts them (0 where the backend has no such limit)."""
        ...

    def run_delays(self) -> dict[int, int] | None:
        """Per thread of the sandbox: nanoseconds it spent runnable but waiting for a CPU
        (the kernel's ``schedstat``), or None where this judge cannot read them."""
        ...
