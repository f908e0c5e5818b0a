"""Which process holds a grading: ``host:pid`` names, and whether such a process is
gone. A claim and the sweeper take a grading over at once when its worker ran on this
host and its process is gone, without waiting for its heartbeat to go stale."""

from __future__ import annotations

import os
import socket

from judge.liveness import pid_alive


def worker_name() -> str:
    """This process, as ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def worker_gone(worker: str | None) -> bool:
    """True when ``worker`` ran on this host and its process is gone."""
    if not worker:
        return False
    host, _, pid = worker.rpartition(":")
    return host == socket.gethostname() and pid.isdigit() and not pid_alive(int(pid))


__all__ = ["pid_alive", "worker_gone", "worker_name"]
