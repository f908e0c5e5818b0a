"""judge.sandbox.supervisor: the line protocol, driven over a scripted in-memory channel.

``ScriptedChannel`` is a test double for the transport only: it replays the lines (or
EOF, OVERFLOW, TIMEOUT) a harness would produce, and the CPU time its processes use
(``Burn``, ``Busy``), and records what the supervisor sends, and how many lines it had
read when it sent each message.
"""

from __future__ import annotations

import json
import signal
import time
from typing import Any

import pytest

from judge.errors import SandboxUnavailable
from judge.harness import HARNESS_VERSION
from judge.harness.codec import encode
from judge.sandbox import clock
from judge.sandbox.channel import EOF, OVERFLOW, TIMEOUT, ExitInfo
from judge.sandbox.protocol import Job, JobTest, Limits, LoadMessage, RunOutcome, TestMessage
from judge.sandbox.supervisor import INTERFERED, supervise

LIMITS = Limits(test_seconds=2.0, total_seconds=10.0, test_wall_seconds=6.0,
                total_wall_seconds=30.0, memory_mb=512, output_bytes=10_000,
                result_bytes=100_000, segment_bytes=1_000)


def make_job(n: int = 3, limits: Limits = LIMITS, hidden_from: int | None = None) -> Job:
    """``n`` tests; those from ``hidden_from`` on are hidden."""
    cut = n if hidden_from is None else hidden_from
    return Job(
        code="def f(x):\n    return x\n",
        entry_point="f",
        tests=[JobTest(index=i, args=[encode(i)], kinds=["int"], hidden=i >= cut)
               for i in range(n)],
        limits=limits,
        label="submission-42",
    )


CLEAN_EXIT = ExitInfo(code=0)


class Sleep:
    """Script item, never used up: nothing arrives, each wait takes its whole timeout,
    and no CPU time is used (a submission that sleeps)."""


SLEEP = Sleep()


class Delay:
    """Script item: the next line arrives after ``seconds`` (within the timeout)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


class Burn:
    """Script item: the sandbox's processes use ``seconds`` of CPU time (then the next
    item comes)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


class Starve:
    """Script item: nothing arrives, each wait takes its whole timeout, and two of the
    sandbox's threads spend ``share`` of it waiting for a CPU the host gives others;
    for ``seconds`` (then the next item comes), or for ever."""

    def __init__(self, seconds: float | None = None, share: float = 1.0) -> None:
        self.seconds, self.share = seconds, share


class Oom:
    """Script item: the memory limit kills one of the sandbox's processes (the harness
    lives on; then the next item comes)."""


class Busy:
    """Script item, never used up: nothing arrives, and the sandbox's processes use
    ``threads`` CPU seconds per second of each wait (a computation that never ends)."""

    def __init__(self, threads: float = 4.0) -> None:
        self.threads = threads


class ScriptedChannel:
    def __init__(self, script: list[Any], exit: ExitInfo = CLEAN_EXIT,
                 diagnostics: str = "harness diagnostics") -> None:
        self.cpu = 0.0
        self.kills = 0
        self.delays: dict[int, int] = {100: 7}
        self.admitted_after: list[int] = []  # lines read when admit() was called
        self.script = list(script)
        self.exit = exit
        self.diag = diagnostics
        self.sent: list[bytes] = []
        self.read_before_send: list[int] = []  # lines read when each message was sent
        self.lines_read = 0
        self.closed = False
        self.kills = 0
        self.timeouts: list[float] = []

    def send(self, data: bytes) -> None:
        assert not self.closed and data.endswith(b"\n") and data.count(b"\n") == 1
        self.sent.append(data)
        self.read_before_send.append(self.lines_read)

    def close_input(self) -> None:
        self.closed = True

    def read_line(self, timeout: float) -> Any:
        self.timeouts.append(timeout)
        self.lines_read += 1
        if not self.script:
            return EOF
        if isinstance(self.script[0], Starve):
            starve = self.script[0]
            wait = timeout if starve.seconds is None else min(timeout, starve.seconds)
            time.sleep(wait)
            for tid in (101, 102):
                self.delays[tid] = self.delays.get(tid, 0) + int(wait * starve.share * 1e9)
            if starve.seconds is not None:
                self.script[0] = Starve(starve.seconds - wait, starve.share)
                if starve.seconds - wait <= 0:
                    self.script.pop(0)
                    self.lines_read -= 1
                    return self.read_line(max(timeout - wait, 0.0))
            return TIMEOUT
        if isinstance(self.script[0], Sleep):
            time.sleep(timeout)
            return TIMEOUT
        if isinstance(self.script[0], Busy):
            wait = min(timeout, 0.01)
            time.sleep(wait)
            self.cpu += self.script[0].threads * max(timeout, 0.001)
            return TIMEOUT
        item = self.script.pop(0)
        if isinstance(item, Burn | Oom):
            if isinstance(item, Burn):
                self.cpu += item.seconds
            else:
                self.kills += 1
            self.lines_read -= 1
            return self.read_line(timeout)
        if isinstance(item, Sleep):
            time.sleep(timeout)
            return TIMEOUT
        if isinstance(item, Delay):  # waits across reads until its time is up
            waited = min(item.seconds, timeout)
            time.sleep(waited)
            if waited < item.seconds:
                self.script.insert(0, Delay(item.seconds - waited))
                return TIMEOUT
            self.lines_read -= 1
            return self.read_line(timeout - waited)
        if isinstance(item, dict):
            return json.dumps(item, separators=(",", ":"), allow_nan=False).encode()
        return item

    def kill(self) -> None:
        self.kills += 1

    def exit_info(self) -> ExitInfo:
        return self.exit

    def diagnostics(self) -> str:
        return self.diag

    def cpu_seconds(self) -> float:
        return self.cpu

    def oom_kills(self) -> int:
        return self.kills

    def run_delays(self) -> dict[int, int]:
        return dict(self.delays)

    def admit(self) -> None:
        self.admitted_after.append(self.lines_read)


