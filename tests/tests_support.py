"""Paths shared by the tests."""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from judge.problem import Problem
    from judge.settings import Settings

FIXTURE_PROBLEMS = Path(__file__).parent / "fixtures" / "problemsets"
# Probe fixtures kept without data (out of every fixture catalog): built where a test
# wants them (built_probe_fixture).
PROBE_FIXTURES = Path(__file__).parent / "fixtures" / "probes"
# Notebooks solving demo/layout, with IPython magics and shell escapes (nbformat 4 and 3).
FIXTURE_NOTEBOOKS = Path(__file__).parent / "fixtures" / "notebooks"

# Solutions of the fixture problem demo/layout, for the service tests.
LAYOUT_GOOD = (
    "def layout(num_devices, kernel_in, kernel_out):\n"
    "    return [kernel_in, kernel_out // num_devices]\n"
)
LAYOUT_WRONG = "def layout(num_devices, kernel_in, kernel_out):\n    return [kernel_in, kernel_out]\n"


def zip_archive(files: dict[str, str | bytes]) -> io.BytesIO:
    """A zip of ``files`` (name -> content), rewound, as a class upload sends it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    buffer.seek(0)
    return buffer


def built_probe_fixture(name: str, root: Path, settings: Settings) -> Problem:
    """PROBE_FIXTURES/``name``, copied to ``root``/demo/``name`` and built there (its
    reference run in the process sandbox): a one-problem catalog, problem ``demo/name``."""
    from judge.build import build
    from judge.problem import Problem
    from judge.sandbox import get_sandbox

    path = root / "demo" / name
    shutil.copytree(PROBE_FIXTURES / name, path)
    box = get_sandbox("process", settings)
    try:
        build(Problem.load(f"demo/{name}", path), sandbox=box, settings=settings)
    finally:
        box.close()
    return Problem.load(f"demo/{name}", path)
