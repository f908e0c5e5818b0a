"""Fixtures of the service tests beyond the shared ones (tests/service_fixtures.py): the
sweeper as a real process."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from servers import Sweeper, service_env

from judge.settings import Settings
from service.settings import ServiceSettings


@pytest.fixture
def start_sweeper(service_settings: ServiceSettings, judge_settings: Settings,
                  tmp_path: Path) -> Iterator[Callable[..., Sweeper]]:
    """Start sweeper processes with the test's settings; all are stopped afterwards."""
    started: list[Sweeper] = []

    def start(**overrides: Any) -> Sweeper:
        values = {**service_settings.model_dump(), **judge_settings.model_dump(), **overrides}
        sweeper = Sweeper(service_env(values), tmp_path / f"sweeper{len(started)}.log")
        started.append(sweeper)
        return sweeper

    yield start
    for sweeper in started:
        sweeper.stop()
