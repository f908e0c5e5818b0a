"""judge.sandbox.cgroups against the real engine and this host's control groups: where a
container is accounted, found both ways; a child's own groups and their limits; the
counters the supervisor reads."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import wait_for

import docker
from judge.errors import SandboxUnavailable
from judge.sandbox import cgroups
from judge.sandbox.engine import container_cgroup
from judge.settings import Settings

pytestmark = [pytest.mark.slow, pytest.mark.service]

BURN = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"


@pytest.fixture
def container(settings: Settings) -> Iterator[tuple[docker.APIClient, str]]:
    api = docker.APIClient()
    made = api.create_container(settings.sandbox_image, entrypoint=["sleep", "300"],
                                host_config=api.create_host_config(network_mode="none"),
                                network_disabled=True)
    api.start(made["Id"])
    yield api, made["Id"]
    api.remove_container(made["Id"], force=True)
    api.close()


def test_a_container_is_found_from_its_process_and_from_the_engine_alike(
        container, settings: Settings, tmp_path: Path) -> None:
    api, cid = container
    inspect = api.inspect_container(cid)
    info = api.info()
    seen = cgroups.of_container(info, inspect, settings.cgroup_root)
    # A judge that cannot see the host's processes (an empty /proc here) finds the
    # same group from the engine's cgroup driver and the container's parent.
    derived = cgroups.of_container(info, inspect, settings.cgroup_root, proc=tmp_path)
    assert seen == derived
    assert all(cid in str(folder) for folder in seen.dirs.values())
    assert seen.cpu_ns() >= 0 and seen.oom_kills() == 0
    with pytest.raises(SandboxUnavailable, match="cannot read the CPU time"):
        cgroups.of_container(info, inspect, tmp_path, proc=tmp_path)


def test_a_child_group_has_its_own_limits_counters_and_goes(container,
                                                            settings: Settings) -> None:
    api, cid = container
    group = container_cgroup(api, cid, settings.cgroup_root)
    main = int(api.inspect_container(cid)["State"]["Pid"])
    assert cgroups.can_make_children(group, main, settings.cgroup_root)
    assert cgroups.namespace_depth(main) == cgroups.namespace_depth(1) + 1
    child = cgroups.child_of(group, 256 << 20, 32)
    try:
        assert child.dirs["memory"].parent == group.dirs["memory"]
        assert child.dirs["memory"].name.startswith("child-")
        assert int((child.dirs["memory"] / "memory.limit_in_bytes").read_text()) == 256 << 20
        assert int((child.dirs["pids"] / "pids.max").read_text()) == 32
        # A process started in the container, moved in: the child's counters are its own.
        run = api.exec_create(cid, ["python3", "-c", BURN + "time.sleep(300)\n"])
        api.exec_start(run["Id"], detach=True)
        depth = cgroups.namespace_depth(1)
        burner = wait_for(lambda: [p for p in cgroups.processes_below(group, depth)
                                   if p != main], 30, "the burner in the container")
        assert not child.run_delays() and child.cpu_ns() == 0
        for pid in burner:
            child.add(pid)
        assert set(child.run_delays()) >= set(burner)
        wait_for(lambda: child.cpu_ns() > 0, 30, "CPU time counted in the child's group")
        assert child.oom_kills() == 0
        assert cgroups.processes_below(group, depth) == [main]  # the container's own: left
    finally:
        for pid in (child.dirs["cpuacct"] / "cgroup.procs").read_text().split():
            group.add(int(pid))  # back to the container's, so that the child's can go
        assert child.remove()
    assert not any(folder.exists() for folder in child.dirs.values())
