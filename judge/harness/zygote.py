"""The zygote: imports jax and flax once, then forks one isolated child per submission.

It runs in a long-lived sandbox container (``python -m judge.harness zygote``) with every
hardening a fresh container has, and a seccomp profile that is the engine's default plus
``unshare`` (with exactly the flags below) and ``mount`` (``judge.sandbox.seccomp``). It is
trusted code; the children are not. For each ``spawn`` it forks:

- **the keeper**, which enters fresh user, mount, PID, IPC, network and UTS namespaces
  (``unshare``) and maps only the sandbox's own uid and gid in them, forks the child and
  waits for it. It stays outside the child's PID namespace and never runs submission code.
- **the child**, PID 1 of the new PID namespace: it cannot see or signal the zygote or the
  keeper, and when it exits the kernel kills everything it started. It makes its mounts
  private, mounts a ``/proc`` of its own PID namespace with Docker's masks put back, lays
  fresh tmpfs over every place a process may write (``/tmp``, ``/dev/shm``,
  ``/dev/mqueue``), hides its container's control groups (``/sys/fs/cgroup``: their
  counters add up every child's peak memory, CPU time and processes), brings its
  loopback up, drops every capability (its user namespace gave it a full set), installs
  its own seccomp filter refusing ``unshare``, ``mount`` and ``umount2`` (what the zygote
  needed and the submission must not have), marks itself first to die when memory runs
  out, and only then serves one submission through the ordinary harness
  (:func:`judge.harness.runner.serve`), which brings the devices up. Once it is ready, and
  before any submission code runs, the trusted side may move it into control groups of
  its own (``judge.sandbox.zygote``).

Nothing of a child outlives it: its processes die with its PID namespace, its files with
its tmpfs, its IPC objects with its IPC namespace, its sockets with its network
namespace, and its changes to modules with its address space. The zygote is not dumpable,
so no child may open its memory through ``/proc``; it holds no descriptor a child keeps
(every descriptor but the child's three pipes is closed before ``unshare``).

The zygote itself stays pristine: it reads nothing but ``SPAWN`` frames, byte-exact, and
forks a **relay** per child that carries the child's bytes and dies with it. So no code,
input or output of one submission is ever in the memory the next child is copied from.

Frames, both ways on the container's standard input and output: a byte of kind, four bytes
of length (big-endian), the payload. In: ``SPAWN`` (JSON: the child's tmpfs size and compile flags), ``DATA``
(bytes for the child's standard input), ``CLOSE`` (its end of input), ``DONE`` (the
trusted side has seen ``EXIT`` and sends nothing more for this child). Out: ``READY``
(JSON, once), ``DATA`` (what the child wrote on its protocol descriptor), ``DIAG`` (its
standard error, capped), ``EXIT`` (JSON: how it ended, and how many processes the memory
limit killed meanwhile). The child's bytes travel only inside ``DATA`` and ``DIAG``
frames, so nothing it writes can pose as the zygote or as another child.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import selectors
import struct
import time
from typing import Any

from judge.harness import HARNESS_VERSION, runner

HEADER = struct.Struct(">BI")
SPAWN, DATA, CLOSE, READY, DIAG, EXIT, DONE = 1, 2, 3, 4, 5, 6, 7
MAX_FRAME = 96 << 20  # a test's inputs (64 MiB) and its framing, with room
DIAG_BYTES = 64 << 10  # a child's standard error kept, per child
CHUNK = 1 << 16

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
# The one flag set the seccomp profile lets ``unshare`` take (judge.sandbox.seccomp).
UNSHARE_FLAGS = (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET
                 | CLONE_NEWUTS)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 0x1, 0x2, 0x4, 0x8, 0x20
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
# What Docker hides and makes read-only in a container's /proc and /sys by default. The
# zygote's container is started without them (a fresh /proc can be mounted only where the
# container's is fully visible); each child mounts its own /proc and puts them back.
MASKED_PATHS = ("/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys",
                "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                "/proc/sched_debug", "/proc/scsi", "/sys/firmware")
READONLY_PATHS = ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")
# Hidden from every child as well: its container's control groups, whose counters (peak
# memory, CPU time, processes, memory-limit kills) every child of the container adds to,
# so one child could read what the one before it did, or leave it a message. The judge
# reads them from the host.
CHILD_MASKED_PATHS = ("/sys/fs/cgroup",)
PR_SET_DUMPABLE, PR_CAPBSET_DROP = 4, 24
LINUX_CAPABILITY_VERSION_3 = 0x20080522
SCRATCH = ("/tmp", "/dev/shm", "/dev/mqueue")  # every place the container lets uid 10001 write
KEEPER_FAILED = 111  # the keeper's status when isolating failed: no submission code ran


class IsolationError(Exception):
    """A child could not be isolated: it must not run anything."""


_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise IsolationError(f"{what}: {os.strerror(errno)}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def enter_namespaces(uid: int, gid: int) -> None:
    """The keeper: fresh namespaces, and only our own ids mapped in the user namespace."""
    _check(_libc.unshare(UNSHARE_FLAGS), "unshare")
    # Our own /proc files are writable only while we are dumpable; nobody else exists in
    # the new namespaces yet. Not dumpable again after: the child cannot open our memory.
    _check(_libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "dumpable")
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    finally:
        _check(_libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "not dumpable")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    """Empty the bounding set, then the effective, permitted and inheritable sets (the
    ambient set empties with the permitted one)."""
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    for cap in range(last + 1):
        _check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"dropping capability {cap}")
    header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")


# Refused to the child by its own filter: what the zygote's profile adds (``unshare``,
# ``mount``, and ``umount2``, so that no mask laid over the container's files can be
# lifted even with a capability regained), and changing ids, which in a user namespace mapping one uid and one gid can
# only fail; refused as a container refuses them to a process without capabilities.
CHILD_REFUSES = ("unshare", "mount", "umount2", "setuid", "setgid", "setreuid", "setregid", "setresuid",
                 "setresgid", "setgroups", "setfsuid", "setfsgid")


def refuse_namespaces_again(seccomp: Any) -> None:
    """The child's own filter, on top of the container's (:data:`CHILD_REFUSES`, EPERM)."""
    import errno

    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in CHILD_REFUSES:
        rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
    rules.load()


def _mount(source: str, target: str, fstype: str | None, flags: int, options: str = "") -> None:
    _check(_libc.mount(source.encode(), target.encode(), fstype.encode() if fstype else None,
                       flags, options.encode() or None), f"mounting {target}")


def fresh_proc() -> None:
    """A /proc of the child's own PID namespace (it sees no process but its own), with
    Docker's masks and read-only paths put back."""
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for path in MASKED_PATHS:
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", MS_RDONLY, "size=0")
        elif os.path.exists(path):
            _mount("/dev/null", path, None, MS_BIND)
    for path in READONLY_PATHS:
        if os.path.exists(path):
            _mount(path, path, None, MS_BIND | MS_REC)
            _mount(path, path, None, MS_BIND | MS_REC | MS_REMOUNT | MS_RDONLY)
    for path in CHILD_MASKED_PATHS:
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                   "size=0")


