"""Drives one harness run over a ``Channel`` and enforces time and size from outside.

Time limits are on CPU time, measured where the submission cannot reach, with a
wall-clock limit as a safety net (as isolate's ``--time``/``--wall-time``, Judge0's
``cpu_time_limit``/``wall_time_limit`` and DMOJ do): the channel's ``cpu_seconds`` is the
CPU time of the sandbox's whole process tree (XLA's threads and anything the submission
started included) as the kernel counts it, read by the trusted side; a test over
``test_seconds`` of it, or a run over ``total_seconds``, is a time limit exceeded,
whatever else the host is doing. The wall limits (``test_wall_seconds``,
``total_wall_seconds``, a multiple of those) only catch a submission that sleeps or
waits. The clocks and the deadlines over them are ``judge.sandbox.clock``'s.

A backend (a child process, a container) only has to provide a ``Channel``
(``judge.sandbox.channel``): send bytes in, read capped lines out with a timeout, kill,
and say how the run ended. The supervisor holds the deadlines and the job: it sends the
code first, then each test's inputs only when that test starts (samples first), so no
hidden input is ever in the sandbox before its own test. It trusts no line: each is
size-capped by the channel and parsed and validated in linear time against
``judge.sandbox.protocol`` (pydantic's JSON parser: nesting capped, ``NaN`` refused, every
number bounded). A line that breaks the protocol before the submission was loaded is the
judge's fault (internal error); after, only the submission can have written it, so it is
the submission's: the run stops and the test is marked ``interfered`` (a runtime error).
For a hidden test the supervisor keeps only the status, the value and its own clock: no
text the submission wrote.
"""

from __future__ import annotations

import signal
import time
from typing import Any

from pydantic import TypeAdapter, ValidationError

from judge.errors import SandboxError
from judge.harness import HARNESS_VERSION
from judge.sandbox.channel import EOF, OVERFLOW, TIMEOUT, Channel, ExitInfo
from judge.sandbox.clock import Deadlines, Overrun, PhaseClock, Starved
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
INTERFERED = "the submission interfered with the judge"


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

    ``grace`` is how far past a limit (CPU or wall) the supervisor lets a run go before
    it kills it: the harness stops at the limit by itself and reports it, cleanly.
    ``transfer_allowance`` is the CPU time around the call that is the judge's own work
    in the sandbox (decoding the inputs, encoding the result) and does not count
    against the test's limit."""
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
        self.limits = job.limits
        self.deadlines = Deadlines(job.limits, grace, transfer_allowance)
        self.timing: dict[str, float] = {}
        self.stopped = False  # a test ended the run: the rest are not run

    def next_event(self, deadline: float) -> object:
        remaining = deadline - time.monotonic()
        line = self.channel.read_line(max(remaining, 0.0)) if remaining > 0 else TIMEOUT
        if isinstance(line, bytes):
            return _parse(line)
        return line

    def await_event(self, clock: PhaseClock, cpu_limit: float, total: bool) -> object:
        """The next event, reading the kernel's counters while waiting (the deadlines'
        :class:`Overrun` or :class:`Starved` when a limit comes first)."""
        while True:
            wait = self.deadlines.wait(clock, cpu_limit, total)
            line = self.channel.read_line(max(wait, 0.001))
            if isinstance(line, bytes):
                return _parse(line)
            if line is not TIMEOUT:
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
        try:
            self.channel.admit()
        except SandboxError as exc:
            return self.internal(f"the sandbox could not be readied for the submission: {exc}")
        waited = (time.monotonic() - started) * 1000
        imports = min(ready.import_ms, waited)  # 0 for a pooled harness, ready beforehand
        self.timing = {"startup_ms": waited - imports, "import_ms": imports}
        job = self.job
        clock = PhaseClock(self.channel)  # from before the code goes in
        self.send(LoadMessage(code=job.code, entry_point=job.entry_point, limits=job.limits,
                              tests=len(job.tests), alarms=self.deadlines.alarms(),
                              mode=job.mode))
        try:
            return self.load(clock)
        except Starved as exc:
            return self.internal(str(exc))

    def send(self, message: LoadMessage | TestMessage) -> None:
        self.channel.send(message.model_dump_json().encode() + b"\n")

    def outcome(self, **fields: Any) -> RunOutcome:
        return RunOutcome(**{**self.timing, **fields})

    def load(self, clock: PhaseClock) -> RunOutcome:
        t0 = time.monotonic()
        limit = self.limits.test_seconds
        overrun = None
        try:
            event = self.await_event(clock, limit, total=False)
        except _Violation:
            event = InterferedEvent(event="interfered")
        except Overrun as exc:
            event, overrun = TIMEOUT, exc
        load_ms = (time.monotonic() - t0) * 1000
        load_cpu_ms = clock.read() * 1000
        if isinstance(event, LoadTimeoutEvent):
            self.deadlines.alarm_was_the_cap(clock, load_cpu_ms / 1000)
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
        t0 = self.deadlines.tests_began = time.monotonic()
        for position, test in enumerate(self.job.tests):
            run = self.one_test(test)
            runs.append(run)
            self.deadlines.cpu_spent += run.cpu_ms / 1000
            if self.stopped:
                runs += self.not_run(position + 1, "not run: an earlier test ended the run",
                                     run.status)
                break
        self.channel.close_input()
        tests_ms = (time.monotonic() - t0) * 1000
        return self.outcome(status="completed", tests=runs, tests_ms=tests_ms,
                            tests_cpu_ms=self.deadlines.cpu_spent * 1000,
                            harness_stderr=self.channel.diagnostics(), **load)

    def stop(self, index: int, status: TestStatus, message: str, time_ms: float = 0.0,
             cpu_ms: float = 0.0) -> TestRun:
        self.stopped = True
        self.channel.kill()
        return TestRun(index=index, status=status, message=message, time_ms=time_ms,
                       cpu_ms=cpu_ms)

    def overrun(self, index: int, exc: Overrun, elapsed: float) -> TestRun:
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
        clock = PhaseClock(self.channel)
        self.send(TestMessage(index=index, args=test.args, kinds=test.kinds,
                              export=test.export, program=test.program))
        t0 = time.monotonic()
        try:
            return self.one_test_timed(test, clock, t0)
        finally:
            self.deadlines.starved_before += clock.starved

    def one_test_timed(self, test: JobTest, clock: PhaseClock, t0: float) -> TestRun:
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
        except Overrun as exc:
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

    def result(self, test: JobTest, event: ResultEvent, elapsed: float, clock: PhaseClock) -> TestRun:
        """The harness's result, timed by our clocks; a hidden test's texts dropped."""
        limits = self.limits
        cpu = clock.read()
        if event.status == "timeout":
            self.deadlines.alarm_was_the_cap(clock, cpu)
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
            elif self.deadlines.cpu_spent + cpu - self.transfer_allowance > limits.total_seconds:
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
