"""The verdict report: the JSON contract every part of jaxjudge (CLI, API, workers,
webhooks) hands out. Bump ``SCHEMA_VERSION`` on any change that is not an addition."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from judge.verdict import Verdict

SCHEMA_VERSION: Literal[1] = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TestResult(_Model):
    name: str
    visibility: Literal["sample", "hidden"]
    verdict: Verdict
    score: float = Field(description="Points earned: max_score when accepted, else 0.")
    max_score: float = Field(description="Points the test is worth; samples are worth 0.")
    time_ms: float = Field(description="Wall time of the call and its result, by the judge's clock.")
    cpu_ms: float = Field(
        default=0.0, description="CPU time of the call and its result: every process and "
        "thread of the sandbox, counted by the kernel and read by the judge. What the time "
        "limit is on.")
    message: str = Field(
        default="",
        description="Why the test failed. For hidden tests it never shows expected values, "
        "inputs or the submission's own error messages.",
    )
    probe: str | None = Field(
        default=None, description="The probe that failed the test: the returned value "
        "passed the checker, the compiled program did not pass this probe's checks "
        "(problem-format.md, Probes). Null when no probe failed it.")
    input: str | None = Field(default=None, description="Sample tests only.")
    expected: str | None = Field(default=None, description="Sample tests only.")
    received: str | None = Field(default=None, description="Sample tests only.")


class Timings(_Model):
    startup_ms: float = Field(default=0.0, description="Starting the sandbox and interpreter.")
    import_ms: float = Field(default=0.0, description="Importing jax and flax in the harness.")
    load_ms: float = Field(default=0.0, description="Loading the submission's module.")
    load_cpu_ms: float = Field(default=0.0, description="CPU time of loading the module.")
    tests_ms: float = Field(default=0.0, description="Running every test, wall clock.")
    total_ms: float = Field(default=0.0, description="From code in hand to report.")


class VerdictReport(_Model):
    schema_version: Literal[1] = SCHEMA_VERSION
    problem: str
    problem_version: str = Field(description="Content hash of problem.yaml and the test data.")
    verdict: Verdict
    score: float
    max_score: float
    time_ms: float = Field(description="Sum of the tests' wall times.")
    cpu_ms: float = Field(default=0.0, description="Sum of the tests' CPU times.")
    message: str = Field(default="", description="What went wrong before any test ran.")
    tests: list[TestResult]
    stdout: str = Field(default="", description="Captured at load and in sample tests; capped.")
    stderr: str = Field(default="", description="Captured at load and in sample tests; capped.")
    sandbox: str = ""
    judge_version: str = ""
    interfered: bool = Field(
        default=False, description="The submission tampered with the judge (rewrote the "
        "harness, wrote on its channel): the run was stopped and counts as a runtime_error. "
        "Worth an instructor's look.")
    timings: Timings = Timings()
    source_notes: list[str] = Field(
        default_factory=list, description="What was done to the submitted file before "
        "grading: for a notebook, what IPython syntax was removed, per cell (fixed words, "
        "cell and line numbers; never the removed text). Empty for a Python file.")
