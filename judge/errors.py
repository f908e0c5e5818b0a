"""The one error hierarchy of the core.

``JudgeError`` is the root. Faults of the submission are never errors: they become
verdicts. Errors are for the caller's input and for the judge's own state::

    JudgeError
    ├── UsageError           bad input from the caller (CLI exit 2, HTTP 4xx)
    │   ├── ProblemNotFound  an unknown problem id; carries close matches
    │   └── SubmissionRejected  code that is empty, not UTF-8 or too large
    ├── ProblemError         a problem package that is malformed or inconsistent
    ├── ConfigError          bad settings, an unknown sandbox or checker name
    └── SandboxError         the sandbox itself failed
        └── SandboxUnavailable  the infrastructure is away (engine down, image missing,
                                a container not created): no verdict, try again later
"""

from __future__ import annotations

from typing import Any


class JudgeError(Exception):
    """Root of every error the core raises on purpose."""


class UsageError(JudgeError):
    """The caller asked for something that cannot be done as asked."""


class ProblemNotFound(UsageError):
    def __init__(self, problem_id: str, close: list[str]) -> None:
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        super().__init__(f"unknown problem {problem_id!r}{hint}")
        self.problem_id = problem_id
        self.close = close


class SubmissionRejected(UsageError):
    """The submitted code cannot be graded at all (not a verdict: nothing ran)."""


class ProblemError(JudgeError):
    """A problem package is malformed, or its stored data does not match its hash."""


class BuildFailed(ProblemError):
    """The reference failed on some tests or probes: every failure, in test order."""

    def __init__(self, problem_id: str, failures: list[str], passed: list[Any] | None = None
                 ) -> None:
        self.failures = failures
        # The tests the reference passed, probes and all (judge.testdata.StoredTest): what
        # the examples can still be checked on (judge.verify.check_examples).
        self.passed = passed or []
        head = failures[0] if len(failures) == 1 else (
            f"{len(failures)} failures of the reference: {failures[0]}")
        super().__init__(f"{problem_id}: {head}" + "".join(f"\n  {f}" for f in failures[1:]))


class ConfigError(JudgeError):
    """A setting is invalid, or a sandbox or checker name is unknown."""


class SandboxError(JudgeError):
    """The sandbox failed for reasons of its own."""


class SandboxUnavailable(SandboxError):
    """The sandbox's infrastructure failed (the engine is down or restarting, the image
    is missing, a container could not be created or vanished with the engine). Nothing the
    submission did: the caller retries later; it never becomes a verdict."""
