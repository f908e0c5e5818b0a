"""Verdicts and how a test run's verdicts combine into one."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Verdict(StrEnum):
    ACCEPTED = "accepted"
    WRONG_ANSWER = "wrong_answer"
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT_EXCEEDED = "time_limit_exceeded"
    MEMORY_LIMIT_EXCEEDED = "memory_limit_exceeded"
    OUTPUT_LIMIT_EXCEEDED = "output_limit_exceeded"
    COMPILE_ERROR = "compile_error"
    INTERNAL_ERROR = "internal_error"


def overall(verdicts: Iterable[Verdict]) -> Verdict:
    """The verdict of the first test that is not accepted; ``accepted`` if all are.

    A run with no test at all is an ``internal_error``: a problem always has tests.
    An ``internal_error`` anywhere wins, because then no verdict can be trusted.
    """
    seen = list(verdicts)
    if not seen or Verdict.INTERNAL_ERROR in seen:
        return Verdict.INTERNAL_ERROR
    return next((v for v in seen if v is not Verdict.ACCEPTED), Verdict.ACCEPTED)
