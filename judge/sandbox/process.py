"""The ``process`` sandbox: the harness as a child process with resource limits.

Meant for trusted code: problem authors building and verifying their packages, and
students checking their own work locally. It limits resources but does not isolate: the
child runs as the calling user and can read what that user can read (the problem package,
hidden tests on disk) and reach the network. Untrusted submissions go to the ``docker``
backend.

What it does, per run:

- a fresh private working directory (mode 0700), removed afterwards;
- an empty environment (the harness sets ``XLA_FLAGS`` for 8 CPU devices itself), and
  ``python -I -B`` so neither ``PYTHONPATH`` nor the user's site-packages nor the working
  directory can inject modules;
- a new session and process group, killed as a whole (SIGKILL) when the run ends, times out
  or breaks the protocol;
- limits set with ``prlimit`` right after the start, before the job (and so the
  submission) is sent: address space (the problem's memory plus
  ``process_address_space_slack_mb``, as JAX maps about 1.6 GiB of virtual memory at
  start-up), CPU seconds (the total time limit plus start-up, times the core count: XLA
  runs threads), processes (``process_max_processes``; ignored for root), file size (the
  output limit plus one byte), open files, and no core dumps;
- CPU time read by the supervisor from ``/proc`` (:class:`Session`: every process of
  the harness's session, reaped children included), and the wall-clock safety
  net, both enforced outside the child. A process that leaves the session (``setsid``)
  or whose parent ignores ``SIGCHLD`` escapes this count: the backend is for trusted
  code; the container backends count CPU time in the kernel's control group, which
  nothing in it can leave.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

from judge.harness.startup import COMPILE_FLAGS_ENV
from judge.sandbox.base import Sandbox
from judge.sandbox.cgroups import thread_delays
from judge.sandbox.channel import EOF, OVERFLOW, ExitInfo, QueuedLines, max_line
from judge.sandbox.protocol import Job, RunOutcome
from judge.sandbox.supervisor import supervise

_TICKS = os.sysconf("SC_CLK_TCK")
RESCAN_SECONDS = 0.5  # how often /proc is searched for the session's new processes


def _stat(pid: int, proc: str) -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` after the process's name, or None when it is gone."""
    try:
        with open(f"{proc}/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rindex(b")") + 2:].split()


class Session:
    """The CPU time and CPU waits of every process in one session (the harness's: it was
    started in a session of its own), read from ``/proc``.

    Searching all of ``/proc`` costs about a millisecond, so it is done at most every
    ``RESCAN_SECONDS``; in between, only the processes already found are read. Nothing is
    lost meanwhile: a process's CPU time stays in ``/proc`` until it is reaped, and then
    moves into its parent's (``cutime``, ``cstime``), which is counted."""

    def __init__(self, sid: int, proc: str = "/proc") -> None:
        self.sid = sid
        self.proc = proc
        self.pids = {sid}
        self.searched = float("-inf")

    def _members(self) -> dict[int, list[bytes]]:
        now = time.monotonic()
        if now - self.searched >= RESCAN_SECONDS:
            self.searched = now
            self.pids |= {int(n) for n in os.listdir(self.proc) if n.isdigit()}
        members = {}
        for pid in list(self.pids):
            fields = _stat(pid, self.proc)
            # (after the name: state ppid pgrp session ...; a reused id is someone else's)
            if fields is None or int(fields[3]) != self.sid:
                self.pids.discard(pid)
                continue
            members[pid] = fields
        return members

    def cpu_seconds(self) -> float:
        """User and system time (all threads, and the children each has reaped)."""
        ticks = sum(sum(int(x) for x in fields[11:15]) for fields in self._members().values())
        return ticks / _TICKS

    def run_delays(self) -> dict[int, int]:
        """Per thread: nanoseconds spent waiting for a CPU."""
        tids = []
        for pid in self._members():
            with contextlib.suppress(OSError):
                tids += os.listdir(f"{self.proc}/{pid}/task")  # (/proc/TID is the thread)
        return thread_delays(tids, Path(self.proc))