def loopback_up() -> None:
    """The fresh network namespace's ``lo`` up, as a container's is: the child has a
    loopback of its own and no other interface."""
    import fcntl
    import socket

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, siocgifflags, request))[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sH14x", b"lo", flags | iff_up))


def isolate_child(tmpfs_mb: int, seccomp: Any) -> None:
    """PID 1 of the fresh namespaces: its own /proc and scratch space, no capabilities,
    its own seccomp filter, first to go when memory runs out."""
    _check(_libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "dumpable")  # its own /proc files
    # A session and process group of its own: a process group crosses PID namespaces, and
    # kill(0, ...) would otherwise reach the zygote, the relay and the keeper.
    os.setsid()
    _mount("none", "/", None, MS_REC | MS_PRIVATE)
    fresh_proc()
    for path in SCRATCH:
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                   f"size={tmpfs_mb}m,mode=1777")
    os.chdir("/tmp")
    loopback_up()
    _write("/proc/self/oom_score_adj", "1000")
    drop_capabilities()
    refuse_namespaces_again(seccomp)


def _close_all_but_stdio() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    os.closerange(3, soft if soft != resource.RLIM_INFINITY else 65536)


def keeper(pipes: tuple[int, int, int], tmpfs_mb: int, seccomp: Any) -> None:
    """Runs in the forked keeper; never returns."""
    status = KEEPER_FAILED
    try:
        for target, fd in enumerate(pipes):
            os.dup2(fd, target)
        _close_all_but_stdio()
        enter_namespaces(os.getuid(), os.getgid())
        child = os.fork()
        if child == 0:
            try:
                t0 = time.perf_counter()
                isolate_child(tmpfs_mb, seccomp)
            except BaseException as exc:
                with contextlib.suppress(BaseException):
                    os.write(2, f"jaxjudge zygote: the child could not be isolated: {exc}\n"
                             .encode())
                os._exit(KEEPER_FAILED)
            runner.serve(1, t0)  # leaves with os._exit
            os._exit(0)
        for fd in (0, 1, 2):
            os.close(fd)
        _, wait_status = os.waitpid(child, 0)
        if os.WIFSIGNALED(wait_status):
            status = 128 + os.WTERMSIG(wait_status)
        else:
            status = os.WEXITSTATUS(wait_status)
    except BaseException as exc:
        with contextlib.suppress(BaseException):
            os.write(2, f"jaxjudge zygote: the keeper failed: {exc}\n".encode())
    os._exit(status)


