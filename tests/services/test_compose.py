"""compose.yaml describes the deployed shape: every part, with health checks, the worker
with the engine's socket and a sandbox that isolates, nothing that would hand the
sandboxes a network."""

from __future__ import annotations

import os
import re
from pathlib import PurePosixPath
from typing import Any

import pytest
import yaml

from judge.settings import REPO_ROOT, Settings
from service.settings import ServiceSettings
from workers.isolation import grading_sandbox

GRADING_QUEUES = {"interactive", "batch"}


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    doc = yaml.safe_load((REPO_ROOT / "compose.yaml").read_text())
    found: dict[str, Any] = doc["services"]
    return found


REQUIRED = "set-by-the-operator"


def environment(service: dict[str, Any]) -> dict[str, str]:
    """The service's environment as compose gives it with only the required variables
    set: each ``${NAME:-default}`` is its default, ``${NAME}`` is empty, and a required
    ``${NAME:?message}`` is what the operator set (``REQUIRED``)."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)

    def resolve(value: object) -> str:
        value = re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*:?\?[^}]*\}", REQUIRED, str(value))
        return re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::?-([^}]*))?\}",
                      lambda m: m.group(1) or "", value)

    return {name: resolve(value) for name, value in env.items()}


def grades(service: dict[str, Any]) -> bool:
    """The service runs a Celery worker that consumes a grading queue."""
    command = [str(part) for part in service.get("command") or []]
    if "worker" not in command or "workers.app" not in command:
        return False
    queues = command[command.index("-Q") + 1].split(",") if "-Q" in command else [
        "interactive", "batch", "webhooks"]
    return bool(GRADING_QUEUES & set(queues))


def test_compose_has_every_part_with_health_checks(services: dict[str, Any]) -> None:
    assert {"redis", "postgres", "sandbox-image", "migrate", "api", "worker", "webhooks",
            "sweeper"} <= set(services)
    for name in ("redis", "postgres", "api", "worker"):
        assert "healthcheck" in services[name], name
    assert any("docker.sock" in str(v) for v in services["worker"].get("volumes", []))
    for name in ("api", "webhooks", "sweeper"):
        assert not any("docker.sock" in str(v) for v in services[name].get("volumes", []))
    assert "gunicorn" in str(services["api"]["command"])
    assert environment(services["api"])["JAXJUDGE_DATABASE_URL"].startswith("postgresql")
    assert services["sweeper"]["command"] == ["python", "-m", "workers.sweeper"]


def test_every_grading_worker_grades_in_the_zygote_sandbox(
        services: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The settings each grading worker reads from its environment, parsed as the worker
    parses them: the zygote sandbox with its profile mounted, the host's control groups
    mounted where it reads them, and grading without isolation never allowed."""
    graders = [name for name, service in services.items() if grades(service)]
    assert graders == ["worker"]
    for name, service in services.items():
        env = environment(service)
        assert not any("INSECURE" in variable for variable in env), name
        if name not in graders:
            continue
        for variable in list(os.environ):
            if variable.startswith("JAXJUDGE_"):
                monkeypatch.delenv(variable)
        for variable, value in env.items():
            monkeypatch.setenv(variable, value)
        judge, service_settings = Settings(), ServiceSettings()
        assert judge.sandbox == "zygote"
        assert service_settings.insecure_unsandboxed_grading is False
        assert grading_sandbox(judge, service_settings.insecure_unsandboxed_grading) == "zygote"
        profile = str(judge.docker_seccomp_profile)
        assert f"./var/zygote-seccomp.json:{profile}:ro" in service["volumes"]
        assert judge.docker_host == "unix:///var/run/docker.sock"
        # The host's control groups, where it reads the sandboxes' CPU time; from its own
        # PID namespace, children are accounted in their containers' groups.
        assert f"/sys/fs/cgroup:{judge.cgroup_root}:ro" in service["volumes"]
        assert judge.zygote_accounting == "container"


def test_every_service_container_shares_one_required_secret_and_keeps_var_in_its_tmpfs(
        services: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The pages and LTI need a secret that every API process and worker shares (it
    encrypts the LTI keys in the database and signs launch links): compose refuses to
    start without one, and no container is left to make its own on a read-only root.
    ``var`` (the packages cache) is under the tmpfs, and every JAXJUDGE_ name is a
    setting the service or the judge reads (a misspelt one would be ignored)."""
    text = (REPO_ROOT / "compose.yaml").read_text()
    assert re.search(r"JAXJUDGE_SECRET_KEY: \$\{JAXJUDGE_SECRET_KEY:\?", text)
    known = {f"JAXJUDGE_{name.upper()}" for name in
             (*ServiceSettings.model_fields, *Settings.model_fields)}
    image = {name for name, s in services.items() if s.get("image") == "jaxjudge-service:latest"}
    assert {"api", "worker", "webhooks", "sweeper", "migrate"} <= image
    for name in image:
        env = environment(services[name])
        assert set(n for n in env if n.startswith("JAXJUDGE_")) <= known, name
        assert env["JAXJUDGE_SECRET_KEY"] == REQUIRED, name
        for variable in list(os.environ):
            if variable.startswith("JAXJUDGE_"):
                monkeypatch.delenv(variable)
        for variable, value in env.items():
            monkeypatch.setenv(variable, value)
        settings = ServiceSettings()
        assert settings.secret_key == REQUIRED
        assert services[name].get("read_only") is True, name
        assert any(settings.var.is_relative_to(mount) for mount in
                   map(PurePosixPath, services[name].get("tmpfs", []))), name
        assert settings.packages_dir.is_relative_to(settings.var), name
        assert settings.database_url.startswith("postgresql"), name
