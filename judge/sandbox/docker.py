"""The ``docker`` sandbox: the harness in a hardened, throw-away container.

A container (made by :func:`judge.sandbox.engine.create`, with every hardening measure
listed there) serves one run: the job goes in on its standard input, the supervisor reads
its protocol lines from its attach stream (:class:`DockerChannel`) and kills it at its
deadlines, and it is removed in every case. With ``pool_size`` above 0, containers started
ahead serve instead where the job fits them (``judge.sandbox.pool``).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from docker.api import APIClient

from judge.errors import SandboxError, SandboxUnavailable
from judge.sandbox import cgroups
from judge.sandbox.base import Sandbox
from judge.sandbox.channel import EOF, ExitInfo, QueuedLines, max_line
from judge.sandbox.engine import (
    ENGINE_ERRORS,
    Attachment,
    ContainerSpec,
    check_image,
    client,
    container_cgroup,
    create,
    ended_abnormally,
    reap,
    remove,
    retry_removals,
)
from judge.sandbox.protocol import Job, RunOutcome
from judge.sandbox.supervisor import supervise
from judge.settings import Settings


class DockerChannel(QueuedLines):
    """The supervisor's channel over a container's attach stream (stdout: protocol lines,
    stderr: the harness's diagnostics)."""

    def __init__(self, api: APIClient, cid: str, max_line: int, max_stderr: int,
                 cgroup_root: Path) -> None:
        super().__init__()
        self.api = api
        self.cid = cid
        self.max_line = max_line
        self.max_stderr = max_stderr
        self.cgroup_root = cgroup_root
        self.cgroup: cgroups.Cgroup | None = None
        self.stderr = bytearray()
        self._killed = False
        self._cpu = 0.0
        self._kills = 0
        self._stream = Attachment(api, cid, self.feed, self._keep_stderr,
                                  lambda: self.lines.put(EOF))

    def start(self) -> DockerChannel:
        """Start the container and its stream; find its control group (raises
        SandboxUnavailable when its CPU time cannot be read: nothing runs then)."""
        self.api.start(self.cid)
        self._stream.start()
        self.cgroup = container_cgroup(self.api, self.cid, self.cgroup_root)
        return self

    def cpu_seconds(self) -> float:
        if self.cgroup is not None:
            with contextlib.suppress(OSError, ValueError):  # gone with its container
                self._cpu = self.cgroup.cpu_ns() / 1e9
        return self._cpu

    def oom_kills(self) -> int:
        if self.cgroup is not None:
            with contextlib.suppress(OSError, ValueError):
                self._kills = self.cgroup.oom_kills()
        return self._kills

    def run_delays(self) -> dict[int, int] | None:
        try:
            return self.cgroup.run_delays() if self.cgroup is not None else None
        except (OSError, KeyError):
            return None

    def _keep_stderr(self, body: bytes) -> bool:
        room = self.max_stderr - len(self.stderr)
        if room > 0:
            self.stderr += body[:room]
        return True

    @property
    def alive(self) -> bool:
        return not self._stream.dead.is_set()

    def _write_input(self, data: bytes) -> None:
        self._stream.write(data)

    def _end_input(self) -> None:
        self._stream.end_input()

    def kill(self) -> None:
        if self._killed:
            return
        self._killed = True
        self._stream.close()
        remove(self.api, self.cid)

    def exit_info(self) -> ExitInfo:
        """How the harness ended: waits a moment for it to exit by itself."""
        try:
            self.api.wait(self.cid, timeout=2)
            state = self.api.inspect_container(self.cid)["State"]
        except ENGINE_ERRORS:
            self.kill()
            return ExitInfo()
        self.kill()
        code = int(state.get("ExitCode", 0))
        if state.get("OOMKilled"):
            return ExitInfo(code=code, oom_killed=True)
        if code > 128:
            return ExitInfo(signal=code - 128)
        return ExitInfo(code=code)

    def diagnostics(self) -> str:
        return bytes(self.stderr).decode("utf-8", "replace")


class DockerSandbox(Sandbox):
    name = "docker"
    isolated = True

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.api = client(settings)
        check_image(self.api, settings.sandbox_image)
        reap(self.api, older_than_seconds=settings.docker_reap_after_seconds)
        self.pool = None
        if settings.pool_size > 0:
            from judge.sandbox.pool import WarmPool

            self.pool = WarmPool(self.api, settings)

    def fresh(self, job: Job) -> DockerChannel:
        retry_removals(self.api)
        cid = create(self.api, self.settings, ContainerSpec.for_limits(job.limits, job.label))
        try:
            return DockerChannel(self.api, cid, max_line(job.limits.result_bytes),
                                 self.settings.harness_stderr_bytes,
                                 self.settings.cgroup_root).start()
        except BaseException:
            remove(self.api, cid)
            raise

    def run(self, job: Job) -> RunOutcome:
        """Raises SandboxUnavailable when the engine failed (no container could be made,
        or the engine went away during the run): no verdict is given then."""
        try:
            channel = None
            if self.pool is not None:
                channel = self.pool.acquire(job)
            if channel is None:
                channel = self.fresh(job)
        except (*ENGINE_ERRORS, SandboxError) as exc:
            raise SandboxUnavailable(f"could not start a sandbox: {exc}") from None
        try:
            outcome = supervise(channel, job, startup_seconds=self.settings.startup_seconds,
                                grace=self.settings.grace_seconds,
                                transfer_allowance=self.settings.transfer_allowance_seconds)
        finally:
            channel.kill()
        if ended_abnormally(outcome) and not self._engine_answers():
            # The container died, or fell silent, because the engine stopped: that is no
            # verdict on the submission.
            raise SandboxUnavailable("the Docker engine went away during the run")
        return outcome

    def _engine_answers(self) -> bool:
        try:
            self.api.ping()
        except ENGINE_ERRORS:
            return False
        return True

    def warm(self) -> dict[str, int]:
        if self.pool is None:
            return {}
        return {"size": self.pool.size, "ready": self.pool.available(),
                "started": self.pool.started}

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
        self.api.close()


__all__ = ["DockerChannel", "DockerSandbox"]
