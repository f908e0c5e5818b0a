"""Wire types between the trusted side and the harness, declared once.

Into the sandbox, one JSON object per line on the harness's standard input, streamed:
:class:`LoadMessage` (the code, the entry point, the limits and how many tests follow),
then one :class:`TestMessage` per test, each sent only once the previous test's result is
in, samples first. So no test's input is in the sandbox before its own test starts.

Out of the sandbox, the ``*Event`` models validate each line; :class:`RunOutcome` is
what a sandbox backend hands back to the grader. Nothing here holds an expected output.

Every line that comes out is untrusted: it is parsed by pydantic's JSON parser (linear
time, nesting capped, ``NaN`` and infinities refused) and every number and string in it
is bounded, so a line the submission forged can be wrong, never unstorable.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator
from typing_extensions import TypeAliasType

from judge.values import Value

# Bounds on every number that comes out of a sandbox.
MAX_MS = 1e8  # a day, in milliseconds
MAX_INDEX = 1_000_000
MAX_BYTES = 1 << 50


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


Millis = Annotated[float, Field(ge=0, le=MAX_MS)]
Index = Annotated[StrictInt, Field(ge=0, le=MAX_INDEX)]
ByteCount = Annotated[StrictInt, Field(ge=0, le=MAX_BYTES)]


# -- what the trusted side asks for ------------------------------------------------------


class Limits(_Model):
    test_seconds: float = Field(gt=0, description="CPU time limit of one call (and of "
                                "loading): the sandbox's whole process tree, every thread.")
    total_seconds: float = Field(gt=0, description="CPU time limit of all calls together.")
    test_wall_seconds: float = Field(gt=0, description="Wall-clock limit of one call (and of "
                                     "loading): the safety net for a call that sleeps or waits.")
    total_wall_seconds: float = Field(gt=0, description="Wall-clock limit of all calls together.")
    memory_mb: int = Field(gt=0, description="Memory of the whole sandbox.")
    output_bytes: int = Field(gt=0, description="All stdout and stderr together.")
    result_bytes: int = Field(gt=0, description="Encoded return value of one call.")
    segment_bytes: int = Field(gt=0, description="Output sent back per test.")


ArgKind = Literal["float", "int", "array", "numpy", "str", "bool", "any"]
SpecEntry = str | None | list[str]
# A PartitionSpec as a list, or, for an argument that is a dict of arrays, a dict of them.
SpecTree = TypeAliasType("SpecTree", "list[SpecEntry] | dict[str, SpecTree]")
Transform = Literal["jit", "own_jit", "grad", "value_and_grad", "jacobian", "vmap",
                    "eval_shape"]
# A key path as jax.tree_util.keystr writes it (``['params'][0]``), bounded.
Path = Annotated[str, Field(max_length=500)]
MAX_OUT_SPECS = 256


class OutSpec(_Model):
    """One layout of a probe's ``out_specs``: the PartitionSpec of every output whose key
    path starts with ``prefix`` (``""``: every output). The trusted side writes them from
    the probe (judge.probes: ProbeSpec.out_spec_list); the harness matches them to paths
    (judge.harness.program.out_layouts)."""

    prefix: Path
    spec: list[SpecEntry] = Field(max_length=64)


class MeshOnTest(_Model):
    axes: list[str]
    shape: list[int]


class ExportRequest(_Model):
    """Trace the entry point under a transformation and export it (judge.probes). The
    test's args are then static values or abstract ``{"t": "aval"}`` entries."""

    transform: Transform
    argnums: list[int] = Field(default_factory=list, description="Among the traced args.")
    in_axes: list[int | None] = Field(default_factory=list)
    mesh: MeshOnTest | None = None
    specs: list[SpecTree | None] | None = Field(
        default=None, description="Per argument: its PartitionSpec on the mesh (a dict of "
        "them for a dict of arrays).")
    static: list[bool] = Field(default_factory=list, description="Per argument: passed as "
                               "a Python value (else abstract: its leaves are avals).")
    traced_layout: bool = Field(default=False, description="The abstract inputs carry their "
                                "NamedSharding on the mesh (else shapes and dtypes only).")
    # Optional, so HARNESS_VERSION stays: a harness that predates it could ignore it, but
    # none runs under this judge (an image is refused unless it carries this judge's
    # harness digest, judge.sandbox.engine.check_image; the process backend runs this one).
    out_specs: list[OutSpec] | None = Field(
        default=None, max_length=MAX_OUT_SPECS, description="The outputs' layouts on the "
        "mesh: the program is exported from jax.jit with these out_shardings.")


