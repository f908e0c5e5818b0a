"""A student's grade for an assignment, as the LMS should hold it now, and the scores a
change of the course term makes the LMS need again.

The grade is a pure function of what is stored (no clock): the instructor's override in
force, if any (:class:`service.models.ScoreOverride`); else the assignment's policy
(``best`` or ``latest``) over the student's graded submissions to it, each one's score
less its late penalty (:func:`service.term.late_penalty`, from its ``received_at`` and
the dates that apply to the student now, their extension included; a submission of an
instructor's class upload is never late). Sample runs are no grade. So the same grade comes out of the score a worker sends with a new report, of
the gradebook, and of the re-sends below.

A change of the term (the policy, a date, the penalty, an extension, an override) is made
with :func:`changing`: the grades of the students it may touch are read before and
after, and one LTI score is opened for each student whose grade changed (its value, or
the words of its comment), none for the others; the opened scores hang on the graded
submission the grade came from (or the student's latest, for an override), carry the
change's ``cause`` and are queued once committed. Their bodies are fixed at their first
tries like any score (:func:`service.scores.fix`), so the LMS gets the grade as it is
then, once.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from judge.verdict import Verdict
from service import term
from service.db import chunked, utcnow
from service.deliveries import LTI_SCORE, open_delivery
from service.models import (
    Assignment,
    Extension,
    Policy,
    ScoreOverride,
    Status,
    Submission,
)

GRADED = (Submission.status == Status.DONE, Submission.score.is_not(None),
          Submission.sample_run.is_(False))
OVERRIDE_COMMENT = "Grade set by the instructor."


def rules_of(assignment: Assignment) -> term.Rules:
    """The assignment's course-term rules, as :mod:`service.term` reads them."""
    return term.Rules(
        dates=term.Dates(assignment.opens_at, assignment.due_at, assignment.late_until),
        late_penalty_percent_per_day=assignment.late_penalty_percent_per_day or 0.0,
        late_score_floor_percent=assignment.late_score_floor_percent or 0.0,
        max_attempts=assignment.max_attempts,
        cooldown_seconds=float(assignment.cooldown_seconds or 0),
        hidden_results=term.HiddenResults(assignment.hidden_results or "immediately"))


def extension_of(row: Extension | None) -> term.Extension | None:
    if row is None:
        return None
    return term.Extension(row.student_id, row.opens_at, row.due_at, row.late_until)


def extension_rows(s: Session, assignment_id: str,
                   students: Sequence[str] | None = None) -> list[Extension]:
    """The extensions given in an assignment (to ``students``, when given), with who
    gave them and when, by student."""
    query = select(Extension).where(Extension.assignment_id == assignment_id)
    if students is not None:
        query = query.where(Extension.student_id.in_(list(students)))
    return list(s.scalars(query.order_by(Extension.student_id)))


def extensions(s: Session, assignment_id: str,
               students: Sequence[str] | None = None) -> dict[str, term.Extension]:
    """Each student's own dates in an assignment (of ``students``, when given)."""
    return {row.student_id: ext for row in extension_rows(s, assignment_id, students)
            if (ext := extension_of(row)) is not None}


def overrides(s: Session, assignment_id: str,
              students: Sequence[str] | None = None) -> dict[str, ScoreOverride]:
    """The override in force of each student who has one (their latest row, when it
    sets a score)."""
    query = (select(ScoreOverride).where(ScoreOverride.assignment_id == assignment_id)
             .order_by(ScoreOverride.id))
    if students is not None:
        query = query.where(ScoreOverride.student_id.in_(list(students)))
    latest: dict[str, ScoreOverride] = {}
    for row in s.scalars(query):
        latest[row.student_id] = row
    return {student: row for student, row in latest.items() if row.score_given is not None}


