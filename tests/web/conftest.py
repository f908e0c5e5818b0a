"""Fixtures of the page tests."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from tests.web.pages_support import Page, launch


@pytest.fixture
def learner(client: FlaskClient, keys: dict[str, str]) -> Page:
    return launch(client, keys["client"], student="alice", name="Alice", course="algebra")
