"""Isolating a zygote's child: fresh namespaces, its own mounts, no capabilities, its own
seccomp filter (:mod:`judge.harness.zygote` says who calls what, and why).

:func:`enter_namespaces` runs in the keeper: fresh user, mount, PID, IPC, network and UTS
namespaces (``unshare``, with exactly :data:`UNSHARE_FLAGS`, the one flag set the zygote's
seccomp profile allows: ``judge.sandbox.seccomp``), with only the sandbox's own uid and
gid mapped. :func:`isolate_child` runs in the child, PID 1 of those namespaces, before any
submission code: a session of its own, private mounts, a fresh ``/proc`` with Docker's
masks put back (:func:`fresh_proc`), fresh tmpfs over every place it may write, its
container's control groups hidden, its loopback up, every capability dropped, its own
seccomp filter (:data:`CHILD_REFUSES`), and first to die when memory runs out. Any failure
raises :class:`IsolationError`: a child not isolated runs nothing.
"""

from __future__ import annotations

import ctypes
import os
import struct
from typing import Any

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


def not_dumpable() -> None:
    """Not dumpable: no child may open this process's memory through ``/proc``."""
    _check(_libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "not dumpable")


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
        not_dumpable()


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

