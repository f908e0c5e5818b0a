"""The zygote backend against the real engine: verdicts, reuse and replacement of its
containers, compile flags, the seccomp profile, and failing closed."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import docker
from judge.catalog import Catalog
from judge.errors import SandboxUnavailable
from judge.grading import grade
from judge.report import VerdictReport
from judge.sandbox import get_sandbox, resolve, seccomp
from judge.sandbox.base import Sandbox
from judge.sandbox.engine import OWNER_LABEL, ZYGOTE_LABEL, owner_id
from judge.sandbox.zygote import ZygoteSandbox
from judge.settings import Settings
from judge.verdict import Verdict

pytestmark = pytest.mark.slow

FLAGS = "--xla_llvm_disable_expensive_passes=true"
CORRECT = """
import json, os, socket
print(json.dumps({"host": socket.gethostname(), "xla": os.environ.get("XLA_FLAGS", "")}))

def layout(num_devices, kernel_in, kernel_out):
    return [int(kernel_in), int(kernel_out) // int(num_devices)]
"""


@pytest.fixture(scope="module")
def zygote(settings: Settings) -> Iterator[Sandbox]:
    sandbox = get_sandbox("zygote", settings.model_copy(update={"xla_flags": FLAGS,
                                                                "zygote_count": 1}))
    yield sandbox
    sandbox.close()


@pytest.fixture(scope="module")
def api() -> Iterator[docker.APIClient]:
    client = docker.APIClient()
    yield client
    client.close()


def run(sandbox: Sandbox, catalog: Catalog, settings: Settings, code: str,
        problem: str = "demo/layout") -> VerdictReport:
    return grade(catalog.get(problem), textwrap.dedent(code), sandbox=sandbox,
                 settings=settings)


def host_of(report: VerdictReport) -> str:
    return str(json.loads(report.stdout.splitlines()[0])["host"])


def zygote_containers(api: docker.APIClient) -> list[str]:
    return [c["Id"] for c in api.containers(
        filters={"label": [f"{OWNER_LABEL}={owner_id()}", ZYGOTE_LABEL]})]


def test_verdicts_match_the_docker_sandbox(zygote, catalog, settings) -> None:
    docker_sandbox = get_sandbox("docker", settings)
    try:
        cases = {
            CORRECT: Verdict.ACCEPTED,
            "def layout(a, b, c):\n    return [0, 0]\n": Verdict.WRONG_ANSWER,
            "def layout(a, b, c):\n    raise ValueError('no')\n": Verdict.RUNTIME_ERROR,
            "def layout(a, b, c:\n": Verdict.COMPILE_ERROR,
            "def layout(a, b, c):\n    while True: pass\n": Verdict.TIME_LIMIT_EXCEEDED,
            "def layout(a, b, c):\n    x = bytearray(2 << 30)\n    return [len(x), 0]\n":
                Verdict.MEMORY_LIMIT_EXCEEDED,
            "import os\ndef layout(a, b, c):\n    os._exit(3)\n": Verdict.RUNTIME_ERROR,
        }
        for code, verdict in cases.items():
            ours = run(zygote, catalog, settings, code)
            theirs = run(docker_sandbox, catalog, settings, code)
            assert ours.verdict is theirs.verdict is verdict, (code, ours.message)
            assert [t.verdict for t in ours.tests] == [t.verdict for t in theirs.tests], code
    finally:
        docker_sandbox.close()


def test_one_container_serves_in_turn_and_is_replaced_after_an_anomaly(
        zygote, catalog, settings, api) -> None:
    first = run(zygote, catalog, settings, CORRECT)
    second = run(zygote, catalog, settings, CORRECT)
    assert first.verdict is second.verdict is Verdict.ACCEPTED
    assert host_of(first) == host_of(second)  # the same container, two children
    # A time limit the harness's own alarm ends is a verdict like any other: the child
    # exits cleanly and the container serves on.
    looping = run(zygote, catalog, settings, "def layout(a, b, c):\n    while True: pass\n")
    assert looping.verdict is Verdict.TIME_LIMIT_EXCEEDED
    third = run(zygote, catalog, settings, CORRECT)
    assert third.verdict is Verdict.ACCEPTED and host_of(third) == host_of(second)
    # One the supervisor has to enforce (the alarms ignored) leaves a child that did not
    # exit by itself: its container is removed and the next submission gets another.
    stuck = run(zygote, catalog, settings, """
        import signal
        def layout(a, b, c):
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
            signal.signal(signal.SIGPROF, signal.SIG_IGN)
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.setitimer(signal.ITIMER_PROF, 0)
            while True:
                pass
    """)
    assert stuck.verdict is Verdict.TIME_LIMIT_EXCEEDED
    after = run(zygote, catalog, settings, CORRECT)
    assert after.verdict is Verdict.ACCEPTED and host_of(after) != host_of(second)
    assert not any(c.startswith(host_of(second)) for c in zygote_containers(api))


def test_a_container_serves_at_most_zygote_children_submissions(catalog, settings) -> None:
    sandbox = get_sandbox("zygote", settings.model_copy(update={"zygote_children": 2,
                                                                "zygote_count": 1}))
    try:
        hosts = [host_of(run(sandbox, catalog, settings, CORRECT)) for _ in range(3)]
    finally:
        sandbox.close()
    assert hosts[0] == hosts[1] != hosts[2]


def test_the_compile_flags_reach_the_child(zygote, catalog, settings) -> None:
    report = run(zygote, catalog, settings, CORRECT)
    flags = json.loads(report.stdout.splitlines()[0])["xla"].split()
    assert flags == ["--xla_force_host_platform_device_count=8", FLAGS]


def test_without_the_profile_the_zygote_does_not_start_and_auto_is_docker(
        settings, tmp_path: Path) -> None:
    missing = settings.model_copy(update={"docker_seccomp_profile": tmp_path / "none.json"})
    with pytest.raises(SandboxUnavailable, match="make sandbox-image"):
        ZygoteSandbox(missing)
    assert resolve("auto", missing) == "docker"
    assert resolve("auto", settings) == "zygote"


def test_a_child_that_cannot_be_isolated_runs_nothing(catalog, settings,
                                                      tmp_path: Path) -> None:
    """The engine's default profile, marked as ours but without the unshare rule: the
    keeper's unshare is refused, no submission code runs, and the grading is
    SandboxUnavailable (retried by the service), never a verdict."""
    profile = json.loads(seccomp.load(settings.docker_seccomp_profile))
    profile["syscalls"] = [r for r in profile["syscalls"]
                           if not (r.get("comment") == seccomp.MARK and "unshare" in r["names"])]
    path = tmp_path / "no-unshare.json"
    path.write_text(json.dumps(profile))
    sandbox = get_sandbox("zygote", settings.model_copy(update={"docker_seccomp_profile": path}))
    try:
        with pytest.raises(SandboxUnavailable, match="could not isolate"):
            run(sandbox, catalog, settings, CORRECT)
    finally:
        sandbox.close()
