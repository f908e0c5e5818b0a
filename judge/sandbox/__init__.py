"""Sandbox backends, chosen by name.

``docker``   the harness in a hardened container: for everything that is not the
             author's own code.
``process``  the harness as a child process with resource limits. For trusted code only:
             problem authors building and verifying packages, students checking locally.
``auto``     ``docker`` when an engine answers, else ``process`` (callers warn).
"""

from __future__ import annotations

from importlib import import_module

from judge.errors import ConfigError
from judge.sandbox.base import Sandbox
from judge.settings import Settings

BACKENDS: dict[str, str] = {
    "docker": "judge.sandbox.docker:DockerSandbox",
    "process": "judge.sandbox.process:ProcessSandbox",
}


def get_sandbox(name: str, settings: Settings) -> Sandbox:
    """The backend called ``name``; ``auto`` is docker when an engine answers."""
    if name == "auto":
        from judge.sandbox.docker import engine_answers

        name = "docker" if engine_answers(settings) else "process"
    try:
        target = BACKENDS[name]
    except KeyError:
        raise ConfigError(
            f"unknown sandbox {name!r}; known: {', '.join(sorted(BACKENDS))}, auto"
        ) from None
    module, _, attr = target.partition(":")
    cls: type[Sandbox] = getattr(import_module(module), attr)
    return cls(settings)


__all__ = ["BACKENDS", "Sandbox", "get_sandbox"]
