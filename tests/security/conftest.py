"""The security suite: hostile submissions against the real ``docker`` sandbox.

Every test grades a submission that attacks the sandbox (at import time, inside the call,
or both) and asserts the verdict *and* that nothing leaked or happened: the attack
reports what it achieved by printing during a sample test (``report.stdout``; the
``@@ {json}`` lines are read by :func:`facts`) or by its return value (it answers right
only when the protection held, so ``accepted`` proves it), and the test checks the host
where it can (no connection on a listener it opened, no file, no process, no container).

Problems: ``demo/layout`` from tests/fixtures/problemsets (2 s a test, 6 s in all,
1024 MiB, 64 KiB of output; 2 sample tests, then 3 hidden) and ``security/vault`` from
tests/security/fixtures, whose hidden answers cannot be computed from the inputs: nothing in
the sandbox should ever hold them (support.py says how attacks search for them).

No skip: the suite needs a Docker engine and the sandbox image (``make sandbox-image``),
and fails when either is missing. At the end of the session it fails loudly if a sandbox
container of this run, an orphaned one, or a process spawned by a submission remains.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from docker.api import APIClient

from judge.catalog import Catalog
from judge.grading import grade
from judge.report import VerdictReport
from judge.sandbox import get_sandbox
from judge.sandbox.base import Sandbox
from judge.settings import Settings
from judge.verdict import Verdict

from .support import (
    CORRECT_LAYOUT,
    INPUT_HEADS,
    SANDBOX_LABEL,
    SANDBOX_UID,
    SEARCH_CODE,
    SECURITY_PROBLEMS,
    TOKEN,
    VAULT_HEADS,
    Judge,
    api_client,
    describe,
    header,
    host_processes,
    our_containers,
    sandbox_uid_processes,
    stray_containers,
    wait_until,
)

# What "removed" and "gone" wait for: the time a removal may take on a busy engine, not
# how soon it is expected (a wait ends as soon as they are).
CLEANUP_DEADLINE = 60

# -- fixtures -----------------------------------------------------------------------------


@pytest.fixture(scope="session", autouse=True)
def nothing_left_at_the_end(settings: Settings) -> Iterator[None]:
    """Torn down last (autouse, session): after every sandbox closed, no sandbox container
    of this run, no orphaned one and no process a submission spawned may remain."""
    yield
    api = api_client(settings)
    try:
        wait_until(lambda: not stray_containers(api) and not host_processes(TOKEN),
                   CLEANUP_DEADLINE)
        containers = [f"{c['Id'][:12]} {c.get('Labels')}" for c in stray_containers(api)]
        others = [c for c in api.containers(all=True, filters={"label": SANDBOX_LABEL})
                  if c not in stray_containers(api)]
    finally:
        api.close()
    processes = host_processes(TOKEN)
    # With no other judge's sandbox running, no process at all may run as the sandbox uid.
    uid_processes = [] if others else sandbox_uid_processes()
    problems = []
    if containers:
        problems.append(f"sandbox containers remain after the suite: {containers}")
    if processes:
        problems.append(f"processes spawned by submissions remain: {processes}")
    if uid_processes:
        problems.append(f"processes of the sandbox uid {SANDBOX_UID} remain: {uid_processes}")
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


SUITE_SANDBOX = os.environ.get("JAXJUDGE_SECURITY_SANDBOX", "zygote")


@pytest.fixture(scope="session")
def docker_sandbox(settings: Settings) -> Iterator[Sandbox]:
    """The hardened backend every attack runs against: ``zygote`` (what the service runs:
    one long-lived container forking an isolated child per submission), or with
    ``JAXJUDGE_SECURITY_SANDBOX=docker`` a fresh container per submission (no warm pool).
    CI runs the suite in both."""
    sandbox = get_sandbox(SUITE_SANDBOX, settings)
    assert sandbox.name == SUITE_SANDBOX and sandbox.isolated
    yield sandbox
    sandbox.close()


@pytest.fixture(scope="session")
def docker_api(settings: Settings) -> Iterator[APIClient]:
    api = api_client(settings)
    yield api
    api.close()


@pytest.fixture(autouse=True)
def no_container_outlives_its_submission(request: pytest.FixtureRequest,
                                         docker_api: APIClient) -> Iterator[None]:
    """After every test that does not hold a warm pool: no container of ours is left."""
    yield
    if "pool_sandbox" in request.fixturenames:
        return
    # Zygote containers serve many submissions: they are checked at the end of the session.
    wait_until(lambda: not our_containers(docker_api, zygotes=False), CLEANUP_DEADLINE)
    left = [f"{c['Id'][:12]} {c['State']}" for c in our_containers(docker_api, zygotes=False)]
    assert not left, f"sandbox containers outlived their submission: {left}"


@pytest.fixture(scope="session")
def security_catalog() -> Catalog:
    return Catalog(SECURITY_PROBLEMS)


@pytest.fixture(scope="session")
def judge_layout(catalog: Catalog, docker_sandbox: Sandbox, settings: Settings) -> Judge:
    """Grade code against demo/layout in the docker sandbox; keyword arguments become
    module constants at the top of the submission."""
    problem = catalog.get("demo/layout")

    def run(code: str, **consts: Any) -> VerdictReport:
        source = header(TOKEN=TOKEN, **consts) + textwrap.dedent(code)
        return grade(problem, source, sandbox=docker_sandbox, settings=settings)

    return run


def secret_judge(catalog: Catalog, problem_id: str, heads: dict[Any, tuple[bytes, bytes]],
                 sandbox: Sandbox, settings: Settings) -> Judge:
    """Grade code against a problem of the suite whose secrets are ``heads`` (as
    VAULT_HEADS), with SEARCH, SCAN_FILES, SCAN_OBJECTS and SCAN_MEMORY defined."""
    problem = catalog.get(problem_id)

    def run(code: str, **consts: Any) -> VerdictReport:
        source = header(TOKEN=TOKEN, VAULT_HEADS=heads, **consts) + SEARCH_CODE
        return grade(problem, source + textwrap.dedent(code), sandbox=sandbox,
                     settings=settings)

    return run


@pytest.fixture(scope="session")
def judge_vault(security_catalog: Catalog, docker_sandbox: Sandbox, settings: Settings) -> Judge:
    """security/vault: its hidden answers are the secrets (see support.py)."""
    return secret_judge(security_catalog, "security/vault", VAULT_HEADS, docker_sandbox,
                        settings)


@pytest.fixture(scope="session")
def judge_echo(security_catalog: Catalog, docker_sandbox: Sandbox, settings: Settings) -> Judge:
    """security/echo: its hidden inputs are the secrets (support.INPUT_HEADS)."""
    return secret_judge(security_catalog, "security/echo", INPUT_HEADS, docker_sandbox,
                        settings)


@pytest.fixture(scope="session")
def still_healthy(judge_layout: Judge) -> Callable[[], None]:
    """After an attack: a correct submission is still accepted."""

    def check() -> None:
        report = judge_layout(CORRECT_LAYOUT)
        assert report.verdict is Verdict.ACCEPTED, describe(report)

    return check