class ProcessChannel(QueuedLines):
    def __init__(self, proc: subprocess.Popen[bytes], max_line: int, max_stderr: int) -> None:
        super().__init__()
        self.proc = proc
        self.max_line = max_line
        self.stderr = bytearray()
        self.max_stderr = max_stderr
        self.session = Session(proc.pid)  # its own (start_new_session)
        self._killed = False
        assert proc.stdout is not None and proc.stderr is not None
        threading.Thread(target=self._read_lines, args=(proc.stdout,), daemon=True).start()
        self._stderr_reader = threading.Thread(
            target=self._drain, args=(proc.stderr,), daemon=True
        )
        self._stderr_reader.start()

    def _read_lines(self, stream: IO[bytes]) -> None:
        try:
            while True:
                line = stream.readline(self.max_line + 1)
                if not line:
                    break
                if len(line) > self.max_line or not line.endswith(b"\n"):
                    self.lines.put(OVERFLOW if len(line) > self.max_line else EOF)
                    return
                self.lines.put(line)
        except (OSError, ValueError):
            pass
        self.lines.put(EOF)

    def _drain(self, stream: IO[bytes]) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := stream.read(65536):
                room = self.max_stderr - len(self.stderr)
                if room > 0:
                    self.stderr += chunk[:room]

    def _write_input(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def _end_input(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def kill(self) -> None:
        if self._killed:
            return
        self._killed = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError, ValueError):
                stream.close()  # type: ignore[union-attr]

    def exit_info(self) -> ExitInfo:
        """How the harness ended; waits a moment for it to exit on its own first."""
        if not self._killed:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=1.0)
            self.kill()
        code = self.proc.returncode
        if code is not None and code < 0:
            return ExitInfo(signal=-code)
        return ExitInfo(code=code)

    def diagnostics(self) -> str:
        self._stderr_reader.join(timeout=0.5)
        return bytes(self.stderr).decode("utf-8", "replace")

    def cpu_seconds(self) -> float:
        return self.session.cpu_seconds()

    def run_delays(self) -> dict[int, int] | None:
        return self.session.run_delays()


def _rmtree(path: str) -> None:
    def unlock(func: object, target: str, exc: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(target), 0o700)
            os.chmod(target, 0o700)
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target, ignore_errors=True)
            else:
                os.unlink(target)

    shutil.rmtree(path, onerror=unlock)


class ProcessSandbox(Sandbox):
    name = "process"
    isolated = False

    def limits_for(self, job: Job) -> dict[int, int]:
        lim = job.limits
        cpus = os.cpu_count() or 1
        cpu_seconds = int((lim.total_seconds + self.settings.startup_seconds + 10) * cpus)
        address = (lim.memory_mb + self.settings.process_address_space_slack_mb) << 20
        return {
            resource.RLIMIT_AS: address,
            resource.RLIMIT_CPU: cpu_seconds,
            resource.RLIMIT_NPROC: self.settings.process_max_processes,
            resource.RLIMIT_FSIZE: lim.output_bytes + 1,
            resource.RLIMIT_NOFILE: self.settings.process_open_files,
            resource.RLIMIT_CORE: 0,
        }

    def run(self, job: Job) -> RunOutcome:
        workdir = tempfile.mkdtemp(prefix="jaxjudge-")
        channel: ProcessChannel | None = None
        try:
            proc = subprocess.Popen(
                [self.settings.python, "-I", "-B", "-X", "utf8", "-m", "judge.harness"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=workdir,
                env=({COMPILE_FLAGS_ENV: self.settings.xla_flags}
                     if self.settings.xla_flags else {}),
                start_new_session=True,
            )
            channel = ProcessChannel(
                proc,
                max_line=max_line(job.limits.result_bytes),
                max_stderr=self.settings.harness_stderr_bytes,
            )
            for which, value in self.limits_for(job).items():
                soft_hard = (value, value + 5) if which == resource.RLIMIT_CPU else (value, value)
                try:
                    resource.prlimit(proc.pid, which, soft_hard)
                except ValueError:  # above our own hard limit: keep the lower one
                    hard = resource.getrlimit(which)[1]
                    resource.prlimit(proc.pid, which, (min(value, hard), hard))
            return supervise(
                channel,
                job,
                startup_seconds=self.settings.startup_seconds,
                grace=self.settings.grace_seconds,
                transfer_allowance=self.settings.transfer_allowance_seconds,
            )
        except OSError as exc:
            return RunOutcome(status="internal_error", message=f"could not start the harness: {exc}")
        finally:
            if channel is not None:
                channel.kill()
            _rmtree(workdir)
