"""The sandbox interface: run a job through the harness somewhere, hand back the outcome."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from judge.sandbox.protocol import Job, RunOutcome
from judge.settings import Settings


class Sandbox(ABC):
    """Runs the harness on one job. Implementations never raise for anything the
    submission does; their own failures come back as an ``internal_error`` outcome."""

    name: ClassVar[str]
    isolated: ClassVar[bool]  # whether untrusted code may be run in it

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @abstractmethod
    def run(self, job: Job) -> RunOutcome: ...

    def warm(self) -> dict[str, int]:
        """What it keeps started ahead of submissions: ``size`` wanted, ``ready`` now,
        ``started`` ever; empty when it keeps nothing warm."""
        return {}

    def close(self) -> None:  # noqa: B027 (optional hook, not abstract)
        """Release what the backend holds (pools, clients)."""
