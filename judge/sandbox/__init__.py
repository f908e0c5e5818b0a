"""Sandbox backends, chosen by name.

``process``  the harness as a child process with resource limits. For trusted code only:
             problem authors building and verifying packages, students checking locally.
``docker``   the hardened container (the next step; not registered yet).
"""

from __future__ import annotations

from importlib import import_module

from judge.errors import ConfigError
from judge.sandbox.base import Sandbox
from judge.settings import Settings

BACKENDS: dict[str, str] = {
    "process": "judge.sandbox.process:ProcessSandbox",
}


def get_sandbox(name: str, settings: Settings) -> Sandbox:
    try:
        target = BACKENDS[name]
    except KeyError:
        raise ConfigError(
            f"unknown sandbox {name!r}; known: {', '.join(sorted(BACKENDS))}"
        ) from None
    module, _, attr = target.partition(":")
    cls: type[Sandbox] = getattr(import_module(module), attr)
    return cls(settings)


__all__ = ["BACKENDS", "Sandbox", "get_sandbox"]
