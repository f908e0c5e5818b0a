"""The Docker engine's plumbing, shared by the container backends (``docker``, the warm pool,
``zygote``): a client, the image check, the hardened container, its attach stream, its
control group, and removing containers left behind.

Every container (see ``docs/security.md`` for why each measure is there):

- ``--network none``, a read-only root, ``/tmp`` a small tmpfs (noexec, nosuid, nodev),
  ``--cap-drop ALL``, ``no-new-privileges``, the engine's default seccomp profile, uid
  10001, ``--pids-limit``, memory equal to memory+swap, ``--cpus`` with ``--cpuset-cpus``,
  ulimits on open files, file size and core dumps, no logging driver (output never lands
  on the host's disk), no environment from the host, an optional ``runtime`` (gVisor's
  ``runsc``);
- labels ``org.jaxjudge.sandbox`` and ``org.jaxjudge.owner`` (host:pid of the judge that
  made it), and the submission id as label (fresh containers) or name (pooled ones);
- code and inputs go in on standard input; protocol lines come out on standard output,
  capped; the supervisor's deadlines kill the container; it is removed in every case.

:func:`reap` removes labelled containers whose owner died; a removal the engine could not
do is retried (:func:`retry_removals`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker.errors
import requests
from docker.api import APIClient
from docker.types import Ulimit

import docker
from judge.errors import SandboxError, SandboxUnavailable
from judge.harness import HARNESS_VERSION
from judge.harness.startup import COMPILE_FLAGS_ENV
from judge.liveness import pid_alive
from judge.sandbox import cgroups
from judge.sandbox.image import DIGEST_LABEL, VERSION_LABEL, harness_digest
from judge.sandbox.protocol import Limits, RunOutcome
from judge.settings import Settings

SANDBOX_LABEL = "org.jaxjudge.sandbox"
OWNER_LABEL = "org.jaxjudge.owner"
SUBMISSION_LABEL = "org.jaxjudge.submission"
ZYGOTE_LABEL = "org.jaxjudge.zygote"
UID = "10001:10001"


def owner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


ENGINE_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException)


def client(settings: Settings) -> APIClient:
    """A low-level client; raises SandboxUnavailable when no engine answers."""
    try:
        api = APIClient(base_url=settings.docker_host, timeout=settings.docker_timeout)
        api.ping()
    except ENGINE_ERRORS as exc:
        raise SandboxUnavailable(
            f"no Docker engine answers at {settings.docker_host}: {exc}") from None
    return api


def engine_answers(settings: Settings) -> bool:
    try:
        client(settings).close()
    except SandboxError:
        return False
    return True


def check_image(api: APIClient, image: str) -> None:
    """Refuse a missing image, or one whose harness is not the judge's: the judge's
    infrastructure is not ready (SandboxUnavailable), nothing a caller asked wrongly."""
    try:
        labels = api.inspect_image(image)["Config"].get("Labels") or {}
    except docker.errors.ImageNotFound:
        raise SandboxUnavailable(f"the sandbox image {image} is missing; build it with "
                                 "`make sandbox-image`") from None
    found = (labels.get(VERSION_LABEL), labels.get(DIGEST_LABEL))
    wanted = (HARNESS_VERSION, harness_digest())
    if found != wanted:
        raise SandboxUnavailable(
            f"the sandbox image {image} is stale: it carries harness {found[0] or 'none'} "
            f"({found[1] or 'no digest'}), this judge has {wanted[0]} ({wanted[1]}); "
            "rebuild it with `make sandbox-image`"
        )


@functools.lru_cache(maxsize=8)
def _engine_info(base_url: str, api: APIClient) -> dict:
    info = api.info()
    return {"CgroupDriver": info.get("CgroupDriver"), "CgroupVersion": info.get("CgroupVersion")}


def container_cgroup(api: APIClient, cid: str, root: Path) -> cgroups.Cgroup:
    """Where the kernel accounts a started container (its main process's group, read
    on the host). Raises SandboxUnavailable when this judge cannot read it."""
    try:
        inspect = api.inspect_container(cid)
        info = _engine_info(api.base_url, api)
    except ENGINE_ERRORS as exc:
        raise SandboxUnavailable(f"could not inspect sandbox {cid[:12]}: {exc}") from None
    return cgroups.of_container(info, inspect, root)


@dataclass(frozen=True)
class ContainerSpec:
    """What a container is created with; the pool creates with the most generous limits
    it serves and tightens memory at hand-out."""

    memory_mb: int
    fsize_bytes: int
    label: str = ""
    zygote: bool = False  # runs the zygote (judge.sandbox.zygote) instead of one harness
    seccomp: str = ""  # a seccomp profile (JSON) instead of the engine's default

    @classmethod
    def for_limits(cls, limits: Limits, label: str = "") -> ContainerSpec:
        return cls(memory_mb=limits.memory_mb, fsize_bytes=limits.output_bytes + 1, label=label)


def create(api: APIClient, settings: Settings, spec: ContainerSpec) -> str:
    host_config = api.create_host_config(
        network_mode="none",
        read_only=True,
        tmpfs={"/tmp": f"rw,size={settings.docker_tmpfs_mb}m,noexec,nosuid,nodev,mode=1777"},
        cap_drop=["ALL"],
        security_opt=["no-new-privileges", *([f"seccomp={spec.seccomp}"] if spec.seccomp else [])],
        pids_limit=settings.docker_pids_limit,
        mem_limit=f"{spec.memory_mb}m",
        memswap_limit=f"{spec.memory_mb}m",
        nano_cpus=int(settings.docker_cpus * 1e9),
        cpuset_cpus=settings.docker_cpuset or f"0-{(os.cpu_count() or 1) - 1}",
        ulimits=[
            Ulimit(name="nofile", soft=settings.docker_open_files, hard=settings.docker_open_files),
            Ulimit(name="fsize", soft=spec.fsize_bytes, hard=spec.fsize_bytes),
            Ulimit(name="core", soft=0, hard=0),
        ],
        log_config={"type": "none"},
        runtime=settings.docker_runtime or None,
        init=False,
    )
    if spec.zygote:
        # The container's /proc without Docker's masks, so that each child can mount a
        # /proc of its own (the kernel allows that only over a fully visible one); the
        # child puts the masks back on its own (judge.harness.isolation.fresh_proc).
        host_config["MaskedPaths"] = []
        host_config["ReadonlyPaths"] = []
    labels = {SANDBOX_LABEL: "1", OWNER_LABEL: owner_id()}
    if spec.label:
        labels[SUBMISSION_LABEL] = spec.label[:200]
    if spec.zygote:
        labels[ZYGOTE_LABEL] = "1"
    container = api.create_container(
        settings.sandbox_image,
        command=["zygote"] if spec.zygote else None,
        stdin_open=True,  # and so StdinOnce: closing our end is the job's end of file
        user=UID,
        # Nothing from the host: the judge's compile flags only (a zygote's children get
        # them in each SPAWN).
        environment=({COMPILE_FLAGS_ENV: settings.xla_flags}
                     if settings.xla_flags and not spec.zygote else {}),
        working_dir="/tmp",
        labels=labels,
        host_config=host_config,
        network_disabled=True,
    )
    return str(container["Id"])


class Attachment:
    """A container's attach stream: standard input in; standard output and error out,
    demultiplexed by a reader thread into ``on_stdout`` and ``on_stderr`` (each returns
    False to stop reading); ``on_end`` runs once when the stream ends."""

    def __init__(self, api: APIClient, cid: str, on_stdout: Callable[[bytes], bool],
                 on_stderr: Callable[[bytes], bool], on_end: Callable[[], None]) -> None:
        self.on_stdout, self.on_stderr, self.on_end = on_stdout, on_stderr, on_end
        self.dead = threading.Event()
        sock = api.attach_socket(cid, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        self.sock: socket.socket = sock._sock
        self._reader = threading.Thread(target=self._read, daemon=True)

    def start(self) -> None:
        self._reader.start()

    def _recv(self, n: int) -> bytes | None:
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(min(n - len(data), 1 << 16))
            if not chunk:
                return None
            data += chunk
        return bytes(data)

    def _read(self) -> None:
        try:
            while True:
                header = self._recv(8)
                if header is None:
                    break
                stream, size = struct.unpack(">BxxxL", header)
                consume = self.on_stderr if stream == 2 else self.on_stdout
                while size:
                    chunk = self._recv(min(size, 1 << 16))
                    if chunk is None:
                        return
                    size -= len(chunk)
                    if not consume(chunk):
                        return
        except OSError:
            pass
        finally:
            self.dead.set()
            self.on_end()

    def write(self, data: bytes) -> None:
        self.sock.sendall(data)

    def end_input(self) -> None:
        self.sock.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        # The stream first: a harness blocked writing to it (a flood on the protocol
        # descriptor) would hold a forced removal until the API call times out.
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.sock.close()


_unremoved: set[str] = set()  # removals that failed (the engine was away): retried later
_unremoved_lock = threading.Lock()


def remove(api: APIClient, cid: str) -> bool:
    """``docker rm -f``; a removal the engine could not do now is remembered and retried
    by :func:`retry_removals`. True when the container is gone."""
    try:
        api.remove_container(cid, force=True)
    except docker.errors.NotFound:
        pass
    except ENGINE_ERRORS:
        with _unremoved_lock:
            _unremoved.add(cid)
        return False
    with _unremoved_lock:
        _unremoved.discard(cid)
    return True


def retry_removals(api: APIClient) -> int:
    """Try the removals that failed before again; returns how many are still pending."""
    with _unremoved_lock:
        pending = list(_unremoved)
    for cid in pending:
        remove(api, cid)
    with _unremoved_lock:
        return len(_unremoved)


def reap(api: APIClient, older_than_seconds: float = 3600.0) -> list[str]:
    """Remove sandbox containers left behind: those whose owner (a judge process on this
    host) is gone, and any older than ``older_than_seconds``. Returns their ids."""
    host = socket.gethostname()
    removed = []
    for info in api.containers(all=True, filters={"label": SANDBOX_LABEL}):
        owner = (info.get("Labels") or {}).get(OWNER_LABEL, "")
        owner_host, _, pid = owner.rpartition(":")
        orphan = owner_host == host and pid.isdigit() and not pid_alive(int(pid))
        if orphan or time.time() - info.get("Created", 0) > older_than_seconds:
            remove(api, info["Id"])
            removed.append(info["Id"])
    return removed


def ended_abnormally(outcome: RunOutcome) -> bool:
    """The run ended in a way an engine outage could also explain."""
    if outcome.status in ("internal_error", "load_crashed", "load_memory", "load_timeout"):
        return True
    return any(t.status in ("crashed", "timeout", "memory", "output_limit")
               for t in outcome.tests)


__all__ = [
    "ENGINE_ERRORS", "OWNER_LABEL", "SANDBOX_LABEL", "SUBMISSION_LABEL", "ZYGOTE_LABEL",
    "Attachment", "ContainerSpec", "check_image", "client", "container_cgroup", "create",
    "ended_abnormally", "engine_answers", "owner_id", "pid_alive", "reap", "remove",
    "retry_removals",
]
