"""workers.retry: what a grading and a build do when the sandbox is unavailable (each uses
it: tests/services/test_faults.py and test_workers.py see it through real workers)."""

from __future__ import annotations

import logging

import pytest

from service.settings import ServiceSettings
from workers.retry import RETRY_CAP_SECONDS, postpone_or_give_up


def settings(**values: object) -> ServiceSettings:
    return ServiceSettings(**{"sandbox_attempts": 3, "sandbox_retry_seconds": 2.0, **values})


def test_below_the_attempts_the_job_is_postponed_with_a_growing_backoff(
        caplog: pytest.LogCaptureFixture) -> None:
    for earlier, base in ((0, 2.0), (1, 4.0)):
        delays: list[float] = []
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="workers.retry"):
            assert postpone_or_give_up(settings(), "grading s1", earlier, "engine down",
                                       delays.append) is None
        [delay] = delays
        assert 0.8 * base <= delay <= 1.2 * base  # backoff(failures, base), jittered
        assert (f"grading s1: the sandbox is unavailable ({earlier + 1} of 3)"
                in caplog.text) and "engine down" in caplog.text


def test_the_backoff_is_capped() -> None:
    delays: list[float] = []
    assert postpone_or_give_up(settings(sandbox_attempts=100, sandbox_retry_seconds=60.0),
                               "build v1", 30, "down", delays.append) is None
    assert delays == [RETRY_CAP_SECONDS]


def test_at_the_attempts_it_gives_up_with_the_reason(caplog: pytest.LogCaptureFixture) -> None:
    postponed: list[float] = []
    with caplog.at_level(logging.ERROR, logger="workers.retry"):
        why = postpone_or_give_up(settings(), "build v1", 2, "no Docker engine answers",
                                  postponed.append)
    assert why == ("the sandbox was unavailable 3 times; the last time: no Docker engine "
                   "answers")
    assert postponed == []
    assert "build v1: the sandbox was unavailable 3 times, giving up" in caplog.text
