"""What the pages read and change, over the same tables as the REST API: a tenant's
courses and assignments with their counts, a student's history, an assignment's
gradebook (every member of the roster and everyone who submitted, graded by the
assignment's policy), and its exports.

Every lookup takes the tenant (and, for a course's pages, the course), so another
tenant's or course's id finds nothing, and the pages answer 404.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import func, select
from sqlalchemy.orm import Session, defer

from judge.report import VerdictReport
from service.courses import is_instructor
from service.db import Database, chunked, utcnow
from service.exports import ExportRow
from service.grades import Grade, grades
from service.models import Assignment, Course, Member, Policy, Status, Submission
from service.scores import ScoreState, score_states, switch_policy

# A listing reads neither the code nor the report (raiseload: touching one is a bug).
LISTED = (defer(Submission.code, raiseload=True), defer(Submission.report, raiseload=True))
SORTS = ("name", "verdict", "score", "attempts", "last")


def find_course(s: Session, tenant_id: int, course_id: int) -> Course | None:
    return s.scalar(select(Course).where(Course.id == course_id, Course.tenant_id == tenant_id))


def find_assignment(s: Session, tenant_id: int, assignment_id: str) -> Assignment | None:
    return s.scalar(select(Assignment).where(Assignment.id == assignment_id,
                                             Assignment.tenant_id == tenant_id))


def find_submission(s: Session, tenant_id: int, submission_id: str) -> Submission | None:
    return s.scalar(select(Submission).where(Submission.id == submission_id,
                                             Submission.tenant_id == tenant_id))


@dataclass(frozen=True)
class CourseSummary:
    course: Course
    assignments: int
    members: int


def courses(s: Session, tenant_id: int, only: int | None = None) -> list[CourseSummary]:
    """The tenant's courses (or only the course ``only``), newest first, with counts."""
    query = select(Course).where(Course.tenant_id == tenant_id)
    if only is not None:
        query = query.where(Course.id == only)
    rows = list(s.scalars(query.order_by(Course.created_at.desc(), Course.id.desc())))
    ids = [c.id for c in rows]
    assignments = dict(s.execute(select(Assignment.course_id, func.count())
                                 .where(Assignment.course_id.in_(ids))
                                 .group_by(Assignment.course_id)).all()) if ids else {}
    members = dict(s.execute(select(Member.course_id, func.count())
                             .where(Member.course_id.in_(ids))
                             .group_by(Member.course_id)).all()) if ids else {}
    return [CourseSummary(c, assignments.get(c.id, 0), members.get(c.id, 0)) for c in rows]


@dataclass(frozen=True)
class AssignmentSummary:
    assignment: Assignment
    submissions: int
    students: int  # who submitted at least once
    pending: int  # queued or running
    accepted: int  # students with an accepted submission


def assignments(s: Session, course: Course) -> list[AssignmentSummary]:
    rows = list(s.scalars(select(Assignment).where(Assignment.course_id == course.id)
                          .order_by(Assignment.created_at, Assignment.id)))
    found = []
    for a in rows:
        base = select(func.count()).select_from(Submission).where(
            Submission.assignment_id == a.id)
        found.append(AssignmentSummary(
            a,
            submissions=s.scalar(base) or 0,
            students=s.scalar(select(func.count(func.distinct(Submission.student_id)))
                              .where(Submission.assignment_id == a.id)) or 0,
            pending=s.scalar(base.where(Submission.status != Status.DONE)) or 0,
            accepted=s.scalar(select(func.count(func.distinct(Submission.student_id)))
                              .where(Submission.assignment_id == a.id,
                                     Submission.verdict == "accepted")) or 0,
        ))
    return found


def history(s: Session, assignment_id: str, student_id: str) -> list[Submission]:
    """A student's submissions to an assignment, newest first, without code or report."""
    return list(s.scalars(select(Submission).options(*LISTED).where(
        Submission.assignment_id == assignment_id, Submission.student_id == student_id)
        .order_by(Submission.received_at.desc(), Submission.id.desc())))


def submissions_with_reports(s: Session, assignment_id: str,
                             student_id: str) -> list[Submission]:
    """A student's submissions to an assignment with their code and report (the
    instructor's view of one student), newest first."""
    return list(s.scalars(select(Submission).where(
        Submission.assignment_id == assignment_id, Submission.student_id == student_id)
        .order_by(Submission.received_at.desc(), Submission.id.desc())))


def roster_stale(s: Session, course: Course, max_age: float) -> bool:
    """Whether the course's roster should be fetched again from the LMS (NRPS): it has a
    memberships URL and was never synced, or not for ``max_age`` seconds."""
    if not course.memberships_url:
        return False
    last = s.scalar(select(func.max(Member.synced_at)).where(Member.course_id == course.id))
    return last is None or last < utcnow() - timedelta(seconds=max_age)


