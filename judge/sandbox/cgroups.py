"""The kernel's own accounting of a sandbox, read (and for a zygote's child, set up) on
the trusted side, where the submission cannot reach.

A container's control group holds every process and thread it runs, whatever they do:
its CPU counter (``cpuacct.usage`` in cgroup v1, ``cpu.stat``'s ``usage_usec`` in v2)
is the CPU time the submission's whole process tree used, XLA's threads included, and
its memory controller's ``oom_kill`` count says whether the memory limit struck. The
judge reads them from the host's cgroup file system (``cgroup_root``, normally
``/sys/fs/cgroup``; a judge that runs in a container of its own mounts the host's there
read-only): nothing inside the sandbox can forge them.

A zygote's children share their container's group. Where the judge may write the
container's group (cgroup v1, the judge root on the host and seeing the host's process
ids), each child gets groups of its own below it (:func:`child_of`): its own memory
limit, so the memory limit's victim is always the child and never the zygote; its own
CPU counter; its own process limit; its own counters, so that no child starts with the
last one's numbers. Elsewhere the child is accounted in its container's group (see
docs/security.md for what that leaves).

Hand-written: no well-kept Python library reads and creates cgroups of both versions
without a daemon (systemd's D-Bus API only places whole units; libcgroup's Python
binding is not on PyPI); what is needed is a few files.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from judge.errors import SandboxUnavailable

V1_CONTROLLERS = ("memory", "cpuacct", "pids")  # what a child's groups are made in


@dataclass
class Cgroup:
    """One control group: in v1 a folder per controller, in v2 one folder."""

    version: int
    dirs: dict[str, Path] = field(default_factory=dict)  # controller -> folder

    def _read(self, controller: str, name: str) -> str:
        with open(self.dirs[controller] / name) as f:
            return f.read()

    def cpu_ns(self) -> int:
        """CPU time used by every process that ran in the group, in nanoseconds."""
        if self.version == 1:
            return int(self._read("cpuacct", "cpuacct.usage"))
        for line in self._read("cpu", "cpu.stat").splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) * 1000
        raise OSError(errno.ENODATA, "cpu.stat has no usage_usec")

    def oom_kills(self) -> int:
        """How many processes the group's own memory limit killed."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            text = self._read("memory", name)
        except (OSError, KeyError):
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def run_delays(self, proc: Path = Path("/proc")) -> dict[int, int]:
        """Per thread of the group (as this judge's ``/proc`` shows it), the nanoseconds
        it has spent runnable but waiting for a CPU (``schedstat``'s run delay)."""
        name = "tasks" if self.version == 1 else "cgroup.threads"
        controller = "cpuacct" if self.version == 1 else "cpu"
        return thread_delays(self._read(controller, name).split(), proc)

    def add(self, pid: int) -> None:
        """Move process ``pid`` (all its threads) into the group."""
        for folder in dict.fromkeys(self.dirs.values()):
            with open(folder / "cgroup.procs", "w") as f:
                f.write(str(pid))

    def remove(self) -> bool:
        """Remove the group's folders (once no process is left in them)."""
        done = True
        for folder in dict.fromkeys(self.dirs.values()):
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                done = False
        return done


def _parse_proc_cgroup(text: str) -> tuple[dict[str, str], str | None]:
    """``/proc/PID/cgroup``: the v1 path of each controller, and the v2 path."""
    v1: dict[str, str] = {}
    v2 = None
    for line in text.splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            v2 = path
        for name in controllers.split(","):
            if name and not name.startswith("name="):
                v1[name] = path
    return v1, v2


def of_process(pid: int, root: Path, proc: Path = Path("/proc")) -> Cgroup:
    """The group process ``pid`` is in, as the host's ``/proc`` and ``root`` show it.
    Raises OSError when it cannot be read (the process is gone, or not visible here)."""
    v1, v2 = _parse_proc_cgroup((proc / str(pid) / "cgroup").read_text())
    if "cpuacct" in v1:
        dirs = {c: root / c / v1[c].lstrip("/") for c in V1_CONTROLLERS if c in v1}
        if not (dirs["cpuacct"] / "cpuacct.usage").exists():
            raise FileNotFoundError(dirs["cpuacct"] / "cpuacct.usage")
        return Cgroup(1, dirs)
    if v2 is not None:
        folder = root / v2.lstrip("/")
        if not (folder / "cpu.stat").exists():
            raise FileNotFoundError(folder / "cpu.stat")
        return Cgroup(2, {c: folder for c in ("cpu", "memory", "pids")})
    raise FileNotFoundError(f"no cpu accounting group for process {pid}")


