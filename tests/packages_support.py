"""Problem packages as an instructor uploads them: the scaffold of ``jaxjudge new`` as
files, changed as a test needs, and zipped."""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

from judge.scaffold import scaffold


def scaffold_files(problem_id: str = "course/softmax") -> dict[str, bytes]:
    """The files of a freshly scaffolded package (it verifies as written)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = scaffold(Path(tmp), problem_id)
        return {p.relative_to(root).as_posix(): p.read_bytes()
                for p in sorted(root.rglob("*")) if p.is_file()}


def slim(files: dict[str, bytes], keep: tuple[str, ...] = (
        "submissions/accepted/jax_nn_softmax.py",
        "submissions/wrong_answer/columns_not_rows.py")) -> dict[str, bytes]:
    """The package with only the examples in ``keep`` (a faster build)."""
    return {p: b for p, b in files.items()
            if not p.startswith("submissions/") or p in keep}


def zip_package(files: dict[str, bytes], folder: str | None = "softmax") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(f"{folder}/{name}" if folder else name, data)
    return buffer.getvalue()