OOM_COUNTERS = ("/sys/fs/cgroup/memory.events",  # cgroup v2
                "/sys/fs/cgroup/memory/memory.oom_control")  # cgroup v1


def oom_kills() -> int:
    """How many processes the container's memory limit has killed so far."""
    for path in OOM_COUNTERS:
        try:
            with open(path) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            continue
    return 0


def read_exact(fd: int, n: int) -> bytes | None:
    """Exactly ``n`` bytes from ``fd`` (None at end of file): never a byte more."""
    data = bytearray()
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def send_frame(fd: int, kind: int, payload: bytes) -> None:
    data = memoryview(HEADER.pack(kind, len(payload)) + payload)
    while data:
        data = data[os.write(fd, data):]


class Zygote:
    """The pristine process: reads nothing but ``SPAWN`` frames, byte-exact, so no byte a
    child sent or was sent ever enters its memory (the next child is a copy of it). A
    relay process forked per child carries that child's bytes and dies with it."""

    def __init__(self, seccomp: Any) -> None:
        self.seccomp = seccomp
        self.out = os.dup(1)

    def serve(self) -> None:
        while True:
            header = read_exact(0, HEADER.size)
            if header is None:
                return  # the trusted side closed the container's input: we are done
            kind, size = HEADER.unpack(header)
            payload = read_exact(0, size) if kind == SPAWN and size <= CHUNK else None
            if payload is None:
                raise SystemExit("jaxjudge zygote: expected a spawn frame")
            before = oom_kills()
            relay = os.fork()
            if relay == 0:
                Relay(self, before).run(json.loads(payload))
            _, status = os.waitpid(relay, 0)
            if status != 0:
                # The relay did not finish its child's frames (killed when memory ran out,
                # or failed): where the next frame starts is unknown. The container ends,
                # and the trusted side learns of it from its stream.
                raise SystemExit(f"jaxjudge zygote: the relay ended with status {status}")


