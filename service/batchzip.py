"""Reading an instructor's class upload: a zip archive of ``<student_id>.py`` files and
``<student_id>.ipynb`` notebooks.

The archive is treated as hostile: the rules every upload shares are in
:mod:`service.archives` (valid zip, no ``..``, no absolute path, no link or device, not
encrypted, bounded reads, no zip bomb). A class upload adds:

* Entries are ``<student_id>.py`` or ``<student_id>.ipynb`` (a Jupyter notebook), either
  all at the top level or all inside one common top-level folder (a zipped folder);
  nested folders and other suffixes are refused.
* A student id (the name without its suffix) matches
  ``^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$`` and is unique, also case-insensitively (so one
  student sends a ``.py`` or a ``.ipynb``, not both).
* There is at least one file and at most ``max_files``.
* No ``.py`` file is over ``max_file_bytes``, no notebook over ``max_notebook_bytes``
  (outputs make notebooks larger than their code), and all files together are not over
  ``max_total_bytes``.

Every violation raises ``SubmissionRejected`` with a one-line message naming the entry.
The bytes are returned as they are; decoding them (and reading a notebook's code:
``judge.notebook``) is the caller's job.
"""

from __future__ import annotations

import re
import zipfile
from typing import NamedTuple, NoReturn

from service import archives

STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")
SUFFIXES = (".py", ".ipynb")
LABEL = "batch archive"


class Member(NamedTuple):
    """A file of the archive: whose it is, its bytes, and whether it is a notebook."""

    student_id: str
    data: bytes
    notebook: bool = False

    @property
    def filename(self) -> str:
        return self.student_id + (".ipynb" if self.notebook else ".py")


def _reject(message: str) -> NoReturn:
    archives.reject(LABEL, message)


def read_batch_zip(
    data: bytes, *, max_files: int, max_total_bytes: int, max_file_bytes: int,
    max_notebook_bytes: int | None = None,
) -> list[Member]:
    """The files of a class upload, in archive order. ``max_notebook_bytes`` (default
    ``max_file_bytes``) bounds each ``.ipynb`` file."""
    with archives.open_zip(data, LABEL) as archive:
        members = _select(archive)
        if not members:
            _reject("contains no <student_id>.py or <student_id>.ipynb files")
        if len(members) > max_files:
            _reject(f"has {len(members)} files, more than the limit of {max_files}")
        per_notebook = max_file_bytes if max_notebook_bytes is None else max_notebook_bytes

        def most(info: zipfile.ZipInfo) -> int:
            return per_notebook if _notebook(info) else max_file_bytes

        def check(info: zipfile.ZipInfo, size: int, total: int) -> None:
            archives.check_sizes(LABEL, info, size, total, most(info), max_total_bytes,
                                 "notebook" if _notebook(info) else "file")

        declared = 0
        for _, info in members:
            declared += info.file_size
            check(info, info.file_size, declared)
        result: list[Member] = []
        total = 0
        for student_id, info in members:
            content = archives.read_member(archive, info, min(most(info), max_total_bytes - total),
                                           LABEL)
            total += len(content)
            check(info, len(content), total)
            result.append(Member(student_id, content, _notebook(info)))
        return result


def _notebook(info: zipfile.ZipInfo) -> bool:
    return info.filename.endswith(".ipynb")


def _select(archive: zipfile.ZipFile) -> list[tuple[str, zipfile.ZipInfo]]:
    """The entries to read, with their student ids; every path rule is checked here."""
    picked: list[tuple[list[str], zipfile.ZipInfo]] = []
    for parts, info in archives.entries(archive, LABEL):
        if len(parts) > 2:
            _reject(f"entry {archives.show(info.filename)} is in a nested folder")
        picked.append((parts, info))

    folder = next((parts[0] for parts, _ in picked if len(parts) == 2), None)
    selected: list[tuple[str, zipfile.ZipInfo]] = []
    seen: dict[str, str] = {}
    for parts, info in picked:
        shown = archives.show(info.filename)
        if folder is not None and (len(parts) == 1 or parts[0] != folder):
            _reject(
                f"entry {shown} is outside the folder {folder + '/'!r}; files must be all at "
                "the top level or all inside one folder"
            )
        suffix = next((s for s in SUFFIXES if parts[-1].endswith(s)), None)
        if suffix is None:
            _reject(f"entry {shown} is not a .py or .ipynb file")
        student_id = parts[-1].removesuffix(suffix)
        if not STUDENT_ID.fullmatch(student_id):
            _reject(
                f"entry {shown} is not a valid student id (1 to 128 letters, digits or . _ @ + -,"
                " starting with a letter or digit)"
            )
        if (key := student_id.lower()) in seen:
            _reject(f"entry {shown} duplicates student id {seen[key]!r}")
        seen[key] = student_id
        selected.append((student_id, info))
    return selected
