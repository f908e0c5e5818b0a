"""pid_alive: a process that has exited is gone, reaped or not."""

from __future__ import annotations

import os
import time
from pathlib import Path

from judge.liveness import pid_alive
from service import liveness


def _state(pid: int) -> str | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return None
    return next(line.split()[1] for line in text.splitlines() if line.startswith("State:"))


def test_a_running_process_is_alive() -> None:
    assert pid_alive(os.getpid())
    assert liveness.pid_alive is pid_alive
    assert not liveness.worker_gone(liveness.worker_name())


def test_an_exited_child_not_yet_reaped_is_gone() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    try:
        deadline = time.monotonic() + 10
        while _state(pid) != "Z":  # exits at once; wait until the kernel shows it so
            assert time.monotonic() < deadline, f"child {pid} never became a zombie"
            time.sleep(0.01)
        os.kill(pid, 0)  # signal 0 still reaches it: kill alone would call it alive
        assert not pid_alive(pid)
        assert liveness.worker_gone(f"{liveness.socket.gethostname()}:{pid}")
        assert _state(pid) == "Z"  # asked while /proc still lists it
    finally:
        assert os.waitpid(pid, 0)[0] == pid
    assert not pid_alive(pid)


def test_a_pid_no_process_holds_is_gone() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    assert not pid_alive(pid)
