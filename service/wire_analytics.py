"""Wire types of class analytics (``/v1/assignments/{id}/analytics``,
``/v1/problems/{id}/analytics`` and the instructor's analytics pages), declared once;
the OpenAPI document is generated from them and the pages draw their charts from the
same object. How each number is computed: :mod:`service.analytics` and
docs/analytics.md."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from service.wire import _In, _Out

Scope = Literal["assignment", "problem"]


class AnalyticsQuery(_In):
    format: Literal["json", "csv"] = Field(
        default="json", description="csv: the same numbers as one CSV document, a row "
        "per number under chart,key,detail,expected,count,total,percent,at "
        "(docs/analytics.md, CSV).")


class ScoreBin(_Out):
    lower: float = Field(description="Percent of the maximum, inclusive.")
    upper: float = Field(description="Percent of the maximum, exclusive, except for the "
                         "100% bin, which is [100, 100].")
    count: int = Field(description="Students whose graded score falls in the bin.")


class ReasonCount(_Out):
    verdict: str
    reason: str = Field(description="The test's message: for hidden tests one of the "
                        "judge's fixed sentences (docs/report.md), so equal reasons group; "
                        "empty when there is none.")
    probe: str | None = Field(default=None, description="The probe that failed the test.")
    count: int = Field(description="Graded submissions that failed the test this way.")


class TestStat(_Out):
    name: str
    visibility: Literal["sample", "hidden"]
    runs: int = Field(description="Graded submissions whose report has the test.")
    passed: int
    pass_rate: float = Field(description="passed / runs, 0 to 1 (0 when never run).")
    reasons: list[ReasonCount] = Field(description="The most frequent ways it failed, "
                                       "most frequent first (at most 5).")


class TimeBucket(_Out):
    start: datetime
    end: datetime
    submissions: int = Field(description="Graded submissions received in [start, end).")
    accepted: int = Field(description="Of them, accepted.")


class Timeline(_Out):
    bucket: Literal["hour", "day"]
    buckets: list[TimeBucket]
    due_at: datetime | None = Field(description="The assignment's due date (null: none, "
                                    "or a problem's analytics).")
    late_until: datetime | None


class AttemptBin(_Out):
    attempts: str = Field(description="1 to 9, or 10+.")
    students: int


class AttemptsToAccept(_Out):
    bins: list[AttemptBin]
    median: float | None = Field(description="Median attempts to the first accepted, over "
                                 "the students who got one (null: none did).")


class StuckStudent(_Out):
    student_id: str
    name: str = Field(description="As the roster has it; empty when unknown.")
    attempts: int
    best_percent: float
    last_at: datetime


class Progress(_Out):
    never_started: int = Field(description="On the roster, no graded submission.")
    started: int = Field(description="Submitted, not accepted, not stuck.")
    stuck: int = Field(description="At least 5 graded attempts, none accepted, and the "
                       "last 3 no better than the best before them.")
    accepted: int = Field(description="At least one accepted submission.")
    stuck_students: list[StuckStudent] = Field(description="The stuck students, most "
                                               "attempts first (at most 50).")


class WrongAnswerGroup(_Out):
    test: str = Field(description="The sample test.")
    received: str = Field(description="What the submissions returned on it, as their "
                          "reports show it (capped at 500 characters).")
    expected: str
    students: int = Field(description="Students whose latest graded submission fails the "
                          "sample test with this output.")
    student_ids: list[str] = Field(description="A few of them (at most 5).")


class Analytics(_Out):
    scope: Scope
    id: str = Field(description="The assignment's id, or the problem's.")
    problem: str
    title: str
    due_at: datetime | None
    generated_at: datetime
    students: int = Field(description="The roster's learners and anyone who submitted "
                          "(a problem: anyone of the tenant who submitted).")
    submissions: int = Field(description="Graded submissions (sample runs left out).")
    histogram: list[ScoreBin]
    tests: list[TestStat]
    timeline: Timeline
    attempts_to_accept: AttemptsToAccept
    progress: Progress
    wrong_answers: list[WrongAnswerGroup] = Field(description="The most common outputs of "
                                                  "failing sample tests (at most 10).")
