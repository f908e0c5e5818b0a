"""A class of submissions for :mod:`judge.similarity` from a folder or a zip file, bounded.

One student per top-level entry: a ``.py`` file, a ``.ipynb`` notebook (compared by the
code the judge grades: :func:`judge.notebook.read_notebook`), or a folder whose ``.py``
files (at any depth up to ``MAX_DEPTH``, in sorted order of their paths) are joined.
Named by the entry (its file name without the suffix). Other files are ignored; a file
or notebook that cannot be read as code is left out, never an error. Hidden entries
(``.`` or ``__MACOSX``) are ignored.

Bounds: at most ``MAX_MEMBERS`` files looked at, each at most the judge's
``max_notebook_bytes`` (a notebook) or ``max_code_bytes``, ``MAX_TOTAL`` bytes in all,
paths ``MAX_DEPTH`` deep; past one of them, :class:`UsageError`. Fewer than two students:
:class:`UsageError`.
"""

from __future__ import annotations

import zipfile
from pathlib import Path, PurePosixPath

from judge.errors import UsageError
from judge.notebook import is_notebook, source_from_upload
from judge.settings import Settings
from judge.similarity import MAX_DOCUMENTS, Document

MAX_MEMBERS = 10_000
MAX_TOTAL = 256 * 1024 * 1024
MAX_DEPTH = 8


def read_template(path: Path, settings: Settings) -> str:
    """A template file (Python or a notebook) as code; :class:`UsageError` if it is not."""
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    data = _bounded(path.name, path.stat().st_size, settings)
    return source_from_upload(path.name, path.read_bytes()[:data], settings,
                              noun=str(path)).code


def _bounded(name: str, size: int, settings: Settings) -> int:
    limit = settings.max_notebook_bytes if is_notebook(name) else settings.max_code_bytes
    if size > limit:
        raise UsageError(f"{name} is {size} bytes; the limit is {limit} bytes")
    return limit


def read_class(path: Path, settings: Settings) -> list[Document]:
    """The students of the folder or zip file ``path`` (see the module)."""
    if not path.exists():
        raise UsageError(f"{path}: no such file or folder")
    files: list[tuple[str, bytes]] = []
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink())
        if len(found) > MAX_MEMBERS:
            raise UsageError(f"{path} holds more than {MAX_MEMBERS} files")
        total = 0
        for p in found:
            rel = p.relative_to(path).as_posix()
            if _wanted(rel):
                _bounded(rel, p.stat().st_size, settings)
                total += p.stat().st_size
                if total > MAX_TOTAL:
                    raise UsageError(f"{path}: more than {MAX_TOTAL} bytes of code")
                files.append((rel, p.read_bytes()))
    else:
        files = _zip_files(path, settings)
    documents = _students(files, settings)
    if len(documents) < 2:
        raise UsageError(f"{path}: {len(documents)} submission(s) found; comparing takes "
                         "two or more (.py or .ipynb files, or folders of .py files)")
    if len(documents) > MAX_DOCUMENTS:
        raise UsageError(f"{path}: {len(documents)} submissions; the most is {MAX_DOCUMENTS}")
    return documents


def _wanted(rel: str) -> bool:
    parts = PurePosixPath(rel).parts
    if len(parts) > MAX_DEPTH:
        raise UsageError(f"{rel}: more than {MAX_DEPTH} folders deep")
    if any(p.startswith(".") or p == "__MACOSX" for p in parts):
        return False
    return rel.endswith(".py") or (len(parts) == 1 and is_notebook(rel))


def _zip_files(path: Path, settings: Settings) -> list[tuple[str, bytes]]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise UsageError(f"{path}: not a zip file or a folder ({exc})") from None
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_MEMBERS:
            raise UsageError(f"{path}: more than {MAX_MEMBERS} members")
        files = []
        total = 0
        for info in infos:
            if info.is_dir() or not _wanted(info.filename):
                continue
            _bounded(info.filename, info.file_size, settings)
            total += info.file_size
            if total > MAX_TOTAL:
                raise UsageError(f"{path}: more than {MAX_TOTAL} bytes of code")
            try:
                with archive.open(info) as member:  # read no more than was declared
                    files.append((info.filename, member.read(info.file_size + 1)
                                  [:info.file_size + 1]))
            except (zipfile.BadZipFile, OSError, NotImplementedError, RuntimeError) as exc:
                raise UsageError(f"{path}: {info.filename}: {exc}") from None
    return sorted(files)


def _students(files: list[tuple[str, bytes]], settings: Settings) -> list[Document]:
    parts: dict[str, list[str]] = {}
    for rel, data in files:
        head, _, rest = rel.partition("/")
        name = head if rest else head.rsplit(".", 1)[0]
        try:
            code = source_from_upload(rel, data, settings, noun=rel).code
        except UsageError:
            continue
        parts.setdefault(name, []).append(code)
    return [Document(name, "\n".join(code)) for name, code in sorted(parts.items())]
