"""Drives one harness run over a ``Channel`` and enforces time and size from outside.

A backend (a child process, a container) only has to provide a :class:`Channel`: send
bytes in, read capped lines out with a timeout, kill, and say how the run ended. The
supervisor holds the deadlines and the job: it sends the code first, then each test's
inputs only when that test starts (samples first), so no hidden input is ever in the
sandbox before its own test. It trusts no line: each is size-capped by the channel and
parsed and validated in linear time against ``judge.sandbox.protocol`` (pydantic's JSON
parser: nesting capped, ``NaN`` refused, every number bounded). A line that breaks the
protocol before the submission was loaded is the judge's fault (internal error); after,
only the submission can have written it, so it is the submission's: the run stops and the
test is marked ``interfered`` (a runtime error). For a hidden test the supervisor keeps
only the status, the value and its own clock: no text the submission wrote.
"""

from __future__ import annotations

import queue
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any
from typing import Protocol as TypingProtocol

from pydantic import TypeAdapter, ValidationError

from judge.harness import HARNESS_VERSION
from judge.sandbox.protocol import (
    CompileErrorEvent,
    Event,
    InterferedEvent,
    Job,
    JobTest,
    LoadedEvent,
    LoadMessage,
    LoadTimeoutEvent,
    ReadyEvent,
    ResultEvent,
    RunOutcome,
    StartEvent,
    TestMessage,
    TestRun,
    TestStatus,
)

EVENT: TypeAdapter[Any] = TypeAdapter(Event)
PROTOCOL_SLACK = 64 * 1024  # a result line's JSON around its encoded value
INTERFERED = "the submission interfered with the judge"


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


class Channel(TypingProtocol):
    def send(self, data: bytes) -> None:
        """Queue ``data`` for the harness's standard input; never blocks."""

    def close_input(self) -> None:
        """End of input: the harness reads end of file once what was sent is read."""

    def read_line(self, timeout: float) -> LineResult: ...
    def kill(self) -> None: ...
    def exit_info(self) -> ExitInfo: ...
    def diagnostics(self) -> str: ...


class _Violation(Exception):
    pass


def _parse(line: bytes) -> object:
    """One protocol line as an event, in time linear in its length."""
    try:
        return EVENT.validate_json(line)
    except ValidationError as exc:
        kind = exc.errors(include_url=False, include_input=False)[0]["type"]
        raise _Violation(f"a malformed line ({kind})") from None


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
        job = self.job
        self.send(LoadMessage(code=job.code, entry_point=job.entry_point, limits=job.limits,
                              tests=len(job.tests)))
        return self.load()

    def send(self, message: LoadMessage | TestMessage) -> None:
        self.channel.send(message.model_dump_json().encode() + b"\n")

    def outcome(self, **fields: Any) -> RunOutcome:
        return RunOutcome(**{**self.timing, **fields})

    def load(self) -> RunOutcome:
        t0 = time.monotonic()
        try:
            event = self.next_event(t0 + self.limits.test_seconds + self.grace)
        except _Violation:
            event = InterferedEvent(event="interfered")
        load_ms = (time.monotonic() - t0) * 1000
        if isinstance(event, LoadedEvent):
            return self.tests(load_ms=event.time_ms, load_stdout=event.stdout,
                              load_stderr=event.stderr)
        self.channel.kill()
        if isinstance(event, CompileErrorEvent):
            return self.outcome(status="compile_error", error=event.error,
                                tests=self.not_run(0, "not run: the submission could not be "
                                                   "loaded", None),
                                load_stdout=event.stdout, load_stderr=event.stderr,
                                load_ms=load_ms)
        if isinstance(event, LoadTimeoutEvent) or event is TIMEOUT:
            stdout = event.stdout if isinstance(event, LoadTimeoutEvent) else ""
            return self.outcome(
                status="load_timeout", load_ms=load_ms, load_stdout=stdout,
                tests=self.not_run(0, "not run: the submission could not be loaded", None),
                message=f"loading the submission took over {self.limits.test_seconds:g} s")
        if event is EOF or event is OVERFLOW:
            why = (self.channel.exit_info().describe() if event is EOF
                   else "it wrote too much on the judge's channel")
            return self.outcome(
                status="load_crashed", load_ms=load_ms,
                tests=self.not_run(0, "not run: the submission could not be loaded", None),
                message=f"the submission ended the harness while loading: {why}")
        # A line out of order, malformed or the harness's own alarm: the submission wrote
        # on the judge's channel, or rewrote the harness.
        return self.outcome(status="interfered", load_ms=load_ms, message=INTERFERED,
                            tests=self.not_run(0, f"not run: {INTERFERED}", "interfered"))

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
            run = self.one_test(test)
            runs.append(run)
            if self.stopped:
                runs += self.not_run(position + 1, "not run: an earlier test ended the run",
                                     run.status)
                break
        self.channel.close_input()
        tests_ms = (time.monotonic() - t0) * 1000
        return self.outcome(status="completed", tests=runs, tests_ms=tests_ms,
                            harness_stderr=self.channel.diagnostics(), **load)

    def stop(self, index: int, status: TestStatus, message: str, time_ms: float = 0.0) -> TestRun:
        self.stopped = True
        self.channel.kill()
        return TestRun(index=index, status=status, message=message, time_ms=time_ms)

    def total_passed(self) -> bool:
        return time.monotonic() >= self.total_deadline

    def one_test(self, test: JobTest) -> TestRun:
        index = test.index
        limit = self.limits.test_seconds
        per_test = limit + self.grace
        self.send(TestMessage(index=index, args=test.args, kinds=test.kinds))
        try:
            start = self.next_event(min(time.monotonic() + per_test, self.total_deadline))
            if not isinstance(start, StartEvent) or start.index != index:
                return self.unexpected(index, start, 0.0)
            t0 = time.monotonic()
            event = self.next_event(min(t0 + per_test, self.total_deadline))
            elapsed = (time.monotonic() - t0) * 1000
        except _Violation:
            return self.stop(index, "interfered", INTERFERED)
        if isinstance(event, ResultEvent) and event.index == index:
            return self.result(test, event, elapsed)
        if event is TIMEOUT:
            if self.total_passed():
                return self.stop(index, "timeout",
                                 f"the total time limit of {self.limits.total_seconds:g} s was reached",
                                 elapsed)
            return self.stop(index, "timeout", f"the test ran over {limit:g} s", elapsed)
        return self.unexpected(index, event, elapsed)

    def result(self, test: JobTest, event: ResultEvent, elapsed: float) -> TestRun:
        """The harness's result, timed by our clock; a hidden test's texts dropped."""
        limit = self.limits.test_seconds
        fields = event.model_dump(exclude={"event"})
        if test.hidden:  # only what the judge needs: no output, no error text
            fields.update(stdout="", stderr="", error=None, message="")
        # The harness's clock is the submission's to tamper with: the time reported is
        # ours (start line to result line), and either clock over the limit is a timeout.
        run = TestRun(**{**fields, "time_ms": elapsed})
        over = max(event.time_ms, elapsed - self.transfer_allowance * 1000) > limit * 1000
        if run.status == "ok" and over:
            run = run.model_copy(update={"status": "timeout", "value": None,
                                         "message": f"the test ran over {limit:g} s"})
        if run.status in ("output_limit", "timeout"):
            self.stopped = True  # the harness stops after these; so do we
        return run

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
        # The harness's own report of tampering, or a line it would never write here.
        return self.stop(index, "interfered", INTERFERED, elapsed)
