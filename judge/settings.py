"""Typed settings, read from the environment once at the process edge and passed down.

Every field can be set as ``JAXJUDGE_<FIELD>`` (for example ``JAXJUDGE_SANDBOX=process``).
Nothing in the core reads the environment on its own.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="JAXJUDGE_", frozen=True)

    problems_dir: Path = Field(
        default=REPO_ROOT / "problemsets", description="Folder holding <set>/<slug>/ packages."
    )
    sandbox: str = Field(default="process", description="Sandbox backend used by default.")
    python: str = Field(
        default=sys.executable, description="Interpreter that runs the harness (process sandbox)."
    )

    max_code_bytes: int = Field(default=256 * 1024, gt=0, description="Largest submission.")
    startup_seconds: float = Field(
        default=60.0, gt=0, description="How long the harness may take to import jax and flax."
    )
    grace_seconds: float = Field(
        default=1.0, ge=0, description="Slack on top of each time limit before the hard kill."
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
