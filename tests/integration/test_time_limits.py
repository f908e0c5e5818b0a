"""Time limits are on CPU time, measured outside the sandbox, in every backend; the wall
clock is only a safety net for a submission that sleeps or waits. So a correct
submission's verdict does not change when the machine is busy, CPU time spent in threads
and child processes counts, and sleeping is stopped by the net.

demo/layout's limits: 2 s of CPU time per test, 6 s in all; the wall-clock nets are
``wall_time_factor`` times those.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from servers import wait_for

from judge.catalog import Catalog
from judge.errors import SandboxUnavailable
from judge.grading import grade
from judge.report import VerdictReport
from judge.sandbox import get_sandbox
from judge.sandbox.base import Sandbox
from judge.settings import Settings
from judge.verdict import Verdict

pytestmark = [pytest.mark.slow, pytest.mark.service]

BACKENDS = ("process", "docker", "zygote")
# Busy only on the hidden test with eight devices: ``SECONDS`` of its own process's CPU
# time (time.process_time, whatever the machine's load), then the right answer.
BURNS = """
import time

def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass

def layout(num_devices, kernel_in, kernel_out):
    if num_devices == 8:
        burn(SECONDS)
    return [int(kernel_in), int(kernel_out) // int(num_devices)]
"""

# Asleep ``SECONDS`` on the hidden test with eight devices.
SLEEPS = """
import time

def layout(num_devices, kernel_in, kernel_out):
    if num_devices == 8:
        time.sleep(SECONDS)
    return [int(kernel_in), int(kernel_out) // int(num_devices)]
"""


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox(request: pytest.FixtureRequest, settings: Settings) -> Iterator[Sandbox]:
    # Two zygotes, as the service keeps: one stands by while the other is replaced after a
    # run that did not end cleanly (most here), and the busy-host test grades two at once.
    box = get_sandbox(request.param, settings.model_copy(update={"zygote_count": 2}))
    wait_for(lambda: settled(box), 120, f"the {box.name} sandbox's warm pool")  # unloaded
    yield box
    box.close()


def run(sandbox: Sandbox, catalog: Catalog, settings: Settings, code: str,
        **update: object) -> VerdictReport:
    """Graded with a generous wall-clock net (the limits' wall-clock times twenty), so that
    only CPU time may decide, however busy the machine; the net's own test sets a tight
    one."""
    return grade(catalog.get("demo/layout"), textwrap.dedent(code), sandbox=sandbox,
                 settings=settings.model_copy(update={"wall_time_factor": 20.0, **update}))


@contextlib.contextmanager
def spinning(per_core: int) -> Iterator[None]:
    """``per_core`` processes per core spinning beside the judge. Each in a session of its
    own: the kernel schedules the processes of one session as one group (autogroups), so
    spinners started from one shell weigh as one process."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                 start_new_session=True)
                for _ in range(per_core * (os.cpu_count() or 1))]
    try:
        yield
    finally:
        for proc in spinners:
            proc.kill()
        for proc in spinners:
            proc.wait()


@pytest.fixture
def busy_machine() -> Iterator[None]:
    """Four processes per core spinning beside the judge, for the test's duration."""
    with spinning(4):
        yield


def test_a_correct_submission_is_accepted_on_a_busy_machine(sandbox, catalog, settings,
                                                            busy_machine) -> None:
    # 1.2 s of CPU time against a 2 s limit. With four spinning processes per core the
    # sandbox gets about a ninth of the machine, so the call takes several seconds of
    # wall-clock time: over the limit by the clock, within it by CPU time.
    report = run(sandbox, catalog, settings, BURNS.replace("SECONDS", "1.2"))
    assert report.verdict is Verdict.ACCEPTED, [(t.name, t.message) for t in report.tests]
    eight = next(t for t in report.tests if t.name == "eight")
    assert 1000 <= eight.cpu_ms < 2000 + 250  # /proc counts in clock ticks
    assert eight.time_ms >= eight.cpu_ms / 2  # at most two cores: CPU time took its time


def test_cpu_time_over_the_limit_is_a_time_limit(sandbox, catalog, settings) -> None:
    report = run(sandbox, catalog, settings, BURNS.replace("SECONDS", "2.5"))
    assert report.verdict is Verdict.TIME_LIMIT_EXCEEDED
    eight = next(t for t in report.tests if t.name == "eight")
    assert eight.verdict is Verdict.TIME_LIMIT_EXCEEDED
    assert eight.cpu_ms >= 2000
    assert report.score == 1  # "one" passed before it; the tests after it were not run


def test_cpu_time_of_child_processes_counts(sandbox, catalog, settings) -> None:
    # The call sleeps while four processes it started spin: by its own process's clock it
    # is idle, by the sandbox's tree it is over the limit. The harness's own alarms do not
    # see the children; the supervisor does, and stops the run.
    report = run(sandbox, catalog, settings, """
        import os, time

        def layout(num_devices, kernel_in, kernel_out):
            if num_devices == 8:
                for _ in range(4):
                    if os.fork() == 0:
                        while True:
                            pass
                time.sleep(100)
            return [int(kernel_in), int(kernel_out) // int(num_devices)]
    """)
    eight = next(t for t in report.tests if t.name == "eight")
    assert eight.verdict is Verdict.TIME_LIMIT_EXCEEDED
    assert eight.cpu_ms >= 2000


def test_sleeping_is_no_cpu_time_until_the_wall_clock_net(sandbox, catalog, settings) -> None:
    # A factor of 2 puts the net at 4 s: 2.5 s asleep is within it (and uses no CPU
    # time), 30 s asleep is not.
    short = run(sandbox, catalog, settings, SLEEPS.replace("SECONDS", "2.5"),
                wall_time_factor=2.0)
    assert short.verdict is Verdict.ACCEPTED, [(t.name, t.message) for t in short.tests]
    eight = next(t for t in short.tests if t.name == "eight")
    assert eight.time_ms >= 2500 and eight.cpu_ms < 1000
    long = run(sandbox, catalog, settings, SLEEPS.replace("SECONDS", "30"),
               wall_time_factor=2.0)
    eight = next(t for t in long.tests if t.name == "eight")
    assert eight.verdict is Verdict.TIME_LIMIT_EXCEEDED and eight.cpu_ms < 1000


def test_loading_is_held_to_cpu_time_too(sandbox, catalog, settings) -> None:
    report = run(sandbox, catalog, settings, """
        import signal
        signal.signal(signal.SIGPROF, signal.SIG_IGN)
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        while True:
            pass
    """)
    assert report.verdict is Verdict.TIME_LIMIT_EXCEEDED
    assert report.message == "loading the submission took over 2 s of CPU time"
    assert report.timings.load_cpu_ms >= 2000


def test_a_sandbox_the_busy_host_starves_gets_no_verdict(sandbox, catalog, settings) -> None:
    # An endless loop, with a wall-clock net as long as its CPU limit (2 s) and so a cap
    # of 10 s: beside eight spinning processes per core it gets about a tenth of a core,
    # and spends most of its time runnable, waiting for a CPU the host gives to others.
    # That time is not on the net, which it never reaches, nor is its CPU limit before
    # the cap; at the cap the judge gives up: the host's doing, so no verdict
    # (SandboxUnavailable: the service puts it back in the queue). The same loop on a
    # machine that lets it run is a time limit (the tests above); a sleeper beside the
    # same load, graded at the same time, is one too (its threads wait for nothing).
    endless = """
        def layout(num_devices, kernel_in, kernel_out):
            if num_devices == 8:
                while True:
                    pass
            return [int(kernel_in), int(kernel_out) // int(num_devices)]
    """
    # Every zygote ready before the load starts (one may still be replacing one that an
    # earlier test's time limit ended), so that neither grading waits for a start-up.
    wait_for(lambda: settled(sandbox), 120, f"the {sandbox.name} sandbox's warm pool")
    with spinning(8), ThreadPoolExecutor(max_workers=2) as pool:
        starved = pool.submit(run, sandbox, catalog, settings, endless, wall_time_factor=1.0)
        sleeper = pool.submit(run, sandbox, catalog, settings,
                              SLEEPS.replace("SECONDS", "60"), wall_time_factor=1.0)
        with pytest.raises(SandboxUnavailable, match="the machine was too busy"):
            starved.result()
        asleep = sleeper.result()
    eight = next(t for t in asleep.tests if t.name == "eight")
    assert eight.verdict is Verdict.TIME_LIMIT_EXCEEDED


def settled(sandbox: Sandbox) -> bool:
    """Whether what the sandbox keeps warm is all ready (true when it keeps nothing)."""
    warm = sandbox.warm()
    return not warm or warm["ready"] >= warm["size"]
