"""The course term of an assignment over the database: where a student stands (their
dates, attempts, what a submission now would cost), the gate every submitting path
puts before its insert, and the changes an instructor (or the LMS) makes to the rules,
the dates, extensions and overrides, each re-sending exactly the grades it changes.

The rules themselves are pure functions in :mod:`service.term`; grades in
:mod:`service.grades`. Every function takes ``now`` from its caller (the services'
clock), never reads one.

Concurrency: :func:`gate` begins by writing the assignment's row (an UPDATE that
changes nothing), so the submissions of one assignment are admitted one at a time:
the count of attempts it reads cannot be overtaken by a concurrent submission of the
same student before the insert commits (SQLite takes its write lock there, PostgreSQL
the row's lock).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session

from service import grades, term
from service.db import utcnow
from service.models import Assignment, Extension, Policy, ScoreOverride, Submission
from service.scores import scores_url, switch_policy
from service.submitting import Refused
from service.wire_assignments import (
    AssignmentOut,
    AssignmentPatch,
    ExtensionOut,
    OverrideIn,
    OverrideOut,
)

log = logging.getLogger(__name__)
DATE_FIELDS = ("opens_at", "due_at", "late_until")
RULE_FIELDS = ("late_penalty_percent_per_day", "late_score_floor_percent", "max_attempts",
               "cooldown_seconds", "hidden_results")
INSTRUCTOR = "instructor"


def when(at: datetime | None) -> str:
    """A date in words, in UTC (the pages show it again in the viewer's own zone)."""
    if at is None:
        return "never"
    return at.astimezone(UTC).strftime("%a %d %b %Y, %H:%M UTC")


@dataclass(frozen=True)
class Standing:
    """Where one student stands in an assignment's term at ``now``."""

    rules: term.Rules
    dates: term.Dates  # theirs: the assignment's, with their extension's in place
    extension: term.Extension | None
    attempts_used: int
    last_attempt_at: datetime | None
    admission: term.Admission  # for a graded submission made now
    hidden_shown: bool  # the hidden tests' own verdicts are shown now
    now: datetime

    @property
    def attempts_left(self) -> int | None:
        if self.rules.max_attempts is None:
            return None
        return max(0, self.rules.max_attempts - self.attempts_used)


def attempts(s: Session, assignment_id: str, student: str) -> tuple[int, datetime | None]:
    """The graded attempts a student made (their submissions, sample runs and those the
    judge itself failed on not counted) and when the last one came."""
    used, last = s.execute(select(func.count(), func.max(Submission.received_at)).where(
        Submission.assignment_id == assignment_id, Submission.student_id == student,
        Submission.sample_run.is_(False),
        or_(Submission.verdict.is_(None), Submission.verdict != "internal_error"))).one()
    return int(used or 0), last


def standing(s: Session, assignment: Assignment, student: str, now: datetime) -> Standing:
    rules = grades.rules_of(assignment)
    ext = grades.extensions(s, assignment.id, [student]).get(student)
    dates = term.dates_for(rules, ext)
    used, last = attempts(s, assignment.id, student)
    admission = term.admit(rules, dates, now, attempts_used=used, last_attempt_at=last)
    return Standing(rules, dates, ext, used, last, admission,
                    term.hidden_shown(rules, dates, now), now)


class Sentence(NamedTuple):
    """A sentence that names a date: the words before it, the date (None: the sentence
    names none, and is all in ``before``), the words after."""

    before: str
    at: datetime | None = None
    after: str = ""

    def text(self) -> str:
        """The sentence with its date in words (:func:`when`)."""
        return self.before if self.at is None else f"{self.before}{when(self.at)}{self.after}"


def refusal_words(found: Standing) -> Sentence:
    """Why a graded submission is refused now, in the words the API's problem detail
    and the student page both say (the page shows the date in the viewer's own zone)."""
    admission, dates = found.admission, found.dates
    refusal = admission.refusal
    if refusal is term.Refusal.NOT_OPEN:
        return Sentence("This assignment opens on ", dates.opens_at,
                        "; you can run the sample tests until then.")
    if refusal is term.Refusal.CLOSED:
        return Sentence("This assignment closed on ", dates.closes_at(), "; it takes no more "
                        "graded submissions. You can still run the sample tests.")
    if refusal is term.Refusal.NO_ATTEMPTS:
        return Sentence(f"You have used all {found.rules.max_attempts} graded attempts. You "
                        "can still run the sample tests.")
    if refusal is term.Refusal.COOLING_DOWN:
        return Sentence("Your next graded attempt can be made on ", admission.wait_until,
                        ". You can run the sample tests meanwhile.")
    return Sentence("")


class NotAdmitted(Refused):
    """A graded submission the course term does not let in now: 403 for good (closed,
    no attempts left) or until a date (not open yet), 429 while cooling down, with
    ``Retry-After`` where waiting helps and the problem's ``refusal`` and dates; its
    detail is :func:`refusal_words`."""

    def __init__(self, found: Standing) -> None:
        admission, dates = found.admission, found.dates
        refusal = admission.refusal
        assert refusal is not None
        extra: dict[str, Any] = {"refusal": refusal.value}
        headers: dict[str, str] = {}
        if admission.wait_until is not None:
            extra["wait_until"] = admission.wait_until.isoformat()
            wait = max(1, int((admission.wait_until - found.now).total_seconds() + 0.999))
            headers["Retry-After"] = str(wait)
        status, title = {
            term.Refusal.NOT_OPEN: (403, "Not open yet"),
            term.Refusal.CLOSED: (403, "Closed"),
            term.Refusal.NO_ATTEMPTS: (403, "No attempts left"),
            term.Refusal.COOLING_DOWN: (429, "Cooling down"),
        }[refusal]
        if refusal is term.Refusal.CLOSED and dates.closes_at() is not None:
            extra["closed_at"] = dates.closes_at().isoformat()  # type: ignore[union-attr]
        super().__init__(status, title, refusal_words(found).text(), headers, **extra)
        self.standing = found


def lock(s: Session, assignment_id: str) -> None:
    """Take the assignment's row for the rest of the transaction (see the module)."""
    s.execute(update(Assignment).where(Assignment.id == assignment_id)
              .values(updated_at=Assignment.updated_at))


def gate(assignment_id: str, student: str, now: datetime, *,
         sample_run: bool = False) -> Callable[[Session], None]:
    """The check :func:`service.submitting.submit` runs before its insert: a graded
    submission the term refuses raises :class:`NotAdmitted`. A sample run is always let
    in (it is worth nothing and shows only the sample tests, which the page shows
    anyway); the submission rate limits still apply to it."""

    def check(s: Session) -> None:
        if sample_run:
            return
        lock(s, assignment_id)
        assignment = s.get(Assignment, assignment_id)
        if assignment is None:
            raise Refused(404, "Not found", "no such assignment")
        found = standing(s, assignment, student, now)
        if not found.admission.allowed:
            raise NotAdmitted(found)

    return check


# Changes: each one in ``grades.changing``, so the grades it changes are sent again.


class TermRefused(Refused):
    """A change of the term that cannot be made (422)."""

    def __init__(self, detail: str, title: str = "Invalid course term") -> None:
        super().__init__(422, title, detail)


def form_dates(form: Mapping[str, str]) -> term.Dates:
    """The dates of a page's form (the term page's, the LTI picker's): ``opens_at``,
    ``due_at``, ``late_until`` as ``datetime-local`` values (empty: none), in the zone
    ``tz`` that the page's script fills in from the browser (UTC without it; a value
    that names its own offset keeps it), in UTC. Only read, not checked against each
    other (:func:`check_dates`: an extension's are checked merged with the
    assignment's); raises :class:`TermRefused`."""
    name = (form.get("tz") or "UTC").strip()[:64] or "UTC"
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise TermRefused(f"{name!r} is not a time zone; the page fills it in from your "
                          "browser (or UTC)", "Unknown time zone") from None
    found: dict[str, datetime | None] = {}
    for field in DATE_FIELDS:
        raw = (form.get(field) or "").strip()[:32]
        if not raw:
            found[field] = None
            continue
        try:
            at = datetime.fromisoformat(raw)
        except ValueError:
            raise TermRefused(f"{field.replace('_', ' ')}: {raw!r} is not a date and time "
                              "(YYYY-MM-DDTHH:MM)", "Not a date") from None
        found[field] = (at if at.tzinfo is not None else at.replace(tzinfo=zone)) \
            .astimezone(UTC)
    return term.Dates(**found)


def check_dates(dates: term.Dates, who: str = "the assignment") -> None:
    """``opens_at`` before ``due_at`` before ``late_until``; ``late_until`` only with a
    due date; every date with a time zone."""
    for name in DATE_FIELDS:
        value = getattr(dates, name)
        if value is not None and value.tzinfo is None:
            raise TermRefused(f"{name} of {who} has no time zone (send it with Z or +hh:mm)")
    if dates.late_until is not None and dates.due_at is None:
        raise TermRefused(f"late_until of {who} needs a due_at")
    order = [(n, getattr(dates, n)) for n in DATE_FIELDS if getattr(dates, n) is not None]
    for (first, a), (then, b) in zip(order, order[1:], strict=False):
        if a > b:
            raise TermRefused(f"{first} of {who} ({when(a)}) is after its {then} ({when(b)})")


def set_rules(s: Session, assignment: Assignment, changes: dict[str, Any], *,
              now: datetime | None = None) -> list[str]:
    """Set the assignment's dates and rules named in ``changes`` (a date set here is
    the instructor's from now on); the LTI scores opened for the students whose grade
    that changes, to queue once committed."""
    now = now or utcnow()
    unknown = set(changes) - set(DATE_FIELDS) - set(RULE_FIELDS)
    if unknown:
        raise TermRefused(f"unknown rule(s): {', '.join(sorted(unknown))}")
    dates = term.Dates(**{n: changes.get(n, getattr(assignment, n)) for n in DATE_FIELDS})
    check_dates(dates)
    for name, ext in grades.extensions(s, assignment.id).items():
        check_dates(term.dates_for(term.Rules(dates=dates), ext), f"the extension of {name}")
    with grades.changing(s, assignment, "term", now=now,
                         scores_url=scores_url(s, assignment.id)) as change:
        for name, value in changes.items():
            setattr(assignment, name, value)
        if any(n in changes for n in DATE_FIELDS):
            assignment.dates_source = INSTRUCTOR
        assignment.updated_at = now
    return change.opened


def set_extension(s: Session, assignment: Assignment, student: str,
                  dates: term.Dates | None, *, actor: str,
                  now: datetime | None = None) -> list[str]:
    """Give ``student`` their own ``dates`` (those set replace the assignment's), or take
    their extension away (``dates`` None, or none set); the scores opened."""
    now = now or utcnow()
    if dates is not None and all(getattr(dates, n) is None for n in DATE_FIELDS):
        dates = None
    if dates is not None:
        merged = term.dates_for(grades.rules_of(assignment),
                                term.Extension(student, *dates.__dict__.values()))
        check_dates(merged, f"the extension of {student}")
    with grades.changing(s, assignment, "extension", [student], now=now,
                         scores_url=scores_url(s, assignment.id)) as change:
        row = s.scalar(select(Extension).where(Extension.assignment_id == assignment.id,
                                               Extension.student_id == student))
        if dates is None:
            if row is not None:
                s.delete(row)
        else:
            if row is None:
                row = Extension(assignment_id=assignment.id, student_id=student)
                s.add(row)
            row.opens_at, row.due_at, row.late_until = (dates.opens_at, dates.due_at,
                                                        dates.late_until)
            row.granted_by, row.granted_at = actor[:300], now
    return change.opened


def _grade_words(grade: grades.Grade | None) -> dict[str, float] | None:
    return None if grade is None else {"given": grade.given, "maximum": grade.maximum}


def set_override(s: Session, assignment: Assignment, student: str,
                 score_given: float | None, score_maximum: float | None, *, reason: str,
                 actor: str, now: datetime | None = None) -> list[str]:
    """Set ``student``'s grade by hand (``score_given`` of ``score_maximum``; the
    maximum defaults to that of their automatic grade), or remove the override
    (``score_given`` None) so the automatic grade applies again; kept in the audit with
    the reason, who, when, and the grade before and after. The scores opened."""
    now = now or utcnow()
    if not reason.strip():
        raise TermRefused("an override needs a reason")
    has_any = s.scalar(select(func.count()).select_from(Submission).where(
        Submission.assignment_id == assignment.id, Submission.student_id == student,
        Submission.sample_run.is_(False)))
    if score_given is not None and not has_any:
        raise TermRefused(f"{student} has no submission to this assignment: the grade an "
                          "override sets is sent with a submission of theirs; set it in "
                          "the LMS's own gradebook until they submit")
    with grades.changing(s, assignment, "override", [student], now=now,
                         scores_url=scores_url(s, assignment.id)) as change:
        before = grades.grade_of(s, assignment, student)
        if score_given is not None:
            maximum = score_maximum if score_maximum is not None else (
                before.maximum if before is not None and not before.overridden else None)
            if maximum is None or maximum <= 0:
                raise TermRefused("score_maximum is needed (the student has no grade yet "
                                  "to take it from)")
            if not 0 <= score_given <= maximum:
                raise TermRefused(f"score_given must be between 0 and {maximum:g}")
            score_maximum = maximum
        elif before is None or not before.overridden:
            raise TermRefused(f"{student} has no override to remove")
        row = ScoreOverride(assignment_id=assignment.id, student_id=student,
                            score_given=score_given,
                            score_maximum=score_maximum if score_given is not None else None,
                            reason=reason.strip()[:500], actor=actor[:300], created_at=now,
                            before=_grade_words(before))
        s.add(row)
        s.flush()
        row.after = _grade_words(grades.grade_of(s, assignment, student))
    return change.opened


def audit(s: Session, assignment_id: str, student: str | None = None) -> list[ScoreOverride]:
    """Every change of a grade by hand, oldest first (of one student, when given)."""
    query = select(ScoreOverride).where(ScoreOverride.assignment_id == assignment_id)
    if student is not None:
        query = query.where(ScoreOverride.student_id == student)
    return list(s.scalars(query.order_by(ScoreOverride.id)))


def take_lms_dates(s: Session, assignment: Assignment, sent: dict[str, datetime | None],
              source: str, *, now: datetime | None = None) -> list[str]:
    """Take the dates an LMS sent with a launch (or its line item) as ``source``
    (``lms:<how>``): each one that differs from what the LMS sent last time replaces the
    assignment's date (a date changed in the LMS wins); one the LMS sends unchanged
    leaves the instructor's own later change alone. The scores opened."""
    now = now or utcnow()
    last = dict(assignment.lms_dates or {})
    changes: dict[str, datetime | None] = {}
    for name, value in sent.items():
        if name not in DATE_FIELDS or value is None:  # a date the LMS did not give
            continue
        stamp = value.isoformat() if value is not None else None
        if last.get(name, "unset") != stamp:
            last[name] = stamp
            changes[name] = value
    if not changes:
        return []
    s.flush()
    lock(s, assignment.id)  # concurrent launches bring the same change: one makes it
    s.refresh(assignment)
    if assignment.lms_dates == last:
        return []
    dates = term.Dates(**{n: changes.get(n, getattr(assignment, n)) for n in DATE_FIELDS})
    try:
        check_dates(dates)
    except TermRefused:
        # The LMS's new dates contradict ours (its due date moved past the instructor's
        # late_until): the LMS wins, and our dates it did not send are cleared.
        cleared = {n: None for n in DATE_FIELDS if n not in changes
                   and getattr(assignment, n) is not None}
        dates = term.Dates(**{n: changes.get(n) for n in DATE_FIELDS})
        try:
            check_dates(dates)
        except TermRefused as exc:  # the LMS's own dates contradict each other
            log.warning("assignment %s: the LMS's dates are not taken: %s", assignment.id,
                        exc.detail)
            return []
        log.info("assignment %s: the LMS's dates clear %s", assignment.id, sorted(cleared))
        changes.update(cleared)
    with grades.changing(s, assignment, "lms-dates", now=now,
                         scores_url=scores_url(s, assignment.id)) as change:
        for name, value in changes.items():
            setattr(assignment, name, value)
        assignment.lms_dates = last
        assignment.dates_source = source[:40]
        assignment.updated_at = now
    return change.opened


def apply_patch(s: Session, assignment: Assignment, patch: AssignmentPatch, *, actor: str,
                now: datetime | None = None) -> list[str]:
    """Make the changes of ``PATCH /v1/assignments/{id}`` (the gradebook's forms make
    the same ones), in one transaction, in this order: the grade policy, the dates and
    rules, the extensions, the overrides. Every score a step opens is in the list, to
    queue once committed; a grade two steps change is sent by each (their bodies are
    fixed at their tries: both send the grade as it is then, the last one wins)."""
    now = now or utcnow()
    opened: list[str] = []
    if patch.policy is not None:
        opened += switch_policy(s, assignment, Policy(patch.policy), now)
    if changes := patch.rule_changes():
        opened += set_rules(s, assignment, changes, now=now)
    for ext in patch.extensions or []:
        opened += set_extension(s, assignment, ext.student_id,
                                term.Dates(ext.opens_at, ext.due_at, ext.late_until),
                                actor=actor, now=now)
    given = patch.score_override
    for one in ([given] if isinstance(given, OverrideIn) else given or []):
        opened += set_override(s, assignment, one.student_id, one.score_given,
                               one.score_maximum, reason=one.reason, actor=actor, now=now)
    return opened


def _override_out(row: ScoreOverride) -> OverrideOut:
    return OverrideOut(student_id=row.student_id, score_given=row.score_given,
                       score_maximum=row.score_maximum, reason=row.reason, actor=row.actor,
                       created_at=row.created_at, before=row.before, after=row.after)


def assignment_out(s: Session, assignment: Assignment) -> AssignmentOut:
    history = audit(s, assignment.id)
    forced = grades.overrides(s, assignment.id)
    return AssignmentOut(
        id=assignment.id, course_id=assignment.course_id, problem=assignment.problem,
        title=assignment.title, policy=assignment.policy,  # type: ignore[arg-type]
        opens_at=assignment.opens_at, due_at=assignment.due_at,
        late_until=assignment.late_until, dates_source=assignment.dates_source,
        late_penalty_percent_per_day=assignment.late_penalty_percent_per_day or 0.0,
        late_score_floor_percent=assignment.late_score_floor_percent or 0.0,
        max_attempts=assignment.max_attempts,
        cooldown_seconds=assignment.cooldown_seconds or 0,
        hidden_results=assignment.hidden_results,  # type: ignore[arg-type]
        extensions=[ExtensionOut(student_id=e.student_id, opens_at=e.opens_at,
                                 due_at=e.due_at, late_until=e.late_until,
                                 granted_by=e.granted_by, granted_at=e.granted_at)
                    for e in grades.extension_rows(s, assignment.id)],
        score_override=[_override_out(row) for _, row in sorted(forced.items())],
        score_override_history=[_override_out(row) for row in history],
        sends_grades=scores_url(s, assignment.id) is not None)
