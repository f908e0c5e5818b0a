"""Problem packages: ``problem.yaml`` as a typed model, and a loaded package.

The format is documented in ``docs/problem-format.md``. A package is a folder
``problemsets/<set>/<slug>/``; its id is ``<set>/<slug>``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from judge.checkers import Checker, get_checker
from judge.errors import ConfigError, ProblemError
from judge.nesting import TooDeep, load_yaml
from judge.probes import ProbeSpec
from judge.sandbox.protocol import Limits
from judge.settings import Settings

Identifier = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=100)]
Slug = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=80)]
ArgType = Literal["float", "int", "array", "numpy", "str", "bool", "any"]
MAX_STARTER_BYTES = 64 * 1024
VERDICT_DIRS = (
    "accepted",
    "wrong_answer",
    "runtime_error",
    "time_limit_exceeded",
    "memory_limit_exceeded",
    "output_limit_exceeded",
    "compile_error",
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Arg(_Model):
    name: Identifier
    type: ArgType = Field(
        description="How the harness hands the value over: float, int, str, bool, array "
        "(a jax.Array), numpy (a NumPy array) or any (as decoded)."
    )
    doc: str = ""


class EntryPoint(_Model):
    name: Identifier
    args: list[Arg]
    returns: str = Field(default="", description="What the function returns, for students.")

    @property
    def signature(self) -> str:
        return f"def {self.name}({', '.join(a.name for a in self.args)}):"


class LimitsSpec(_Model):
    test_seconds: float = Field(default=10.0, gt=0, le=600)
    total_seconds: float = Field(default=60.0, gt=0, le=3600)
    memory_mb: int = Field(default=2048, ge=64, le=65536)
    output_kb: int = Field(default=1024, ge=1, le=1 << 20)
    result_kb: int | None = Field(
        default=None, ge=1, le=1 << 20, description="Largest encoded return value of one "
        "test, in KiB. Default, and most: the judge's result_bytes (JAXJUDGE_RESULT_BYTES).")


class Scoring(_Model):
    points_per_test: float = Field(default=1.0, ge=0)


class CheckerSpec(_Model):
    name: str = "exact"
    params: dict[str, Any] = Field(default_factory=dict)


class TestSpec(_Model):
    name: Slug
    args: dict[str, Any]
    points: float | None = Field(default=None, ge=0, description="Hidden tests only.")
    doc: str = ""


class TestsSpec(_Model):
    seed: int
    sample: list[TestSpec] = Field(min_length=1)
    hidden: list[TestSpec] = Field(min_length=1)
    generator: str | None = Field(
        default=None, description="A file in the package whose generate(rng) adds hidden tests."
    )


class ProblemSpec(_Model):
    title: str = Field(min_length=1, max_length=200)
    entry_point: EntryPoint
    limits: LimitsSpec = LimitsSpec()
    scoring: Scoring = Scoring()
    checker: CheckerSpec = CheckerSpec()
    reference: str = "reference.py"
    starter: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}\.py$",
        description="A .py file of the package (at its top): the code a student starts "
        "from. Default: the entry point's signature with a body of ``...``.")
    tests: TestsSpec
    probes: list[ProbeSpec] = Field(default_factory=list, max_length=20, description=(
        "What the judge checks about the program the entry point compiles to "
        "(judge.probes; docs/problem-format.md)."))

    @model_validator(mode="after")
    def _consistent(self) -> ProblemSpec:
        names = [t.name for t in self.tests.sample + self.tests.hidden]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"test names must be unique: {', '.join(dupes)}")
        wanted = [a.name for a in self.entry_point.args]
        for test in self.tests.sample + self.tests.hidden:
            if sorted(test.args) != sorted(wanted):
                raise ValueError(
                    f"test {test.name!r} gives args {sorted(test.args)}, "
                    f"the entry point takes {wanted}"
                )
        if self.starter is not None and self.starter == self.reference:
            raise ValueError("the starter is the reference: students would be shown the "
                             "solution")
        probe_names = [p.name for p in self.probes]
        if len(set(probe_names)) != len(probe_names):
            raise ValueError("probe names must be unique")
        for probe in self.probes:
            missing = [t for t in probe.tests or [] if t not in names]
            if missing:
                raise ValueError(f"probe {probe.name!r} names test {missing[0]!r}, which "
                                 "does not exist")
            bad = [n for n in [*probe.static, *probe.in_specs, *probe.in_axes]
                   if n not in wanted]
            if probe.mesh is not None and probe.mesh.shape_arg is not None \
                    and probe.mesh.shape_arg not in probe.static:
                bad.append(f"{probe.mesh.shape_arg} (the mesh's shape_arg must be static)")
            if bad:
                raise ValueError(f"probe {probe.name!r}: the entry point has no argument "
                                 f"{bad[0]}" if " " not in bad[0] else
                                 f"probe {probe.name!r}: {bad[0]}")
        return self


@dataclass(frozen=True)
class Problem:
    """A loaded package. Cheap to create; test data is read on demand."""

    id: str
    path: Path
    spec: ProblemSpec
    statement: str
    # An uploaded package's version (the hash of the files uploaded), which names it for
    # good; None for a package on the server's disk, whose version is its content's hash.
    pinned_version: str | None = None

    @classmethod
    def load(cls, problem_id: str, path: Path, *, version: str | None = None) -> Problem:
        try:
            raw = load_yaml((path / "problem.yaml").read_text(encoding="utf-8"))
            spec = ProblemSpec.model_validate(raw)
        except TooDeep as exc:  # composing it would overflow the C stack
            raise ProblemError(f"{problem_id}: problem.yaml is {exc}") from None
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ProblemError(f"{problem_id}: cannot read problem.yaml: {exc}") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "problem.yaml"
            raise ProblemError(f"{problem_id}: problem.yaml: {where}: {first['msg']}") from None
        try:
            statement = (path / "statement.md").read_text(encoding="utf-8")
        except OSError as exc:
            raise ProblemError(f"{problem_id}: cannot read statement.md: {exc}") from None
        problem = cls(problem_id, path, spec, statement, version)
        if spec.starter is not None:
            _ = problem.starter  # a missing or unreadable starter fails at load
        try:
            _ = problem.checker  # an unknown checker or bad params fail at load, not at grading
        except ConfigError as exc:
            raise ProblemError(f"{problem_id}: {exc}") from None
        return problem

    def probes_for(self, test_name: str) -> list[ProbeSpec]:
        return [p for p in self.spec.probes if p.tests is None or test_name in p.tests]

    @cached_property
    def checker(self) -> Checker:
        return get_checker(self.spec.checker.name, self.spec.checker.params)

    @property
    def data_dir(self) -> Path:
        return self.path / "data"

    @property
    def reference_path(self) -> Path:
        return self.path / self.spec.reference

    @cached_property
    def starter(self) -> str:
        """The code a student starts from: the package's ``starter`` file, or the entry
        point's signature with a body of ``...``."""
        if self.spec.starter is None:
            return self.spec.entry_point.signature + "\n    ...\n"
        where = self.path / self.spec.starter
        try:
            if where.stat().st_size > MAX_STARTER_BYTES:
                raise ProblemError(f"{self.id}: the starter {self.spec.starter} is larger "
                                   f"than {MAX_STARTER_BYTES} bytes")
            return where.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ProblemError(f"{self.id}: cannot read the starter {self.spec.starter}: "
                               f"{exc}") from None

    @property
    def submissions_dir(self) -> Path:
        return self.path / "submissions"

    def limits(self, settings: Settings) -> Limits:
        """The sandbox's limits for this problem under ``settings``. Raises ProblemError
        when the problem asks for a larger return value than the judge allows."""
        spec = self.spec.limits
        result_bytes = settings.result_bytes
        if spec.result_kb is not None:
            if spec.result_kb * 1024 > settings.result_bytes:
                raise ProblemError(
                    f"{self.id}: limits.result_kb is {spec.result_kb}; this judge allows at "
                    f"most {settings.result_bytes // 1024} (JAXJUDGE_RESULT_BYTES)")
            result_bytes = spec.result_kb * 1024
        return Limits(
            test_seconds=spec.test_seconds,
            total_seconds=spec.total_seconds,
            test_wall_seconds=spec.test_seconds * settings.wall_time_factor,
            total_wall_seconds=spec.total_seconds * settings.wall_time_factor,
            memory_mb=spec.memory_mb,
            output_bytes=spec.output_kb * 1024,
            result_bytes=result_bytes,
            segment_bytes=settings.segment_bytes,
        )

    @property
    def version(self) -> str:
        """Content hash of what grading depends on: problem.yaml and the test data (or,
        for an uploaded package, the hash of its upload)."""
        from judge.testdata import read_manifest

        if self.pinned_version is not None:
            return self.pinned_version
        digest = hashlib.sha256((self.path / "problem.yaml").read_bytes())
        digest.update(b"\0" + read_manifest(self).data_hash.encode())
        return digest.hexdigest()[:16]
