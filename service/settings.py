"""Typed service settings, read from ``JAXJUDGE_*`` environment variables at the process
edge (the API factory, the worker, the CLI) and passed down.

The core's settings (:class:`judge.settings.Settings`: sandbox, limits, pool size) are read
the same way and separately; a process that grades holds both.

What a deployment keeps on disk lives under one folder, ``var`` (``JAXJUDGE_VAR``, by
default ``./var``): the embedded database, the packages cache and the secret key made
when none is set derive from it unless set themselves. The operators' commands also read
the settings that ``make up`` noted there (:mod:`service.stack`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _var() -> Path:
    return Path.cwd() / "var"


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="JAXJUDGE_", frozen=True, extra="ignore")

    var: Path = Field(
        default_factory=_var,
        description="The deployment's folder (./var by default): the embedded database, "
        "the packages cache, the secret key made when none is set, and what `make up` "
        "notes for the operators' commands (stack.json), its logs and process ids.",
    )
    database_url: str = Field(
        default_factory=lambda: f"sqlite:///{_var() / 'jaxjudge.db'}",
        description="SQLAlchemy URL. SQLite is the embedded default (<var>/jaxjudge.db); "
        "deploy on PostgreSQL "
        "(postgresql+psycopg://user:password@host/db).",
    )
    redis_url: str = Field(
        default="redis://127.0.0.1:6379/0",
        description="Redis: the Celery broker, rate limits, worker heartbeats and metrics.",
    )

    # Requests.
    max_request_bytes: int = Field(
        default=32 << 20, gt=0, description="Largest request body of POST /v1/batches (a "
        "zip or a JSON list). Submitting has its own limit, from the code limit; other "
        "routes take at most 64 KiB."
    )
    trusted_proxy_hops: int = Field(
        default=0, ge=0, description="Reverse proxies in front of the API that set "
        "X-Forwarded-For and X-Forwarded-Proto (werkzeug's ProxyFix): the client address is "
        "taken that many hops back. 0: the peer address, forwarding headers ignored."
    )
    auth_failure_limit: str = Field(
        default="10/minute", description="Per client address, flask-limiter syntax: requests "
        "whose key does not authenticate. Past it, requests from that address with a key "
        "not known to authenticate are refused (429) before the database is asked. Empty: "
        "no limit."
    )
    max_batch_submissions: int = Field(default=1000, gt=0, description="Most files in a batch.")
    max_batch_bytes: int = Field(
        default=64 << 20, gt=0, description="Most bytes a batch archive may hold, uncompressed."
    )
    max_metadata_bytes: int = Field(default=4096, gt=0, description="Largest metadata, as JSON.")
    rate_limit: str = Field(
        default="600/minute;50/second",
        description="Per API key, flask-limiter syntax; backed by Redis. Empty: no limit.",
    )
    submit_rate_limit: str = Field(
        default="120/minute", description="Extra limit on creating submissions and batches."
    )
    long_poll_max_seconds: float = Field(
        default=60.0, ge=0, description="Largest ?wait= a request may ask for."
    )
    long_poll_max_per_key: int = Field(
        default=50, ge=0, description="Long-polls (?wait=) an API key may hold at once, over "
        "all API processes; past it a request answers at once, without waiting."
    )
    publish_timeout_seconds: float = Field(
        default=2.0, gt=0, description="How long the API tries the broker before leaving a "
        "submission for the sweeper to queue."
    )

    # Workers.
    insecure_unsandboxed_grading: bool = Field(
        default=False,
        description="DANGER, trusted test setups only: let workers grade with a sandbox "
        "that does not isolate (the process backend, as the worker's own user, with the "
        "database password in reach). Without it a worker whose sandbox does not isolate "
        "refuses to start and /readyz is not ready.",
    )
    worker_concurrency: int = Field(
        default_factory=lambda: len(os.sched_getaffinity(0)), gt=0,
        description="Grading processes per worker (default: the cores this process may use; "
        "each keeps its own zygote).",
    )
    soft_time_limit_seconds: float = Field(
        default=1800.0, gt=0, description="A grading past this becomes an internal_error "
        "verdict. Above the longest a problem's run may take: its total wall-clock net, or up "
        "to 5 times that on a host so busy that it keeps the sandbox waiting for a CPU."
    )
    time_limit_seconds: float = Field(
        default=1860.0, gt=0, description="Hard limit: the grading process is killed."
    )
    visibility_timeout_seconds: int = Field(
        default=7200, gt=0, description="Redis redelivers an unacknowledged task after this; "
        "well above the longest grading."
    )
    heartbeat_seconds: float = Field(
        default=5.0, gt=0, description="How often a grading process proves it is alive."
    )
    stale_after_seconds: float = Field(
        default=30.0, gt=0, description="A running submission whose heartbeat is older is lost."
    )
    sweep_seconds: float = Field(default=10.0, gt=0, description="How often the sweeper sweeps.")
    requeue_after_seconds: float = Field(
        default=3600.0, gt=0, description="A queued submission not started after this is "
        "published again (a message lost with the broker's data)."
    )
    max_attempts: int = Field(
        default=3, gt=0, description="Gradings that may be lost (a worker killed, a crash) "
        "before the submission gets an internal_error verdict."
    )
    sandbox_attempts: int = Field(
        default=6, gt=0, description="Gradings that may find the sandbox unavailable (the "
        "engine down or restarting, the image missing) before the submission gets an "
        "internal_error verdict; until then each goes back to the queue after a backoff."
    )
    sandbox_retry_seconds: float = Field(
        default=15.0, gt=0, description="Delay before a grading whose sandbox was "
        "unavailable is tried again; doubles each time (±20 %, capped at 10 min)."
    )

    # Pages and LTI.
    secret_key: str = Field(
        default="", description="Encrypts the LTI tool's private keys in the database and "
        "signs launch links. Required by the pages and LTI; empty: a random key is made "
        "once in <var>/secret_key (mode 0600) and read from there. Every API and worker "
        "process of a deployment must see the same value."
    )
    public_url: str = Field(
        default="", description="The tool's public base URL as an LMS reaches it "
        "(https://judge.example.edu). Every LTI URL is built from it; empty: from the "
        "request (behind a proxy, with trusted_proxy_hops)."
    )
    lti_leeway_seconds: float = Field(
        default=60.0, ge=0, le=600, description="Clock skew allowed on an id_token's "
        "exp, iat and nbf."
    )
    lti_state_seconds: int = Field(
        default=600, gt=0, description="How long an OIDC login's state and nonce stay "
        "usable (each is used once)."
    )
    lti_key_overlap_days: float = Field(
        default=30.0, ge=0, description="After `jaxjudge lti keys rotate`, how long the "
        "old public key stays in the tool's JWKS."
    )
    web_session_seconds: int = Field(
        default=8 * 3600, gt=0, description="A page session ends after this long unused."
    )
    web_frame_ancestors: list[str] = Field(
        default_factory=lambda: ["*"], description="Who may show the pages in a frame "
        "(the Content-Security-Policy's frame-ancestors): the LMS origins "
        "(https://moodle.example.edu), or * for any https/http page. JSON list in the "
        "environment."
    )
    launch_link_max_seconds: int = Field(
        default=3600, gt=0, description="Longest life a launch link (POST "
        "/v1/launch-links) may ask for."
    )
    lti_timeout_seconds: float = Field(
        default=10.0, gt=0, description="Per request to an LMS's services (access token, "
        "a score, a roster page)."
    )
    lti_max_attempts: int = Field(
        default=16, gt=0, description="Tries of a score before it is given up (failed); "
        "with the backoff, about 10 hours of an LMS being down."
    )
    lti_backoff_seconds: float = Field(
        default=5.0, gt=0, description="First retry delay of a score; doubles each try "
        "(capped at 1 h)."
    )
    lti_roster_max_age_seconds: float = Field(
        default=300.0, ge=0, description="A course's roster (NRPS) older than this is "
        "fetched again when an instructor opens its gradebook."
    )

    # Problem sets of tenants (uploaded packages).
    packages_dir: Path = Field(
        default_factory=lambda: _var() / "packages",
        description="Where API and worker processes unpack the uploaded packages they "
        "show or grade (<var>/packages; a cache: the database keeps every version; each "
        "process may have its own).",
    )
    quota_sets: int = Field(default=10, ge=0, description="Problem sets a tenant may own.")
    quota_problems: int = Field(
        default=200, ge=0, description="Problems a tenant may have over all its sets.")
    quota_versions: int = Field(
        default=2000, ge=0, description="Uploaded versions a tenant may keep, all problems "
        "together (every version stays for the submissions graded on it).")
    quota_package_bytes: int = Field(
        default=4 << 20, gt=0, description="Largest uploaded package, its files together "
        "uncompressed.")
    quota_build_seconds: float = Field(
        default=900.0, gt=0, description="Longest build and verification of one upload; "
        "past it the build fails.")
    build_time_limit_seconds: float = Field(
        default=3600.0, gt=0, description="Longest any build may run, whatever a tenant's "
        "quota says (the build task's time limit in the worker).")
    package_max_files: int = Field(default=300, gt=0, description="Most files in a package.")
    package_max_tests: int = Field(
        default=500, gt=0, description="Most tests (sample and hidden) an uploaded package "
        "may declare.")
    package_max_input_mb: int = Field(
        default=64, gt=0, description="Most generated input an uploaded package may ask "
        "for, all tests together (4 bytes per generated element).")
    package_max_memory_mb: int = Field(
        default=4096, ge=64, description="Highest memory limit an uploaded package may set.")
    package_max_test_seconds: float = Field(
        default=60.0, gt=0, description="Highest per-test time limit an uploaded package "
        "may set.")
    package_max_total_seconds: float = Field(
        default=300.0, gt=0, description="Highest total time limit an uploaded package "
        "may set.")

    # Webhooks.
    webhook_allow: list[str] = Field(
        default_factory=list,
        description="Hosts, addresses or networks (CIDR) that callbacks may target although "
        "they are loopback, private or link-local. JSON list in the environment.",
    )
    webhook_timeout_seconds: float = Field(default=10.0, gt=0, description="Per delivery try.")
    webhook_max_attempts: int = Field(default=8, gt=0, description="Tries before giving up.")
    webhook_backoff_seconds: float = Field(
        default=5.0, gt=0, description="First retry delay; doubles each try (capped at 1 h)."
    )

    @model_validator(mode="before")
    @classmethod
    def _under_var(cls, data: Any) -> Any:
        """The database and the packages cache are under ``var`` unless set themselves."""
        if isinstance(data, dict) and data.get("var"):
            var = Path(data["var"])
            data.setdefault("database_url", f"sqlite:///{var / 'jaxjudge.db'}")
            data.setdefault("packages_dir", var / "packages")
        return data