def comment(verdict: str, tests: list[dict[str, Any]]) -> str:
    """The verdict and the tests passed, in the judge's words only."""
    words = Verdict(verdict).value.replace("_", " ")
    passed = sum(1 for t in tests if t.get("verdict") == Verdict.ACCEPTED.value)
    return f"Verdict: {words}. Tests passed: {passed} of {len(tests)}."


def late_words(hours: int, penalty: float) -> str:
    return f" Late by {hours} h: {penalty:g}% of the score taken off."


@dataclass(frozen=True)
class Scored:
    """One graded submission as a grade sees it: its score less its late penalty."""

    id: str
    attempt: int
    received_at: datetime
    verdict: str
    raw: float  # the judge's score (or 1/0 for a problem worth nothing)
    maximum: float
    penalty_percent: float
    late_hours: int

    @property
    def given(self) -> float:
        return term.penalised(self.raw, self.maximum, self.penalty_percent)


@dataclass(frozen=True)
class Grade:
    """What the LMS should hold for one student: ``given`` of ``maximum`` with the
    judge's ``comment``; the submission it hangs on; whether it is an override."""

    given: float
    maximum: float
    comment: str
    submission_id: str
    attempt: int
    overridden: bool = False
    penalty_percent: float = 0.0
    chosen_id: str | None = None  # the policy's pick, overridden or not

    def key(self) -> tuple[float, float, str]:
        """What the LMS would see change (the value, to the microscore, and the words)."""
        return round(self.given, 6), round(self.maximum, 6), self.comment


def scored(row: Any, rules: term.Rules, dates: term.Dates) -> Scored:
    """``row`` (a submission, or a row of its columns) scored under the student's dates."""
    raw, maximum = float(row.score or 0), float(row.max_score or 0)
    if maximum <= 0:  # a problem worth nothing: pass or fail
        raw, maximum = float(row.verdict == Verdict.ACCEPTED.value), 1.0
    if getattr(row, "batch_id", None) is not None:  # an instructor's class upload: on time
        dates = term.Dates()
    penalty = term.late_penalty(rules, dates, row.received_at)
    hours = 0
    if dates.due_at is not None and row.received_at > dates.due_at:
        hours = math.ceil((row.received_at - dates.due_at).total_seconds() / 3600)
    return Scored(row.id, row.attempt, row.received_at, row.verdict or "internal_error",
                  raw, maximum, penalty, hours)


def rank(policy: str) -> Any:
    """The order of a student's scored submissions under ``policy``, the grade last:
    ``best`` the highest score after penalties, the latest of equals; ``latest`` the
    last received."""
    if policy == Policy.LATEST:
        return lambda sub: (sub.received_at, sub.id)
    return lambda sub: (round(sub.given, 9), sub.received_at, sub.id)


def _grade(chosen: Scored | None, override: ScoreOverride | None,
           latest: tuple[str, int] | None, tests: list[dict[str, Any]] | None) -> Grade | None:
    """The grade from the policy's pick (and its report's ``tests``; None: no comment),
    or the override."""
    if override is not None:
        anchor = (chosen.id, chosen.attempt) if chosen else latest
        if anchor is None:
            return None
        return Grade(float(override.score_given or 0), float(override.score_maximum or 0),
                     OVERRIDE_COMMENT, anchor[0], anchor[1], overridden=True,
                     chosen_id=chosen.id if chosen else None)
    if chosen is None:
        return None
    if tests is None:
        return Grade(chosen.given, chosen.maximum, "", chosen.id, chosen.attempt,
                     penalty_percent=chosen.penalty_percent, chosen_id=chosen.id)
    words = comment(chosen.verdict, tests)
    if chosen.penalty_percent > 0:
        words += late_words(chosen.late_hours, chosen.penalty_percent)
    return Grade(chosen.given, chosen.maximum, words, chosen.id, chosen.attempt,
                 penalty_percent=chosen.penalty_percent, chosen_id=chosen.id)