READY = {"event": "ready", "harness_version": HARNESS_VERSION, "import_ms": 700.0,
         "jax_version": "0.10.2", "flax_version": "0.12.8", "devices": 8}
LOADED = {"event": "loaded", "time_ms": 12.5, "stdout": "loading\n", "stdout_bytes": 8,
          "stderr": "", "stderr_bytes": 0}


def start(i: int) -> dict[str, Any]:
    return {"event": "start", "index": i}


def result(i: int, value: Any = None, status: str = "ok", time_ms: float = 5.0,
           **extra: Any) -> dict[str, Any]:
    line: dict[str, Any] = {"event": "result", "index": i, "status": status, "time_ms": time_ms}
    if status == "ok":
        line["value"] = encode(i if value is None else value)
    line.update({"stdout": "", "stderr": "", "stdout_bytes": 0, "stderr_bytes": 0})
    line.update(extra)
    return line


def case(i: int, **kw: Any) -> list[dict[str, Any]]:
    return [start(i), result(i, **kw)]


DONE = {"event": "done"}


def run(script: list[Any], n: int = 3, exit: ExitInfo = CLEAN_EXIT,
        limits: Limits = LIMITS, grace: float = 0.5, transfer_allowance: float = 0.25,
        hidden_from: int | None = None) -> tuple[RunOutcome, ScriptedChannel]:
    channel = ScriptedChannel(script, exit)
    outcome = supervise(channel, make_job(n, limits, hidden_from), startup_seconds=5.0,
                        grace=grace, transfer_allowance=transfer_allowance)
    assert channel.kills >= 1, "the channel must always be killed"
    return outcome, channel


def statuses(outcome: RunOutcome) -> list[str]:
    return [t.status for t in outcome.tests]


# -- a normal run ------------------------------------------------------------------------


def test_a_normal_run() -> None:
    outcome, channel = run([READY, LOADED, start(0), Delay(0.05), result(0),
                            *case(1, value=[1.5, "x"]),
                            *case(2, stdout="out\n", stdout_bytes=4), DONE])
    assert outcome.status == "completed"
    assert statuses(outcome) == ["ok", "ok", "ok"]
    assert [t.index for t in outcome.tests] == [0, 1, 2]
    assert outcome.tests[0].value.v == 0
    assert [v.t for v in outcome.tests[1].value.items] == ["float", "str"]
    assert outcome.tests[2].stdout == "out\n" and outcome.tests[2].stdout_bytes == 4
    # Times are the supervisor's own (the harness said 5.0 ms; the result came 50 ms after
    # the start line), and the import time is at most what the supervisor waited for ready.
    assert outcome.tests[0].time_ms >= 50
    assert outcome.load_ms == 12.5 and 0 <= outcome.import_ms <= 700.0
    assert outcome.load_stdout == "loading\n"
    assert outcome.harness_stderr == "harness diagnostics"
    # the code went in first, alone; then each test's inputs, one message per test
    job = make_job()
    load = LoadMessage.model_validate_json(channel.sent[0])
    assert load == LoadMessage(code=job.code, entry_point="f", limits=LIMITS, tests=3,
                               alarms=(2.25, 30.0))
    tests = [TestMessage.model_validate_json(m) for m in channel.sent[1:]]
    assert tests == [TestMessage(index=t.index, args=t.args, kinds=t.kinds) for t in job.tests]
    assert b"hidden" not in b"".join(channel.sent) and b"submission-42" not in channel.sent[0]
    assert channel.closed, "the harness reads end of file after the last test"
    # every wait is bounded by a limit
    assert channel.timeouts[0] <= 5.0
    assert all(0 < t <= LIMITS.test_wall_seconds + 0.5 for t in channel.timeouts[1:])
    # the sandbox was readied for the submission once, after ready and before the code
    assert channel.admitted_after == [1] and channel.read_before_send[0] == 1


