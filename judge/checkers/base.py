"""The checker interface: compare one received value with the expected one.

Checkers run on the trusted side, with NumPy only, on values that were validated by
``judge.values``. They return a :class:`CheckResult` whose ``reason`` is safe to show for
hidden tests (it names what is wrong, never the expected value) and whose ``detail`` may
show expected values (sample tests only).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict


@dataclass(frozen=True)
class CheckResult:
    passed: bool
    reason: str = ""  # safe for hidden tests
    detail: str = ""  # may reveal the expected value

    @classmethod
    def ok(cls) -> CheckResult:
        return cls(True)

    @classmethod
    def fail(cls, reason: str, detail: str = "") -> CheckResult:
        return cls(False, reason, detail or reason)


class CheckerParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Checker(ABC):
    name: ClassVar[str]
    Params: ClassVar[type[CheckerParams]] = CheckerParams

    def __init__(self, params: CheckerParams) -> None:
        self.params = params

    @classmethod
    def from_config(cls, params: dict[str, Any]) -> Checker:
        return cls(cls.Params.model_validate(params))

    @abstractmethod
    def check(self, expected: Any, received: Any) -> CheckResult: ...