class ProgramRequest(_Model):
    """Compile and run an exported program in a clean sandbox; the test's args are the
    traced arguments' values."""

    program: str = Field(description="The serialized jax.export program, base64.")
    transform: Transform
    mesh: MeshOnTest | None = None
    specs: list[SpecTree | None] | None = None
    out_specs: list[OutSpec] | None = Field(
        default=None, max_length=MAX_OUT_SPECS, description="The probe's output layouts "
        "(the trusted side's, never the submission's): the program must declare exactly "
        "these out_shardings and compile to them, or it is refused.")
    out_paths: list[Path] | None = Field(
        default=None, max_length=100_000, description="With out_specs: the key paths of the "
        "program's flat outputs, the export's, by which their values are checked: each "
        "output must have the layout out_specs gives its path.")


class JobTest(_Model):
    index: int
    args: list[dict[str, Any]] = Field(description="Encoded inputs, in the entry point's order.")
    kinds: list[ArgKind]
    hidden: bool = Field(
        default=False, description="Never sent: a hidden test's texts (output, error "
        "messages) are dropped on arrival, and its input goes in only when it starts.")
    export: ExportRequest | None = None
    program: ProgramRequest | None = None


class Job(_Model):
    """One submission and the inputs of its tests, samples first. Held on the trusted
    side; the supervisor streams it into the sandbox piece by piece."""

    code: str
    entry_point: str
    tests: list[JobTest]
    limits: Limits
    label: str = Field(default="", description="Tags the sandbox (submission id).")
    mode: Literal["submission", "programs"] = Field(
        default="submission", description="programs: a clean run that loads no code and "
        "compiles and runs the exported programs its tests carry.")

    @model_validator(mode="after")
    def _samples_first(self) -> Job:
        hidden = [t.hidden for t in self.tests]
        if hidden != sorted(hidden):
            raise ValueError("a job's sample tests must all come before its hidden tests")
        return self


class LoadMessage(_Model):
    op: Literal["load"] = "load"
    mode: Literal["submission", "programs"] = "submission"
    code: str
    entry_point: str
    limits: Limits
    tests: int = Field(ge=0, description="How many test messages will follow.")
    alarms: tuple[float, float] = Field(description="When the harness stops a call (or the "
                                        "loading) by itself: seconds of its own CPU time, "
                                        "of wall-clock time. Past the limits, so that what "
                                        "decides is the judge's own count.")


class TestMessage(_Model):
    __test__ = False  # not a pytest class

    op: Literal["test"] = "test"
    index: int
    args: list[dict[str, Any]]
    kinds: list[ArgKind]
    export: ExportRequest | None = None
    program: ProgramRequest | None = None


# -- what comes out ------------------------------------------------------------------------

Text = Annotated[str, Field(max_length=1 << 20)]


class ErrorInfo(_Model):
    type: Annotated[str, Field(max_length=200)]
    message: Annotated[str, Field(max_length=4_000)]
    line: Annotated[StrictInt, Field(ge=0, le=10**7)] | None = None
    traceback: Annotated[str, Field(max_length=8_000)] = ""


class _Segment(_Model):
    stdout: Text = ""
    stderr: Text = ""
    stdout_bytes: ByteCount = 0
    stderr_bytes: ByteCount = 0


class ReadyEvent(_Model):
    event: Literal["ready"]
    harness_version: Annotated[str, Field(max_length=50)]
    import_ms: Millis
    jax_version: Annotated[str, Field(max_length=50)]
    flax_version: Annotated[str, Field(max_length=50)]
    devices: Annotated[StrictInt, Field(ge=0, le=1 << 16)]


class LoadedEvent(_Segment):
    event: Literal["loaded"]
    time_ms: Millis


class LoadTimeoutEvent(_Segment):
    event: Literal["load_timeout"]
    time_ms: Millis


class CompileErrorEvent(_Segment):
    event: Literal["compile_error"]
    error: ErrorInfo


class InterferedEvent(_Model):
    """The harness found itself tampered with (its code, the encoder's types, the
    protocol descriptor) after loading the submission or after a test."""

    event: Literal["interfered"]
    index: Index | None = None


