"""Grades for an LMS (LTI Assignment and Grade Services): what score a student's
submission to an assignment sends to the assignment's line item, and where each stands.

A score is a delivery of kind ``lti-score`` in the outbox (:mod:`service.deliveries`),
opened by :func:`service.submissions.store` with the report, to the line item's scores
URL (:func:`scores_url`); the path it takes from there, step by step, is told in
:mod:`workers.deliveries`. Its body is fixed once, at its first try (:func:`fix`), and
stored in ``Delivery.payload``, so every retry is the same request:

- the student's grade as it is when the body is fixed (:mod:`service.grades`: the
  instructor's override, else the assignment's policy over the student's graded
  submissions, each less its late penalty), not only the submission that opened it: the
  LMS keeps one grade;
- ``activityProgress: Completed``, ``gradingProgress: FullyGraded``, ``userId`` the
  student's LTI ``sub``;
- a ``comment`` in the judge's fixed words: the verdict, how many tests passed and the
  late penalty taken off, or that the instructor set the grade (never text a submission
  or an override's reason chose);
- a ``timestamp`` strictly later than the last one fixed for that (assignment, student):
  the clock row (:class:`service.models.LtiScoreClock`) moves forward by a conditional
  UPDATE (or the INSERT of its first value) in the transaction that stores the body, so
  two concurrent tries never fix the same timestamp. Platforms refuse a score that is not
  later than the one they hold (Moodle answers 409).

Switching an assignment's policy (:func:`switch_policy`), like every change of the
course term (:mod:`service.terms`), opens, in the transaction that makes the change, one
score for every student whose grade it changes, none for the others
(:func:`service.grades.changing`); their bodies are fixed at their first tries like any
score, so their timestamps are later than every score before them. Such a score is not
tied to one report: a rejudge does not cancel what it has to say.

The pages read where scores stand with :func:`score_states` (one per student of an
assignment, the newest) and :func:`last_sent` (what the LMS has).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service import grades
from service.db import Database, changed, utcnow
from service.deliveries import LTI_SCORE, REPORT, Try
from service.models import (
    Assignment,
    Delivery,
    DeliveryStatus,
    LtiScoreClock,
    Policy,
    Status,
    Submission,
)

SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
CLOCK_STEP = timedelta(milliseconds=1)  # timestamps are sent to the millisecond


def scores_endpoint(lineitem_url: str) -> str:
    """The scores service of a line item: its URL with ``/scores`` appended to the path
    (before any query string, as the AGS specification says)."""
    parts = urlsplit(lineitem_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


def scores_url(s: Session, assignment_id: str) -> str | None:
    """Where the assignment's grades go: None when it has no line item, or when the
    platform did not grant the tool the score scope for it."""
    row = s.get(Assignment, assignment_id)
    if row is None or not row.lineitem_url or SCORE_SCOPE not in (row.ags_scopes or []):
        return None
    return scores_endpoint(row.lineitem_url)


def switch_policy(s: Session, assignment: Assignment, policy: Policy,
                  now: datetime | None = None) -> list[str]:
    """Set the assignment's grade policy, and open a score to its line item for every
    student whose grade that changes (:func:`service.grades.changing`); the ids of the
    scores opened, to queue once committed. The switch is a conditional UPDATE from the
    policy the assignment had, so the same switch made twice (a form sent again, two
    instructors at once) opens the scores once; a switch back is another switch."""
    now = now or utcnow()
    old = assignment.policy
    if old == policy:
        return []
    with grades.changing(s, assignment, "policy", now=now,
                         scores_url=scores_url(s, assignment.id)) as change:
        if not changed(s, update(Assignment).where(
                Assignment.id == assignment.id, Assignment.policy == old,
        ).values(policy=policy, updated_at=now)):
            change.made = False
    return change.opened


def next_timestamp(s: Session, assignment_id: str, user_id: str,
                   now: datetime | None = None) -> datetime:
    """Move the (assignment, user) clock to a time strictly after its last value (now,
    or 1 ms past the last) and return it. Races lose the conditional UPDATE (or the
    INSERT) and read the clock again."""
    now = now or utcnow()
    now = now.replace(microsecond=now.microsecond // 1000 * 1000)
    key = (LtiScoreClock.assignment_id == assignment_id, LtiScoreClock.user_id == user_id)
    for _ in range(50):
        last = s.scalar(select(LtiScoreClock.last_timestamp).where(*key))
        if last is None:
            try:
                with s.begin_nested():
                    s.add(LtiScoreClock(assignment_id=assignment_id, user_id=user_id,
                                        last_timestamp=now))
                return now
            except IntegrityError:  # another try made the clock first
                continue
        stamp = max(now, last + CLOCK_STEP)
        if changed(s, update(LtiScoreClock).where(*key, LtiScoreClock.last_timestamp == last)
                   .values(last_timestamp=stamp)):
            return stamp
    raise RuntimeError(f"the score clock of {assignment_id}/{user_id} is too contended")


class _NotOurs(Exception):
    """The try was taken over, or its delivery ended, while its body was being fixed."""


def fix(db: Database, taken: Try) -> dict[str, Any] | None:
    """The body of a score try: the one an earlier try fixed, or a new one fixed now
    (stored with the try it belongs to). None when there is nothing to send: the report
    was replaced by a rejudge, the assignment is gone, or the try is no longer ours."""
    if taken.payload is not None:
        return taken.payload
    try:
        with db.session() as s:
            row = s.get(Submission, taken.submission_id)
            if row is None or not row.assignment_id or not row.student_id:
                return None
            if taken.cause == REPORT and (row.status != Status.DONE
                                          or row.attempt != taken.attempt):
                return None  # the report it was opened with was replaced by a rejudge
            assignment = s.get(Assignment, row.assignment_id)
            grade = grades.grade_of(s, assignment, row.student_id) if assignment else None
            if assignment is None or grade is None:
                return None
            stamp = next_timestamp(s, assignment.id, row.student_id)
            body = {
                "userId": row.student_id,
                "scoreGiven": grade.given,
                "scoreMaximum": grade.maximum,
                "comment": grade.comment,
                "timestamp": stamp.isoformat(timespec="milliseconds"),
                "activityProgress": "Completed",
                "gradingProgress": "FullyGraded",
            }
            if not changed(s, update(Delivery).where(
                    Delivery.id == taken.delivery_id, Delivery.status == DeliveryStatus.PENDING,
                    Delivery.attempts == taken.number + 1,  # only this try fixes a body
            ).values(payload=body)):
                raise _NotOurs  # roll the clock back too
            return body
    except _NotOurs:
        return None


def superseded(db: Database, taken: Try, body: dict[str, Any]) -> bool:
    """Whether a later score than ``body`` was fixed for its student since."""
    with db.session() as s:
        assignment_id = s.scalar(select(Submission.assignment_id)
                                 .where(Submission.id == taken.submission_id))
        last = s.scalar(select(LtiScoreClock.last_timestamp).where(
            LtiScoreClock.assignment_id == assignment_id,
            LtiScoreClock.user_id == body["userId"]))
    return last is not None and last > datetime.fromisoformat(body["timestamp"])


@dataclass(frozen=True)
class ScoreState:
    """Where one score delivery stands, for the pages."""

    delivery_id: str
    submission_id: str
    status: str  # pending, delivered, failed, refused, cancelled (DeliveryStatus)
    tries: int
    last_error: str | None
    created_at: datetime
    updated_at: datetime
    next_try_at: datetime | None
    score_given: float | None  # None until its first try fixed the body
    score_maximum: float | None
    timestamp: str | None  # the score's timestamp as sent

    @classmethod
    def of(cls, row: Delivery) -> ScoreState:
        body = row.payload or {}
        return cls(row.id, row.submission_id, row.status, row.attempts, row.last_error,
                   row.created_at, row.updated_at, row.due_at, body.get("scoreGiven"),
                   body.get("scoreMaximum"), body.get("timestamp"))


def _deliveries(s: Session, assignment_id: str, user_id: str | None = None) -> Any:
    query = (select(Submission.student_id, Delivery)
             .join(Submission, Submission.id == Delivery.submission_id)
             .where(Submission.assignment_id == assignment_id, Delivery.kind == LTI_SCORE)
             .order_by(Delivery.created_at, Delivery.id))
    if user_id is not None:
        query = query.where(Submission.student_id == user_id)
    return s.execute(query).all()


def score_states(s: Session, assignment_id: str) -> dict[str, ScoreState]:
    """The newest score delivery of each student of the assignment, by LTI user id."""
    return {student: ScoreState.of(row) for student, row in _deliveries(s, assignment_id)
            if student}


def last_sent(s: Session, assignment_id: str, user_id: str) -> ScoreState | None:
    """The score the LMS holds for the student: the delivered one with the latest
    timestamp (None if none was delivered yet)."""
    sent = [row for _, row in _deliveries(s, assignment_id, user_id)
            if row.status == DeliveryStatus.DELIVERED and row.payload]
    if not sent:
        return None
    return ScoreState.of(max(sent, key=lambda row: row.payload["timestamp"]))
