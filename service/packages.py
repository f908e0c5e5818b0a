"""An uploaded problem package: read from a hostile zip, checked, hashed into a version.

A package (the format of ``docs/problem-format.md``) is untrusted: its author may be
anyone with an instructor key. Nothing of it runs here: the reference and the examples
run only in the sandbox, at build time, in a worker. What this module does on the
trusted side is read and check text:

* The archive follows the rules of every upload (:mod:`service.archives`), holds at most
  ``max_files`` files and ``max_bytes`` bytes, and is laid out as a package: its files at
  the top level or all inside one folder (whose name is the default slug); every path
  component is plain (letters, digits, ``._-``), at most four deep. ``data/`` is left out
  unread: the judge builds the test data itself.
* ``problem.yaml`` is at most 256 KiB of YAML without anchors or aliases (so it cannot
  expand: a "billion laughs" document is refused as written), nested at most
  :data:`judge.nesting.MAX_DEPTH` levels (counted from its parse events before anything
  composes it: libyaml's composer recurses on the C stack), and loads as a problem
  (known checker, consistent tests); ``statement.md`` and every ``.py`` file are UTF-8.
* It names no ``tests.generator`` (author Python that would run on the judge's side;
  uploaded packages list their tests in problem.yaml).
* The reference is a ``.py`` file of the package; example submissions are
  ``submissions/<verdict>/<name>.py`` under the seven verdicts.
* Its limits are within the deployment's caps for uploads (time, memory), it declares at
  most ``max_tests`` tests, and the inputs its generators ask for fit ``max_input_bytes``
  (counted from the shapes, before anything is made).

The version is the SHA-256 (16 hex digits) of the kept files, paths and bytes, in path
order: the same package uploaded twice is the same version. The kept files are stored as
a normalized zip (:func:`pack`), from which any process unpacks the same bytes.
"""

from __future__ import annotations

import hashlib
import io
import math
import re
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import yaml

from judge.catalog import ID_PATTERN
from judge.errors import ProblemError, SubmissionRejected
from judge.nesting import TooDeep, yaml_events
from judge.problem import VERDICT_DIRS, Problem
from service import archives

LABEL = "package archive"
COMPONENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,99}")
MAX_DEPTH = 4
MAX_YAML_BYTES = 256 << 10
TEXT_SUFFIXES = (".py", ".md", ".yaml", ".yml", ".txt")
_EPOCH = (1980, 1, 1, 0, 0, 0)


class PackageRejected(SubmissionRejected):
    """An uploaded package refused before anything is stored: one line, naming the file."""


@dataclass(frozen=True)
class PackageCaps:
    """What the deployment allows an uploaded package (from the service settings)."""

    max_files: int
    max_bytes: int
    max_tests: int
    max_input_bytes: int
    max_memory_mb: int
    max_test_seconds: float
    max_total_seconds: float


@dataclass(frozen=True)
class Upload:
    """The kept files of an upload (path -> bytes, in path order), the folder they were
    zipped in (the default slug) and what was left out."""

    files: Mapping[str, bytes]
    folder: str | None
    ignored: tuple[str, ...]

    @property
    def version(self) -> str:
        return version_of(self.files)

    @property
    def size(self) -> int:
        return sum(len(b) for b in self.files.values())


def _reject(message: str) -> NoReturn:
    raise PackageRejected(f"{LABEL}: {message}")


def version_of(files: Mapping[str, bytes]) -> str:
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + hashlib.sha256(files[path]).digest())
    return digest.hexdigest()[:16]


def read_package_zip(data: bytes, *, max_files: int, max_bytes: int) -> Upload:
    """The files of an uploaded package, after the archive and layout rules."""
    try:
        with archives.open_zip(data, LABEL) as archive:
            found = list(archives.entries(archive, LABEL))
            if not found:
                _reject("contains no files")
            tops = {parts[0] for parts, _ in found}
            folder = None
            if len(tops) == 1 and all(len(parts) > 1 for parts, _ in found):
                folder = next(iter(tops))  # a zipped folder
            kept: list[tuple[str, zipfile.ZipInfo]] = []
            ignored: list[str] = []
            for parts, info in found:
                rel = parts[1:] if folder is not None else parts
                shown = archives.show(info.filename)
                if rel[0] == "data":
                    ignored.append("/".join(rel))
                    continue
                if len(rel) > MAX_DEPTH:
                    _reject(f"entry {shown} is more than {MAX_DEPTH} folders deep")
                if not all(COMPONENT.fullmatch(p) for p in rel):
                    _reject(f"entry {shown} has a name other than letters, digits and . _ -")
                kept.append(("/".join(rel), info))
            if len(kept) > max_files:
                _reject(f"has {len(kept)} files, more than the limit of {max_files}")
            declared = 0
            for _, info in kept:
                declared += info.file_size
                archives.check_sizes(LABEL, info, info.file_size, declared, max_bytes, max_bytes)
            files: dict[str, bytes] = {}
            total = 0
            for rel_path, info in kept:
                if rel_path in files:
                    _reject(f"entry {archives.show(info.filename)} appears twice")
                content = archives.read_member(archive, info, max_bytes - total, LABEL)
                total += len(content)
                archives.check_sizes(LABEL, info, len(content), total, max_bytes, max_bytes)
                files[rel_path] = content
    except PackageRejected:
        raise
    except SubmissionRejected as exc:  # the shared archive rules
        raise PackageRejected(str(exc)) from None
    return Upload(dict(sorted(files.items())), folder, tuple(sorted(ignored)))


