"""Typed settings, read from the environment once at the process edge and passed down.

Every field can be set as ``JAXJUDGE_<FIELD>`` (for example ``JAXJUDGE_SANDBOX=process``).
Nothing in the core reads the environment on its own. No default depends on where the
code is installed: paths default to the working directory (``./problemsets``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# The source checkout this module sits in: for the tests and scripts of the repository,
# never a default (an installed jaxjudge lives in site-packages).
REPO_ROOT = Path(__file__).resolve().parent.parent


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="JAXJUDGE_", frozen=True)

    problems_dir: Path = Field(
        default_factory=lambda: Path.cwd() / "problemsets",
        description="Folder holding <set>/<slug>/ packages (default: ./problemsets).",
    )
    sandbox: str = Field(
        default="auto",
        description="Sandbox backend: zygote, docker, process, or auto (zygote when an engine "
        "answers and the zygote's seccomp profile exists, else docker when an engine answers, "
        "else process with a warning: for the CLI only; the service refuses a sandbox that "
        "does not isolate).",
    )
    @field_validator("problems_dir")
    @classmethod
    def _absolute(cls, path: Path) -> Path:
        return path.expanduser().resolve()

    python: str = Field(
        default=sys.executable, description="Interpreter that runs the harness (process sandbox)."
    )

    max_code_bytes: int = Field(default=256 * 1024, gt=0, description="Largest submission.")
    max_notebook_bytes: int = Field(
        default=4 << 20, gt=0, description="Largest notebook file (.ipynb), outputs included; "
        "the code taken from it is held to max_code_bytes.",
    )
    startup_seconds: float = Field(
        default=60.0, gt=0, description="How long the harness may take to import jax and flax."
    )
    grace_seconds: float = Field(
        default=1.0, ge=0, description="Slack on top of each time limit (CPU or wall) before "
        "the hard kill; the harness stops at the limit itself."
    )
    transfer_allowance_seconds: float = Field(
        default=0.25, ge=0, description="CPU time around a call that is the harness's own work "
        "(decoding the inputs, encoding the result) and does not count against a test's limit.",
    )
    wall_time_factor: float = Field(
        default=3.0, ge=1, description="Wall-clock limits are this multiple of the CPU time "
        "limits (per test and in all): the safety net that stops a submission that sleeps or "
        "waits. Only CPU time, measured outside the sandbox, decides a time limit otherwise.",
    )
    cgroup_root: Path = Field(
        default=Path("/sys/fs/cgroup"), description="Where the host's control groups are "
        "mounted, as this judge sees them: sandboxes' CPU time and memory events are read "
        "there (a judge in a container mounts the host's /sys/fs/cgroup, read-only at least).",
    )
    zygote_accounting: Literal["auto", "children", "container"] = Field(
        default="auto", description="How a zygote's children are accounted. children: each "
        "in control groups of its own (cgroup v1, the judge root on the host and seeing its "
        "process ids): its own memory limit, so the limit's victim is always the child, its "
        "own CPU counter and process limit; refuse to run without them. container: in the "
        "container's groups only, as a judge without that access does (docs/security.md says "
        "what that leaves). auto: children where this judge can, else container.",
    )
    xla_flags: str = Field(
        # Measured on every problem by bench/compile_flags.py (docs/performance.md): about
        # half the compile time, every example's verdict and every stored output unchanged.
        default="--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false",
        description="XLA compile flags every sandbox's harness adds to its 8 CPU devices "
        "(--xla_name=value words; docs/performance.md says which were measured and why).",
    )
    result_bytes: int = Field(
        default=1 << 20, gt=0, description="Largest encoded return value of one test."
    )
    segment_bytes: int = Field(
        default=8 * 1024, gt=0, description="Output kept per test and for the load phase."
    )
    report_output_bytes: int = Field(
        default=16 * 1024, gt=0, description="Largest stdout (and stderr) in a report."
    )
    harness_stderr_bytes: int = Field(
        default=64 * 1024, gt=0, description="Harness diagnostics kept when it crashes."
    )
    process_address_space_slack_mb: int = Field(
        default=3072,
        ge=0,
        description="Added to a problem's memory limit for RLIMIT_AS: JAX maps about 1.6 GiB "
        "of virtual memory at start-up.",
    )
    process_max_processes: int = Field(
        default=4096, gt=0, description="RLIMIT_NPROC of the process sandbox (per user)."
    )
    process_open_files: int = Field(default=1024, gt=0, description="RLIMIT_NOFILE.")

    sandbox_image: str = Field(default="jaxjudge-sandbox:latest", description="Docker image.")
    docker_host: str = Field(default="unix:///var/run/docker.sock", description="Engine address.")
    docker_timeout: float = Field(default=60.0, gt=0, description="Engine API call timeout.")
    docker_runtime: str = Field(
        default="", description="OCI runtime for sandboxes, e.g. runsc (gVisor); empty: default."
    )
    docker_cpus: float = Field(default=2.0, gt=0, description="--cpus of a sandbox.")
    docker_cpuset: str = Field(default="", description="--cpuset-cpus; empty: every core.")
    docker_pids_limit: int = Field(
        default=128, ge=16, description="--pids-limit (XLA runs about 40 threads for 8 devices)."
    )
    docker_tmpfs_mb: int = Field(default=64, ge=1, description="Size of the /tmp tmpfs.")
    docker_open_files: int = Field(default=256, ge=64, description="RLIMIT_NOFILE in a sandbox.")
    docker_reap_after_seconds: float = Field(
        default=3600.0, gt=0, description="Sandbox containers older than this are removed."
    )
    pool_size: int = Field(
        default=0, ge=0, description="Warm containers kept ready (the service; 0: none)."
    )
    pool_memory_mb: int = Field(
        default=4096, ge=64, description="Memory pooled containers start with; lowered to the "
        "problem's limit at hand-out. Problems above it get a fresh container."
    )
    zygote_count: int = Field(
        default=2, ge=1, description="Zygote containers per judge process (the zygote sandbox): "
        "one serves while the other stands by, so a container replaced after a run that did "
        "not end cleanly costs the next submission no start-up.",
    )
    zygote_children: int = Field(
        default=200, ge=1, description="Submissions one zygote container serves before it is "
        "replaced (it is replaced at once after any run that did not end cleanly).",
    )
    docker_seccomp_profile: Path = Field(
        default_factory=lambda: Path.cwd() / "var" / "zygote-seccomp.json",
        description="The zygote's seccomp profile, the engine's default plus unshare and mount "
        "(written by `make sandbox-image`; default: ./var/zygote-seccomp.json).",
    )
    pool_output_bytes: int = Field(
        default=16 << 20, gt=0, description="File size cap pooled containers start with; the "
        "harness lowers it to the problem's output limit."
    )


S = TypeVar("S", bound=BaseSettings)


def settings_error(exc: ValidationError) -> str:
    """A bad ``JAXJUDGE_*`` value in one line (the value itself is not repeated: it may
    be a password in a database URL)."""
    first = exc.errors(include_url=False)[0]
    name = ".".join(str(p) for p in first["loc"])
    return f"setting JAXJUDGE_{name.upper()}: {first['msg']}"


def load(cls: type[S], exit_status: int = 2) -> S:
    """Read settings at a process edge (a worker, the API's factory); a bad value exits
    with ``exit_status`` and one line on stderr instead of a traceback."""
    try:
        return cls()
    except ValidationError as exc:
        sys.stderr.write(f"jaxjudge: error: {settings_error(exc)}\n")
        raise SystemExit(exit_status) from None
