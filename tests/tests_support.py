"""Paths shared by the tests."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

FIXTURE_PROBLEMS = Path(__file__).parent / "fixtures" / "problemsets"
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
