"""Drives one harness run over a ``Channel`` and enforces time and size from outside.

Time limits are on CPU time, measured where the submission cannot reach, with a
wall-clock limit as a safety net (as isolate's ``--time``/``--wall-time``, Judge0's
``cpu_time_limit``/``wall_time_limit`` and DMOJ do): the channel's
:meth:`Channel.cpu_seconds` is the CPU time of the sandbox's whole process tree (XLA's
threads and anything the submission started included) as the kernel counts it, read by
the trusted side; a test over ``test_seconds`` of it, or a run over ``total_seconds``,
is a time limit exceeded, whatever else the host is doing. The wall limits
(``test_wall_seconds``, ``total_wall_seconds``, a multiple of those) only catch a
submission that sleeps or waits.

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

from judge.errors import SandboxError
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


POLL_SECONDS = 0.25  # how often the CPU counter is read while a test runs, at most
MIN_POLL_SECONDS = 0.02


def supervise(channel: Channel, job: Job, *, startup_seconds: float, grace: float,
              transfer_allowance: float = 0.25) -> RunOutcome:
    """Run ``job`` over ``channel``; always returns, always leaves the channel killed.

    ``grace`` is how far past a limit (CPU or wall) the supervisor lets a run go before
    it kills it: the harness stops at the limit by itself and reports it, cleanly.
    ``transfer_allowance`` is the CPU time around the call that is the judge's own work
    in the sandbox (decoding the inputs, encoding the result) and does not count
    against the test's limit."""
    try:
        return _Run(channel, job, startup_seconds, grace, transfer_allowance).run()
    finally:
        channel.kill()


WATCH_AFTER_SECONDS = 0.25  # a phase this long by the clock: its CPU waits are read too
STARVED_CAP = 5.0  # the wall clock may run this many times the net before giving up


