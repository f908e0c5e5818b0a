"""The harness's own limits: alarms that stop a call, and lowering a resource limit.

The alarms (CPU time, wall clock) are a courtesy that lets the harness stop a call
cleanly, a little past the limits: the trusted side measures and enforces the limits
itself (``judge.sandbox.supervisor``). :func:`judge.harness.startup.prepare` installs
:func:`alarm` as the handler of both signals.
"""

from __future__ import annotations

import resource
import signal
from typing import Any


class TimeLimit(BaseException):
    """Raised by the per-test alarms (CPU time, wall clock). A BaseException, so
    ``except Exception`` won't eat it."""


def alarm(signum: int, frame: Any) -> None:
    raise TimeLimit()


def lower_limit(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
    if soft == resource.RLIM_INFINITY or soft > cap:
        resource.setrlimit(which, (cap, cap))


def timed(limits: tuple[float, float], fn: Any, *args: Any) -> Any:
    """``fn(*args)`` stopped by :class:`TimeLimit` once the process has used ``limits[0]``
    seconds of CPU time (all its threads: ``ITIMER_PROF``) or ``limits[1]`` seconds of
    wall-clock time have passed. A courtesy that lets the harness stop cleanly: the
    trusted side measures and enforces the limits itself."""
    cpu, wall = limits
    signal.setitimer(signal.ITIMER_PROF, cpu)
    signal.setitimer(signal.ITIMER_REAL, wall)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)
