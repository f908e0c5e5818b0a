"""Resource attacks: processes, threads, memory, output, return values, crashes, time, and
processes meant to outlive the verdict. Each is bounded by the container (pids-limit,
memory = memory + swap, file size limit, the supervisor's deadlines) and gets its verdict;
after each, a correct submission is still accepted and no container or process is left."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from judge.verdict import Verdict

from .support import TOKEN, Judge, describe, facts, host_processes, verdicts, wait_until

pytestmark = pytest.mark.slow

RIGHT = "return [int(kernel_in), int(kernel_out) // int(num_devices)]"
PIDS_LIMIT = 128  # Settings.docker_pids_limit


@pytest.fixture(autouse=True)
def still_accepting_afterwards(still_healthy) -> Iterator[None]:
    """After each attack, a correct submission is still accepted."""
    yield
    still_healthy()


def test_fork_bomb_is_bounded_by_the_pids_limit(judge_layout: Judge) -> None:
    report = judge_layout(f"""
        import json, os, time

        def bomb():
            made, refused = 0, 0
            while refused < 50 and made < 5000:
                try:
                    pid = os.fork()
                except OSError:
                    refused += 1
                    continue
                if pid == 0:  # every child tries to fork too, then sleeps for an hour
                    open("/proc/self/comm", "w").write(TOKEN)
                    for _ in range(3):
                        try:
                            os.fork()
                        except OSError:
                            pass
                    time.sleep(3600)
                    os._exit(0)
                made += 1
            return made, refused

        def layout(num_devices, kernel_in, kernel_out):
            if num_devices == 4:
                made, refused = bomb()
                print("@@", json.dumps({{"made": made, "refused": refused,
                                        "tasks": len(os.listdir("/proc/self/task"))}}))
            {RIGHT}
    """)
    assert report.verdict is Verdict.ACCEPTED, describe(report)
    seen = facts(report)
    assert seen["refused"] == 50, seen  # forks were refused ...
    assert 0 < seen["made"] < PIDS_LIMIT, seen  # ... well before the limit's worth
    assert not host_processes(TOKEN), host_processes(TOKEN)  # all gone with the container


def test_thread_bomb_is_bounded_by_the_pids_limit(judge_layout: Judge) -> None:
    report = judge_layout(f"""
        import json, os, threading, time

        def layout(num_devices, kernel_in, kernel_out):
            if num_devices == 4:
                made, error = 0, None
                while made < 10_000:
                    try:
                        threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
                    except RuntimeError as exc:
                        error = str(exc)
                        break
                    made += 1
                print("@@", json.dumps({{"made": made, "error": error,
                                        "tasks": len(os.listdir("/proc/self/task"))}}))
            {RIGHT}
    """)
    assert report.verdict is Verdict.ACCEPTED, describe(report)
    seen = facts(report)
    assert seen["error"] == "can't start new thread", seen
    assert seen["made"] < PIDS_LIMIT and seen["tasks"] <= PIDS_LIMIT, seen


def test_memory_bomb_is_a_memory_limit(judge_vault: Judge) -> None:
    # On security/vault (1024 MiB, but 30 s a test: writing a GiB of pages can take longer
    # than demo/layout's 2 s on a slow machine, and then the alarm would end it first).
    report = judge_vault("""
        def vault(key):
            hog = []
            while True:  # 64 MiB at a time, every page written, far past 1 GiB
                hog.append(b"\\x01" * (64 << 20))
    """)
    assert report.verdict is Verdict.MEMORY_LIMIT_EXCEEDED, describe(report)
    assert report.tests[0].verdict is Verdict.MEMORY_LIMIT_EXCEEDED, describe(report)
    assert "killed for exceeding the memory limit" in report.tests[0].message, describe(report)


@pytest.mark.timeout(45)  # the writes fail at once past 64 KiB; a run that waited would hang
def test_two_gigabytes_of_output_is_an_output_limit_at_once(judge_layout: Judge) -> None:
    report = judge_layout("""
        import os, sys
        def layout(num_devices, kernel_in, kernel_out):
            block = "x" * (1 << 20)
            for _ in range(2048):  # 2 GiB, on stdout and stderr, whatever it takes
                for write in (sys.stdout.write, sys.stderr.write, lambda s: os.write(1, s.encode())):
                    try:
                        write(block)
                    except OSError:
                        pass
            return [0, 0]
    """)
    assert report.verdict is Verdict.OUTPUT_LIMIT_EXCEEDED, describe(report)
    assert report.tests[0].verdict is Verdict.OUTPUT_LIMIT_EXCEEDED
    assert len(report.stdout.encode()) <= 16 * 1024 + 100, len(report.stdout)
    assert len(report.stderr.encode()) <= 16 * 1024 + 100, len(report.stderr)


@pytest.mark.timeout(45)  # a removal held by the undrained stream took the engine's 60 s
def test_flooding_the_judges_channel_is_an_output_limit_at_once(judge_layout: Judge) -> None:
    # Descriptor 3 is the harness's protocol pipe: 2 GiB without a newline on it.
    # The channel's reader stops at the line cap (OVERFLOW) and the harness blocks on the
    # full pipe; DockerChannel.kill() shuts the attach socket down before it removes the
    # container, so the forced removal does not wait on the undrained stream (it used to
    # hold a worker for the engine's API timeout, 60 s).
    report = judge_layout("""
        import os
        def layout(num_devices, kernel_in, kernel_out):
            block = b"x" * (1 << 20)
            for _ in range(2048):
                os.write(3, block)
            return [0, 0]
    """)
    assert report.verdict is Verdict.OUTPUT_LIMIT_EXCEEDED, describe(report)
    assert "size limit" in report.tests[0].message


HUGE = {
    "10M floats": "np.zeros((10_000_000,))",
    "a 16 GiB view of 8 bytes": "np.broadcast_to(np.zeros(1), (1 << 31,))",
    "200k dict entries": "{i: i for i in range(200_000)}",
    "a 100k-deep list": "deep(100_000)",
    "a list that holds itself": "selfish()",
    "a 4,001-digit int": "10 ** 4001",
    "a 1 MiB string": "'x' * (1 << 20)",
}


@pytest.mark.parametrize("name", list(HUGE))
def test_huge_or_deep_return_values_are_output_limits(judge_layout: Judge, name: str) -> None:
    report = judge_layout(f"""
        import numpy as np
        def deep(n):
            x = []
            for _ in range(n):
                x = [x]
            return x
        def selfish():
            x = []
            x.append(x)
            return x
        def layout(num_devices, kernel_in, kernel_out):
            return {HUGE[name]}
    """)
    assert report.verdict is Verdict.OUTPUT_LIMIT_EXCEEDED, describe(report)
    assert report.tests[0].verdict is Verdict.OUTPUT_LIMIT_EXCEEDED


def test_segfault_is_a_runtime_error(judge_layout: Judge) -> None:
    report = judge_layout("""
        import ctypes
        def layout(num_devices, kernel_in, kernel_out):
            ctypes.memset(0, 1, 64)
    """)
    assert report.verdict is Verdict.RUNTIME_ERROR, describe(report)
    assert "SIGSEGV" in report.tests[0].message


@pytest.mark.parametrize(
    "evasion",
    [
        "signal.signal(signal.SIGALRM, signal.SIG_IGN); "
        "signal.signal(signal.SIGPROF, signal.SIG_IGN)",
        "signal.signal(signal.SIGALRM, lambda *a: None); signal.setitimer(signal.ITIMER_REAL, 0); "
        "signal.signal(signal.SIGPROF, lambda *a: None); signal.setitimer(signal.ITIMER_PROF, 0)",
        "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGPROF})",
    ],
    ids=["ignored", "handled-and-cancelled", "blocked"],
)
def test_an_endless_loop_that_evades_the_alarms_is_a_time_limit(
    judge_layout: Judge, evasion: str
) -> None:
    # Both of the harness's alarms (CPU time, wall clock) evaded: the supervisor reads the
    # sandbox's CPU time from the kernel's counter and stops the run.
    report = judge_layout(f"""
        import signal
        def layout(num_devices, kernel_in, kernel_out):
            {evasion}
            while True:
                pass
    """)
    assert report.verdict is Verdict.TIME_LIMIT_EXCEEDED, describe(report)
    # The supervisor's kill: at the CPU limit and its grace, or, where the machine is so
    # busy that the loop gets under half a core, at the wall-clock net first.
    message = report.tests[0].message
    assert message == "the test used over 2 s of CPU time" or message.startswith(
        "the test ran over its wall-clock limit of 6 s"), describe(report)
    assert all(t.message.startswith("not run") for t in report.tests[1:])


def test_a_process_left_running_dies_with_the_sandbox(judge_layout: Judge) -> None:
    # A sleeper in a new session (out of the harness's process group), renamed so the host
    # can find it, and a forked Python child that ignores SIGTERM and SIGHUP.
    report = judge_layout("""
        import json, os, signal, time

        def ours():
            found = 0
            for pid in (p for p in os.listdir("/proc") if p.isdigit()):
                try:
                    found += TOKEN.encode() in open(f"/proc/{pid}/cmdline", "rb").read()
                except OSError:
                    pass
            return found

        def layout(num_devices, kernel_in, kernel_out):
            if num_devices == 4:
                if os.fork() == 0:
                    os.setsid()
                    if os.fork() == 0:
                        os.execv("/bin/sleep", [TOKEN + "-sleep", "3600"])
                    os._exit(0)
                if os.fork() == 0:
                    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                        signal.signal(sig, signal.SIG_IGN)
                    import sys
                    sys.argv[:] = [TOKEN]
                    open("/proc/self/comm", "w").write(TOKEN)
                    os.execv("/bin/sleep", [TOKEN + "-child", "3600"])
                while ours() < 2:  # both are up (the test's time limit is the deadline)
                    time.sleep(0.01)
                print("@@", json.dumps({"up": ours()}))
            return [int(kernel_in), int(kernel_out) // int(num_devices)]
    """)
    assert report.verdict is Verdict.ACCEPTED, describe(report)
    assert facts(report)["up"] == 2, describe(report)  # they ran, in the sandbox
    assert wait_until(lambda: not host_processes(TOKEN), 60), host_processes(TOKEN)


@pytest.mark.timeout(45)  # a run that waited for the hooks would never end
def test_an_atexit_hook_or_thread_that_never_ends_holds_nothing(judge_layout: Judge) -> None:
    report = judge_layout("""
        import atexit, signal, threading, time
        def forever():
            while True:
                time.sleep(1)
        atexit.register(forever)
        threading.Thread(target=forever).start()  # not a daemon: would block a normal exit
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        def layout(num_devices, kernel_in, kernel_out):
            return [int(kernel_in), int(kernel_out) // int(num_devices)]
    """)
    assert report.verdict is Verdict.ACCEPTED, describe(report)
    assert verdicts(report) == [Verdict.ACCEPTED] * 5
