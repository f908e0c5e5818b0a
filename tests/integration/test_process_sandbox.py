"""The whole pipeline through the real harness in the ``process`` sandbox."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from servers import wait_for

from judge.catalog import Catalog
from judge.grading import grade
from judge.report import VerdictReport
from judge.sandbox.base import Sandbox
from judge.settings import Settings
from judge.testdata import load_tests
from judge.verdict import Verdict

pytestmark = pytest.mark.slow

CORRECT = """
def layout(num_devices, kernel_in, kernel_out):
    return [int(kernel_in), int(kernel_out) // int(num_devices)]
"""


@pytest.fixture(scope="module")
def run(catalog: Catalog, process_sandbox: Sandbox, settings: Settings):
    problem = catalog.get("demo/layout")

    def run(code: str) -> VerdictReport:
        return grade(problem, textwrap.dedent(code), sandbox=process_sandbox, settings=settings)

    return run


def verdicts(report: VerdictReport) -> list[Verdict]:
    return [t.verdict for t in report.tests]


def test_correct_submission_is_accepted_with_full_score(run) -> None:
    report = run(CORRECT)
    assert report.verdict is Verdict.ACCEPTED
    assert report.score == report.max_score == 3  # three hidden tests, samples worth 0
    assert [t.visibility for t in report.tests] == ["sample", "sample", "hidden", "hidden", "hidden"]
    assert report.sandbox == "process"
    assert report.timings.import_ms > 0 and report.timings.total_ms > report.timings.import_ms


def test_wrong_answer_is_judged_per_test_and_hides_hidden_expectations(run) -> None:
    # Right only when num_devices == 1: samples fail, hidden "one" passes.
    report = run("""
        def layout(num_devices, kernel_in, kernel_out):
            return [kernel_in, kernel_out]
    """)
    assert report.verdict is Verdict.WRONG_ANSWER
    by_name = {t.name: t for t in report.tests}
    assert by_name["one"].verdict is Verdict.ACCEPTED
    assert by_name["eight"].verdict is Verdict.WRONG_ANSWER
    assert report.score == sum(t.score for t in report.tests) >= 1
    four = by_name["four"]
    assert four.expected is not None and "16" in four.expected and "8" in four.expected
    assert four.received is not None and "32" in four.received
    eight = by_name["eight"]
    assert eight.expected is None and eight.received is None and eight.input is None
    assert "4" not in eight.message  # the expected [4, 1] is not revealed


def test_runtime_error_shows_the_message_for_samples_only(run) -> None:
    report = run("""
        def layout(num_devices, kernel_in, kernel_out):
            raise ValueError(f"secret input {kernel_in}")
    """)
    assert report.verdict is Verdict.RUNTIME_ERROR
    sample, hidden = report.tests[0], report.tests[2]
    assert "ValueError: secret input 16.0" in sample.message and "line 3" in sample.message
    assert hidden.message == "the submission raised an exception"  # no type, no line


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        ("def layout(a, b, c)\n    return 1\n", "SyntaxError"),
        ("raise RuntimeError('at import')\n", "RuntimeError: at import"),
        ("def other(a, b, c):\n    return 1\n", "no function named 'layout'"),
        ("layout = 3\n", "no function named 'layout'"),
        ("import sys\nsys.exit(0)\n", "SystemExit"),
    ],
)
def test_code_that_does_not_load_is_a_compile_error(run, code: str, needle: str) -> None:
    report = run(code)
    assert report.verdict is Verdict.COMPILE_ERROR
    assert needle in report.message
    assert set(verdicts(report)) == {Verdict.COMPILE_ERROR}


def test_endless_loop_is_stopped_by_the_alarm(run) -> None:
    report = run("""
        def layout(num_devices, kernel_in, kernel_out):
            while True:
                pass
    """)
    assert report.verdict is Verdict.TIME_LIMIT_EXCEEDED
    # The harness's own CPU-time alarm stopped it (the supervisor's kill says "used over").
    assert report.tests[0].message.startswith(
        "the test ran over its time limit of 2 s of CPU time (")
    assert report.tests[0].cpu_ms >= 2000
    assert all(t.message.startswith("not run") for t in report.tests[1:])


def test_loop_that_ignores_the_alarms_is_killed_from_outside(run) -> None:
    report = run("""
        import signal
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        signal.signal(signal.SIGPROF, signal.SIG_IGN)
        def layout(num_devices, kernel_in, kernel_out):
            while True:
                pass
    """)
    assert report.verdict is Verdict.TIME_LIMIT_EXCEEDED
    assert report.tests[0].message == "the test used over 2 s of CPU time"


def test_endless_loop_at_import_is_a_time_limit(run) -> None:
    report = run("while True:\n    pass\n")
    assert report.verdict is Verdict.TIME_LIMIT_EXCEEDED
    assert "loading" in report.message


def test_time_limit_counts_from_the_first_failing_test(run) -> None:
    # Fast on samples, slow on the hidden test with num_devices == 8.
    report = run("""
        import time
        def layout(num_devices, kernel_in, kernel_out):
            if num_devices == 8:
                time.sleep(30)
            return [int(kernel_in), int(kernel_out) // int(num_devices)]
    """)
    assert verdicts(report)[:3] == [Verdict.ACCEPTED] * 3
    assert report.tests[3].verdict is Verdict.TIME_LIMIT_EXCEEDED
    assert report.verdict is Verdict.TIME_LIMIT_EXCEEDED
    assert report.score == 1


def test_memory_error_is_a_memory_limit_verdict(run) -> None:
    report = run("""
        import numpy as np
        def layout(num_devices, kernel_in, kernel_out):
            hog = np.ones((4 << 30,), dtype=np.uint8)  # 4 GiB against a 1 GiB limit
            return [1, hog.size]
    """)
    assert report.verdict is Verdict.MEMORY_LIMIT_EXCEEDED


def test_flood_of_output_is_an_output_limit(run) -> None:
    report = run("""
        def layout(num_devices, kernel_in, kernel_out):
            while True:
                print("x" * 10000)
    """)
    assert report.verdict is Verdict.OUTPUT_LIMIT_EXCEEDED
    assert len(report.stdout.encode()) <= 16 * 1024 + 100  # capped in the report


def test_huge_and_deep_return_values_are_output_limits(run) -> None:
    huge = run("""
        import numpy as np
        def layout(num_devices, kernel_in, kernel_out):
            return np.zeros((10_000_000,))
    """)
    assert huge.verdict is Verdict.OUTPUT_LIMIT_EXCEEDED
    deep = run("""
        def layout(num_devices, kernel_in, kernel_out):
            x = []
            for _ in range(100_000):
                x = [x]
            return x
    """)
    assert deep.verdict is Verdict.OUTPUT_LIMIT_EXCEEDED


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("import os\n    os._exit(0)", "exited with status 0"),
        ("import ctypes\n    ctypes.string_at(0)", "SIGSEGV"),
        ("import os, signal\n    os.kill(os.getpid(), signal.SIGKILL)", "SIGKILL"),
    ],
)
def test_a_dead_harness_is_a_runtime_error(run, body: str, needle: str) -> None:
    report = run(f"def layout(num_devices, kernel_in, kernel_out):\n    {body}\n")
    assert report.verdict is Verdict.RUNTIME_ERROR
    assert needle in report.tests[0].message
    assert all(t.message.startswith("not run") for t in report.tests[1:])


def test_objects_are_never_compared_with_their_own_eq(run) -> None:
    report = run("""
        class Liar(list):
            def __eq__(self, other):
                return True
        class Opaque:
            def __eq__(self, other):
                return True
        def layout(num_devices, kernel_in, kernel_out):
            return Liar([0, 0]) if num_devices == 4 else Opaque()
    """)
    assert report.verdict is Verdict.WRONG_ANSWER
    assert "not a numeric array" in report.tests[1].message


def test_hidden_output_is_not_shown_but_sample_output_is(run) -> None:
    report = run("""
        print("loading")
        def layout(num_devices, kernel_in, kernel_out):
            print("input was", num_devices, kernel_in, kernel_out)
            return [int(kernel_in), int(kernel_out) // int(num_devices)]
    """)
    assert report.verdict is Verdict.ACCEPTED
    assert "loading" in report.stdout
    assert "input was 4.0 16.0 32.0" in report.stdout
    assert "input was 1.0 5.0 7.0" not in report.stdout  # a hidden input
    assert "not shown" in report.stdout


def test_the_sandbox_gives_an_empty_environment_and_a_private_directory(
    run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAXJUDGE_TEST_SECRET", "hunter2")
    report = run("""
        import os, resource, sys
        ENV = sorted(os.environ)
        CWD = os.getcwd()
        FILES = sorted(os.listdir("."))
        open("left-behind", "w").write("x")
        def layout(num_devices, kernel_in, kernel_out):
            print(ENV, CWD, FILES, resource.getrlimit(resource.RLIMIT_FSIZE), sys.stdin.read())
            return [int(kernel_in), int(kernel_out) // int(num_devices)]
    """)
    assert report.verdict is Verdict.ACCEPTED
    env, rest = report.stdout.split("]", 1)
    assert "JAXJUDGE_TEST_SECRET" not in env and "HOME" not in env and "PATH" not in env
    assert "XLA_FLAGS" in env  # set by the harness itself
    cwd = rest.split()[0]
    assert "/jaxjudge-" in cwd
    assert not Path(cwd).exists()  # removed after the run
    assert "['stderr.txt', 'stdout.txt']" in rest  # nothing but the harness's capture files
    assert f"({64 * 1024 + 1}, {64 * 1024 + 1})" in rest


def test_the_whole_process_group_is_killed(run, tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    report = run(f"""
        import os, time
        def layout(num_devices, kernel_in, kernel_out):
            if os.fork() == 0:
                open({str(pidfile)!r} + ".tmp", "w").write(str(os.getpid()))
                os.rename({str(pidfile)!r} + ".tmp", {str(pidfile)!r})
                time.sleep(600)
                os._exit(0)
            while not os.path.exists({str(pidfile)!r}):  # the child is up (the test's
                time.sleep(0.01)                           # own limit is the deadline)
            return [int(kernel_in), int(kernel_out) // int(num_devices)]
    """)
    assert report.verdict is Verdict.ACCEPTED
    pid = int(pidfile.read_text())
    wait_for(lambda: not alive(pid), 30, "the child to be killed with its group")


def alive(pid: int) -> bool:
    """Running or sleeping; a zombie (killed, waiting for a reaper) counts as dead."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def test_atexit_hooks_of_the_submission_never_run(run, tmp_path: Path) -> None:
    marker = tmp_path / "atexit-ran"
    report = run(f"""
        import atexit
        atexit.register(lambda: open({str(marker)!r}, "w").write("ran"))
        def layout(num_devices, kernel_in, kernel_out):
            return [int(kernel_in), int(kernel_out) // int(num_devices)]
    """)
    assert report.verdict is Verdict.ACCEPTED
    assert not marker.exists()


def test_sharded_results_are_checked_by_their_layout(
    catalog: Catalog, process_sandbox: Sandbox, settings: Settings
) -> None:
    problem = catalog.get("demo/sharded")
    assert load_tests(problem)[0].expected.sharding.spec == ["data", None]

    def run(spec: str) -> VerdictReport:
        code = f"""
import jax, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
def shard_batch(x):
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("data", "model"))
    return jax.device_put(x, NamedSharding(mesh, {spec}))
"""
        return grade(problem, code, sandbox=process_sandbox, settings=settings)

    assert run("P('data')").verdict is Verdict.ACCEPTED  # trailing None normalised away
    wrong = run("P(None, 'model')")
    assert wrong.verdict is Verdict.WRONG_ANSWER
    assert "PartitionSpec" in wrong.tests[1].message
    replicated = run("P()")
    assert replicated.verdict is Verdict.WRONG_ANSWER
