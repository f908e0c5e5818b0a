"""Sandbox backends, chosen by name.

``docker``   the harness in a hardened container: for everything that is not the
             author's own code.
``zygote``   hardened long-lived containers that import jax once and fork one child per
             submission into fresh namespaces: the service's default (docs/security.md).
``process``  the harness as a child process with resource limits. For trusted code only:
             problem authors building and verifying packages, students checking locally.
``auto``     ``zygote`` when an engine answers and the zygote's seccomp profile exists,
             else ``docker`` when an engine answers, else ``process`` (the CLI warns; a
             service worker refuses the last: ``workers/isolation.py``).
"""

from __future__ import annotations

from importlib import import_module

from judge.errors import ConfigError
from judge.sandbox.base import Sandbox
from judge.settings import Settings

BACKENDS: dict[str, str] = {
    "docker": "judge.sandbox.docker:DockerSandbox",
    "process": "judge.sandbox.process:ProcessSandbox",
    "zygote": "judge.sandbox.zygote:ZygoteSandbox",
}


def backend(name: str) -> type[Sandbox]:
    """The backend class called ``name`` (not ``auto``), not instantiated: its
    ``isolated`` says whether untrusted code may run in it."""
    try:
        target = BACKENDS[name]
    except KeyError:
        raise ConfigError(
            f"unknown sandbox {name!r}; known: {', '.join(sorted(BACKENDS))}, auto"
        ) from None
    module, _, attr = target.partition(":")
    cls: type[Sandbox] = getattr(import_module(module), attr)
    return cls


def resolve(name: str, settings: Settings) -> str:
    """``name``, with ``auto`` made concrete: ``zygote`` when an engine answers and the
    zygote's seccomp profile is there, else ``docker`` when an engine answers, else
    ``process`` (the CLI warns; a service worker refuses it: ``workers/isolation.py``)."""
    if name != "auto":
        return name
    from judge.errors import SandboxError
    from judge.sandbox import seccomp
    from judge.sandbox.engine import engine_answers

    if not engine_answers(settings):
        return "process"
    try:
        seccomp.load(settings.docker_seccomp_profile)
    except SandboxError:
        return "docker"
    return "zygote"


def get_sandbox(name: str, settings: Settings) -> Sandbox:
    """The backend called ``name`` (``auto``: see :func:`resolve`)."""
    return backend(resolve(name, settings))(settings)


__all__ = ["BACKENDS", "Sandbox", "backend", "get_sandbox", "resolve"]
