"""Fixtures of the API tests: what an app asks the database."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import Engine, event


@pytest.fixture
def statements() -> Iterator[Callable[[Flask], list[str]]]:
    """``statements(app)``: a list that receives every SQL statement ``app`` runs from
    then on, until the test ends."""
    installed: list[tuple[Engine, Any]] = []

    def start(app: Flask) -> list[str]:
        seen: list[str] = []

        def listener(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
            seen.append(statement)

        engine = app.extensions["jaxjudge"].db.engine
        event.listen(engine, "before_cursor_execute", listener)
        installed.append((engine, listener))
        return seen

    yield start
    for engine, listener in installed:
        event.remove(engine, "before_cursor_execute", listener)


@pytest.fixture
def sql(app: Flask, statements: Callable[[Flask], list[str]]) -> list[str]:
    """The statements the test's ``app`` runs (``sql.clear()`` before the request of
    interest)."""
    return statements(app)