class Relay:
    """Forked per child, before it reads anything: forks the keeper (and so the child),
    then carries bytes between the container's streams and the child's pipes. After the
    child's ``EXIT`` it reads and drops frames up to the trusted side's ``DONE``, exactly,
    so the zygote resumes at the next ``SPAWN``."""

    def __init__(self, zygote: Zygote, oom_before: int) -> None:
        self.zygote = zygote
        self.oom_before = oom_before
        self.pending = bytearray()  # bytes of frames read, not yet parsed

    def send(self, kind: int, payload: bytes) -> None:
        send_frame(self.zygote.out, kind, payload)

    def run(self, request: dict[str, Any]) -> None:
        try:
            stdin_r, stdin_w = os.pipe()
            stdout_r, stdout_w = os.pipe()
            stderr_r, stderr_w = os.pipe()
            runner.set_xla_flags(str(request.get("xla_flags", "")))  # read at device start
            pid = os.fork()
            if pid == 0:
                keeper((stdin_r, stdout_w, stderr_w), int(request["tmpfs_mb"]),
                       self.zygote.seccomp)
            for fd in (stdin_r, stdout_w, stderr_w):
                os.close(fd)
            status = self.relay(pid, stdin_w, stdout_r, stderr_r)
            self.send(EXIT, json.dumps({"status": status,
                                        "oom_kills": oom_kills() - self.oom_before}).encode())
            self.drain()
        except BaseException as exc:
            with contextlib.suppress(BaseException):
                os.write(2, f"jaxjudge zygote: the relay failed: {exc!r}\n".encode())
            os._exit(1)
        os._exit(0)

    def frames(self, data: bytes) -> list[tuple[int, bytes]]:
        pending = self.pending
        pending += data
        out, at = [], 0
        while len(pending) - at >= HEADER.size:
            kind, size = HEADER.unpack_from(pending, at)
            if size > MAX_FRAME:
                raise SystemExit("jaxjudge zygote: a frame over the size limit")
            if len(pending) - at < HEADER.size + size:
                break
            out.append((kind, bytes(pending[at + HEADER.size:at + HEADER.size + size])))
            at += HEADER.size + size
        del pending[:at]
        return out

    def drain(self) -> None:
        """Drop frames up to ``DONE``, reading no byte past it."""
        while True:
            for kind, _ in self.frames(b""):
                if kind == DONE:
                    if self.pending:
                        raise SystemExit("jaxjudge zygote: bytes after done")
                    return
            have = len(self.pending)
            if have < HEADER.size:
                need = HEADER.size - have
            else:
                need = HEADER.size + HEADER.unpack_from(self.pending)[1] - have
            data = read_exact(0, need)
            if data is None:
                raise SystemExit(0)  # the trusted side is gone
            self.pending += data

    def relay(self, pid: int, stdin_w: int, stdout_r: int, stderr_r: int) -> int:
        """Carry bytes until the keeper has exited and the child's pipes are drained;
        returns the keeper's status. Reads of the container's input may take whole chunks:
        until this child has exited, nothing but its own frames is sent."""
        os.set_blocking(stdin_w, False)
        pidfd = os.pidfd_open(pid)
        selector = selectors.DefaultSelector()
        selector.register(0, selectors.EVENT_READ, "in")
        selector.register(stdout_r, selectors.EVENT_READ, "out")
        selector.register(stderr_r, selectors.EVENT_READ, "err")
        selector.register(pidfd, selectors.EVENT_READ, "exit")
        to_child = bytearray()
        close_after = False
        diag = 0
        status: int | None = None
        open_pipes = 2
        while status is None or open_pipes:
            if stdin_w >= 0 and to_child:
                with contextlib.suppress(KeyError):
                    selector.register(stdin_w, selectors.EVENT_WRITE, "to")
            for key, _ in selector.select():
                what = key.data
                if what == "in":
                    if status is not None:
                        continue  # the child is gone: the rest is drain()'s, exactly
                    data = os.read(0, CHUNK)
                    if not data:
                        raise SystemExit(0)  # the trusted side is gone
                    for kind, payload in self.frames(data):
                        if kind == DATA:
                            to_child += payload
                        elif kind == CLOSE:
                            close_after = True
                elif what == "to":
                    try:
                        del to_child[:os.write(stdin_w, to_child)]
                    except BlockingIOError:
                        pass
                    except OSError:  # the child stopped reading for good
                        to_child.clear()
                    if not to_child:
                        selector.unregister(stdin_w)
                elif what in ("out", "err"):
                    data = os.read(key.fd, CHUNK)
                    if not data:
                        selector.unregister(key.fd)
                        os.close(key.fd)
                        open_pipes -= 1
                    elif what == "out":
                        self.send(DATA, data)
                    elif diag < DIAG_BYTES:
                        self.send(DIAG, data[:DIAG_BYTES - diag])
                        diag += len(data)
                elif what == "exit":
                    selector.unregister(pidfd)
                    selector.unregister(0)
                    _, wait_status = os.waitpid(pid, 0)
                    status = (os.WEXITSTATUS(wait_status) if os.WIFEXITED(wait_status)
                              else 128 + os.WTERMSIG(wait_status))
                    to_child.clear()
                    close_after = True
            if close_after and not to_child and stdin_w >= 0:
                with contextlib.suppress(KeyError):
                    selector.unregister(stdin_w)
                os.close(stdin_w)
                stdin_w = -1
        selector.close()
        os.close(pidfd)
        return status


def main() -> None:
    t0 = time.perf_counter()
    runner.prepare()
    import flax
    import jax
    import pyseccomp

    _check(_libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "not dumpable")
    zygote = Zygote(pyseccomp)
    send_frame(zygote.out, READY, json.dumps({
        "harness_version": HARNESS_VERSION,
        "import_ms": (time.perf_counter() - t0) * 1000,
        "jax_version": jax.__version__,
        "flax_version": flax.__version__,
    }).encode())
    zygote.serve()
    os._exit(0)