def of_container(engine_info: dict, inspect: dict, root: Path,
                 proc: Path = Path("/proc")) -> Cgroup:
    """A started container's group, from the host's ``/proc`` when its main process is
    visible here, else from where the engine puts it (its cgroup driver and parent).
    Raises SandboxUnavailable when neither can be read: a judge that cannot measure a
    sandbox's CPU time does not run one (fail closed)."""
    pid = int((inspect.get("State") or {}).get("Pid") or 0)
    tried = []
    if pid > 0:
        try:
            return of_process(pid, root, proc)
        except (OSError, ValueError) as exc:
            tried.append(str(exc))
    cid = inspect["Id"]
    parent = ((inspect.get("HostConfig") or {}).get("CgroupParent") or "").strip("/")
    if engine_info.get("CgroupDriver") == "systemd":
        relative = f"{parent or 'system.slice'}/docker-{cid}.scope"
    else:
        relative = f"{parent or 'docker'}/{cid}"
    if str(engine_info.get("CgroupVersion", "1")) == "2":
        folder = root / relative
        if (folder / "cpu.stat").exists():
            return Cgroup(2, {c: folder for c in ("cpu", "memory", "pids")})
        tried.append(f"{folder / 'cpu.stat'} is not there")
    else:
        dirs = {c: root / c / relative for c in V1_CONTROLLERS}
        if (dirs["cpuacct"] / "cpuacct.usage").exists():
            return Cgroup(1, dirs)
        tried.append(f"{dirs['cpuacct'] / 'cpuacct.usage'} is not there")
    raise SandboxUnavailable(
        f"cannot read the CPU time of sandbox {cid[:12]} from the host's cgroups under "
        f"{root} ({'; '.join(tried)}); a judge in a container needs the host's "
        "/sys/fs/cgroup mounted (JAXJUDGE_CGROUP_ROOT)")


def can_make_children(group: Cgroup, main_pid: int, root: Path,
                      proc: Path = Path("/proc")) -> bool:
    """Whether groups may be made below ``group`` (a container's, whose main process is
    ``main_pid``) and processes moved into them from here: cgroup v1 (v2 forbids
    processes in a group whose controllers serve children), every controller's folder
    writable, and the host's process ids visible (``main_pid`` is in ``group`` as this
    judge's ``/proc`` shows it)."""
    if group.version != 1 or set(group.dirs) != set(V1_CONTROLLERS):
        return False
    if not all(os.access(d, os.W_OK) for d in group.dirs.values()):
        return False
    try:
        return of_process(main_pid, root, proc).dirs == group.dirs
    except (OSError, ValueError):
        return False


def child_of(parent: Cgroup, memory_bytes: int, pids_max: int) -> Cgroup:
    """New groups for one child below ``parent`` (v1), with the child's memory limit
    (memory and memory+swap) and process limit. Named at random: the name shows in the
    child's ``/proc/self/cgroup``, and a count would tell how many came before."""
    name = f"child-{secrets.token_hex(6)}"
    group = Cgroup(1, {c: parent.dirs[c] / name for c in V1_CONTROLLERS})
    try:
        for folder in group.dirs.values():
            folder.mkdir()
        memory = group.dirs["memory"]
        (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
        with contextlib.suppress(FileNotFoundError):  # no swap accounting on this kernel
            (memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        (group.dirs["pids"] / "pids.max").write_text(str(pids_max))
    except OSError:
        group.remove()
        raise
    return group


def namespace_depth(pid: int, proc: Path = Path("/proc")) -> int:
    """How many PID namespaces process ``pid`` is in, counting this judge's (``NSpid``
    lists its id in each). Raises OSError when it is gone."""
    for line in (proc / str(pid) / "status").read_text().splitlines():
        if line.startswith("NSpid:"):
            return len(line.split()) - 1
    raise OSError(errno.ENOENT, f"no NSpid for process {pid}")


def processes_below(group: Cgroup, depth: int, proc: Path = Path("/proc")) -> list[int]:
    """Ids (as this judge sees them) of the processes in ``group`` that are in more than
    ``depth`` PID namespaces: a zygote's child and what it started, one level below the
    container's own processes."""
    found = []
    for pid in (group.dirs["cpuacct"] / "cgroup.procs").read_text().split():
        with contextlib.suppress(OSError):
            if namespace_depth(int(pid), proc) > depth:
                found.append(int(pid))
    return found


def thread_delays(tids: list[str], proc: Path = Path("/proc")) -> dict[int, int]:
    """``tid -> run delay`` (ns) of the threads that still exist."""
    delays = {}
    for tid in tids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            delays[int(tid)] = int((proc / tid / "schedstat").read_text().split()[1])
    return delays
