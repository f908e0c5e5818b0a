"""The relay: forked by the zygote per child, it carries that child's bytes and dies with it.

It forks the keeper (:mod:`judge.harness.keeper`, and so the child), then carries bytes
between the container's streams and the child's pipes, inside frames
(:mod:`judge.harness.frames`): ``DATA`` and ``CLOSE`` in to the child's standard input,
its protocol descriptor out as ``DATA``, its standard error as ``DIAG`` (capped), and its
end as ``EXIT`` with the memory-limit kills counted meanwhile (:func:`oom_kills`). The
zygote never reads a byte of a child's, so none is in the memory the next child is
copied from.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
from typing import TYPE_CHECKING, Any

from judge.harness.frames import (
    CHUNK,
    CLOSE,
    DATA,
    DIAG,
    DONE,
    EXIT,
    HEADER,
    MAX_FRAME,
    read_exact,
    send_frame,
)
from judge.harness.keeper import keeper
from judge.harness.startup import set_xla_flags

if TYPE_CHECKING:
    from judge.harness.zygote import Zygote

DIAG_BYTES = 64 << 10  # a child's standard error kept, per child
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
            set_xla_flags(str(request.get("xla_flags", "")))  # read at device start
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
