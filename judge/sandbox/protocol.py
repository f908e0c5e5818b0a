"""Wire types between the trusted side and the harness, declared once.

``Job`` is what goes into a sandbox (on the harness's standard input). The ``*Event``
models validate each line that comes out; ``RunOutcome`` is what a sandbox backend hands
back to the grader. Nothing here holds an expected output.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from judge.values import Value


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# -- into the sandbox -------------------------------------------------------------------


class Limits(_Model):
    test_seconds: float = Field(gt=0, description="Wall-clock limit of one call (and of loading).")
    total_seconds: float = Field(gt=0, description="Wall-clock limit of all calls together.")
    memory_mb: int = Field(gt=0, description="Memory of the whole sandbox.")
    output_bytes: int = Field(gt=0, description="All stdout and stderr together.")
    result_bytes: int = Field(gt=0, description="Encoded return value of one call.")
    segment_bytes: int = Field(gt=0, description="Output sent back per test.")


class JobTest(_Model):
    index: int
    args: list[dict[str, Any]] = Field(description="Encoded inputs, in the entry point's order.")
    kinds: list[Literal["float", "int", "array", "numpy", "str", "bool", "any"]]


class Job(_Model):
    """One submission and the inputs of its tests."""

    code: str
    entry_point: str
    tests: list[JobTest]
    limits: Limits
    label: str = Field(default="", description="Tags the sandbox (submission id).")


# -- out of the sandbox -----------------------------------------------------------------

Text = Annotated[str, Field(max_length=1 << 20)]


class ErrorInfo(_Model):
    type: Annotated[str, Field(max_length=200)]
    message: Annotated[str, Field(max_length=4_000)]
    line: StrictInt | None = None
    traceback: Annotated[str, Field(max_length=8_000)] = ""


class _Segment(_Model):
    stdout: Text = ""
    stderr: Text = ""
    stdout_bytes: Annotated[int, Field(ge=0)] = 0
    stderr_bytes: Annotated[int, Field(ge=0)] = 0


class ReadyEvent(_Model):
    event: Literal["ready"]
    harness_version: Annotated[str, Field(max_length=50)]
    import_ms: float
    jax_version: Annotated[str, Field(max_length=50)]
    flax_version: Annotated[str, Field(max_length=50)]
    devices: int


class LoadedEvent(_Segment):
    event: Literal["loaded"]
    time_ms: float


class LoadTimeoutEvent(_Segment):
    event: Literal["load_timeout"]
    time_ms: float


class CompileErrorEvent(_Segment):
    event: Literal["compile_error"]
    error: ErrorInfo


class StartEvent(_Model):
    event: Literal["start"]
    index: int


class ResultEvent(_Segment):
    event: Literal["result"]
    index: int
    status: Literal["ok", "error", "timeout", "memory", "output_limit"]
    time_ms: float = Field(ge=0)
    value: Value | None = None
    error: ErrorInfo | None = None
    message: Annotated[str, Field(max_length=4_000)] = ""


class DoneEvent(_Model):
    event: Literal["done"]


Event = Annotated[
    ReadyEvent
    | LoadedEvent
    | LoadTimeoutEvent
    | CompileErrorEvent
    | StartEvent
    | ResultEvent
    | DoneEvent,
    Field(discriminator="event"),
]


# -- what a backend hands back ----------------------------------------------------------

TestStatus = Literal["ok", "error", "timeout", "memory", "output_limit", "crashed", "not_run"]


class TestRun(_Segment):
    """What happened to one test inside the sandbox (before any checking)."""

    index: int
    status: TestStatus
    time_ms: float = 0.0
    value: Value | None = None
    error: ErrorInfo | None = None
    message: str = ""
    cause: TestStatus | None = Field(
        default=None, description="For not_run tests: the status of the test that stopped the run."
    )


class RunOutcome(_Model):
    """Everything a sandbox backend learned from one run of the harness."""

    status: Literal["completed", "compile_error", "load_timeout", "load_crashed", "internal_error"]
    message: str = ""
    error: ErrorInfo | None = None
    tests: list[TestRun] = Field(default_factory=list)
    load_stdout: str = ""
    load_stderr: str = ""
    startup_ms: float = 0.0
    import_ms: float = 0.0
    load_ms: float = 0.0
    tests_ms: float = 0.0
    harness_stderr: str = Field(default="", description="The harness's own diagnostics.")