def test_each_tests_input_goes_in_only_when_that_test_starts() -> None:
    # Lines read: ready, loaded, then start/result per test. The load message goes after
    # ready (1 line read); test i's input only once the result of test i-1 is in.
    _, channel = run([READY, LOADED, *case(0), *case(1), *case(2), DONE])
    assert channel.read_before_send == [1, 2, 4, 6]


def test_a_stopped_run_sends_no_further_inputs() -> None:
    outcome, channel = run([READY, LOADED, *case(0, status="timeout", time_ms=2001.0), DONE])
    assert statuses(outcome) == ["timeout", "not_run", "not_run"]
    assert len(channel.sent) == 2  # the load message and test 0's input, nothing after


def test_hidden_tests_keep_no_text_the_submission_wrote() -> None:
    error = {"type": "LEAK_3", "message": "LEAK_3", "line": 333, "traceback": "LEAK_3"}
    noisy = {"stdout": "LEAK_3\n", "stdout_bytes": 7, "stderr": "LEAK_3", "stderr_bytes": 6}
    outcome, _ = run([READY, LOADED, *case(0, **noisy), *case(1, **noisy),
                      *case(2, status="error", error=error, message="LEAK_3", **noisy), DONE],
                     n=3, hidden_from=1)
    sample, hidden_ok, hidden_error = outcome.tests
    assert sample.stdout == "LEAK_3\n" and sample.stderr == "LEAK_3"
    for run_ in (hidden_ok, hidden_error):
        assert "LEAK" not in run_.model_dump_json(), run_
        assert run_.stdout_bytes == 7  # the count says output was written, nothing more
    assert hidden_ok.status == "ok" and hidden_ok.value is not None  # still checked
    assert hidden_error.status == "error" and hidden_error.error is None


def test_error_and_memory_results_do_not_stop_the_run() -> None:
    error = {"type": "ValueError", "message": "bad", "line": 3, "traceback": "Traceback..."}
    outcome, _ = run([READY, LOADED, *case(0, status="error", error=error),
                      *case(1, status="memory"), *case(2), DONE])
    assert statuses(outcome) == ["error", "memory", "ok"]
    assert outcome.tests[0].error is not None and outcome.tests[0].error.line == 3


# -- start-up ----------------------------------------------------------------------------


def test_harness_version_mismatch_is_an_internal_error() -> None:
    outcome, channel = run([{**READY, "harness_version": "0-old"}, LOADED, *case(0)])
    assert outcome.status == "internal_error"
    assert "0-old" in outcome.message and HARNESS_VERSION in outcome.message
    assert channel.sent == [], "no code goes to a harness of another version"
    assert outcome.tests == []
    assert outcome.harness_stderr == "harness diagnostics"


@pytest.mark.parametrize(
    "first, words",
    [
        (EOF, "(it exited: the process was killed by SIGKILL)"),
        (SLEEP, "it sent nothing within 0.05 s"),
        (OVERFLOW, "its first line was not 'ready'"),
        (LOADED, "its first line was not 'ready'"),
        (start(0), "its first line was not 'ready'"),
        (b"Traceback (most recent call last):", "broke the protocol before loading"),
        (b'{"event": "ready"}', "broke the protocol before loading"),
        (json.dumps({**READY, "extra": 1}).encode(), "broke the protocol before loading"),
    ],
    ids=["eof", "timeout", "overflow", "loaded", "start", "garbage", "incomplete", "extra"],
)
def test_no_ready_is_an_internal_error(first: Any, words: str) -> None:
    channel = ScriptedChannel([first, READY, LOADED, *case(0)], ExitInfo(signal=signal.SIGKILL))
    outcome = supervise(channel, make_job(1), startup_seconds=0.05, grace=0.1)
    assert outcome.status == "internal_error"
    assert words in outcome.message
    assert channel.sent == []
    assert channel.kills >= 1


# -- loading -----------------------------------------------------------------------------