class StartEvent(_Model):
    event: Literal["start"]
    index: Index


Bytes = Annotated[StrictInt, Field(ge=0, le=MAX_BYTES)]
DeviceId = Annotated[StrictInt, Field(ge=0, le=1 << 31)]


class ExportedProgram(_Model):
    """An export's result: the program and the key paths of its flat outputs."""

    program: Annotated[str, Field(max_length=1 << 30)]
    paths: list[Path] = Field(max_length=100_000)


class MemoryStats(_Model):
    """Per device, from a compiled executable's memory analysis."""

    arguments: Bytes
    outputs: Bytes
    temporaries: Bytes
    aliased: Bytes = 0

    def metric(self, name: str) -> int:
        if name == "fresh_outputs":  # what the outputs need beyond donated inputs' buffers
            return max(0, self.outputs - self.aliased)
        if name == "total":
            return self.arguments + self.outputs + self.temporaries - min(
                self.aliased, self.arguments + self.outputs)
        return int(getattr(self, name))


class ProgramFacts(_Model):
    """What a clean sandbox read of a compiled program before running it."""

    hlo: Annotated[str, Field(max_length=1 << 30)] = ""
    memory: MemoryStats | None = None
    assignment: list[DeviceId] = Field(default_factory=list, max_length=1 << 16)
    mesh_devices: list[DeviceId] = Field(default_factory=list, max_length=1 << 16)
    ops: dict[Annotated[str, Field(max_length=100)], Annotated[StrictInt, Field(ge=0)]] = Field(
        default_factory=dict, max_length=2000)
    flops: Annotated[StrictInt, Field(ge=0, le=1 << 62)] | None = None


class ResultEvent(_Segment):
    event: Literal["result"]
    index: Index
    status: Literal["ok", "error", "timeout", "memory", "output_limit", "refused"]
    time_ms: Millis
    value: Value | None = None
    exported: ExportedProgram | None = None
    facts: ProgramFacts | None = None
    error: ErrorInfo | None = None
    message: Annotated[str, Field(max_length=4_000)] = ""

    @model_validator(mode="after")
    def _ok_has_a_value(self) -> ResultEvent:
        if (self.status == "ok") != (self.value is not None or self.exported is not None):
            raise ValueError("an ok result carries a value or a program, and only an ok "
                             "result does")
        return self


class DoneEvent(_Model):
    event: Literal["done"]


Event = Annotated[
    ReadyEvent
    | LoadedEvent
    | LoadTimeoutEvent
    | CompileErrorEvent
    | InterferedEvent
    | StartEvent
    | ResultEvent
    | DoneEvent,
    Field(discriminator="event"),
]


# -- what a backend hands back ----------------------------------------------------------

TestStatus = Literal[
    "ok", "error", "timeout", "memory", "output_limit", "crashed", "interfered", "not_run",
    "refused",
]


class TestRun(_Segment):
    """What happened to one test inside the sandbox (before any checking). For a hidden
    test the supervisor keeps only what the judge itself measured or needs: the status,
    the value to check, its own clock; never a text the submission wrote."""

    __test__ = False  # not a pytest class

    index: int
    status: TestStatus
    time_ms: float = 0.0
    cpu_ms: float = Field(default=0.0, description="CPU time of the sandbox's processes "
                          "from the start line to the result line, by the trusted counter.")
    value: Value | None = None
    exported: ExportedProgram | None = None
    facts: ProgramFacts | None = None
    error: ErrorInfo | None = None
    message: str = ""
    cause: TestStatus | None = Field(
        default=None, description="For not_run tests: the status of the test that stopped the run."
    )


class RunOutcome(_Model):
    """Everything a sandbox backend learned from one run of the harness."""

    status: Literal["completed", "compile_error", "load_timeout", "load_memory",
                    "load_crashed", "interfered", "internal_error"]
    message: str = ""
    error: ErrorInfo | None = None
    tests: list[TestRun] = Field(default_factory=list)
    load_stdout: str = ""
    load_stderr: str = ""
    startup_ms: float = 0.0
    import_ms: float = 0.0
    load_ms: float = 0.0
    load_cpu_ms: float = 0.0
    tests_ms: float = 0.0
    tests_cpu_ms: float = 0.0
    harness_stderr: str = Field(default="", description="The harness's own diagnostics.")
