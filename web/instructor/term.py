"""An assignment's course term, as the instructor sets it: the dates (entered in the
instructor's own time zone, which the page's script fills in), the late policy,
attempts and cooldown, when hidden results show; each student's extension; grades set
by hand with a reason, and their audit. Every change goes through
:mod:`service.terms`, and the grades it moves are queued to the LMS once committed."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from sqlalchemy import select

from app.services import services
from app.sessions import Principal
from service import deliveries, grades, term, terms
from service.courses import is_instructor
from service.models import Member
from service.pages import find_course
from service.submitting import Refused
from web.access import PageError, instructor, taught_assignment
from web.instructor.blueprint import bp

HIDDEN = {"immediately": "at once", "after_due": "after the due date (the student's own)",
          "score_only": "never (verdict and score only)"}


def _dates() -> term.Dates:
    """The form's dates in the instructor's zone (:func:`service.terms.form_dates`)."""
    try:
        return terms.form_dates(request.form)
    except terms.TermRefused as exc:
        raise PageError(exc.status, exc.title, exc.detail) from None


def _student(title: str) -> str:
    """The student the form names; 422 with ``title`` when none is chosen."""
    student = request.form.get("student", "").strip()[:255]
    if not student:
        raise PageError(422, title, "Choose a student.")
    return student


def _number(name: str, kind: type, *, low: float, high: float,
            blank: Any = 0) -> Any:
    raw = request.form.get(name, "").strip()[:32]
    if not raw:
        return blank
    try:
        value = kind(raw)
    except ValueError:
        raise PageError(422, "Not a number", f"{name.replace('_', ' ')}: {raw!r}") from None
    if not low <= value <= high:
        raise PageError(422, "Out of range", f"{name.replace('_', ' ')} must be between "
                        f"{low:g} and {high:g}.")
    return value


def _same(entered: datetime | None, stored: datetime | None) -> bool:
    """Whether a date as the form shows it (to the minute) is the stored one."""
    if entered is None or stored is None:
        return entered is stored
    return abs((entered - stored).total_seconds()) < 60


def _actor(who: Principal) -> str:
    return f"{who.name} ({who.user_id})" if who.name else who.user_id


def _done(assignment_id: str, opened: list[str], what: str) -> ResponseReturnValue:
    svc = services()
    deliveries.queue_opened(svc.celery, svc.settings, opened)
    return redirect(url_for("instructor.term_page", assignment_id=assignment_id,
                            changed=what, resent=len(opened)), 303)


def _changing(assignment_id: str, change: Any) -> list[str]:
    who = instructor()
    with services().db.session() as s:
        found = taught_assignment(s, who, assignment_id)
        try:
            opened: list[str] = change(s, found, who)
        except Refused as exc:
            raise PageError(exc.status, exc.title, exc.detail) from None
    return opened


@bp.get("/app/<sid>/assignments/<assignment_id>/term")
def term_page(assignment_id: str) -> str:
    who = instructor()
    with services().db.session() as s:
        found = taught_assignment(s, who, assignment_id)
        course = find_course(s, who.tenant_id, found.course_id)
        book = grades.grades(s, found)
        members = list(s.scalars(select(Member).where(Member.course_id == found.course_id)))
        names = {m.user_id: m.name for m in members}
        learners = {m.user_id for m in members if not is_instructor(m.roles)}
        exts = grades.extension_rows(s, found.id)
        history = terms.audit(s, found.id)
        forced = grades.overrides(s, found.id)
        sends = terms.scores_url(s, found.id) is not None
    # The students to choose from: the roster's learners (not its instructors, as the
    # gradebook) and everyone with a grade or an extension here.
    students = sorted(learners | set(book) | {e.student_id for e in exts},
                      key=lambda u: (names.get(u) or u).casefold())
    return render_template(
        "instructor/term.html", who=who, assignment=found, course=course, grades=book,
        names=names, students=students, extensions=exts, history=history, forced=forced,
        sends=sends, hidden=HIDDEN, when=terms.when, changed=request.args.get("changed"),
        resent=request.args.get("resent", type=int))


@bp.post("/app/<sid>/assignments/<assignment_id>/term/rules")
def term_rules(assignment_id: str) -> ResponseReturnValue:
    dates = _dates()
    changes: dict[str, Any] = {n: getattr(dates, n) for n in terms.DATE_FIELDS}
    changes["late_penalty_percent_per_day"] = _number(
        "late_penalty_percent_per_day", float, low=0, high=100)
    changes["late_score_floor_percent"] = _number("late_score_floor_percent", float,
                                                  low=0, high=100)
    changes["max_attempts"] = _number("max_attempts", int, low=1, high=10_000, blank=None)
    changes["cooldown_seconds"] = _number("cooldown_seconds", int, low=0, high=7 * 24 * 3600)
    hidden = request.form.get("hidden_results", "immediately")
    if hidden not in HIDDEN:
        raise PageError(422, "Unknown choice", "Hidden results show at once, after the due "
                        "date, or never.")
    changes["hidden_results"] = hidden

    def change(s: Any, found: Any, who: Principal) -> list[str]:
        unchanged = {n for n in terms.DATE_FIELDS if _same(changes[n], getattr(found, n))}
        for name in unchanged:  # the LMS's dates stay the LMS's when not touched
            changes.pop(name)
        return terms.set_rules(s, found, changes, now=services().clock())

    return _done(assignment_id, _changing(assignment_id, change), "rules")


@bp.post("/app/<sid>/assignments/<assignment_id>/term/extensions")
def term_extension(assignment_id: str) -> ResponseReturnValue:
    student = _student("Whose extension?")
    remove = request.form.get("remove") == "1"
    dates = None if remove else _dates()
    if dates is not None and all(getattr(dates, n) is None for n in terms.DATE_FIELDS):
        raise PageError(422, "No date given", "An extension sets at least one date.")

    def change(s: Any, found: Any, who: Principal) -> list[str]:
        return terms.set_extension(s, found, student, dates, actor=_actor(who),
                                   now=services().clock())

    return _done(assignment_id, _changing(assignment_id, change), "extension")


@bp.post("/app/<sid>/assignments/<assignment_id>/term/overrides")
def term_override(assignment_id: str) -> ResponseReturnValue:
    student = _student("Whose grade?")
    reason = " ".join(request.form.get("reason", "").split())[:500]
    remove = request.form.get("remove") == "1"
    given = None if remove else _number("score_given", float, low=0, high=1e6, blank=None)
    if not remove and given is None:
        raise PageError(422, "No grade given", "Give the grade to set.")
    maximum = _number("score_maximum", float, low=0.001, high=1e6, blank=None)

    def change(s: Any, found: Any, who: Principal) -> list[str]:
        return terms.set_override(s, found, student, given, maximum, reason=reason,
                                  actor=_actor(who), now=services().clock())

    return _done(assignment_id, _changing(assignment_id, change), "override")
