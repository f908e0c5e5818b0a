"""Shared fixtures: settings -> catalog -> sandbox, built on each other.

JAX is configured for 8 CPU devices before anything imports it, as the harness does.
"""

from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"

from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from judge.catalog import Catalog  # noqa: E402
from judge.sandbox import get_sandbox  # noqa: E402
from judge.sandbox.base import Sandbox  # noqa: E402
from judge.settings import REPO_ROOT, Settings  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def settings() -> Settings:
    """Settings pointing at the test fixture problems (tests/fixtures/problemsets)."""
    return Settings(problems_dir=FIXTURES / "problemsets")


@pytest.fixture(scope="session")
def catalog(settings: Settings) -> Catalog:
    return Catalog(settings.problems_dir)


@pytest.fixture(scope="session")
def seed_catalog() -> Catalog:
    """The real problem sets shipped in problemsets/."""
    return Catalog(REPO_ROOT / "problemsets")


@pytest.fixture(scope="session")
def process_sandbox(settings: Settings) -> Iterator[Sandbox]:
    sandbox = get_sandbox("process", settings)
    yield sandbox
    sandbox.close()


pytest_plugins = ["service_fixtures"]
