"""Drives one harness run over a ``Channel`` and enforces time and size from outside.

A backend (a child process, a container) only has to provide a :class:`Channel`: send
bytes in, read capped lines out with a timeout, kill, and say how the run ended. The
supervisor holds the deadlines. It trusts no line: each is size-capped by the channel,
parsed as JSON and validated against ``judge.sandbox.protocol``; a line that breaks the
protocol after the submission was loaded is the submission's doing (runtime error), one
that comes before it is the judge's (internal error).
"""

from __future__ import annotations

import json
import queue
import re
import signal
import time
from dataclasses import dataclass
from typing import Any
from typing import Protocol as TypingProtocol

import numpy as np
from pydantic import TypeAdapter, ValidationError

from judge.harness import HARNESS_VERSION
from judge.sandbox.protocol import (
    CompileErrorEvent,
    Event,
    Job,
    LoadedEvent,
    LoadTimeoutEvent,
    ReadyEvent,
    ResultEvent,
    RunOutcome,
    StartEvent,
    TestRun,
    TestStatus,
)

EVENT = TypeAdapter(Event)
PROTOCOL_SLACK = 64 * 1024  # a result line's JSON around its encoded value


def max_line(result_bytes: int) -> int:
    """The longest protocol line a channel accepts for a given result limit."""
    return result_bytes + PROTOCOL_SLACK
# The codec nests values at most 32 deep; in JSON a list level costs 2 brackets and a dict
# level 3 ({"items": [[key, value]]}), plus the event and a sharding around them.
MAX_JSON_DEPTH = 3 * 32 + 16
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_OPEN = np.frombuffer(b"[{", dtype=np.uint8)
_CLOSE = np.frombuffer(b"]}", dtype=np.uint8)


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
    """What every channel shares: a reader thread puts lines (or EOF, OVERFLOW) into
    ``lines``; the supervisor takes them with a timeout. A line read ahead (the pool reads
    ``ready`` before the supervisor does) can be pushed back."""

    def __init__(self) -> None:
        self.lines: queue.Queue[LineResult] = queue.Queue()
        self.pushed: list[bytes] = []

    def push_back(self, line: bytes) -> None:
        self.pushed.append(line)

    def read_line(self, timeout: float) -> LineResult:
        if self.pushed:
            return self.pushed.pop()
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return TIMEOUT


class Channel(TypingProtocol):
    def send(self, data: bytes) -> None: ...
    def read_line(self, timeout: float) -> LineResult: ...
    def kill(self) -> None: ...
    def exit_info(self) -> ExitInfo: ...
    def diagnostics(self) -> str: ...


class _Violation(Exception):
    pass


def _depth_ok(text: bytes) -> bool:
    """Whether the JSON nests at most MAX_JSON_DEPTH deep, brackets in strings aside."""
    bare = np.frombuffer(_STRING.sub(b'""', text), dtype=np.uint8)
    steps = np.isin(bare, _OPEN).astype(np.int32) - np.isin(bare, _CLOSE).astype(np.int32)
    return not steps.size or int(np.cumsum(steps).max()) <= MAX_JSON_DEPTH


def _parse(line: bytes) -> object:
    if not _depth_ok(line):
        raise _Violation("a line nested too deeply")
    try:
        return EVENT.validate_python(json.loads(line))
    except (ValueError, ValidationError, RecursionError) as exc:
        raise _Violation(f"a malformed line ({type(exc).__name__})") from None


def _status_for_exit(info: ExitInfo) -> TestStatus:
    if info.oom_killed:
        return "memory"
    if info.signal == signal.SIGXCPU:
        return "timeout"
    if info.signal == signal.SIGXFSZ:
        return "output_limit"
    return "crashed"


def supervise(channel: Channel, job: Job, *, startup_seconds: float, grace: float,
              transfer_allowance: float = 0.25) -> RunOutcome:
    """Run ``job`` over ``channel``; always returns, always leaves the channel killed.

    ``transfer_allowance`` is the time between the harness's clock stopping and its result
    line arriving (encoding, transfer) that does not count against the test's limit."""
    try:
        return _Run(channel, job, startup_seconds, grace, transfer_allowance).run()
    finally:
        channel.kill()


