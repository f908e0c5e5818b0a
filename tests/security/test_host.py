"""Attacks on the host: its environment, the Docker socket, its processes, and the
privileges a container escape starts from (root, capabilities, namespaces, mounts)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

import docker.errors
import pytest
from docker.api import APIClient

from judge.sandbox import seccomp
from judge.sandbox.base import Sandbox
from judge.sandbox.engine import owner_id
from judge.settings import Settings
from judge.verdict import Verdict

from .support import Judge, describe, facts, our_containers

pytestmark = pytest.mark.slow

RIGHT = "return [int(kernel_in), int(kernel_out) // int(num_devices)]"
SECRET_NAME = "JAXJUDGE_SECURITY_SUITE_SECRET"


def test_the_hosts_environment_is_not_visible(
    judge_layout: Judge, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "hunter2-" + os.urandom(6).hex()
    monkeypatch.setenv(SECRET_NAME, secret)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    assert os.environ["PYTEST_CURRENT_TEST"]  # another canary, set by pytest itself
    report = judge_layout(f"""
        import json, os
        # The environment now, the one PID 1 started with, and the one of every process.
        SEEN = {{"now": dict(os.environ),
                 "initial": open("/proc/1/environ", "rb").read().decode(errors="replace"),
                 "others": [open(f"/proc/{{p}}/environ", "rb").read().decode(errors="replace")
                            for p in os.listdir("/proc") if p.isdigit()]}}
        TEXT = json.dumps(SEEN)
        print("@@", json.dumps({{"keys": sorted(os.environ)}}))

        def layout(num_devices, kernel_in, kernel_out):
            if "hunter2" in TEXT or "PYTEST" in TEXT or "AWS" in TEXT:
                print(TEXT)
                return [0, 0]
            {RIGHT}
    """)
    assert report.verdict is Verdict.ACCEPTED, describe(report)
    keys = facts(report)["keys"]
    assert SECRET_NAME not in keys and "AWS_SECRET_ACCESS_KEY" not in keys
    assert "PYTEST_CURRENT_TEST" not in keys and "VIRTUAL_ENV" not in keys, keys
    assert "XLA_FLAGS" in keys  # set by the image and the harness: the listing is real
    assert secret not in report.model_dump_json()


def test_no_docker_socket_and_no_engine_api(judge_layout: Judge) -> None:
    report = judge_layout(f"""
        import errno, json, os, socket, stat

        def sockets():
            found = []
            for root, dirs, files in os.walk("/"):
                if root == "/":
                    dirs[:] = [d for d in dirs if d not in ("proc", "sys")]
                for name in files + dirs:
                    path = os.path.join(root, name)
                    try:
                        if stat.S_ISSOCK(os.lstat(path).st_mode):
                            found.append(path)
                    except OSError:
                        pass
            return found

        def tcp(port):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=3).close()
                return "connected"
            except OSError as exc:
                return errno.errorcode.get(exc.errno, str(exc))

        PATHS = ["/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
                 "/var/run/docker", "/var/lib/docker", "/run/containerd"]
        SEEN = {{"paths": [p for p in PATHS if os.path.lexists(p)], "sockets": sockets(),
                 "tcp 2375": tcp(2375), "tcp 2376": tcp(2376)}}
        print("@@", json.dumps(SEEN))

        def layout(num_devices, kernel_in, kernel_out):
            if SEEN["paths"] or SEEN["sockets"] or "connected" in SEEN.values():
                return [0, 0]
            {RIGHT}
    """)
    assert report.verdict is Verdict.ACCEPTED, describe(report)
    seen = facts(report)
    assert seen["paths"] == [] and seen["sockets"] == [], seen
    assert seen["tcp 2375"] == seen["tcp 2376"] == "ECONNREFUSED", seen


def test_only_the_sandboxs_own_processes_are_visible(judge_layout: Judge) -> None:
    report = judge_layout(f"""
        import errno, json, os

        def signal_everyone():
            try:
                os.kill(-1, 0)  # every process we may signal, but ourselves
                return "some"
            except OSError as exc:
                return errno.errorcode.get(exc.errno)

        def look():
            pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
            return {{"pids": pids,
                     "cmdline": open("/proc/1/cmdline", "rb").read().split(b"\\0")[6].decode(),
                     "ppid": os.getppid(), "host pid visible": os.path.exists(f"/proc/{{HOST_PID}}"),
                     "kill -1": signal_everyone()}}

        print("@@", json.dumps({{"import": look()}}))

        def layout(num_devices, kernel_in, kernel_out):
            print("@@", json.dumps({{"call": look()}}))
            {RIGHT}
    """, HOST_PID=os.getpid())
    assert report.verdict is Verdict.ACCEPTED, describe(report)
    for phase in ("import", "call"):
        seen = facts(report)[phase]
        assert seen["pids"] == [1], seen  # the harness alone (threads are not listed)
        assert seen["cmdline"] == "judge.harness", seen
        assert seen["ppid"] == 0, seen  # its parent is outside the PID namespace
        assert seen["host pid visible"] is False
        assert seen["kill -1"] == "ESRCH", seen  # nobody else to signal


def test_no_root_no_capabilities_no_new_privileges(judge_layout: Judge) -> None:
    report = judge_layout(f"""
        import ctypes, errno, json, os, resource

        libc = ctypes.CDLL(None, use_errno=True)
        CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWPID = 0x20000, 0x10000000, 0x40000000, 0x20000000

        def call(fn, *args):
            ctypes.set_errno(0)
            result = fn(*args)
            return "ok" if result == 0 else errno.errorcode.get(ctypes.get_errno(), str(result))

        def raise_limit(which):
            try:
                resource.setrlimit(which, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
                return "ok"
            except (ValueError, OSError) as exc:
                return type(exc).__name__

        def attack():
            status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
            return {{
                "ids": [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), os.getgroups()],
                "status": {{k: status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd",
                                                           "CapAmb", "NoNewPrivs", "Seccomp")}},
                "setuid(0)": call(libc.setuid, 0),
                "setgid(0)": call(libc.setgid, 0),
                "setgroups": call(libc.setgroups, 0, None),
                "unshare user": call(libc.unshare, CLONE_NEWUSER),
                "unshare mount": call(libc.unshare, CLONE_NEWNS),
                "unshare user+mount": call(libc.unshare, CLONE_NEWUSER | CLONE_NEWNS),
                "unshare net": call(libc.unshare, CLONE_NEWNET),
                "unshare pid": call(libc.unshare, CLONE_NEWPID),
                "mount tmpfs": call(libc.mount, b"none", b"/tmp", b"tmpfs", 0, None),
                "mount cgroup": call(libc.mount, b"cgroup", b"/tmp", b"cgroup", 0, b"rdma"),
                "remount /": call(libc.mount, None, b"/", None, 32, None),  # MS_REMOUNT, read-write
                "chroot": call(libc.chroot, b"/tmp"),
                "sethostname": call(libc.sethostname, b"pwned", 5),
                "mknod": call(libc.mknod, b"/tmp/sda", 0o60600, os.makedev(8, 0)),
                "raise fsize": raise_limit(resource.RLIMIT_FSIZE),
                "raise nofile": raise_limit(resource.RLIMIT_NOFILE),
            }}

        AT_IMPORT = attack()
        print("@@", json.dumps({{"import": AT_IMPORT}}))

        def layout(num_devices, kernel_in, kernel_out):
            at_call = attack()
            print("@@", json.dumps({{"call": at_call}}))
            if "ok" in list(AT_IMPORT.values()) + list(at_call.values()):
                return [0, 0]
            {RIGHT}
    """)
    assert report.verdict is Verdict.ACCEPTED, describe(report)
    for phase in ("import", "call"):
        seen = facts(report)[phase]
        assert seen["ids"] == [10001, 10001, 10001, 10001, [10001]], seen
        assert seen["status"] == {"CapInh": "0000000000000000", "CapPrm": "0000000000000000",
                                  "CapEff": "0000000000000000", "CapBnd": "0000000000000000",
                                  "CapAmb": "0000000000000000", "NoNewPrivs": "1",
                                  "Seccomp": "2"}, seen
        denied = {k: v for k, v in seen.items() if k not in ("ids", "status")}
        assert "ok" not in denied.values(), denied
        assert denied["setuid(0)"] == denied["setgid(0)"] == "EPERM", denied
        assert denied["unshare user"] == "EPERM" and denied["mount tmpfs"] == "EPERM", denied
        assert denied["raise fsize"] == denied["raise nofile"] == "ValueError", denied


def test_killing_the_parent_or_everyone_reaches_nothing_outside(
    judge_layout: Judge, still_healthy, docker_api: APIClient
) -> None:
    dockerd = [p for p in os.listdir("/proc") if p.isdigit() and _comm(p) in ("dockerd", "containerd")]
    report = judge_layout("""
        import errno, json, os, signal

        def kill(pid, sig):
            try:
                os.kill(pid, sig)
                return "sent"
            except OSError as exc:
                return errno.errorcode.get(exc.errno)

        def layout(num_devices, kernel_in, kernel_out):
            seen = {"ppid": os.getppid(), "getpgrp": os.getpgrp()}
            for name, pid in (("parent", os.getppid()), ("pid 1", 1), ("everyone", -1),
                              ("own group", 0), ("host pid", HOST_PID)):
                for sig in (signal.SIGTERM, signal.SIGKILL):
                    seen[f"{name} {sig.name}"] = kill(pid, sig)
            print("@@", json.dumps(seen))
            return [int(kernel_in), int(kernel_out) // int(num_devices)]
    """, HOST_PID=os.getpid())
    # The harness is PID 1 of its namespace: the kernel drops signals it sent to itself
    # (or its group) that it has no handler for. Were it killed, that would be a runtime
    # error; either way nothing outside the sandbox is reachable.
    assert report.verdict in (Verdict.ACCEPTED, Verdict.RUNTIME_ERROR), describe(report)
    if report.verdict is Verdict.ACCEPTED:
        seen = facts(report)
        assert seen["ppid"] == 0, seen
        assert seen["everyone SIGKILL"] == "ESRCH", seen  # no other process in sight
        assert seen["host pid SIGKILL"] == "ESRCH", seen
    for pid in dockerd:
        assert os.path.exists(f"/proc/{pid}"), "the Docker engine died"
    assert docker_api.ping()
    still_healthy()


def _comm(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""



def test_the_running_container_is_created_hardened(
    judge_layout: Judge, docker_api: APIClient, settings: Settings, docker_sandbox: Sandbox
) -> None:
    # Inspect the sandbox from the host while a submission sleeps in it (the last look
    # before the run ended: a zygote's container exists before, with the pool's limits).
    seen: list[dict] = []
    child_limits: set[tuple[int, int, int]] = set()  # a zygote's child's own groups
    graded = threading.Event()

    def inspect() -> None:
        deadline = time.monotonic() + 20
        while not graded.is_set() and time.monotonic() < deadline:
            for info in our_containers(docker_api):
                try:
                    seen.append(docker_api.inspect_container(info["Id"]))
                except docker.errors.NotFound:
                    continue
                for child in Path("/sys/fs/cgroup/memory/docker", info["Id"]).glob("child-*"):
                    with contextlib.suppress(OSError, ValueError):
                        pids = Path("/sys/fs/cgroup/pids/docker", info["Id"], child.name)
                        child_limits.add((
                            int((child / "memory.limit_in_bytes").read_text()),
                            int((child / "memory.memsw.limit_in_bytes").read_text()),
                            int((pids / "pids.max").read_text())))
            time.sleep(0.05)

    watcher = threading.Thread(target=inspect)
    watcher.start()
    try:
        report = judge_layout("""
            import time
            def layout(num_devices, kernel_in, kernel_out):
                if num_devices == 4:
                    time.sleep(1.5)
                return [int(kernel_in), int(kernel_out) // int(num_devices)]
        """)
    finally:
        graded.set()
        watcher.join()
    assert report.verdict is Verdict.ACCEPTED, describe(report)
    assert seen, "no sandbox container was seen while the submission ran"
    config, host = seen[-1]["Config"], seen[-1]["HostConfig"]
    zygote = docker_sandbox.name == "zygote"
    assert host["NetworkMode"] == "none" and config.get("NetworkDisabled") is True
    assert host["ReadonlyRootfs"] is True and host["Privileged"] is False
    assert host["CapDrop"] == ["ALL"] and not host.get("CapAdd")
    assert "no-new-privileges" in (host.get("SecurityOpt") or [])
    assert not any("seccomp=unconfined" in o or "apparmor=unconfined" in o
                   for o in host.get("SecurityOpt") or [])
    if zygote:
        # The zygote's profile: the engine's default plus unshare and mount (its children
        # refuse both again); /proc unmasked, each child masks its own fresh /proc.
        profiles = [o for o in host["SecurityOpt"] if o.startswith("seccomp=")]
        assert profiles == [f"seccomp={seccomp.load(settings.docker_seccomp_profile)}"]
        assert host["MaskedPaths"] == [] and host["ReadonlyPaths"] == []
    else:
        assert "/proc/kcore" in host["MaskedPaths"] and "/proc/sys" in host["ReadonlyPaths"]
    assert host["PidsLimit"] == 128
    if zygote:
        # The container keeps the pool's memory; the child ran in groups of its own with
        # the problem's memory (no swap) and the process limit (this host: cgroup v1, and
        # the judge is root on it).
        assert host["Memory"] == host["MemorySwap"] == settings.pool_memory_mb << 20
        assert child_limits == {(1024 << 20, 1024 << 20, 128)}, child_limits
    else:
        assert host["Memory"] == host["MemorySwap"] == 1024 << 20  # the problem's, no swap
    assert host["NanoCpus"] > 0 and host["CpusetCpus"]
    assert "noexec" in host["Tmpfs"]["/tmp"] and "size=64m" in host["Tmpfs"]["/tmp"]
    assert host["LogConfig"]["Type"] == "none"
    assert not host.get("Binds") and not seen[0].get("Mounts") and not host.get("Devices")
    assert host["PidMode"] in ("", "private") and host["IpcMode"] in ("private", "shareable")
    assert host["UTSMode"] == "" and host["UsernsMode"] == ""
    assert config["User"] == "10001:10001"
    image_env = docker_api.inspect_image(settings.sandbox_image)["Config"].get("Env") or []
    # Nothing from the host; the judge's compile flags (a zygote's children get them in
    # each SPAWN instead).
    flags = [f"JAXJUDGE_XLA_FLAGS={settings.xla_flags}"] if settings.xla_flags and not zygote else []
    assert sorted(config.get("Env") or []) == sorted(image_env + flags)
    assert config["Labels"]["org.jaxjudge.sandbox"] == "1"
    assert config["Labels"]["org.jaxjudge.owner"] == owner_id()
    ulimits = {u["Name"]: (u["Soft"], u["Hard"]) for u in host["Ulimits"]}
    # A zygote's container starts with the pool's file size; each child lowers its own to
    # the problem's (test_no_root_no_capabilities_no_new_privileges: it cannot raise it).
    fsize = settings.pool_output_bytes if zygote else 64 * 1024 + 1
    assert ulimits["fsize"] == (fsize,) * 2 and ulimits["core"] == (0, 0)
    assert ulimits["nofile"][1] <= 1024
