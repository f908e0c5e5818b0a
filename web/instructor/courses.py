"""The instructor's courses and gradebook: the tenant's courses (signed in with a key), a
course's assignments with their counts, an assignment's gradebook (every member of the
roster, read again from the LMS through :attr:`Services.rosters` when it is older than
``lti_roster_max_age_seconds``, and everyone who submitted; sortable and filterable),
one student's submissions with their code and full report, rejudging, grades to the LMS
(each student's state, a grade sent again, a policy switch) and the exports (CSV,
Gradescope ``results.json``)."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from typing import Any

from flask import redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from sqlalchemy import select

from app.services import services
from judge.errors import ProblemNotFound
from service import deliveries
from service.exports import gradescope_results, results_csv
from service.launch_links import course_page_assignment
from service.library import ProblemUnavailable
from service.models import Member, Submission
from service.pages import (
    SORTS,
    assignments,
    courses,
    export_rows,
    gradebook,
    roster_stale,
    set_policy,
    submissions_with_reports,
)
from service.queue import BATCH, INTERACTIVE
from service.submissions import dispatch, rejudge
from service.wire import submission_out
from web.access import (
    PageError,
    course_for,
    http_error,
    instructor,
    not_found,
    own_submission,
    taught_assignment,
)
from web.instructor.blueprint import bp, download

log = logging.getLogger(__name__)


VERDICTS = ("accepted", "wrong_answer", "runtime_error", "time_limit_exceeded",
            "memory_limit_exceeded", "output_limit_exceeded", "compile_error",
            "internal_error", "none")


bp.register_error_handler(Exception, http_error)


@bp.get("/app/<sid>/courses")
def courses_page() -> ResponseReturnValue:
    """Every course of the tenant (key sign-in); an LTI instructor goes to their course."""
    who = instructor()
    if who.via != "key":
        if who.course_id is None:
            not_found("course")
        return redirect(url_for("instructor.course", course_id=who.course_id), 303)
    with services().db.session() as s:
        found = courses(s, who.tenant_id)
    problems, _ = services().library.scan(who.tenant_id)
    return render_template("instructor/courses.html", who=who, courses=found,
                           problems=problems)


@bp.post("/app/<sid>/courses")
def new_assignment() -> ResponseReturnValue:
    """A course page of one problem (made without an LMS), for key sign-ins."""
    who = instructor()
    if who.via != "key":
        raise PageError(403, "Courses come from your LMS", "Add assignments in your "
                        "course on the LMS (deep linking).")
    title = " ".join(request.form.get("course", "").split())[:200]
    problem = request.form.get("problem", "")
    if not title:
        raise PageError(422, "A course needs a name", "Give the course a name.")
    try:
        _gradable(who.tenant_id, problem)
    except ProblemNotFound as exc:
        raise PageError(422, "Unknown problem", str(exc)) from None
    with services().db.session() as s:
        course, _ = course_page_assignment(s, who.tenant_id, title, problem, title)
        course_id = course.id
    return redirect(url_for("instructor.course", course_id=course_id), 303)


@bp.get("/app/<sid>/courses/<int:course_id>")
def course(course_id: int) -> str:
    who = instructor()
    with services().db.session() as s:
        found = course_for(s, who, course_id)
        rows = assignments(s, found)
        summary = courses(s, who.tenant_id, only=found.id)[0]
    problems, _ = (services().library.scan(who.tenant_id) if found.platform_id is None
                   else ([], {}))
    return render_template("instructor/course.html", who=who, course=found,
                           summary=summary, assignments=rows, problems=problems)


def _sync_roster(course_id: int) -> str:
    """Fetch the course's roster from its LMS when it is stale; the error to show, if
    any (never an exception: the gradebook shows what it has)."""
    svc = services()
    with svc.db.session() as s:
        found = course_for(s, instructor(), course_id)
        stale = roster_stale(s, found, svc.settings.lti_roster_max_age_seconds)
    if not stale or svc.rosters is None:  # no LTI endpoints here: what was stored
        return ""
    try:
        result = svc.rosters(course_id)
    except Exception as exc:  # the LMS or the network: show it, serve the gradebook
        log.warning("roster of course %s not synced: %s", course_id, exc)
        return f"The roster could not be read from the LMS ({type(exc).__name__})."
    return "" if result.ok else f"The roster could not be read from the LMS: {result.error}"


@bp.get("/app/<sid>/assignments/<assignment_id>/gradebook")
def gradebook_page(assignment_id: str) -> str:
    who = instructor()
    with services().db.session() as s:
        found = taught_assignment(s, who, assignment_id)
        course_id = found.course_id
    roster_error = _sync_roster(course_id)
    sort = request.args.get("sort", "name")
    sort = sort if sort in SORTS else "name"
    descending = request.args.get("dir") == "desc"
    search = request.args.get("q", "").strip()[:200]
    verdict = request.args.get("verdict", "")
    verdict = verdict if verdict in VERDICTS else ""
    with services().db.session() as s:
        found = taught_assignment(s, who, assignment_id)
        course = course_for(s, who, found.course_id)
        rows = gradebook(s, found, sort=sort, descending=descending, search=search,
                         verdict=verdict)
        everyone = gradebook(s, found) if search or verdict else rows
        total = len(everyone)
        stuck = sum(1 for r in everyone if r.score and r.score.status in deliveries.OVER)
    return render_template("instructor/gradebook.html", who=who, assignment=found,
                           course=course, rows=rows, total=total, sort=sort,
                           descending=descending, search=search, verdict=verdict,
                           verdicts=VERDICTS, roster_error=roster_error, stuck=stuck,
                           sent_again=request.args.get("sent", type=int),
                           policy_sent=request.args.get("policy_sent", type=int))


@bp.post("/app/<sid>/assignments/<assignment_id>/policy")
def policy(assignment_id: str) -> ResponseReturnValue:
    """Switch the grade policy; the grades it changes go to the LMS."""
    who = instructor()
    chosen = request.form.get("policy", "")
    if chosen not in ("best", "latest"):
        raise PageError(422, "Unknown policy", "The grade is the best or the latest score.")
    svc = services()
    with svc.db.session() as s:
        opened = set_policy(s, taught_assignment(s, who, assignment_id),
                            "best" if chosen == "best" else "latest")
    deliveries.queue_opened(svc.celery, svc.settings, opened)
    return redirect(url_for("instructor.gradebook_page", assignment_id=assignment_id,
                            policy_sent=len(opened)), 303)


@bp.post("/app/<sid>/assignments/<assignment_id>/scores/send-again")
def send_again(assignment_id: str) -> ResponseReturnValue:
    """Send again the grades of the assignment that failed or were refused (one
    student's with ``user``)."""
    who = instructor()
    svc = services()
    with svc.db.session() as s:
        found = taught_assignment(s, who, assignment_id)
    user = request.form.get("user") or None
    started = deliveries.send_again(svc.db, svc.celery,
                                    timeout=svc.settings.publish_timeout_seconds,
                                    assignment_id=found.id, user_id=user)
    return redirect(url_for("instructor.gradebook_page", assignment_id=assignment_id,
                            sent=started), 303)


@bp.get("/app/<sid>/assignments/<assignment_id>/student")
def student(assignment_id: str) -> str:
    """One student's submissions to the assignment, with code and full report."""
    who = instructor()
    user = request.args.get("user", "")
    with services().db.session() as s:
        found = taught_assignment(s, who, assignment_id)
        rows = submissions_with_reports(s, found.id, user)
        shown = [(submission_out(r), r.code) for r in rows]
        member = s.scalars(select(Member).where(Member.course_id == found.course_id,
                                                Member.user_id == user)).first()
        name = member.name if member is not None else ""
    return render_template("instructor/student.html", who=who, assignment=found,
                           user=user, name=name, submissions=shown)


def _gradable(tenant_id: int, problem: str, version: str | None = None) -> None:
    """An error page (503, naming the problem and why) when the problem's package cannot
    be loaded: an assignment of it, or a rejudge onto it, would only end its submissions
    ``internal_error`` (they keep their verdicts until the package is fixed)."""
    try:
        services().library.get(tenant_id, problem, version)
    except ProblemUnavailable as exc:
        log.error("problem %s cannot be loaded: %s", exc.problem_id, exc)
        raise PageError(503, "Problem unavailable", f"The problem {exc.problem_id} cannot "
                        f"be loaded ({exc}); fix its package, then try again.") from None


def _requeue(where: Any, queue: str) -> int:
    svc = services()
    with svc.db.session() as s:
        ids = rejudge(s, where)
    dispatch(svc.db, svc.celery, [(i, queue) for i in ids],
             timeout=svc.settings.publish_timeout_seconds, redis=svc.redis)
    return len(ids)


@bp.post("/app/<sid>/submissions/<submission_id>/rejudge")
def rejudge_one(submission_id: str) -> ResponseReturnValue:
    who = instructor()
    with services().db.session() as s:
        row = own_submission(s, who, submission_id)
        student_id, assignment_id = row.student_id, row.assignment_id
        problem, version = row.problem, row.problem_version
    with contextlib.suppress(ProblemNotFound):  # gone: the grading ends it, saying so
        _gradable(who.tenant_id, problem, version or None)
    _requeue((Submission.id == submission_id) & (Submission.tenant_id == who.tenant_id),
             INTERACTIVE)
    return redirect(url_for("instructor.student", assignment_id=assignment_id,
                            user=student_id or ""), 303)


@bp.post("/app/<sid>/assignments/<assignment_id>/rejudge")
def rejudge_all(assignment_id: str) -> ResponseReturnValue:
    who = instructor()
    with services().db.session() as s:
        found = taught_assignment(s, who, assignment_id)
    with contextlib.suppress(ProblemNotFound):
        _gradable(who.tenant_id, found.problem)
    _requeue((Submission.assignment_id == found.id) & (Submission.tenant_id == who.tenant_id),
             BATCH)
    return redirect(url_for("instructor.gradebook_page", assignment_id=assignment_id), 303)


@bp.get("/app/<sid>/assignments/<assignment_id>/export.csv")
def export_csv(assignment_id: str) -> ResponseReturnValue:
    """The gradebook's graded row per student (the assignment's policy) as CSV."""
    who = instructor()
    with services().db.session() as s:
        found = taught_assignment(s, who, assignment_id)
    pages = export_rows(services().db, found)

    def body() -> Iterator[str]:
        yield results_csv([])
        for page in pages:
            yield results_csv(page, header=False)

    return download(body(), "text/csv", f"assignment-{found.id}.csv")


@bp.get("/app/<sid>/assignments/<assignment_id>/gradescope.json")
def export_gradescope(assignment_id: str) -> ResponseReturnValue:
    """Gradescope's ``results.json`` per student, by student id."""
    who = instructor()
    with services().db.session() as s:
        found = taught_assignment(s, who, assignment_id)
    documents = {row.student_id: gradescope_results(row.report, row.status)
                 for page in export_rows(services().db, found) for row in page}
    return download(iter([json.dumps(documents)]), "application/json",
                     f"assignment-{found.id}-gradescope.json")
