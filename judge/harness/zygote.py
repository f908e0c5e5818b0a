"""The zygote: imports jax and flax once, then forks one isolated child per submission.

It runs in a long-lived sandbox container (``python -m judge.harness zygote``) with every
hardening a fresh container has, and a seccomp profile that is the engine's default plus
``unshare`` (with exactly the flags of ``judge.harness.isolation.UNSHARE_FLAGS``) and
``mount`` (``judge.sandbox.seccomp``). It is trusted code; the children are not. For each
``spawn`` it forks:

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

Its parts, a module each: the frames on the container's standard input and output
(:mod:`judge.harness.frames`), the relay (:mod:`judge.harness.relay`), the keeper
(:mod:`judge.harness.keeper`) and what isolates a child (:mod:`judge.harness.isolation`).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from judge.harness import HARNESS_VERSION, startup
from judge.harness.frames import CHUNK, HEADER, READY, SPAWN, read_exact, send_frame
from judge.harness.isolation import not_dumpable
from judge.harness.relay import Relay, oom_kills


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


def main() -> None:
    t0 = time.perf_counter()
    startup.prepare()
    import flax
    import jax
    import pyseccomp

    not_dumpable()
    zygote = Zygote(pyseccomp)
    send_frame(zygote.out, READY, json.dumps({
        "harness_version": HARNESS_VERSION,
        "import_ms": (time.perf_counter() - t0) * 1000,
        "jax_version": jax.__version__,
        "flax_version": flax.__version__,
    }).encode())
    zygote.serve()
    os._exit(0)