def test_compile_error() -> None:
    event = {"event": "compile_error", "stdout": "partial\n", "stdout_bytes": 8,
             "error": {"type": "SyntaxError", "message": "invalid syntax", "line": 2}}
    outcome, _ = run([READY, event])
    assert outcome.status == "compile_error"
    assert outcome.error is not None and outcome.error.type == "SyntaxError"
    assert outcome.error.line == 2
    assert outcome.load_stdout == "partial\n"
    assert statuses(outcome) == ["not_run"] * 3
    assert all("could not be loaded" in t.message for t in outcome.tests)


def test_load_timeout_event() -> None:
    # The harness's alarm, after its CPU time ran out; then after its wall clock did.
    event = {"event": "load_timeout", "time_ms": 2000.0, "stdout": "slow\n"}
    outcome, _ = run([READY, Burn(2.3), event])
    assert outcome.status == "load_timeout"
    assert outcome.message == "loading the submission took over 2 s of CPU time"
    outcome, _ = run([READY, Burn(0.1), event])
    assert outcome.status == "load_timeout"
    assert outcome.message == ("loading the submission took over 6 s of wall-clock time "
                               "(it slept or waited)")
    assert outcome.load_stdout == "slow\n"
    assert statuses(outcome) == ["not_run"] * 3


def test_silence_while_loading_is_a_load_timeout() -> None:
    limits = LIMITS.model_copy(update={"test_seconds": 0.05, "test_wall_seconds": 0.1})
    outcome, _ = run([READY, SLEEP], limits=limits, grace=0.0)
    assert outcome.status == "load_timeout"
    assert outcome.message == ("loading the submission took over 0.1 s of wall-clock time "
                               "(it slept or waited)")


@pytest.mark.parametrize(
    "event, exit, words",
    [
        (EOF, ExitInfo(signal=signal.SIGSEGV), "killed by SIGSEGV"),
        (EOF, ExitInfo(code=3), "exited with status 3"),
        (OVERFLOW, ExitInfo(), "wrote too much"),
    ],
    ids=["segv", "exit", "overflow"],
)
def test_loading_ended_by_the_submission(event: Any, exit: ExitInfo, words: str) -> None:
    outcome, _ = run([READY, event], exit=exit)
    assert outcome.status == "load_crashed"
    assert words in outcome.message
    assert statuses(outcome) == ["not_run"] * 3


@pytest.mark.parametrize(
    "event",
    [b"\x00\xff garbage", start(0), {"event": "interfered"}, READY,
     {"event": "loaded", "time_ms": float("nan")}],
    ids=["garbage", "start-before-loaded", "interfered", "ready-again", "nan"],
)
def test_a_line_only_the_submission_could_write_while_loading(event: Any) -> None:
    # No test input is in the sandbox yet, but the submission has run: a runtime error
    # marked as interference, never an internal error.
    line = json.dumps(event).encode() if isinstance(event, dict) else event
    outcome, _ = run([READY, line])
    assert outcome.status == "interfered"
    assert outcome.message == INTERFERED
    assert statuses(outcome) == ["not_run"] * 3
    assert {t.cause for t in outcome.tests} == {"interfered"}


# -- broken lines after loading -----------------------------------------------------------


NAN_RESULT = b'{"event":"result","index":1,"status":"ok","time_ms":NaN,"value":{"t":"int","v":1}}'


@pytest.mark.parametrize(
    "line",
    [
        b"{not json",
        b"",
        b"[1, 2]",
        b"null",
        json.dumps({**result(1), "extra": True}).encode(),
        json.dumps({**result(1), "status": "exploded"}).encode(),
        json.dumps({**result(1), "time_ms": -1.0}).encode(),
        json.dumps({**result(1), "time_ms": 1e300}).encode(),
        NAN_RESULT,
        NAN_RESULT.replace(b"NaN", b"Infinity"),
        NAN_RESULT.replace(b"NaN", b"1").replace(b'"int","v":1', b'"float","v":NaN'),
        json.dumps({**result(1), "value": {"t": "function"}}).encode(),
        json.dumps({**result(1), "value": {"t": "int", "v": "1"}}).encode(),
        json.dumps({**result(1), "value": {"t": "array", "dtype": "object", "shape": [],
                                           "data": ""}}).encode(),
        json.dumps({**result(1), "value": {"t": "array", "dtype": "int8",
                                           "shape": [2**60], "data": ""}}).encode(),
        json.dumps({**result(1), "index": 10**12}).encode(),
        json.dumps({k: v for k, v in result(1).items() if k != "value"}).encode(),
        json.dumps({**result(1, status="error"), "value": encode(1)}).encode(),
        json.dumps({"event": "result", "index": 1}).encode(),
        json.dumps({"event": "interfered", "index": 1}).encode(),
        json.dumps(start(1)).encode(),
        json.dumps(READY).encode(),
        b"[" * 100_000,
        b'{"event":"result","index":1,"status":"ok","time_ms":1,"stdout":"' + b'\\"' * 20_000,
    ],
    ids=["not-json", "empty", "list", "null", "extra-field", "bad-status", "negative-time",
         "huge-time", "nan-time", "infinite-time", "nan-float-value", "unknown-tag",
         "string-int", "object-dtype", "huge-shape", "huge-index", "ok-without-value",
         "error-with-value", "missing-fields", "interfered", "start-twice", "ready",
         "deep", "unterminated-escapes"],
)
def test_a_line_that_breaks_the_protocol_is_interference(line: bytes) -> None:
    # After loading only the submission can write such a line: the test is a runtime
    # error marked as interference, the run stops, and nothing becomes an internal error.
    outcome, _ = run([READY, LOADED, *case(0), start(1), line, *case(2)])
    assert outcome.status == "completed"
    assert statuses(outcome) == ["ok", "interfered", "not_run"]
    assert outcome.tests[1].message == INTERFERED
    assert outcome.tests[2].cause == "interfered"
    assert "not run" in outcome.tests[2].message