def grades(s: Session, assignment: Assignment, students: Sequence[str] | None = None,
           with_comments: bool = True) -> dict[str, Grade]:
    """The grade of each student of the assignment who has one (of ``students`` only,
    when given). Reports are read for the picked submissions only (their comment);
    ``with_comments=False`` reads none and leaves the comments empty (class analytics,
    which needs the numbers only: the same numbers, one query fewer)."""
    rules = rules_of(assignment)
    query = select(Submission.id, Submission.student_id, Submission.attempt,
                   Submission.score, Submission.max_score, Submission.verdict,
                   Submission.received_at, Submission.batch_id).where(
        Submission.assignment_id == assignment.id, Submission.student_id.is_not(None),
        *GRADED)
    latest_query = select(Submission.student_id, Submission.id, Submission.attempt).where(
        Submission.assignment_id == assignment.id, Submission.student_id.is_not(None),
        Submission.sample_run.is_(False)).order_by(Submission.received_at, Submission.id)
    if students is not None:
        query = query.where(Submission.student_id.in_(list(students)))
        latest_query = latest_query.where(Submission.student_id.in_(list(students)))
    graded: dict[str, list[Any]] = {}
    for row in s.execute(query):
        graded.setdefault(row.student_id, []).append(row)
    latest = {row.student_id: (row.id, row.attempt) for row in s.execute(latest_query)}
    exts = extensions(s, assignment.id, students)
    forced = overrides(s, assignment.id, students)
    picks: dict[str, Scored | None] = {}
    for student in sorted(set(graded) | set(forced)):
        dates = term.dates_for(rules, exts.get(student))
        picks[student] = max((scored(r, rules, dates) for r in graded.get(student, [])),
                             key=rank(assignment.policy), default=None)
    wanted = [p.id for student, p in picks.items() if p is not None and student not in forced]
    tests: dict[str, list[dict[str, Any]]] = {}
    for part in chunked(wanted if with_comments else []):
        for sid, found in s.execute(select(Submission.id, Submission.report)
                                    .where(Submission.id.in_(list(part)))):
            tests[sid] = (found or {}).get("tests", [])
    found_grades = {}
    for student, pick in picks.items():
        grade = _grade(pick, forced.get(student), latest.get(student),
                       None if not with_comments else tests.get(pick.id, []) if pick else [])
        if grade is not None:
            found_grades[student] = grade
    return found_grades


def grade_of(s: Session, assignment: Assignment, student: str) -> Grade | None:
    return grades(s, assignment, [student]).get(student)


def new_cause(what: str) -> str:
    """The ``cause`` of the scores one change opens: what changed and a fresh id (the
    deliveries of one report and kind are told apart by it)."""
    return f"{what}:{uuid.uuid4().hex[:12]}"[:40]


@dataclass
class Change:
    """The scores a change of the term opened, to queue once committed; the block sets
    ``made`` false when it made no change after all (a concurrent one won)."""

    opened: list[str] = field(default_factory=list)
    made: bool = True


@contextmanager
def changing(s: Session, assignment: Assignment, what: str,
             students: Sequence[str] | None = None, now: datetime | None = None,
             scores_url: str | None = None) -> Iterator[Change]:
    """Read the grades (of ``students``, or all), let the block change the term, read
    them again, and open one score to ``scores_url`` for each student whose grade
    changed (none when the assignment sends no grades)."""
    before = grades(s, assignment, students)
    change = Change()
    yield change
    if not change.made:
        return
    s.flush()
    s.refresh(assignment)
    if scores_url is None:
        return
    after = grades(s, assignment, students)
    cause, now = new_cause(what), now or utcnow()
    for student in sorted(after):
        grade, was = after[student], before.get(student)
        if was is not None and was.key() == grade.key():
            continue
        change.opened.append(open_delivery(s, grade.submission_id, grade.attempt,
                                           assignment.tenant_id, scores_url, now,
                                           kind=LTI_SCORE, cause=cause))