def pack(files: Mapping[str, bytes]) -> bytes:
    """A zip of ``files`` that depends on nothing but them (order, dates, modes fixed)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files):
            info = zipfile.ZipInfo(path, date_time=_EPOCH)
            info.external_attr = 0o100644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, files[path])
    return out.getvalue()


def unpack(blob: bytes, dest: Path, *, max_bytes: int = 1 << 31) -> None:
    """Write the files of a :func:`pack` zip under ``dest`` (read with the upload rules)."""
    with archives.open_zip(blob, "stored package") as archive:
        total = 0
        for parts, info in archives.entries(archive, "stored package"):
            content = archives.read_member(archive, info, max_bytes - total, "stored package")
            total += len(content)
            target = dest.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)


def files_under(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` by relative path (for :func:`pack`)."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


def check_package(upload: Upload, problem_id: str, caps: PackageCaps) -> Problem:
    """The upload loaded as problem ``problem_id`` from a scratch folder (deleted
    after), once every rule of the module's docstring holds; :class:`PackageRejected`
    with the first that does not."""
    if not ID_PATTERN.fullmatch(problem_id):
        _reject(f"{problem_id!r} is not a problem id (<set>/<slug>: lowercase letters, "
                "digits and -)")
    files = upload.files
    for name in ("problem.yaml", "statement.md"):
        if name not in files:
            _reject(f"has no {name} (a package has problem.yaml, statement.md, the "
                    "reference and its example submissions)")
    for path, content in files.items():
        if path.endswith(TEXT_SUFFIXES):
            try:
                content.decode("utf-8")
            except UnicodeDecodeError as exc:
                _reject(f"{path} is not UTF-8 (byte {exc.start})")
    _check_yaml(files["problem.yaml"])
    with tempfile.TemporaryDirectory(prefix="jaxjudge-upload-") as scratch:
        root = Path(scratch) / "package"
        for path, content in files.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        try:
            problem = Problem.load(problem_id, root, version=upload.version)
        except ProblemError as exc:
            _reject(str(exc).removeprefix(f"{problem_id}: "))
    spec = problem.spec
    if spec.tests.generator is not None:
        _reject("problem.yaml names a tests.generator: an uploaded package runs no code on "
                "the judge's side; list its tests in problem.yaml")
    if spec.reference not in files or not spec.reference.endswith(".py"):
        _reject(f"the reference {spec.reference!r} is not a .py file of the package")
    for path in files:
        parts = path.split("/")
        if parts[0] != "submissions":
            continue
        if len(parts) != 3 or parts[1] not in VERDICT_DIRS or not parts[2].endswith(".py"):
            _reject(f"{path}: example submissions are submissions/<verdict>/<name>.py, "
                    f"the verdict one of {', '.join(VERDICT_DIRS)}")
    _check_limits(problem, caps)
    return problem


def _check_yaml(raw: bytes) -> None:
    if len(raw) > MAX_YAML_BYTES:
        _reject(f"problem.yaml is {len(raw)} bytes; the limit is {MAX_YAML_BYTES}")
    try:
        for event in yaml_events(raw.decode("utf-8")):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                _reject("problem.yaml uses YAML anchors or aliases (& and *); write each "
                        "value out")
    except TooDeep as exc:
        _reject(f"problem.yaml is {exc}")
    except yaml.YAMLError as exc:
        _reject("problem.yaml is not YAML: " + " ".join(str(exc).split())[:300])


def _check_limits(problem: Problem, caps: PackageCaps) -> None:
    spec = problem.spec
    limits = spec.limits
    if limits.memory_mb > caps.max_memory_mb:
        _reject(f"limits.memory_mb is {limits.memory_mb}; uploads may ask at most "
                f"{caps.max_memory_mb}")
    if limits.test_seconds > caps.max_test_seconds:
        _reject(f"limits.test_seconds is {limits.test_seconds:g}; uploads may ask at most "
                f"{caps.max_test_seconds:g}")
    if limits.total_seconds > caps.max_total_seconds:
        _reject(f"limits.total_seconds is {limits.total_seconds:g}; uploads may ask at "
                f"most {caps.max_total_seconds:g}")
    tests = spec.tests.sample + spec.tests.hidden
    if len(tests) > caps.max_tests:
        _reject(f"problem.yaml declares {len(tests)} tests; the limit is {caps.max_tests}")
    wanted = 0
    for test in tests:
        for name, value in test.args.items():
            try:
                wanted += 4 * _elements(value)
            except ValueError as exc:
                _reject(f"test {test.name!r}, argument {name!r}: {exc}")
            if wanted > caps.max_input_bytes:
                _reject(f"the tests' generated inputs come to more than "
                        f"{caps.max_input_bytes >> 20} MiB (at test {test.name!r})")


def _elements(value: Any) -> int:
    """How many elements a generator spec makes (0 for a literal), from its shape."""
    if not isinstance(value, dict) or len(value) != 1:
        return 0
    (kind, params), = value.items()
    if kind not in ("normal", "uniform"):
        return 0
    shape = params.get("shape") if isinstance(params, dict) else params
    if not isinstance(shape, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise ValueError(f"the shape of {kind} is not a list of non-negative integers")
    if len(shape) > 8:
        raise ValueError(f"the shape of {kind} has more than 8 dimensions")
    return math.prod(shape)
