"""The warm pool survives the Docker engine restarting under it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from servers import wait_for

import docker
from judge.catalog import Catalog
from judge.grading import grade
from judge.sandbox import get_sandbox
from judge.sandbox.engine import OWNER_LABEL, owner_id
from judge.settings import REPO_ROOT, Settings
from judge.verdict import Verdict

pytestmark = pytest.mark.slow

CORRECT = """
def layout(num_devices, kernel_in, kernel_out):
    return [int(kernel_in), int(kernel_out) // int(num_devices)]
"""


def engine_up() -> bool:
    try:
        docker.APIClient(timeout=2).ping()
    except Exception:
        return False
    return True


def dockerd_pids() -> list[int]:
    done = subprocess.run(["pgrep", "-x", "dockerd"], capture_output=True, text=True)
    return [int(p) for p in done.stdout.split()]


def test_the_pool_recovers_after_the_engine_restarts(catalog: Catalog, settings: Settings,
                                                     tmp_path: Path) -> None:
    if not dockerd_pids():
        pytest.fail("this test restarts dockerd, which must be running on this machine")
    pooled = get_sandbox("docker", settings.model_copy(update={"pool_size": 1}))
    pool = pooled.pool  # type: ignore[attr-defined]
    problem = catalog.get("demo/layout")
    try:
        wait_for(lambda: pool.available() == 1, 60, "a ready pooled sandbox")
        before = pool.started

        subprocess.run(["pkill", "-TERM", "-x", "dockerd"], check=True)
        wait_for(lambda: not dockerd_pids(), 60, "dockerd to stop")
        subprocess.run(["bash", str(REPO_ROOT / "docker" / "engine.sh")], check=True,
                       env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                            "DOCKERD_LOG": str(tmp_path / "dockerd.log")})
        assert engine_up()

        # The container that was ready before the restart is dead: it is never handed
        # out, and the pool makes a new one by itself.
        wait_for(lambda: pool.started > before and pool.available() == 1, 120,
                 "the pool to refill after the restart")
        report = grade(problem, CORRECT, sandbox=pooled, settings=settings)
        assert report.verdict is Verdict.ACCEPTED
    finally:
        pooled.close()
        if not engine_up():
            subprocess.run(["bash", str(REPO_ROOT / "docker" / "engine.sh")], check=False)
    # Containers that died with the engine, or were half-made while it was away, are all
    # removed once it is back: nothing of this process is left.
    api = docker.APIClient()
    mine = [c["Id"][:12] for c in api.containers(all=True, filters={
        "label": f"{OWNER_LABEL}={owner_id()}"})]
    assert mine == []
