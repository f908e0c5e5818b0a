"""The warm pool (judge.sandbox.pool.WarmPool): containers started ahead, each past the jax
import and waiting for a job. One serves exactly one submission and is removed; the pool
refills; a container that died while waiting is never handed out; and at hand-out its
limits are lowered to the problem's (pooled containers start with 4096 MiB and a 16 MiB
file size limit)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator

import docker.errors
import pytest
from docker.api import APIClient

from judge.catalog import Catalog
from judge.grading import grade
from judge.report import VerdictReport
from judge.sandbox import get_sandbox
from judge.sandbox.base import Sandbox
from judge.settings import Settings
from judge.verdict import Verdict

from .support import CORRECT_LAYOUT, TOKEN, describe, facts, header, our_containers, wait_until

pytestmark = pytest.mark.slow

POOL_SIZE = 2
WHO = """
import json, os, resource
def cgroup_memory():
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            return int(open(path).read())
        except (OSError, ValueError):
            pass
print("@@", json.dumps({"host": os.environ.get("HOSTNAME"), "memory": cgroup_memory(),
                        "fsize": resource.getrlimit(resource.RLIMIT_FSIZE)[0],
                        "left": sorted(os.listdir("/tmp")), "shm": sorted(os.listdir("/dev/shm"))}))
"""


@pytest.fixture(scope="module")
def pool_settings(settings: Settings) -> Settings:
    return Settings(problems_dir=settings.problems_dir, pool_size=POOL_SIZE)


@pytest.fixture(scope="module")
def pool_sandbox(pool_settings: Settings) -> Iterator[Sandbox]:
    sandbox = get_sandbox("docker", pool_settings)
    assert getattr(sandbox, "pool", None) is not None
    yield sandbox
    sandbox.close()


@pytest.fixture
def pool(pool_sandbox: Sandbox):
    p = pool_sandbox.pool  # type: ignore[attr-defined]
    assert wait_until(lambda: p.available() == POOL_SIZE, 90), "the pool never filled"
    return p


@pytest.fixture(scope="module")
def judge_pooled(catalog: Catalog, security_catalog: Catalog, pool_sandbox: Sandbox,
                 pool_settings: Settings) -> Callable[..., VerdictReport]:
    def run(code: str, problem: str = "demo/layout", label: str = "") -> VerdictReport:
        source = header(TOKEN=TOKEN) + WHO + textwrap.dedent(code)
        found = (security_catalog if problem.startswith("security/") else catalog).get(problem)
        return grade(found, source, sandbox=pool_sandbox, settings=pool_settings, label=label)

    return run


def ready_hosts(pool) -> set[str]:
    """The hostnames (short container ids) of the containers waiting in the pool."""
    return {channel.cid[:12] for channel in list(pool.ready.queue)}


def test_a_pooled_container_serves_exactly_one_submission(
    pool, judge_pooled, docker_api: APIClient
) -> None:
    waiting = ready_hosts(pool)
    first = judge_pooled(CORRECT_LAYOUT + """
for place in ("/tmp", "/dev/shm"):
    open(os.path.join(place, TOKEN), "w").write("left by the first submission")
""", label=f"{TOKEN}-first")
    assert first.verdict is Verdict.ACCEPTED, describe(first)
    one = facts(first)
    assert one["host"] in waiting, (one, waiting)  # served by a warm container
    second = judge_pooled(CORRECT_LAYOUT, label=f"{TOKEN}-second")
    assert second.verdict is Verdict.ACCEPTED, describe(second)
    two = facts(second)
    assert two["host"] != one["host"], "a pooled container served two submissions"
    assert TOKEN not in two["left"] and TOKEN not in two["shm"], two
    assert two["left"] == ["stderr.txt", "stdout.txt"], two
    with pytest.raises(docker.errors.NotFound):  # the first one's container is gone
        docker_api.inspect_container(one["host"])


def test_the_pool_refills_after_each_submission(pool, judge_pooled) -> None:
    started = pool.started
    for _ in range(2):
        report = judge_pooled(CORRECT_LAYOUT)
        assert report.verdict is Verdict.ACCEPTED, describe(report)
    assert wait_until(lambda: pool.available() == POOL_SIZE, 90), "the pool did not refill"
    assert pool.started >= started + 2


def test_a_pooled_container_killed_from_outside_is_never_handed_out(
    pool, judge_pooled, docker_api: APIClient
) -> None:
    killed = ready_hosts(pool)
    for host in killed:
        docker_api.kill(host)
    report = judge_pooled(CORRECT_LAYOUT)  # at once, before the filler notices
    assert report.verdict is Verdict.ACCEPTED, describe(report)
    assert facts(report)["host"] not in killed
    # The dead ones are dropped and removed, and the pool fills up again.
    assert wait_until(lambda: pool.available() == POOL_SIZE and not any(
        c["Id"][:12] in killed for c in our_containers(docker_api)), 90)


def test_a_pooled_container_gets_the_problems_limits(pool, judge_pooled) -> None:
    waiting = ready_hosts(pool)
    # security/vault: 1024 MiB, 64 KiB of output, 30 s a test (time to fill a GiB).
    report = judge_pooled("""
        def vault(key):
            hog = []
            while True:  # far past the problem's 1024 MiB, short of the pool's 4096 MiB
                hog.append(b"\\\\x01" * (64 << 20))
    """, problem="security/vault")
    seen = facts(report)
    assert seen["host"] in waiting, (seen, waiting)
    assert seen["memory"] == 1024 << 20, seen  # lowered from pool_memory_mb at hand-out
    assert seen["fsize"] == 64 * 1024 + 1, seen  # lowered by the harness before loading
    assert report.verdict is Verdict.MEMORY_LIMIT_EXCEEDED, describe(report)
    # the first (sample) test met the OOM killer; the others were not run
    assert "killed for exceeding the memory limit" in report.tests[0].message, describe(report)
    assert all(t.message.startswith("not run") for t in report.tests[1:]), describe(report)