@pytest.mark.timeout(60)
def test_a_megabyte_parse_bomb_is_refused_in_linear_time() -> None:
    # An unterminated line of escaped quotes: the old regex-based check was quadratic
    # (7.8 s for 40 KB, hours for 1 MiB); pydantic's parser reads it once.
    bomb = b'{"event":"result","index":0,"status":"ok","time_ms":1,"stdout":"' + b'\\"' * (1 << 19)
    outcome, _ = run([READY, LOADED, start(0), bomb, *case(1), *case(2)])
    assert statuses(outcome) == ["interfered", "not_run", "not_run"]


def test_a_malformed_line_instead_of_start() -> None:
    outcome, _ = run([READY, LOADED, b"}{", *case(0), *case(1), *case(2)])
    assert statuses(outcome) == ["interfered", "not_run", "not_run"]
    assert [t.cause for t in outcome.tests[1:]] == ["interfered", "interfered"]


def test_start_with_the_wrong_index() -> None:
    outcome, _ = run([READY, LOADED, *case(0), start(2), result(2), *case(2)])
    assert statuses(outcome) == ["ok", "interfered", "not_run"]


def test_result_with_the_wrong_index() -> None:
    outcome, _ = run([READY, LOADED, start(0), result(1), *case(1), *case(2)])
    assert statuses(outcome) == ["interfered", "not_run", "not_run"]


def test_other_events_in_the_middle_of_a_test() -> None:
    outcome, _ = run([READY, LOADED, start(0), READY, *case(1)], n=2)
    assert statuses(outcome) == ["interfered", "not_run"]
    outcome, _ = run([READY, LOADED, start(0), start(0), result(0)], n=1)
    assert statuses(outcome) == ["interfered"]


# -- the harness dying, and limits -------------------------------------------------------


@pytest.mark.parametrize(
    "exit, status, words",
    [
        (ExitInfo(signal=signal.SIGSEGV), "crashed", "killed by SIGSEGV"),
        (ExitInfo(signal=signal.SIGKILL), "crashed", "killed by SIGKILL"),
        (ExitInfo(signal=signal.SIGXCPU), "timeout", "SIGXCPU"),
        (ExitInfo(signal=signal.SIGXFSZ), "output_limit", "SIGXFSZ"),
        (ExitInfo(signal=signal.SIGKILL, oom_killed=True), "memory", "memory limit"),
        (ExitInfo(code=0), "crashed", "exited with status 0"),
        (ExitInfo(code=-11), "crashed", "exited with status -11"),
        (ExitInfo(signal=99), "crashed", "signal 99"),
        (ExitInfo(), "crashed", "the process ended"),
    ],
    ids=["segv", "kill", "xcpu", "xfsz", "oom", "exit0", "exit-11", "unknown-signal", "none"],
)
def test_eof_in_the_middle_of_a_test(exit: ExitInfo, status: str, words: str) -> None:
    outcome, _ = run([READY, LOADED, *case(0), start(1), EOF], exit=exit)
    assert outcome.status == "completed"
    assert statuses(outcome) == ["ok", status, "not_run"]
    assert words in outcome.tests[1].message
    assert outcome.tests[2].cause == status
    assert outcome.tests[0].value is not None


def test_eof_before_a_start() -> None:
    outcome, _ = run([READY, LOADED, *case(0), EOF], exit=ExitInfo(signal=signal.SIGSEGV))
    assert statuses(outcome) == ["ok", "crashed", "not_run"]


