"""Wire types of the HTTP API and the webhooks, declared once. The OpenAPI document is
generated from these models (api/spec.py); the verdict report is the core's own
(:class:`judge.report.VerdictReport`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from judge.report import VerdictReport
from service.models import Submission

STUDENT_ID = r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$"
PROBLEM_ID = r"^[a-z0-9][a-z0-9-]*/[a-z0-9][a-z0-9-]*$"
SubmissionStatus = Literal["queued", "running", "done"]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


# Problems.

class ArgumentOut(_Out):
    name: str
    type: str
    doc: str = ""


class LimitsOut(_Out):
    test_seconds: float = Field(description="CPU time of one call (every thread and process "
                                "of the sandbox), and of loading the submission.")
    total_seconds: float = Field(description="CPU time of all calls together. The wall-clock "
                                 "limits are a multiple of both (a net for what sleeps).")
    memory_mb: int
    output_kb: int
    result_kb: int | None = Field(default=None, description="The largest encoded return "
                                  "value of one test, in KiB, where the problem sets one "
                                  "(null: the judge's own cap, JAXJUDGE_RESULT_BYTES).")


class ProblemSummary(_Out):
    id: str = Field(examples=["jax-sharding/partitionspec-layout"])
    title: str
    version: str = Field(description="Content hash of the problem and its tests.")
    signature: str = Field(examples=["def solve(x):"])


class SampleTestOut(_Out):
    name: str
    input: str
    expected: str


class ProblemDetail(ProblemSummary):
    statement: str = Field(description="Markdown.")
    entry_point: str
    arguments: list[ArgumentOut]
    returns: str
    limits: LimitsOut
    checker: str
    samples: list[SampleTestOut]
    hidden_tests: int = Field(description="How many hidden tests there are; never their data.")
    max_score: float
    starter: str = Field(default="", description="The code a student starts from: the "
                         "package's starter file, or the signature with a body of ...")


class BrokenProblem(_Out):
    id: str
    error: str | None = Field(
        default=None, description="Why it does not load; shown to instructor and admin "
        "keys only.")


class ProblemList(_Out):
    items: list[ProblemSummary]
    broken: list[BrokenProblem] = Field(
        default_factory=list, description="Packages that do not load (a malformed "
        "problem.yaml, test data that does not match its hash): not gradable until fixed.")


# Submissions.

NOTEBOOK_DOC = ("A Jupyter notebook (.ipynb), instead of code: the document as a JSON "
                "object, or the file's text as a string. Its code cells are graded in order, "
                "IPython magics, shell escapes and help requests removed; the report's "
                "source_notes say what was removed (docs/api.md, Notebooks).")


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)  # absent, not null: the document never offers null


class _Source(_In):
    """Python source or a notebook: exactly one of ``code`` and ``notebook``."""

    model_config = ConfigDict(json_schema_extra={
        "oneOf": [{"required": ["code"]}, {"required": ["notebook"]}]})
    code: str | SkipJsonSchema[None] = Field(
        default=None, min_length=1, description="Python source, UTF-8.",
        json_schema_extra=_no_default)
    notebook: dict[str, Any] | str | SkipJsonSchema[None] = Field(
        default=None, description=NOTEBOOK_DOC, json_schema_extra=_no_default)

    @model_validator(mode="after")
    def _one_source(self) -> _Source:
        if (self.code is None) == (self.notebook is None):
            raise ValueError("send either code or notebook (exactly one of them)")
        return self


class SubmissionCreate(_Source):
    problem: str = Field(min_length=1, max_length=200, examples=["jax-sharding/partitionspec-layout"])
    student_id: str | None = Field(default=None, pattern=STUDENT_ID)
    callback_url: str | None = Field(
        default=None, max_length=2048,
        description="Where to POST the report when done (see docs/api.md, Webhooks).",
    )
    metadata: dict[str, Any] | None = Field(
        default=None, description="Anything the caller wants back (at most 4 KiB as JSON)."
    )


class WebhookState(_Out):
    status: Literal["pending", "delivered", "failed", "refused"]
    attempts: int
    error: str | None = None


class SubmissionOut(_Out):
    id: str
    problem: str
    problem_version: str
    student_id: str | None
    batch_id: str | None
    status: SubmissionStatus
    verdict: str | None = Field(description="Set when done.")
    score: float | None
    max_score: float | None
    attempt: int = Field(description="How many times grading started (rejudges reset it not).")
    metadata: dict[str, Any] | None
    callback_url: str | None
    webhook: WebhookState | None
    received_at: datetime
    queued_at: datetime | None = Field(description="When it was handed to the queue.")
    started_at: datetime | None
    finished_at: datetime | None
    report: VerdictReport | None = Field(
        default=None, description="The verdict report, when done (not in listings)."
    )
    sample_run: bool = Field(default=False, description="A sample run: the sample tests "
                             "only, counting for no attempt and no grade.")


class SubmissionPage(_Out):
    items: list[SubmissionOut]
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page.")


class SubmissionQuery(_In):
    student_id: str | None = Field(default=None, pattern=STUDENT_ID)
    problem: str | None = Field(default=None, max_length=200)
    status: SubmissionStatus | None = None
    batch_id: str | None = Field(default=None, max_length=32)
    limit: int = Field(default=50, ge=1, le=200)
    cursor: str | None = Field(default=None, max_length=200)


class WaitQuery(_In):
    wait: float = Field(default=0, ge=0, le=3600, description="Long-poll up to this many "
                        "seconds for the verdict (capped by the server).")


class RejudgeQuery(_In):
    outdated_only: bool = Field(
        default=False, description="Only submissions graded against another problem version."
    )


class RejudgeOut(_Out):
    rejudged: int
    ids: list[str]
    rejudge: str | None = Field(default=None, description="The rejudge's id: GET "
                                "/v1/rejudges/{id} reports which verdicts changed.")


class RejudgeChange(_Out):
    submission_id: str
    student_id: str | None
    before: str | None = Field(description="The verdict before the rejudge.")
    after: str | None = Field(description="The verdict after it.")
    score_before: float | None
    score_after: float | None
    version_before: str | None
    version_after: str


class RejudgeReport(_Out):
    id: str
    problem: str
    version: str | None = Field(description="The version graded against; null: as the "
                                "submissions were (a global problem's current package).")
    total: int
    done: int = Field(description="Submissions graded again so far.")
    finished: bool
    unchanged: int = Field(description="Done, with the same verdict and score as before.")
    changed: list[RejudgeChange] = Field(description="Done, with another verdict or score.")
    created_at: datetime


# Problem sets of a tenant.

SET_NAME = r"^[a-z0-9][a-z0-9-]{0,79}$"


class ProblemSetCreate(_In):
    name: str = Field(pattern=SET_NAME, description="Unique over all tenants; not one of "
                      "the judge's own sets.", examples=["ml-course-2026"])
    title: str = Field(default="", max_length=200)


class ProblemSetOut(_Out):
    name: str
    title: str
    owned: bool = Field(description="False for the judge's own (global, read-only) sets.")
    problems: list[str] = Field(description="Problem ids of the set.")


class ProblemSetList(_Out):
    items: list[ProblemSetOut]


class BuildStep(_Out):
    subject: str = Field(description="build, data, inputs, the reference, or an example "
                         "submission's path.")
    expected: str
    got: str
    ok: bool
    detail: str = ""


class VersionOut(_Out):
    problem: str
    version: str = Field(description="Hash of the uploaded files: the same upload is the "
                         "same version.")
    status: Literal["queued", "building", "ready", "failed"]
    live: bool = Field(description="The version students are graded on.")
    steps: list[BuildStep] = Field(description="The build's checks so far, in order.")
    done: int
    total: int
    error: str | None = Field(description="Why the build failed (every failed check).")
    weaknesses: list[str] = Field(description="What a ready package still lacks "
                                  "(jaxjudge verify's warnings).")
    ignored: list[str] = Field(description="Files of the upload left out (data/: the "
                               "judge builds the test data).")
    size_bytes: int
    build_seconds: float | None
    uploaded_at: datetime
    finished_at: datetime | None


class VersionList(_Out):
    problem: str
    live_version: str | None
    items: list[VersionOut]


class VersionQuery(_In):
    version: str | None = Field(default=None, pattern=r"^[0-9a-f]{16}$",
                                description="A built version of the tenant's own problem.")


class UploadQuery(_In):
    slug: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9-]{0,79}$",
                             description="The problem's slug; default: the folder the "
                             "package was zipped in.")
    publish: bool = Field(default=False, description="Make this version live as soon as "
                          "it is built and verified (the first version always is).")


class PublishCreate(_In):
    rejudge: bool = Field(default=False, description="Also grade again, against this "
                          "version, every submission of the problem graded against another.")


class PublishOut(_Out):
    problem: str
    live_version: str
    rejudge: RejudgeOut | None = None


# Batches.

class BatchEntry(_Source):
    student_id: str = Field(pattern=STUDENT_ID)


class BatchCreate(_In):
    problem: str = Field(min_length=1, max_length=200)
    submissions: list[BatchEntry] = Field(min_length=1)
    name: str = Field(default="", max_length=200)
    callback_url: str | None = Field(default=None, max_length=2048)


class BatchMember(_Out):
    student_id: str
    submission_id: str
    status: SubmissionStatus
    verdict: str | None
    score: float | None
    max_score: float | None


class BatchOut(_Out):
    id: str
    problem: str
    name: str
    total: int
    created_at: datetime
    counts: dict[SubmissionStatus, int]
    verdicts: dict[str, int]
    done: bool
    submissions: list[BatchMember]


# Errors, health, webhooks.

class ProblemDetails(_Out):
    """RFC 9457 problem details, served as application/problem+json."""

    model_config = ConfigDict(extra="allow")
    type: str = "about:blank"
    title: str
    status: int
    detail: str = ""
    instance: str | None = None
    errors: list[dict[str, Any]] | None = None


class Check(_Out):
    ok: bool
    detail: str = ""


class Health(_Out):
    status: Literal["ok", "degraded", "unavailable"]
    checks: dict[str, Check] = Field(default_factory=dict)


class WebhookEvent(_Out):
    event: Literal["submission.done"] = "submission.done"
    delivery_id: str
    tenant: str
    submission: SubmissionOut


def submission_out(row: Submission, with_report: bool = True) -> SubmissionOut:
    """A stored submission as the API and the webhooks show it."""
    webhook = None
    if row.callback_url:  # the delivery of the current report; none yet is pending
        delivery = row.delivery if row.status == "done" else None
        webhook = WebhookState(status="pending", attempts=0) if delivery is None else \
            WebhookState(status=delivery.status, attempts=delivery.attempts,  # type: ignore[arg-type]
                         error=delivery.last_error)
    return SubmissionOut(
        id=row.id, problem=row.problem, problem_version=row.problem_version,
        student_id=row.student_id, batch_id=row.batch_id, status=row.status,  # type: ignore[arg-type]
        verdict=row.verdict, score=row.score, max_score=row.max_score, attempt=row.attempt,
        metadata=row.meta, callback_url=row.callback_url, webhook=webhook,
        received_at=row.received_at, queued_at=row.queued_at, started_at=row.started_at,
        finished_at=row.finished_at,
        report=row.report if with_report and row.status == "done" else None,  # type: ignore[arg-type]
        sample_run=bool(row.sample_run),
    )


# Launch links.

class LaunchLinkCreate(_In):
    problem: str = Field(min_length=1, max_length=200, examples=["demo/layout"])
    student_id: str = Field(pattern=STUDENT_ID, description="Who the page is for: their "
                            "submissions are filed under this id.")
    name: str = Field(default="", max_length=300, description="Shown on the page.")
    course: str | None = Field(
        default=None, min_length=1, max_length=255, description="The course (made "
        "without an LMS) the assignment is in; default: \"default\". An instructor "
        "signed in with a key sees it, its gradebook and exports.")
    expires_in: int = Field(default=300, gt=0, description="Seconds the link stays "
                            "usable (at most launch_link_max_seconds).")


class LaunchLinkOut(_Out):
    url: str = Field(description="Open once, in the student's browser: /launch/<token>.")
    expires_at: datetime