class _Clock:
    """The kernel's counters for one phase (loading, or one test), read from the channel:
    CPU time, processes killed by the memory limit, and, once the phase has run
    ``WATCH_AFTER_SECONDS``, how long the host kept it waiting for a CPU."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.last = channel.cpu_seconds()
        self.start = self.last
        self.kills = channel.oom_kills()
        self.began = time.monotonic()
        self.starved = 0.0  # seconds in which some thread waited for a CPU, counted once
        self._delays: dict[int, int] | None = None  # each thread's run delay, last seen
        self._sampled = 0.0

    def sample(self, now: float) -> None:
        """Read the threads' run delays (once the phase has run a while): of the time
        since the last read, as much as the thread that waited longest waited counts as
        starved (once, however many threads waited)."""
        if now - self.began < WATCH_AFTER_SECONDS:
            return
        delays = self.channel.run_delays()
        if delays is None:
            return
        if self._delays is not None:
            longest = max((delay - self._delays.get(tid, 0) for tid, delay in delays.items()),
                          default=0)
            self.starved += min(max(longest, 0) / 1e9, now - self._sampled)
            delays = {**self._delays, **delays}  # an ended thread keeps its last value
        self._delays, self._sampled = delays, now

    def awake(self, now: float) -> float:
        """Seconds of the phase in which the host did not keep it waiting for a CPU."""
        return now - self.began - self.starved

    def read(self) -> float:
        """CPU seconds used since the phase began (the counter never goes back)."""
        self.last = max(self.last, self.channel.cpu_seconds())
        return self.last - self.start

    def memory_struck(self) -> bool:
        """Whether the memory limit killed one of the sandbox's processes since the phase
        began (the harness itself may have lived on)."""
        return self.channel.oom_kills() > self.kills


class _Overrun(Exception):
    """A limit was passed while waiting: ``kind`` is ``cpu``, ``total``, ``wall`` or
    ``total_wall``."""

    def __init__(self, kind: str, cpu: float) -> None:
        super().__init__(kind)
        self.kind = kind
        self.cpu = cpu


class _Starved(Exception):
    """The wall clock ran ``STARVED_CAP`` times past the net while the host kept the
    sandbox waiting for a CPU, so the net was not reached: the machine's fault, not the
    submission's (no verdict; the caller tries again later)."""


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
        self.tests_began = 0.0
        self.cpu_spent = 0.0  # CPU seconds of the tests before the current one
        self.starved_before = 0.0  # seconds the host kept the tests before it waiting
        self.stopped = False  # a test ended the run: the rest are not run

    def next_event(self, deadline: float) -> object:
        remaining = deadline - time.monotonic()
        line = self.channel.read_line(max(remaining, 0.0)) if remaining > 0 else TIMEOUT
        if isinstance(line, bytes):
            return _parse(line)
        return line

    def await_event(self, clock: _Clock, cpu_limit: float, total: bool) -> object:
        """The next event, reading the kernel's counters while waiting. Raises
        :class:`_Overrun` once the phase's CPU time passes ``cpu_limit`` (or, for a test,
        the run's passes ``total_seconds``) by the grace, or its wall-clock net
        (``test_wall_seconds``, or ``total_wall_seconds`` for the tests together) by the
        grace in time the host did not keep it waiting for a CPU; :class:`_Starved` when
        the wall clock runs ``STARVED_CAP`` times the net first."""
        limits = self.limits
        total_left = limits.total_seconds - self.cpu_spent if total else float("inf")
        net, grace = limits.test_wall_seconds, self.grace
        while True:
            used = clock.read()
            if used > cpu_limit + grace:
                raise _Overrun("cpu", used)
            if used > total_left + grace:
                raise _Overrun("total", used)
            now = time.monotonic()
            clock.sample(now)
            real, awake = now - clock.began, clock.awake(now)
            left = [net + grace - awake, net * STARVED_CAP + grace - real]
            if total:
                run_real = now - self.tests_began
                run_awake = run_real - self.starved_before - clock.starved
                left += [limits.total_wall_seconds + grace - run_awake,
                         limits.total_wall_seconds * STARVED_CAP + grace - run_real]
                if left[2] <= 0:
                    raise _Overrun("total_wall", used)
                if left[3] <= 0:
                    raise _Starved(self.starved(clock, now))
            if left[0] <= 0:
                raise _Overrun("wall", used)
            if left[1] <= 0:
                raise _Starved(self.starved(clock, now))
            headroom = min(cpu_limit, total_left) + grace - used
            wait = min(*left, max(MIN_POLL_SECONDS, min(POLL_SECONDS, headroom / 2)))
            line = self.channel.read_line(max(wait, 0.001))
            if isinstance(line, bytes):
                return _parse(line)
            if line is not TIMEOUT:
                return line

    def starved(self, clock: _Clock, now: float) -> str:
        return (f"the machine was too busy: the sandbox waited for a CPU {clock.starved:.1f} "
                f"s of the {now - clock.began:.1f} s it ran (with {clock.read():.2f} s of CPU "
                "time), and the wall clock reached the judge's cap before the wall-clock "
                "limit; it is graded again later")

    def alarm_was_the_cap(self, clock: _Clock, cpu: float) -> None:
        """The harness stopped a call (or the loading) at its own wall-clock alarm, which
        goes off at the cap, with CPU time to spare: if the host kept the sandbox waiting
        so that the net was not reached, :class:`_Starved`. (An alarm that went off
        sooner, the submission's own doing, is a time limit.)"""
        now = time.monotonic()
        limits = self.limits
        if (cpu - self.transfer_allowance <= limits.test_seconds
                and now - clock.began >= limits.test_wall_seconds * STARVED_CAP
                and clock.awake(now) < limits.test_wall_seconds):
            raise _Starved(self.starved(clock, now))

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
        try:
            self.channel.admit()
        except SandboxError as exc:
            return self.internal(f"the sandbox could not be readied for the submission: {exc}")
        waited = (time.monotonic() - started) * 1000
        imports = min(ready.import_ms, waited)  # 0 for a pooled harness, ready beforehand
        self.timing = {"startup_ms": waited - imports, "import_ms": imports}
        job = self.job
        clock = _Clock(self.channel)  # from before the code goes in
        # The harness's own alarms go off past the limits (its process's clock and the
        # kernel's count of the group differ by some milliseconds): what decides a time
        # limit is this side's count, and a harness that stops a call lets it end cleanly.
        alarms = (job.limits.test_seconds + self.transfer_allowance,
                  job.limits.test_wall_seconds * STARVED_CAP)
        self.send(LoadMessage(code=job.code, entry_point=job.entry_point, limits=job.limits,
                              tests=len(job.tests), alarms=alarms, mode=job.mode))
        try:
            return self.load(clock)
        except _Starved as exc:
            return self.internal(str(exc))

    def send(self, message: LoadMessage | TestMessage) -> None:
        self.channel.send(message.model_dump_json().encode() + b"\n")

    def outcome(self, **fields: Any) -> RunOutcome:
        return RunOutcome(**{**self.timing, **fields})

    def load(self, clock: _Clock) -> RunOutcome:
        t0 = time.monotonic()
        limit = self.limits.test_seconds
        overrun = None
        try:
            event = self.await_event(clock, limit, total=False)
        except _Violation:
            event = InterferedEvent(event="interfered")
        except _Overrun as exc:
            event, overrun = TIMEOUT, exc
        load_ms = (time.monotonic() - t0) * 1000
        load_cpu_ms = clock.read() * 1000
        if isinstance(event, LoadTimeoutEvent):
            self.alarm_was_the_cap(clock, load_cpu_ms / 1000)
        info = self.channel.exit_info() if event is EOF else None
        if clock.memory_struck() or (info is not None and info.oom_killed):
            self.channel.kill()
            return self.outcome(
                status="load_memory", load_ms=load_ms, load_cpu_ms=load_cpu_ms,
                tests=self.not_run(0, "not run: the submission could not be loaded", None),
                message="the memory limit killed the submission's process while it loaded")
        if isinstance(event, LoadedEvent):
            if load_cpu_ms > (limit + self.transfer_allowance) * 1000:
                event = LoadTimeoutEvent(event="load_timeout", time_ms=event.time_ms,
                                         stdout=event.stdout, stderr=event.stderr)
            else:
                return self.tests(load_ms=event.time_ms, load_cpu_ms=load_cpu_ms,
                                  load_stdout=event.stdout, load_stderr=event.stderr)
        self.channel.kill()
        if isinstance(event, CompileErrorEvent):
            return self.outcome(status="compile_error", error=event.error,
                                tests=self.not_run(0, "not run: the submission could not be "
                                                   "loaded", None),
                                load_stdout=event.stdout, load_stderr=event.stderr,
                                load_ms=load_ms, load_cpu_ms=load_cpu_ms)
        if isinstance(event, LoadTimeoutEvent) or event is TIMEOUT:
            stdout = event.stdout if isinstance(event, LoadTimeoutEvent) else ""
            if overrun is not None and overrun.kind == "wall" or (
                    isinstance(event, LoadTimeoutEvent)
                    and load_cpu_ms <= (limit + self.transfer_allowance) * 1000):
                why = (f"loading the submission took over {self.limits.test_wall_seconds:g} s "
                       f"of wall-clock time (it slept or waited)")
            else:
                why = f"loading the submission took over {limit:g} s of CPU time"
            return self.outcome(
                status="load_timeout", load_ms=load_ms, load_cpu_ms=load_cpu_ms,
                load_stdout=stdout, message=why,
                tests=self.not_run(0, "not run: the submission could not be loaded", None))
        if event is EOF or event is OVERFLOW:
            why = (info.describe() if info is not None
                   else "it wrote too much on the judge's channel")
            return self.outcome(
                status="load_crashed", load_ms=load_ms, load_cpu_ms=load_cpu_ms,
                tests=self.not_run(0, "not run: the submission could not be loaded", None),
                message=f"the submission ended the harness while loading: {why}")
        # A line out of order, malformed or the harness's own alarm: the submission wrote
        # on the judge's channel, or rewrote the harness.
        return self.outcome(status="interfered", load_ms=load_ms, load_cpu_ms=load_cpu_ms,
                            message=INTERFERED,
                            tests=self.not_run(0, f"not run: {INTERFERED}", "interfered"))

    def not_run(self, start: int, message: str, cause: TestStatus | None) -> list[TestRun]:
        return [
            TestRun(index=t.index, status="not_run", message=message, cause=cause)
            for t in self.job.tests[start:]
        ]

    def tests(self, **load: Any) -> RunOutcome:
        runs: list[TestRun] = []
        t0 = self.tests_began = time.monotonic()
        for position, test in enumerate(self.job.tests):
            run = self.one_test(test)
            runs.append(run)
            self.cpu_spent += run.cpu_ms / 1000
            if self.stopped:
                runs += self.not_run(position + 1, "not run: an earlier test ended the run",
                                     run.status)
                break
        self.channel.close_input()
        tests_ms = (time.monotonic() - t0) * 1000
        return self.outcome(status="completed", tests=runs, tests_ms=tests_ms,
                            tests_cpu_ms=self.cpu_spent * 1000,
                            harness_stderr=self.channel.diagnostics(), **load)

    def stop(self, index: int, status: TestStatus, message: str, time_ms: float = 0.0,
             cpu_ms: float = 0.0) -> TestRun:
        self.stopped = True
        self.channel.kill()
        return TestRun(index=index, status=status, message=message, time_ms=time_ms,
                       cpu_ms=cpu_ms)

    def overrun(self, index: int, exc: _Overrun, elapsed: float) -> TestRun:
        limits = self.limits
        if exc.kind == "cpu":
            why = f"the test used over {limits.test_seconds:g} s of CPU time"
        elif exc.kind == "total":
            why = f"the total CPU time limit of {limits.total_seconds:g} s was reached"
        elif exc.kind == "total_wall":
            why = (f"the total wall-clock limit of {limits.total_wall_seconds:g} s was "
                   "reached (the submission slept or waited)")
        else:
            why = (f"the test ran over its wall-clock limit of {limits.test_wall_seconds:g} s "
                   f"with {exc.cpu:.2f} s of CPU time (it slept or waited)")
        return self.stop(index, "timeout", why, elapsed, exc.cpu * 1000)

    def one_test(self, test: JobTest) -> TestRun:
        index = test.index
        clock = _Clock(self.channel)
        self.send(TestMessage(index=index, args=test.args, kinds=test.kinds,
                              export=test.export, program=test.program))
        t0 = time.monotonic()
        try:
            return self.one_test_timed(test, clock, t0)
        finally:
            self.starved_before += clock.starved

    def one_test_timed(self, test: JobTest, clock: _Clock, t0: float) -> TestRun:
        index = test.index
        try:
            start = self.await_event(clock, self.limits.test_seconds, total=True)
            if not isinstance(start, StartEvent) or start.index != index:
                return self.unexpected(index, start, 0.0, clock.read())
            # The wall clock starts at the start line; the CPU clock ran from the moment
            # the input went in, while the harness idled: whatever the harness did after
            # reading it counts (the transfer allowance covers its decoding).
            t0 = time.monotonic()
            event = self.await_event(clock, self.limits.test_seconds, total=True)
            elapsed = (time.monotonic() - t0) * 1000
        except _Violation:
            return self.stop(index, "interfered", INTERFERED, cpu_ms=clock.read() * 1000)
        except _Overrun as exc:
            return self.overrun(index, exc, (time.monotonic() - t0) * 1000)
        if isinstance(event, ResultEvent) and event.index == index:
            run = self.result(test, event, elapsed, clock)
            if clock.memory_struck() and run.status != "memory":
                # The harness lived on, but the memory limit killed one of the processes
                # the call started: the call went over the limit all the same.
                run = run.model_copy(update={
                    "status": "memory", "value": None,
                    "message": "the memory limit killed one of the submission's processes"})
            return run
        return self.unexpected(index, event, elapsed, clock.read())

    def result(self, test: JobTest, event: ResultEvent, elapsed: float, clock: _Clock) -> TestRun:
        """The harness's result, timed by our clocks; a hidden test's texts dropped."""
        limits = self.limits
        cpu = clock.read()
        if event.status == "timeout":
            self.alarm_was_the_cap(clock, cpu)
        fields = event.model_dump(exclude={"event"})
        if test.hidden:  # only what the judge needs: no output, no error text
            fields.update(stdout="", stderr="", error=None, message="")
        # The harness's clocks are the submission's to tamper with: the times reported are
        # ours (CPU from the channel's counter, wall from start line to result line), and
        # only CPU time decides a time limit (the wall limit is the waiting's deadline).
        run = TestRun(**{**fields, "time_ms": elapsed, "cpu_ms": cpu * 1000})
        if run.status == "ok":
            update: dict[str, Any] = {}
            if cpu - self.transfer_allowance > limits.test_seconds:
                update = {"message": f"the test used over {limits.test_seconds:g} s of CPU time"}
            elif self.cpu_spent + cpu - self.transfer_allowance > limits.total_seconds:
                update = {"message": f"the total CPU time limit of {limits.total_seconds:g} s "
                          "was reached"}
            if update:
                run = run.model_copy(update={"status": "timeout", "value": None, **update})
        elif run.status == "timeout" and not test.hidden:  # the harness's own alarm
            # Its CPU alarm goes off at the limit plus the allowance of its own count,
            # which ours matches to a few milliseconds either way: a call stopped with
            # more than the limit used ran into the CPU alarm, not the wall-clock one.
            if cpu <= limits.test_seconds:
                message = (f"the test ran over its wall-clock limit of "
                           f"{limits.test_wall_seconds:g} s with {cpu:.2f} s of CPU time "
                           "(it slept or waited)")
            else:
                message = (f"the test ran over its time limit of {limits.test_seconds:g} s "
                           f"of CPU time ({cpu:.2f} s of CPU time, {elapsed / 1000:.2f} s of "
                           "wall-clock time)")
            run = run.model_copy(update={"message": message})
        if run.status in ("output_limit", "timeout"):
            self.stopped = True  # the harness stops after these; so do we
        return run

    def unexpected(self, index: int, event: object, elapsed: float, cpu: float) -> TestRun:
        cpu_ms = cpu * 1000
        if event is EOF:
            info = self.channel.exit_info()
            return self.stop(index, _status_for_exit(info), info.describe(), elapsed, cpu_ms)
        if event is OVERFLOW:
            return self.stop(index, "output_limit",
                             "the return value or the judge's channel exceeded the size limit",
                             elapsed, cpu_ms)
        # The harness's own report of tampering, or a line it would never write here.
        return self.stop(index, "interfered", INTERFERED, elapsed, cpu_ms)