def test_overflow_is_an_output_limit() -> None:
    outcome, _ = run([READY, LOADED, start(0), OVERFLOW, *case(1), *case(2)])
    assert statuses(outcome) == ["output_limit", "not_run", "not_run"]
    assert "size limit" in outcome.tests[0].message
    assert [t.cause for t in outcome.tests[1:]] == ["output_limit"] * 2


def test_output_limit_result_stops_the_run() -> None:
    outcome, _ = run([READY, LOADED, *case(0, status="output_limit", message="too large"),
                      DONE])
    assert statuses(outcome) == ["output_limit", "not_run", "not_run"]
    assert outcome.tests[0].message == "too large"
    assert [t.cause for t in outcome.tests[1:]] == ["output_limit"] * 2


def test_cpu_time_over_the_limit_is_a_timeout() -> None:
    # The harness said "ok", but the sandbox's processes used more CPU time than
    # test_seconds (plus the allowance for decoding and encoding): a timeout, without the
    # value, and (as every timeout) the end of the run.
    outcome, _ = run([READY, LOADED, *case(0), start(1), Burn(2.3), result(1), *case(2), DONE])
    assert statuses(outcome) == ["ok", "timeout", "not_run"]
    assert outcome.tests[1].value is None
    assert outcome.tests[1].message == "the test used over 2 s of CPU time"
    assert outcome.tests[1].cpu_ms == pytest.approx(2300)
    assert outcome.tests[2].cause == "timeout"


def test_the_harness_clock_decides_nothing() -> None:
    # The harness's own clock is the submission's to set: 2000.5 ms there, 0.1 s of CPU
    # time by the judge's counter, is no timeout; 1 ms there and 0.3 s of CPU time against
    # a 0.1 s limit (+ 0.1 s allowance) is one.
    outcome, _ = run([READY, LOADED, start(0), Burn(0.1), result(0, time_ms=2000.5),
                      *case(1), *case(2), DONE])
    assert statuses(outcome) == ["ok", "ok", "ok"]
    limits = LIMITS.model_copy(update={"test_seconds": 0.1})
    outcome, _ = run([READY, LOADED, start(0), Burn(0.3), result(0, time_ms=1.0),
                      *case(1), *case(2), DONE], limits=limits, transfer_allowance=0.1)
    assert statuses(outcome) == ["timeout", "not_run", "not_run"]
    assert outcome.tests[0].cpu_ms == pytest.approx(300)


def test_a_slow_wall_clock_with_little_cpu_time_is_no_timeout() -> None:
    # A busy machine: the result takes 0.3 s to come against a 0.1 s limit, but the
    # sandbox used 0.05 s of CPU time, and the wall-clock net (1 s) was not reached.
    limits = LIMITS.model_copy(update={"test_seconds": 0.1, "test_wall_seconds": 1.0})
    outcome, _ = run([READY, LOADED, start(0), Burn(0.05), Delay(0.3), result(0),
                      *case(1), *case(2), DONE], limits=limits, grace=0.0,
                     transfer_allowance=0.0)
    assert statuses(outcome) == ["ok", "ok", "ok"]
    assert outcome.tests[0].time_ms >= 300 and outcome.tests[0].cpu_ms == pytest.approx(50)


def test_cpu_time_at_the_limit_is_fine() -> None:
    outcome, _ = run([READY, LOADED, start(0), Burn(2.25), result(0), *case(1), *case(2),
                      DONE])
    assert statuses(outcome) == ["ok", "ok", "ok"]
    assert outcome.tests[0].value is not None


def test_a_computation_over_its_cpu_time_is_stopped_before_the_wall_clock_limit() -> None:
    # Nothing arrives while the processes burn CPU time: the supervisor reads the counter
    # while it waits and stops the run once it is past the limit and the grace, long
    # before the wall-clock net (60 s here).
    limits = LIMITS.model_copy(update={"test_seconds": 0.2, "test_wall_seconds": 60.0})
    outcome, channel = run([READY, LOADED, *case(0), start(1), Busy()], limits=limits,
                           grace=0.1)
    assert statuses(outcome) == ["ok", "timeout", "not_run"]
    assert outcome.tests[1].message == "the test used over 0.2 s of CPU time"
    assert outcome.tests[1].cpu_ms > 300
    # it polled the counter instead of waiting out the wall-clock limit
    assert max(channel.timeouts[4:]) <= 0.25


