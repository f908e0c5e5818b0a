"""judge.verdict: the verdict names and how a run's verdicts combine."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from judge.verdict import Verdict, overall

A, WA, RE, TLE, MLE, OLE, CE, IE = (
    Verdict.ACCEPTED,
    Verdict.WRONG_ANSWER,
    Verdict.RUNTIME_ERROR,
    Verdict.TIME_LIMIT_EXCEEDED,
    Verdict.MEMORY_LIMIT_EXCEEDED,
    Verdict.OUTPUT_LIMIT_EXCEEDED,
    Verdict.COMPILE_ERROR,
    Verdict.INTERNAL_ERROR,
)


def test_wire_names() -> None:
    assert [v.value for v in Verdict] == [
        "accepted", "wrong_answer", "runtime_error", "time_limit_exceeded",
        "memory_limit_exceeded", "output_limit_exceeded", "compile_error", "internal_error",
    ]
    assert Verdict("wrong_answer") is WA
    assert f"{TLE}" == "time_limit_exceeded"


def test_no_tests_is_an_internal_error() -> None:
    assert overall([]) is IE
    assert overall(iter([])) is IE


def test_all_accepted() -> None:
    assert overall([A]) is A
    assert overall([A] * 50) is A


def test_first_failure_wins() -> None:
    assert overall([A, WA, TLE]) is WA
    assert overall([A, TLE, WA]) is TLE
    assert overall([RE, A, WA]) is RE
    assert overall([A, A, A, MLE]) is MLE
    assert overall([OLE, CE]) is OLE


def test_internal_error_anywhere_wins() -> None:
    assert overall([WA, A, IE]) is IE
    assert overall([IE, WA]) is IE
    assert overall([A, A, IE, A]) is IE


def test_takes_any_iterable_once() -> None:
    assert overall(v for v in [A, RE, WA]) is RE
    assert overall(v for v in [A, WA, IE]) is IE  # IE after the first failure still wins


@given(st.lists(st.sampled_from(list(Verdict)), max_size=20))
def test_overall_rule(verdicts: list[Verdict]) -> None:
    result = overall(verdicts)
    if not verdicts or IE in verdicts:
        assert result is IE
    elif all(v is A for v in verdicts):
        assert result is A
    else:
        assert result is next(v for v in verdicts if v is not A)
    assert overall(list(verdicts)) is result  # pure