@dataclass
class GradeRow:
    """One person of an assignment's gradebook."""

    user_id: str
    name: str = ""
    email: str = ""
    on_roster: bool = False
    teaching: bool = False  # an instructor's role in the course
    attempts: int = 0
    pending: int = 0
    last_at: datetime | None = None
    chosen: Submission | None = None  # the graded submission the policy picks
    grade: Grade | None = None  # as the LMS should hold it (penalties, override)
    score: ScoreState | None = None  # the newest LMS score delivery
    submissions: list[Submission] = field(default_factory=list)
    samples: int = 0  # sample runs (no attempts)

    @property
    def verdict(self) -> str:
        return self.chosen.verdict or "" if self.chosen else ""

    @property
    def points(self) -> float | None:
        return self.grade.given if self.grade else None


def gradebook(s: Session, assignment: Assignment, *, sort: str = "name",
              descending: bool = False, search: str = "", verdict: str = "",
              learners_only: bool = True) -> list[GradeRow]:
    """Every member of the course (learners only unless ``learners_only`` is false) and
    everyone who submitted to the assignment, each with the graded submission the
    assignment's policy picks, the attempts, the last submission and the newest LMS
    score delivery; filtered (``search`` in the name, email or id; ``verdict``, or
    ``none`` for no graded submission) and sorted by one of SORTS."""
    rows: dict[str, GradeRow] = {}
    for m in s.scalars(select(Member).where(Member.course_id == assignment.course_id)):
        teaching = is_instructor(m.roles)
        if teaching and learners_only:
            continue
        rows[m.user_id] = GradeRow(m.user_id, m.name, m.email, on_roster=True,
                                   teaching=teaching)
    for sub in s.scalars(select(Submission).options(*LISTED)
                         .where(Submission.assignment_id == assignment.id)):
        student = sub.student_id or ""
        row = rows.get(student)
        if row is None:
            row = rows[student] = GradeRow(student)
        row.submissions.append(sub)
        if sub.status != Status.DONE:
            row.pending += 1
        if sub.sample_run:
            row.samples += 1
            continue
        row.attempts += 1
        if row.last_at is None or sub.received_at > row.last_at:
            row.last_at = sub.received_at
    for student, grade in grades(s, assignment).items():
        if (row := rows.get(student)) is not None:
            row.grade = grade
            row.chosen = next((sub for sub in row.submissions if sub.id == grade.chosen_id),
                              None)
    for student, state in score_states(s, assignment.id).items():
        if student in rows:
            rows[student].score = state
    found = list(rows.values())
    if search:
        needle = search.casefold()
        found = [r for r in found if needle in r.user_id.casefold()
                 or needle in r.name.casefold() or needle in r.email.casefold()]
    if verdict == "none":
        found = [r for r in found if r.chosen is None]
    elif verdict:
        found = [r for r in found if r.verdict == verdict]
    keys = {
        "name": lambda r: ((r.name or r.user_id).casefold(), r.user_id),
        "verdict": lambda r: (r.verdict, r.user_id),
        "score": lambda r: (r.points if r.points is not None else -1.0, r.user_id),
        "attempts": lambda r: (r.attempts, r.user_id),
        "last": lambda r: (r.last_at.timestamp() if r.last_at else 0.0, r.user_id),
    }
    found.sort(key=keys.get(sort, keys["name"]), reverse=descending)
    return found


def set_policy(s: Session, assignment: Assignment,
               policy: Literal["best", "latest"]) -> list[str]:
    """Switch the assignment's grade policy; the LTI scores it opened (one per student
    whose grade changed), to queue once committed (:func:`service.scores.switch_policy`)."""
    return switch_policy(s, assignment, Policy(policy))


def export_rows(db: Database, assignment: Assignment) -> Iterator[list[ExportRow]]:
    """The gradebook's graded row per student (the policy's submission, with its report;
    status ``queued`` with no report for a student without one yet), a page at a time."""
    with db.session() as s:
        book = gradebook(s, assignment)
        picks = [(r.user_id, r.chosen.id if r.chosen else None,
                  r.submissions[0].id if r.submissions else "") for r in book
                 if r.submissions]
    for part in chunked(picks):
        ids = [chosen for _, chosen, _ in part if chosen]
        with db.session() as s:
            reports: dict[str, Any] = dict(s.execute(
                select(Submission.id, Submission.report)
                .where(Submission.id.in_(ids))).all()) if ids else {}
        yield [ExportRow(student_id=student, submission_id=chosen or first,
                         status=Status.DONE if chosen else Status.QUEUED,
                         report=VerdictReport.model_validate(reports[chosen])
                         if chosen and reports.get(chosen) else None)
               for student, chosen, first in part]
