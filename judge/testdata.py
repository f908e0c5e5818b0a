"""Stored test data of a package: ``data/{sample,hidden}/NN-name.json`` and a manifest.

Each test file holds the test's name, visibility, points, its encoded inputs and the
reference's encoded output. Files are numbered in declaration order and read in the order
of their numbers (not of their names, which would put test 100 before test 11). ``data/manifest.json`` records a SHA-256 over every test file
(path and bytes); loading refuses data that no longer matches it, so a hand-edited or
half-written data folder is never graded against.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judge.errors import ProblemError
from judge.probes import StoredProbe
from judge.values import Value

if TYPE_CHECKING:
    from judge.problem import Problem

Visibility = Literal["sample", "hidden"]


class StoredTest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    visibility: Visibility
    points: float = Field(ge=0)
    args: dict[str, dict[str, Any]] = Field(description="Encoded inputs by argument name.")
    expected: Value
    probes: dict[str, StoredProbe] = Field(
        default_factory=dict, description="Each probe's result on the reference's program.")


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    data_hash: str
    files: list[str]
    built_with: dict[str, str] = Field(default_factory=dict)


def _order(path: Path) -> tuple[int, str]:
    """Files sort by their number, not their name: ``100-x`` comes after ``11-y``."""
    number, _, _ = path.name.partition("-")
    return (int(number) if number.isdigit() else -1, path.name)


def _files(data_dir: Path) -> list[Path]:
    return [p for d in ("sample", "hidden")
            for p in sorted((data_dir / d).glob("*.json"), key=_order)]


def data_hash(data_dir: Path) -> tuple[str, list[str]]:
    digest = hashlib.sha256()
    names = []
    for path in _files(data_dir):  # samples first, each folder in number order
        rel = path.relative_to(data_dir).as_posix()
        names.append(rel)
        digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest(), names


def read_manifest(problem: Problem) -> Manifest:
    path = problem.data_dir / "manifest.json"
    try:
        return Manifest.model_validate_json(path.read_bytes())
    except OSError:
        raise ProblemError(f"{problem.id}: no test data; run `jaxjudge build {problem.id}`") from None
    except ValidationError as exc:
        raise ProblemError(f"{problem.id}: data/manifest.json is malformed: {exc}") from None


def check_hash(problem: Problem) -> Manifest:
    manifest = read_manifest(problem)
    actual, names = data_hash(problem.data_dir)
    if actual != manifest.data_hash or names != manifest.files:
        raise ProblemError(
            f"{problem.id}: the stored test data does not match its hash; "
            f"run `jaxjudge build {problem.id}`"
        )
    return manifest


def load_tests(problem: Problem) -> list[StoredTest]:
    """All tests, samples first, in the order problem.yaml declares them; hash checked."""
    manifest = check_hash(problem)
    tests = []
    for rel in manifest.files:
        try:
            tests.append(StoredTest.model_validate_json((problem.data_dir / rel).read_bytes()))
        except (OSError, ValidationError) as exc:
            raise ProblemError(f"{problem.id}: data/{rel} is unreadable: {exc}") from None
    return tests


def write_tests(problem: Problem, tests: list[StoredTest], built_with: dict[str, str]) -> Manifest:
    """Replace the package's data folder with ``tests``, atomically enough: the new data is
    written beside the old and swapped in by renames."""
    staging = problem.path / "data.new"
    shutil.rmtree(staging, ignore_errors=True)
    counters = {"sample": 0, "hidden": 0}
    width = max(2, len(str(len(tests))))
    for test in tests:
        counters[test.visibility] += 1
        folder = staging / test.visibility
        folder.mkdir(parents=True, exist_ok=True)
        body = json.dumps(test.model_dump(mode="json", exclude_defaults=True), indent=1) + "\n"
        (folder / f"{counters[test.visibility]:0{width}d}-{test.name}.json").write_text(body)
    digest, names = data_hash(staging)
    manifest = Manifest(data_hash=digest, files=names, built_with=built_with)
    (staging / "manifest.json").write_text(manifest.model_dump_json(indent=1) + "\n")
    old = problem.path / "data.old"
    shutil.rmtree(old, ignore_errors=True)
    if problem.data_dir.exists():
        problem.data_dir.rename(old)
    staging.rename(problem.data_dir)
    shutil.rmtree(old, ignore_errors=True)
    return manifest
