"""Assertions shared by the checker tests."""

from __future__ import annotations

from typing import Any

from judge.checkers.base import Checker, CheckResult
from judge.values import render

from ..conftest import wire_value as w


def assert_passes(checker: Checker, expected: Any, received: Any) -> None:
    result = checker.check(w(expected), w(received))
    assert result == CheckResult(True), result


def assert_fails(checker: Checker, expected: Any, received: Any, *secrets: str) -> CheckResult:
    """It fails, with a reason (shown for hidden tests) that reveals none of ``secrets``
    and not the rendered expected value."""
    exp = w(expected)
    result = checker.check(exp, w(received))
    assert not result.passed
    assert result.reason and result.detail
    for secret in (*secrets, render(exp)):
        assert secret not in result.reason, (secret, result.reason)
    return result
