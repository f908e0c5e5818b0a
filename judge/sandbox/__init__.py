"""Sandbox backends, chosen by name.

``docker``   the harness in a hardened container: for everything that is not the
             author's own code.
``zygote``   hardened long-lived containers that import jax once and fork one child per
             submission into fresh namespaces: the service's default (docs/security.md).
``process``  the harness as a child process with resource limits. For trusted code only:
             problem authors building and verifying packages, students checking locally.
``auto``     ``docker`` when an engine answers, else ``process`` (the CLI warns; a
             service worker refuses it: ``workers/isolation.py``).
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


def get_sandbox(name: str, settings: Settings) -> Sandbox:
    """The backend called ``name``; ``auto`` is docker when an engine answers, else
    process (for the CLI, which warns; the service never asks for ``auto``'s fallback)."""
    if name == "auto":
        from judge.sandbox.docker import engine_answers

        name = "docker" if engine_answers(settings) else "process"
    return backend(name)(settings)


__all__ = ["BACKENDS", "Sandbox", "backend", "get_sandbox"]
