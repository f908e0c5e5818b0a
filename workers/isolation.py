"""Fail closed: a grading worker grades only in a sandbox that isolates.

:func:`grading_sandbox` runs in the worker's main process before any pool process
exists (the ``SandboxCheck`` bootstep in :mod:`workers.app`). It names the backend the
worker's grading processes use, or raises :class:`Refused` with a one-line reason, and
the worker exits with status 1:

- a backend whose class is not ``isolated`` (``process``) is refused;
- ``auto`` is ``zygote`` (or ``docker`` without the zygote's seccomp profile) when an
  engine answers, and refused when none does (the CLI falls back to ``process`` there; a
  worker never does);
- ``zygote`` and ``docker`` are accepted while the engine is away: gradings find the
  sandbox unavailable and go back to the queue with backoff until it answers.

``JAXJUDGE_INSECURE_UNSANDBOXED_GRADING=true`` (trusted test setups only) accepts a
backend that does not isolate, and lets ``auto`` fall back to ``process``.
"""

from __future__ import annotations

from judge.errors import ConfigError
from judge.sandbox import backend, resolve
from judge.settings import Settings

INSECURE = "JAXJUDGE_INSECURE_UNSANDBOXED_GRADING"


class Refused(Exception):
    """The worker must not start; the message says why in one line."""


def grading_sandbox(judge: Settings, insecure: bool) -> str:
    """The name of the backend a grading worker uses; :class:`Refused` when none may."""
    name = resolve(judge.sandbox, judge)
    if judge.sandbox == "auto" and name == "process" and not insecure:
        raise Refused(
            f"JAXJUDGE_SANDBOX=auto and no Docker engine answers at {judge.docker_host}; "
            "a worker never falls back to the process sandbox, which does not isolate. "
            "Start the engine, or set JAXJUDGE_SANDBOX=zygote to start and wait for it")
    try:
        cls = backend(name)
    except ConfigError as exc:
        raise Refused(str(exc)) from None
    if not cls.isolated and not insecure:
        raise Refused(
            f"the {name} sandbox does not isolate, and a worker grades untrusted code only "
            f"in one that does (JAXJUDGE_SANDBOX=zygote or docker); {INSECURE}=true allows it, for "
            "trusted test setups only")
    return name
