"""Paths shared by the tests."""

from __future__ import annotations

from pathlib import Path

FIXTURE_PROBLEMS = Path(__file__).parent / "fixtures" / "problemsets"
