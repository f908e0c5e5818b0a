"""The docker backend against the real engine: image checks, grading, reaping, choice."""

from __future__ import annotations

import contextlib
import io
import os
import socket
import subprocess
import textwrap

import pytest

import docker
from judge.catalog import Catalog
from judge.errors import SandboxUnavailable
from judge.grading import grade
from judge.sandbox import get_sandbox
from judge.sandbox.base import Sandbox
from judge.sandbox.engine import OWNER_LABEL, SANDBOX_LABEL, reap
from judge.settings import Settings
from judge.verdict import Verdict

pytestmark = pytest.mark.slow

CORRECT = """
def layout(num_devices, kernel_in, kernel_out):
    return [int(kernel_in), int(kernel_out) // int(num_devices)]
"""


@pytest.fixture(scope="module")
def docker_sandbox(settings: Settings):
    sandbox = get_sandbox("docker", settings)
    yield sandbox
    sandbox.close()


@pytest.fixture(scope="module")
def api():
    client = docker.APIClient()
    yield client
    client.close()


def run(sandbox: Sandbox, catalog: Catalog, settings: Settings, code: str):
    return grade(catalog.get("demo/layout"), textwrap.dedent(code), sandbox=sandbox,
                 settings=settings)


def test_docker_and_process_give_the_same_verdicts(docker_sandbox, process_sandbox, catalog,
                                                    settings) -> None:
    cases = {
        CORRECT: Verdict.ACCEPTED,
        "def layout(a, b, c):\n    return [c, b]\n": Verdict.WRONG_ANSWER,
        "def layout(a, b, c):\n    raise KeyError('x')\n": Verdict.RUNTIME_ERROR,
        "def layout(a, b, c)\n": Verdict.COMPILE_ERROR,
    }
    for code, verdict in cases.items():
        in_docker = run(docker_sandbox, catalog, settings, code)
        in_process = run(process_sandbox, catalog, settings, code)
        assert in_docker.verdict is in_process.verdict is verdict
        assert [t.verdict for t in in_docker.tests] == [t.verdict for t in in_process.tests]
        assert in_docker.sandbox == "docker"


def test_the_container_is_hardened_as_documented(docker_sandbox, catalog, settings) -> None:
    report = run(docker_sandbox, catalog, settings, """
        import os, resource
        def field(name):
            for line in open("/proc/self/status"):
                if line.startswith(name + ":"):
                    return line.split()[1]
        def layout(num_devices, kernel_in, kernel_out):
            print("uid", os.getuid(), "cap", field("CapEff"), "nnp", field("NoNewPrivs"),
                  "seccomp", field("Seccomp"), "cwd", os.getcwd(),
                  "fsize", resource.getrlimit(resource.RLIMIT_FSIZE)[0],
                  "nofile", resource.getrlimit(resource.RLIMIT_NOFILE)[0],
                  "net", sorted(os.listdir("/sys/class/net")))
            return [int(kernel_in), int(kernel_out) // int(num_devices)]
    """)
    assert report.verdict is Verdict.ACCEPTED
    out = report.stdout
    assert "uid 10001 " in out and "cap 0000000000000000 " in out
    assert "nnp 1 " in out and "seccomp 2 " in out and "cwd /tmp " in out
    assert f"fsize {64 * 1024 + 1} " in out and "nofile 256 " in out
    assert "net ['lo']" in out  # --network none: loopback only


def test_a_missing_or_stale_image_is_refused(api, settings: Settings) -> None:
    missing = settings.model_copy(update={"sandbox_image": "jaxjudge-no-such-image:1"})
    with pytest.raises(SandboxUnavailable, match="missing.*make sandbox-image"):
        get_sandbox("docker", missing)
    dockerfile = f"FROM {settings.sandbox_image}\nLABEL org.jaxjudge.harness-digest=0000\n"
    tag = "jaxjudge-test-stale:latest"
    list(api.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True))
    try:
        stale = settings.model_copy(update={"sandbox_image": tag})
        with pytest.raises(SandboxUnavailable, match="stale.*make sandbox-image"):
            get_sandbox("docker", stale)
    finally:
        api.remove_image(tag, force=True)


def test_the_reaper_removes_orphans_and_keeps_live_owners(api, settings: Settings) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    host = socket.gethostname()

    def make(owner: str) -> str:
        return api.create_container(settings.sandbox_image, labels={
            SANDBOX_LABEL: "1", OWNER_LABEL: owner}, network_disabled=True)["Id"]

    orphan, live = make(f"{host}:{dead.pid}"), make(f"{host}:1")
    try:
        removed = reap(api)
        assert orphan in removed and live not in removed
        left = {c["Id"] for c in api.containers(all=True, filters={"label": SANDBOX_LABEL})}
        assert orphan not in left and live in left
        assert live in reap(api, older_than_seconds=0)  # too old: removed whatever the owner
    finally:
        for cid in (orphan, live):
            with contextlib.suppress(docker.errors.NotFound):
                api.remove_container(cid, force=True)


def test_the_docker_backend_fails_closed_without_an_engine(settings: Settings,
                                                           tmp_path) -> None:
    # Asked for by name (as the service does), it never falls back to anything: no engine
    # means no sandbox, an infrastructure failure for the caller to retry. (Only the CLI's
    # `auto` falls back to the process backend, with a warning: tests/cli.)
    sandbox = get_sandbox("auto", settings)  # with an engine and the zygote's profile
    try:
        assert sandbox.name == "zygote" and sandbox.isolated
    finally:
        sandbox.close()
    nowhere = settings.model_copy(update={"docker_host": f"unix://{tmp_path}/none.sock",
                                          "docker_timeout": 2.0})
    with pytest.raises(SandboxUnavailable, match="no Docker engine answers"):
        get_sandbox("docker", nowhere)


def test_no_sandbox_container_is_left_behind(api, docker_sandbox, catalog, settings) -> None:
    run(docker_sandbox, catalog, settings, "import os\ndef layout(a, b, c):\n    os._exit(3)\n")
    run(docker_sandbox, catalog, settings, "def layout(a, b, c):\n    while True: pass\n")
    mine = [c for c in api.containers(all=True, filters={"label": SANDBOX_LABEL})
            if c["Labels"].get(OWNER_LABEL, "").endswith(f":{os.getpid()}")]
    assert mine == []