def test_the_total_cpu_time_limit() -> None:
    # Each test is well within its own limit; the third brings the run past its total.
    limits = LIMITS.model_copy(update={"total_seconds": 1.0})
    outcome, _ = run([READY, LOADED, start(0), Burn(0.4), result(0), start(1), Burn(0.4),
                      result(1), start(2), Burn(0.4), result(2), DONE], limits=limits,
                     transfer_allowance=0.0)
    assert statuses(outcome) == ["ok", "ok", "timeout"]
    assert outcome.tests[2].message == "the total CPU time limit of 1 s was reached"
    # and while one waits
    outcome, _ = run([READY, LOADED, start(0), Burn(0.9), result(0), start(1), Busy(), DONE],
                     n=2, limits=limits, grace=0.1, transfer_allowance=0.0)
    assert statuses(outcome) == ["ok", "timeout"]
    assert outcome.tests[1].message == "the total CPU time limit of 1 s was reached"


def test_harness_timeout_result_stops_the_run() -> None:
    # The harness sends a "timeout" result, stops, and sends "done" (runner.py: `if status
    # in ("output_limit", "timeout"): break`). The tests after it were not run; they are
    # not crashed, and "done" does not mean the channel was corrupted.
    outcome, _ = run([READY, LOADED, *case(0), start(1), Burn(2.3),
                      result(1, status="timeout", time_ms=2001.0), DONE], n=4)
    assert statuses(outcome) == ["ok", "timeout", "not_run", "not_run"]
    assert [t.cause for t in outcome.tests[2:]] == ["timeout", "timeout"]
    assert outcome.tests[1].message.startswith(
        "the test ran over its time limit of 2 s of CPU time (2.30 s of CPU time")
    # Its wall-clock alarm, with CPU time to spare: the net, said as such.
    outcome, _ = run([READY, LOADED, start(0), Burn(0.5),
                      result(0, status="timeout", time_ms=6001.0), DONE], n=1)
    assert statuses(outcome) == ["timeout"]
    assert outcome.tests[0].message == ("the test ran over its wall-clock limit of 6 s with "
                                        "0.50 s of CPU time (it slept or waited)")


def test_silence_during_a_test_is_a_timeout_at_the_wall_clock_limit() -> None:
    limits = LIMITS.model_copy(update={"test_seconds": 0.05, "test_wall_seconds": 0.15})
    outcome, _ = run([READY, LOADED, *case(0), start(1), SLEEP, *case(2)], limits=limits,
                     grace=0.0)
    assert statuses(outcome) == ["ok", "timeout", "not_run"]
    assert outcome.tests[1].message == ("the test ran over its wall-clock limit of 0.15 s "
                                        "with 0.00 s of CPU time (it slept or waited)")
    assert outcome.tests[1].time_ms >= 145
    assert outcome.tests[2].cause == "timeout"


@pytest.fixture
def watch_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """CPU waits read from a phase's start (the judge: after its first quarter of a second)."""
    monkeypatch.setattr(clock, "WATCH_AFTER_SECONDS", 0.0)


def test_time_the_host_kept_the_sandbox_waiting_is_not_on_the_wall_clock_net(
        watch_at_once) -> None:
    # 0.3 s by the clock against a 0.2 s net, but the host kept the sandbox's threads
    # waiting for a CPU 90 % of it: 0.03 s awake, within the net.
    limits = LIMITS.model_copy(update={"test_seconds": 0.05, "test_wall_seconds": 0.2})
    outcome, _ = run([READY, LOADED, start(0), Starve(0.3, share=0.9), result(0), DONE],
                     n=1, limits=limits, grace=0.0, transfer_allowance=0.0)
    assert statuses(outcome) == ["ok"] and outcome.tests[0].time_ms >= 300


def test_a_sandbox_starved_until_the_cap_gets_no_verdict(watch_at_once) -> None:
    # Nothing arrives, and the sandbox's threads spend all the wait runnable, waiting for
    # a CPU: the net is never reached, and at the cap (5 x the net) the judge gives up.
    # That is the busy host's doing: no verdict (an internal error: the caller retries).
    limits = LIMITS.model_copy(update={"test_seconds": 0.05, "test_wall_seconds": 0.1})
    outcome, channel = run([READY, LOADED, *case(0), start(1), Starve()], limits=limits,
                           grace=0.0)
    assert outcome.status == "internal_error"
    assert outcome.message.startswith("the machine was too busy: the sandbox waited for a "
                                      "CPU"), outcome.message
    assert channel.kills >= 1
    # Loading too.
    outcome, _ = run([READY, Starve()], limits=limits, grace=0.0)
    assert outcome.status == "internal_error" and "too busy" in outcome.message
    # Half of the time awake: the net is reached before the cap, a time limit.
    outcome, _ = run([READY, LOADED, start(0), Starve(share=0.5)], n=1, limits=limits,
                     grace=0.0)
    assert statuses(outcome) == ["timeout"]
    # A sandbox that sleeps (its threads wait for nothing) is a time limit, as before.
    outcome, _ = run([READY, LOADED, start(0), SLEEP], n=1, limits=limits, grace=0.0)
    assert statuses(outcome) == ["timeout"]


