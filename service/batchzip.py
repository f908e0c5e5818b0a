"""Reading an instructor's class upload: a zip archive of ``<student_id>.py`` files and
``<student_id>.ipynb`` notebooks.

The archive is treated as hostile. The rules, roughly in the order they are checked:

* It must be a readable zip archive: not a zip, a truncated one or a bad CRC is refused.
* Directory entries, anything under ``__MACOSX/`` and hidden entries (a path component
  starting with ``.``, such as ``.DS_Store``) are ignored, and never read.
* No entry may contain a backslash, be an absolute path (``/x.py``, ``C:x.py``), contain a
  ``..`` component (it would escape the archive) or an empty or ``.`` component.
* Every other entry is a regular file (no symlink, device or FIFO, judged by the unix mode
  in ``external_attr >> 16``) and not encrypted.
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
  The declared sizes are checked first, but never trusted alone: every member is read
  through a bounded read (at most limit + 1 bytes), so a lying header cannot expand past
  the limits.
* A member over 1 MiB may not compress better than 200:1 (zip bombs).

Every violation raises ``SubmissionRejected`` with a one-line message naming the entry.
The bytes are returned as they are; decoding them (and reading a notebook's code:
``judge.notebook``) is the caller's job.
"""

from __future__ import annotations

import io
import lzma
import re
import stat
import zipfile
import zlib
from typing import NamedTuple, NoReturn

from judge.errors import SubmissionRejected

STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")
RATIO_FLOOR = 1 << 20  # members up to this size may compress as well as they like
MAX_RATIO = 200
_ENCRYPTED = 0x1
SUFFIXES = (".py", ".ipynb")
_READ_ERRORS = (
    zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError,
    NotImplementedError, RuntimeError, zlib.error, lzma.LZMAError,
)


class Member(NamedTuple):
    """A file of the archive: whose it is, its bytes, and whether it is a notebook."""

    student_id: str
    data: bytes
    notebook: bool = False

    @property
    def filename(self) -> str:
        return self.student_id + (".ipynb" if self.notebook else ".py")


def _reject(message: str) -> NoReturn:
    raise SubmissionRejected(f"batch archive: {message}")


def _show(name: str) -> str:
    """The entry name quoted and escaped (one line), cut short if it is long."""
    return repr(name if len(name) <= 80 else name[:80] + "...")


def _why(exc: Exception) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:200]


def read_batch_zip(
    data: bytes, *, max_files: int, max_total_bytes: int, max_file_bytes: int,
    max_notebook_bytes: int | None = None,
) -> list[Member]:
    """The files of a class upload, in archive order. ``max_notebook_bytes`` (default
    ``max_file_bytes``) bounds each ``.ipynb`` file."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except _READ_ERRORS as exc:
        _reject(f"not a valid zip archive ({_why(exc)})")
    with archive:
        members = _select(archive.infolist())
        if not members:
            _reject("contains no <student_id>.py or <student_id>.ipynb files")
        if len(members) > max_files:
            _reject(f"has {len(members)} files, more than the limit of {max_files}")
        per_notebook = max_file_bytes if max_notebook_bytes is None else max_notebook_bytes

        def most(info: zipfile.ZipInfo) -> int:
            return per_notebook if _notebook(info) else max_file_bytes

        declared = 0
        for _, info in members:
            declared += info.file_size
            _check_sizes(info, info.file_size, declared, most(info), max_total_bytes)
        result: list[Member] = []
        total = 0
        for student_id, info in members:
            content = _read(archive, info, min(most(info), max_total_bytes - total))
            total += len(content)
            _check_sizes(info, len(content), total, most(info), max_total_bytes)
            result.append(Member(student_id, content, _notebook(info)))
        return result


def _notebook(info: zipfile.ZipInfo) -> bool:
    return info.filename.endswith(".ipynb")


def _select(infos: list[zipfile.ZipInfo]) -> list[tuple[str, zipfile.ZipInfo]]:
    """The entries to read, with their student ids; every path rule is checked here."""
    picked: list[tuple[list[str], zipfile.ZipInfo]] = []
    for info in infos:
        name, shown = info.filename, _show(info.filename)
        if "\\" in name:
            _reject(f"entry {shown} contains a backslash")
        if name.startswith("/") or re.match(r"[A-Za-z]:", name):
            _reject(f"entry {shown} is an absolute path")
        parts = name.removesuffix("/").split("/")
        if ".." in parts:
            _reject(f"entry {shown} escapes the archive")
        if "" in parts or "." in parts:
            _reject(f"entry {shown} has an empty or '.' path component")
        if info.is_dir() or parts[0] == "__MACOSX" or any(p.startswith(".") for p in parts):
            continue
        kind = stat.S_IFMT(info.external_attr >> 16)
        if kind == stat.S_IFLNK:
            _reject(f"entry {shown} is a symlink")
        if kind not in (0, stat.S_IFREG):
            _reject(f"entry {shown} is not a regular file")
        if info.flag_bits & _ENCRYPTED:
            _reject(f"entry {shown} is encrypted")
        if len(parts) > 2:
            _reject(f"entry {shown} is in a nested folder")
        picked.append((parts, info))

    folder = next((parts[0] for parts, _ in picked if len(parts) == 2), None)
    selected: list[tuple[str, zipfile.ZipInfo]] = []
    seen: dict[str, str] = {}
    for parts, info in picked:
        shown = _show(info.filename)
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


def _check_sizes(
    info: zipfile.ZipInfo, size: int, total: int, max_file_bytes: int, max_total_bytes: int
) -> None:
    shown = _show(info.filename)
    if size > max_file_bytes:
        kind = "notebook" if _notebook(info) else "file"
        _reject(f"entry {shown} is over the limit of {max_file_bytes} bytes per {kind}")
    if total > max_total_bytes:
        _reject(f"entry {shown} takes the archive over the limit of {max_total_bytes} bytes")
    if size > RATIO_FLOOR and size > MAX_RATIO * max(info.compress_size, 1):
        _reject(f"entry {shown} compresses more than {MAX_RATIO}:1 (a zip bomb?)")


def _read(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of the member, whatever its header says."""
    try:
        with archive.open(info) as member:
            return member.read(limit + 1)
    except _READ_ERRORS as exc:
        _reject(f"entry {_show(info.filename)} is corrupt or unreadable ({_why(exc)})")
