"""The supervisor's clocks: the kernel's counters for one phase of a run (loading, or one
test: :class:`PhaseClock`) and the run's deadlines over them (:class:`Deadlines`).

A phase's counters are read from its channel: CPU time, processes killed by the memory
limit, and how long the host kept the sandbox waiting for a CPU. The deadlines say how
long the supervisor may wait for the next line, and stop the wait when a limit is passed
(:class:`Overrun`), or when the host kept the sandbox so busy waiting for a CPU that the
wall clock reached ``STARVED_CAP`` times the net first (:class:`Starved`: no verdict).
docs/security.md, "Time limits", says why.
"""

from __future__ import annotations

import time

from judge.sandbox.channel import Channel
from judge.sandbox.protocol import Limits

WATCH_AFTER_SECONDS = 0.25  # a phase this long by the clock: its CPU waits are read too
STARVED_CAP = 5.0  # the wall clock may run this many times the net before giving up
POLL_SECONDS = 0.25  # how often the CPU counter is read while a test runs, at most
MIN_POLL_SECONDS = 0.02


class PhaseClock:
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


class Overrun(Exception):
    """A limit was passed while waiting: ``kind`` is ``cpu``, ``total``, ``wall`` or
    ``total_wall``."""

    def __init__(self, kind: str, cpu: float) -> None:
        super().__init__(kind)
        self.kind = kind
        self.cpu = cpu


class Starved(Exception):
    """The wall clock ran ``STARVED_CAP`` times past the net while the host kept the
    sandbox waiting for a CPU, so the net was not reached: the machine's fault, not the
    submission's (no verdict; the caller tries again later)."""


class Deadlines:
    """A run's limits, enforced over its phases' clocks; what the tests before the
    current one used is kept here (``cpu_spent``, ``starved_before``)."""

    def __init__(self, limits: Limits, grace: float, transfer_allowance: float) -> None:
        self.limits = limits
        self.grace = grace
        self.transfer_allowance = transfer_allowance
        self.tests_began = 0.0
        self.cpu_spent = 0.0  # CPU seconds of the tests before the current one
        self.starved_before = 0.0  # seconds the host kept the tests before it waiting

    def wait(self, clock: PhaseClock, cpu_limit: float, total: bool) -> float:
        """How long to wait for the next line now, reading the kernel's counters. Raises
        :class:`Overrun` once the phase's CPU time passes ``cpu_limit`` (or, for a test,
        the run's passes ``total_seconds``) by the grace, or its wall-clock net
        (``test_wall_seconds``, or ``total_wall_seconds`` for the tests together) by the
        grace in time the host did not keep it waiting for a CPU; :class:`Starved` when
        the wall clock runs ``STARVED_CAP`` times the net first."""
        limits = self.limits
        total_left = limits.total_seconds - self.cpu_spent if total else float("inf")
        net, grace = limits.test_wall_seconds, self.grace
        used = clock.read()
        if used > cpu_limit + grace:
            raise Overrun("cpu", used)
        if used > total_left + grace:
            raise Overrun("total", used)
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
                raise Overrun("total_wall", used)
            if left[3] <= 0:
                raise Starved(self.starved(clock, now))
        if left[0] <= 0:
            raise Overrun("wall", used)
        if left[1] <= 0:
            raise Starved(self.starved(clock, now))
        headroom = min(cpu_limit, total_left) + grace - used
        return min(*left, max(MIN_POLL_SECONDS, min(POLL_SECONDS, headroom / 2)))

    def starved(self, clock: PhaseClock, now: float) -> str:
        return (f"the machine was too busy: the sandbox waited for a CPU {clock.starved:.1f} "
                f"s of the {now - clock.began:.1f} s it ran (with {clock.read():.2f} s of CPU "
                "time), and the wall clock reached the judge's cap before the wall-clock "
                "limit; it is graded again later")

    def alarm_was_the_cap(self, clock: PhaseClock, cpu: float) -> None:
        """The harness stopped a call (or the loading) at its own wall-clock alarm, which
        goes off at the cap, with CPU time to spare: if the host kept the sandbox waiting
        so that the net was not reached, :class:`Starved`. (An alarm that went off
        sooner, the submission's own doing, is a time limit.)"""
        now = time.monotonic()
        limits = self.limits
        if (cpu - self.transfer_allowance <= limits.test_seconds
                and now - clock.began >= limits.test_wall_seconds * STARVED_CAP
                and clock.awake(now) < limits.test_wall_seconds):
            raise Starved(self.starved(clock, now))

    def alarms(self) -> tuple[float, float]:
        """The harness's own alarms (CPU, wall clock): they go off past the limits (its
        process's clock and the kernel's count of the group differ by some milliseconds),
        so what decides a time limit is the supervisor's count, and a harness that stops a
        call lets it end cleanly."""
        return (self.limits.test_seconds + self.transfer_allowance,
                self.limits.test_wall_seconds * STARVED_CAP)