def test_the_total_wall_clock_limit() -> None:
    limits = LIMITS.model_copy(update={"test_seconds": 5.0, "total_wall_seconds": 0.1})
    outcome, channel = run([READY, LOADED, start(0), SLEEP, *case(1)], n=2, limits=limits,
                           grace=0.0)
    assert statuses(outcome) == ["timeout", "not_run"]
    assert outcome.tests[0].message == ("the total wall-clock limit of 0.1 s was reached "
                                        "(the submission slept or waited)")
    assert max(channel.timeouts[2:]) <= 0.1


def test_silence_before_a_start_is_a_timeout() -> None:
    limits = LIMITS.model_copy(update={"test_seconds": 0.05, "test_wall_seconds": 0.05})
    outcome, _ = run([READY, LOADED, SLEEP], n=2, limits=limits, grace=0.0)
    assert statuses(outcome) == ["timeout", "not_run"]


def test_loading_is_held_to_the_cpu_limit_too() -> None:
    limits = LIMITS.model_copy(update={"test_seconds": 0.2, "test_wall_seconds": 60.0})
    outcome, _ = run([READY, Busy()], limits=limits, grace=0.1)
    assert outcome.status == "load_timeout"
    assert outcome.message == "loading the submission took over 0.2 s of CPU time"
    assert outcome.load_cpu_ms > 300
    # a module that loaded, but past its CPU time: a load timeout all the same
    outcome, _ = run([READY, Burn(0.5), LOADED, *case(0)], n=1, limits=limits, grace=0.1,
                     transfer_allowance=0.0)
    assert outcome.status == "load_timeout"


def test_a_process_killed_by_the_memory_limit_makes_the_test_a_memory_limit() -> None:
    # The harness lived on and answered, but the kernel's count says the memory limit
    # killed one of the sandbox's processes during the test: the test is over the limit.
    outcome, _ = run([READY, LOADED, *case(0), start(1), Oom(), result(1), *case(2), DONE])
    assert statuses(outcome) == ["ok", "memory", "ok"]
    assert outcome.tests[1].value is None
    assert outcome.tests[1].message == "the memory limit killed one of the submission's processes"
    # while loading: no test runs
    outcome, _ = run([READY, Oom(), LOADED, *case(0)], n=1)
    assert outcome.status == "load_memory"
    outcome, _ = run([READY, EOF], n=1, exit=ExitInfo(signal=9, oom_killed=True))
    assert outcome.status == "load_memory"


def test_a_sandbox_that_cannot_be_readied_runs_nothing() -> None:
    class Unready(ScriptedChannel):
        def admit(self) -> None:
            raise SandboxUnavailable("no control group")

    channel = Unready([READY, LOADED, *case(0)])
    outcome = supervise(channel, make_job(1), startup_seconds=1.0, grace=0.1)
    assert outcome.status == "internal_error"
    assert "no control group" in outcome.message
    assert channel.sent == [], "no code goes into a sandbox that was not readied"


def test_the_channel_is_killed_even_when_it_fails() -> None:
    class Broken(ScriptedChannel):
        def read_line(self, timeout: float) -> Any:
            raise RuntimeError("pipe broke")

    channel = Broken([])
    with pytest.raises(RuntimeError):
        supervise(channel, make_job(), startup_seconds=1.0, grace=0.1)
    assert channel.kills == 1


# -- values the codec accepts must pass the line checks ----------------------------------


def nested(levels: int, kind: str) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value] if kind == "list" else {"k": value}
    return value


@pytest.mark.parametrize("levels, kind", [(31, "list"), (32, "list"), (31, "dict"), (32, "dict")])
def test_values_within_the_codec_depth_are_accepted(levels: int, kind: str) -> None:
    # The harness encodes with max_depth=32 and sends the line; the parser's nesting cap
    # (200) counts brackets, and each list level costs two ({ and [), each dict level
    # three.
    value = nested(levels, kind)
    outcome, _ = run([READY, LOADED, *case(0, value=value), DONE], n=1)
    assert statuses(outcome) == ["ok"]


def test_brackets_inside_strings_are_not_nesting() -> None:
    outcome, _ = run([READY, LOADED, *case(0, value="[" * 70), *case(1, value={"{" * 70: 1}),
                      DONE], n=2)
    assert statuses(outcome) == ["ok", "ok"]
    assert outcome.tests[0].value.v == "[" * 70
