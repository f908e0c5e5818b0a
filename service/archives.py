"""Reading hostile zip archives: the rules every upload shares (a class's batch,
:mod:`service.batchzip`; a problem package, :mod:`service.packages`).

* It must be a readable zip archive: not a zip, a truncated one or a bad CRC is refused.
* Directory entries, anything under ``__MACOSX/`` and hidden entries (a path component
  starting with ``.``, such as ``.DS_Store``) are ignored, and never read.
* No entry may contain a backslash, be an absolute path (``/x.py``, ``C:x.py``), contain a
  ``..`` component (it would escape the archive) or an empty or ``.`` component.
* Every other entry is a regular file (no symlink, device or FIFO, judged by the unix mode
  in ``external_attr >> 16``) and not encrypted.
* Declared sizes are checked first, but never trusted alone: every member is read through
  a bounded read (at most limit + 1 bytes), so a lying header cannot expand past a limit.
* A member over 1 MiB may not compress better than 200:1 (zip bombs).

Every violation raises :class:`~judge.errors.SubmissionRejected` with a one-line message
that starts with the archive's label and names the entry.
"""

from __future__ import annotations

import io
import lzma
import re
import stat
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from judge.errors import SubmissionRejected

RATIO_FLOOR = 1 << 20  # members up to this size may compress as well as they like
MAX_RATIO = 200
_ENCRYPTED = 0x1
READ_ERRORS = (
    zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError,
    NotImplementedError, RuntimeError, zlib.error, lzma.LZMAError,
)


def reject(label: str, message: str) -> NoReturn:
    raise SubmissionRejected(f"{label}: {message}")


def show(name: str) -> str:
    """The entry name quoted and escaped (one line), cut short if it is long."""
    return repr(name if len(name) <= 80 else name[:80] + "...")


def why(exc: Exception) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:200]


@contextmanager
def open_zip(data: bytes, label: str) -> Iterator[zipfile.ZipFile]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except READ_ERRORS as exc:
        reject(label, f"not a valid zip archive ({why(exc)})")
    with archive:
        yield archive


def entries(archive: zipfile.ZipFile, label: str
            ) -> Iterator[tuple[list[str], zipfile.ZipInfo]]:
    """The regular files of the archive with their path components, after every path
    rule; ignored entries (folders, ``__MACOSX``, hidden files) are skipped."""
    for info in archive.infolist():
        name, shown = info.filename, show(info.filename)
        if "\\" in name:
            reject(label, f"entry {shown} contains a backslash")
        if name.startswith("/") or re.match(r"[A-Za-z]:", name):
            reject(label, f"entry {shown} is an absolute path")
        parts = name.removesuffix("/").split("/")
        if ".." in parts:
            reject(label, f"entry {shown} escapes the archive")
        if "" in parts or "." in parts:
            reject(label, f"entry {shown} has an empty or '.' path component")
        if info.is_dir() or parts[0] == "__MACOSX" or any(p.startswith(".") for p in parts):
            continue
        kind = stat.S_IFMT(info.external_attr >> 16)
        if kind == stat.S_IFLNK:
            reject(label, f"entry {shown} is a symlink")
        if kind not in (0, stat.S_IFREG):
            reject(label, f"entry {shown} is not a regular file")
        if info.flag_bits & _ENCRYPTED:
            reject(label, f"entry {shown} is encrypted")
        yield parts, info


def check_sizes(label: str, info: zipfile.ZipInfo, size: int, total: int,
                max_file_bytes: int, max_total_bytes: int, noun: str = "file") -> None:
    shown = show(info.filename)
    if size > max_file_bytes:
        reject(label, f"entry {shown} is over the limit of {max_file_bytes} bytes per {noun}")
    if total > max_total_bytes:
        reject(label, f"entry {shown} takes the archive over the limit of "
               f"{max_total_bytes} bytes")
    if size > RATIO_FLOOR and size > MAX_RATIO * max(info.compress_size, 1):
        reject(label, f"entry {shown} compresses more than {MAX_RATIO}:1 (a zip bomb?)")


def read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int,
                label: str) -> bytes:
    """At most ``limit + 1`` bytes of the member, whatever its header says."""
    try:
        with archive.open(info) as member:
            return member.read(limit + 1)
    except READ_ERRORS as exc:
        reject(label, f"entry {show(info.filename)} is corrupt or unreadable ({why(exc)})")
