"""Wire types of assignments and their course term (``/v1/assignments``), declared once;
the OpenAPI document is generated from them. Kept apart from :mod:`service.wire`,
which holds the submissions' and problems' types, by resource."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import AwareDatetime, Field, model_validator

from service.wire import STUDENT_ID, _In, _Out, _Source

HiddenResults = Literal["immediately", "after_due", "score_only"]
DATES_NOTE = ("UTC in answers; any time zone in requests (an offset or Z is required). "
              "null: none.")


class ExtensionIn(_In):
    student_id: str = Field(pattern=STUDENT_ID, description="The LTI user id (sub) or "
                            "the launch link's student id.")
    opens_at: AwareDatetime | None = None
    due_at: AwareDatetime | None = None
    late_until: AwareDatetime | None = None


class ExtensionOut(_Out):
    student_id: str
    opens_at: datetime | None
    due_at: datetime | None
    late_until: datetime | None
    granted_by: str
    granted_at: datetime


class OverrideIn(_In):
    student_id: str = Field(pattern=STUDENT_ID)
    score_given: float | None = Field(
        ge=0, description="The grade to send; null removes the override, so the "
        "automatic grade applies (and is sent) again.")
    score_maximum: float | None = Field(
        default=None, gt=0, description="Default: the maximum of the student's automatic "
        "grade.")
    reason: str = Field(min_length=1, max_length=500, description="Kept in the audit; "
                        "never sent to the LMS.")


class OverrideOut(_Out):
    student_id: str
    score_given: float | None = Field(description="null: the override was removed.")
    score_maximum: float | None
    reason: str
    actor: str = Field(description="Who made the change (the API key's id, or the "
                       "instructor's name on the pages).")
    created_at: datetime
    before: dict[str, float] | None = Field(description="The grade before: given and "
                                            "maximum (null: none).")
    after: dict[str, float] | None


class AssignmentOut(_Out):
    id: str
    course_id: int
    problem: str
    title: str
    policy: Literal["best", "latest"]
    opens_at: datetime | None = Field(description=DATES_NOTE)
    due_at: datetime | None
    late_until: datetime | None = Field(description="Late work is taken until then "
                                        "(none: nothing after due_at).")
    dates_source: str | None = Field(description="Where the dates came from: instructor, "
                                     "or lms:<how> (docs/lti.md, Course term); null: no "
                                     "dates set.")
    late_penalty_percent_per_day: float
    late_score_floor_percent: float
    max_attempts: int | None
    cooldown_seconds: int
    hidden_results: HiddenResults
    extensions: list[ExtensionOut]
    score_override: list[OverrideOut] = Field(description="The overrides in force, one "
                                              "per student.")
    score_override_history: list[OverrideOut] = Field(description="Every change of a "
                                                      "grade by hand, oldest first.")
    sends_grades: bool = Field(description="Whether grades go to an LMS line item.")


class AssignmentSummaryOut(_Out):
    id: str
    course_id: int
    problem: str
    title: str
    due_at: datetime | None


class AssignmentPage(_Out):
    items: list[AssignmentSummaryOut]


class AssignmentPatch(_In):
    """The fields to change; those left out stay as they are."""

    policy: Literal["best", "latest"] | None = None
    opens_at: AwareDatetime | None = None
    due_at: AwareDatetime | None = None
    late_until: AwareDatetime | None = None
    late_penalty_percent_per_day: float | None = Field(default=None, ge=0, le=100)
    late_score_floor_percent: float | None = Field(default=None, ge=0, le=100)
    max_attempts: int | None = Field(default=None, ge=1, le=10_000)
    cooldown_seconds: int | None = Field(default=None, ge=0, le=7 * 24 * 3600)
    hidden_results: HiddenResults | None = None
    extensions: list[ExtensionIn] | None = Field(
        default=None, max_length=500, description="Each student's own dates; one with no "
        "date set takes that student's extension away. Students not named keep theirs.")
    score_override: list[OverrideIn] | OverrideIn | None = None

    @model_validator(mode="after")
    def _no_nulls_where_meaningless(self) -> AssignmentPatch:
        for name in ("policy", "late_penalty_percent_per_day", "late_score_floor_percent",
                     "cooldown_seconds", "hidden_results"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} cannot be null")
        return self

    def rule_changes(self) -> dict[str, Any]:
        """The dates and rules sent (a null date or max_attempts: none)."""
        names = ("opens_at", "due_at", "late_until", "late_penalty_percent_per_day",
                 "late_score_floor_percent", "max_attempts", "cooldown_seconds",
                 "hidden_results")
        return {n: getattr(self, n) for n in names if n in self.model_fields_set}


class AssignmentSubmissionCreate(_Source):
    student_id: str = Field(pattern=STUDENT_ID)
    sample_run: bool = Field(default=False, description="Run the sample tests only: "
                             "counts for no attempt and no grade.")
    metadata: dict[str, Any] | None = Field(default=None, description="Anything the "
                                            "caller wants back (at most 4 KiB as JSON).")
