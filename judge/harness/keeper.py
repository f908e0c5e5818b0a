"""The keeper: forked by a zygote's relay, it isolates and then waits for one child.

It takes the child's three pipes as its descriptors 0, 1 and 2 and closes every other,
enters fresh namespaces (:func:`judge.harness.isolation.enter_namespaces`), forks the
child (PID 1 there, isolated by :func:`judge.harness.isolation.isolate_child` before it
serves one submission through :func:`judge.harness.runner.serve`) and waits for it. It
stays outside the child's PID namespace and never runs submission code; its exit status
is the child's, or :data:`KEEPER_FAILED` when isolating failed and no submission code ran.
"""

from __future__ import annotations

import contextlib
import os
import resource
import time
from typing import Any

from judge.harness import runner
from judge.harness.isolation import enter_namespaces, isolate_child

KEEPER_FAILED = 111  # the keeper's status when isolating failed: no submission code ran


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