class _Run:
    def __init__(self, channel: Channel, job: Job, startup_seconds: float, grace: float,
                 transfer_allowance: float) -> None:
        self.channel = channel
        self.transfer_allowance = transfer_allowance
        self.job = job
        self.startup_seconds = startup_seconds
        self.grace = grace
        self.limits = job.limits
        self.timing: dict[str, float] = {}
        self.total_deadline = float("inf")
        self.stopped = False  # a test ended the run: the rest are not run

    def next_event(self, deadline: float) -> object:
        remaining = deadline - time.monotonic()
        line = self.channel.read_line(max(remaining, 0.0)) if remaining > 0 else TIMEOUT
        if isinstance(line, bytes):
            return _parse(line)
        return line

    def internal(self, message: str) -> RunOutcome:
        self.channel.kill()
        return RunOutcome(status="internal_error", message=message,
                          harness_stderr=self.channel.diagnostics())

    def run(self) -> RunOutcome:
        started = time.monotonic()
        try:
            ready = self.next_event(started + self.startup_seconds)
        except _Violation as exc:
            return self.internal(f"the harness broke the protocol before loading: {exc}")
        if not isinstance(ready, ReadyEvent):
            if ready is EOF:
                why = f"it exited: {self.channel.exit_info().describe()}"
            elif ready is TIMEOUT:
                why = f"it sent nothing within {self.startup_seconds:g} s"
            else:
                why = "its first line was not 'ready'"
            return self.internal(f"the harness did not start ({why})")
        if ready.harness_version != HARNESS_VERSION:
            return self.internal(
                f"the harness is version {ready.harness_version}, the judge needs "
                f"{HARNESS_VERSION}: rebuild the sandbox"
            )
        waited = (time.monotonic() - started) * 1000
        imports = min(ready.import_ms, waited)  # 0 for a pooled harness, ready beforehand
        self.timing = {"startup_ms": waited - imports, "import_ms": imports}
        self.channel.send(self.job.model_dump_json(exclude={"label"}).encode())
        return self.load()

    def outcome(self, **fields: Any) -> RunOutcome:
        return RunOutcome(**{**self.timing, **fields})

    def load(self) -> RunOutcome:
        t0 = time.monotonic()
        try:
            event = self.next_event(t0 + self.limits.test_seconds + self.grace)
        except _Violation as exc:
            event = exc
        load_ms = (time.monotonic() - t0) * 1000
        not_run = self.not_run(0, "not run: the submission could not be loaded", None)
        if isinstance(event, LoadedEvent):
            return self.tests(load_ms=event.time_ms, load_stdout=event.stdout,
                              load_stderr=event.stderr)
        if isinstance(event, CompileErrorEvent):
            return self.outcome(status="compile_error", error=event.error, tests=not_run,
                                load_stdout=event.stdout, load_stderr=event.stderr,
                                load_ms=load_ms)
        if isinstance(event, LoadTimeoutEvent) or event is TIMEOUT:
            stdout = event.stdout if isinstance(event, LoadTimeoutEvent) else ""
            return self.outcome(
                status="load_timeout", tests=not_run, load_ms=load_ms, load_stdout=stdout,
                message=f"loading the submission took over {self.limits.test_seconds:g} s")
        self.channel.kill()
        if event is EOF:
            why = self.channel.exit_info().describe()
        elif event is OVERFLOW:
            why = "it wrote too much on the judge's channel"
        else:
            why = f"the judge's channel was corrupted ({event})"
        return self.outcome(status="load_crashed", tests=not_run, load_ms=load_ms,
                            message=f"the submission ended the harness while loading: {why}")

    def not_run(self, start: int, message: str, cause: TestStatus | None) -> list[TestRun]:
        return [
            TestRun(index=t.index, status="not_run", message=message, cause=cause)
            for t in self.job.tests[start:]
        ]

    def tests(self, **load: Any) -> RunOutcome:
        runs: list[TestRun] = []
        t0 = time.monotonic()
        self.total_deadline = t0 + self.limits.total_seconds + self.grace
        for position, test in enumerate(self.job.tests):
            run = self.one_test(test.index)
            runs.append(run)
            if self.stopped:
                runs += self.not_run(position + 1, "not run: an earlier test ended the run",
                                     run.status)
                break
        tests_ms = (time.monotonic() - t0) * 1000
        return self.outcome(status="completed", tests=runs, tests_ms=tests_ms,
                            harness_stderr=self.channel.diagnostics(), **load)

    def stop(self, index: int, status: TestStatus, message: str, time_ms: float = 0.0) -> TestRun:
        self.stopped = True
        self.channel.kill()
        return TestRun(index=index, status=status, message=message, time_ms=time_ms)

    def total_passed(self) -> bool:
        return time.monotonic() >= self.total_deadline

    def one_test(self, index: int) -> TestRun:
        limit = self.limits.test_seconds
        per_test = limit + self.grace
        try:
            start = self.next_event(min(time.monotonic() + per_test, self.total_deadline))
            if not isinstance(start, StartEvent) or start.index != index:
                return self.unexpected(index, start, 0.0)
            t0 = time.monotonic()
            event = self.next_event(min(t0 + per_test, self.total_deadline))
            elapsed = (time.monotonic() - t0) * 1000
        except _Violation as exc:
            return self.stop(index, "crashed", f"the judge's channel was corrupted: {exc}")
        if isinstance(event, ResultEvent) and event.index == index:
            # The harness's clock is the submission's to tamper with: the time reported is
            # ours (start line to result line), and either clock over the limit is a timeout.
            run = TestRun(**{**event.model_dump(exclude={"event"}), "time_ms": elapsed})
            over = max(event.time_ms, elapsed - self.transfer_allowance * 1000) > limit * 1000
            if run.status == "ok" and over:
                run = run.model_copy(update={"status": "timeout", "value": None,
                                             "message": f"the test ran over {limit:g} s"})
            if run.status in ("output_limit", "timeout"):
                self.stopped = True  # the harness stops after these; so do we
            return run
        if event is TIMEOUT:
            if self.total_passed():
                return self.stop(index, "timeout",
                                 f"the total time limit of {self.limits.total_seconds:g} s was reached",
                                 elapsed)
            return self.stop(index, "timeout", f"the test ran over {limit:g} s", elapsed)
        return self.unexpected(index, event, elapsed)

    def unexpected(self, index: int, event: object, elapsed: float) -> TestRun:
        if event is TIMEOUT:  # silence between two tests
            return self.stop(index, "timeout",
                             "the total time limit was reached" if self.total_passed() else
                             "the harness did not start the test in time", elapsed)
        if event is EOF:
            info = self.channel.exit_info()
            return self.stop(index, _status_for_exit(info), info.describe(), elapsed)
        if event is OVERFLOW:
            return self.stop(index, "output_limit",
                             "the return value or the judge's channel exceeded the size limit",
                             elapsed)
        return self.stop(index, "crashed",
                         f"the judge's channel was corrupted (unexpected {type(event).__name__})",
                         elapsed)
