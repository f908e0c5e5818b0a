"""The instructor pages: the tenant's courses (signed in with a key), a course's
assignments with their counts, an assignment's gradebook (every member of the roster,
fetched again from the LMS when it is older than ``lti_roster_max_age_seconds``, and
everyone who submitted; sortable and filterable with query parameters), one student's
submissions with their code and full report, rejudging, grades to the LMS (each
student's state with its reason, a grade that failed or was refused sent again, a policy
switch sending the grades it changes), the exports (CSV, Gradescope
``results.json``) and class uploads (a zip of ``<student_id>.py`` files) with their
progress. Signed in with a key, the tenant's own problem sets: making a set, uploading a
package (a new version, built and verified by a worker), a version's checks as its build
goes, and making a ready version live (with a rejudge and its report)."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from typing import Any

from flask import Blueprint, Response, jsonify, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from sqlalchemy import select

from api.app import services
from judge.errors import ProblemNotFound, SubmissionRejected, UsageError
from service import deliveries, problemsets
from service.exports import gradescope_results, results_csv
from service.launch_links import course_page_assignment
from service.library import ProblemUnavailable
from service.models import BuildStatus, Member, Package, PackageVersion, Status, Submission
from service.packages import PackageRejected
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
from service.rejudges import report
from service.submissions import dispatch, rejudge
from service.submitting import (
    Refused,
    batch_progress,
    find_batch,
    submit_batch,
    zip_entries,
)
from service.wire import BatchCreate, RejudgeReport, submission_out
from web.access import (
    PageError,
    course_for,
    http_error,
    instructor,
    not_found,
    own_submission,
    taught_assignment,
)
from web.session import Principal

bp = Blueprint("instructor", __name__, template_folder="templates")
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
    if not stale:
        return ""
    try:
        from lti.nrps import sync_course

        result = sync_course(svc.db, svc.settings, course_id, svc.redis)
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
    deliveries.queue(svc.celery, [(d, 0) for d in opened],
                     timeout=svc.settings.publish_timeout_seconds)
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
             timeout=svc.settings.publish_timeout_seconds)
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


def _download(body: Iterator[str], mimetype: str, filename: str) -> Response:
    return Response(body, mimetype=mimetype, headers={
        "Content-Disposition": f'attachment; filename="{filename}"'})


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

    return _download(body(), "text/csv", f"assignment-{found.id}.csv")


@bp.get("/app/<sid>/assignments/<assignment_id>/gradescope.json")
def export_gradescope(assignment_id: str) -> ResponseReturnValue:
    """Gradescope's ``results.json`` per student, by student id."""
    who = instructor()
    with services().db.session() as s:
        found = taught_assignment(s, who, assignment_id)
    documents = {row.student_id: gradescope_results(row.report, row.status)
                 for page in export_rows(services().db, found) for row in page}
    return _download(iter([json.dumps(documents)]), "application/json",
                     f"assignment-{found.id}-gradescope.json")


@bp.get("/app/<sid>/assignments/<assignment_id>/batches")
def batch_form(assignment_id: str) -> str:
    who = instructor()
    with services().db.session() as s:
        found = taught_assignment(s, who, assignment_id)
    return render_template("instructor/batch_new.html", who=who, assignment=found, error="")


def _refusal(exc: Exception) -> tuple[int, str]:
    """An upload's refusal as the page shows it: the status and the sentence."""
    return (exc.status, exc.detail) if isinstance(exc, Refused) else (422, str(exc))


@bp.post("/app/<sid>/assignments/<assignment_id>/batches")
def upload_batch(assignment_id: str) -> ResponseReturnValue:
    """A class upload: every ``<student_id>.py`` of the zip becomes a submission to the
    assignment (all or nothing), graded on the batch queue."""
    who = instructor()
    svc = services()
    with svc.db.session() as s:
        found = taught_assignment(s, who, assignment_id)
    upload = request.files.get("archive")
    try:
        if upload is None or not upload.filename:
            raise Refused(422, "No file", "choose a zip file of <student_id>.py files")
        entries = zip_entries(svc, upload.read(svc.settings.max_request_bytes + 1))
        body = BatchCreate(problem=found.problem, submissions=entries,
                           name=request.form.get("name", "")[:200])
        batch_id = submit_batch(svc, who.tenant_id, body, assignment_id=found.id)
    except (Refused, SubmissionRejected, UsageError) as exc:
        status, message = _refusal(exc)
        return render_template("instructor/batch_new.html", who=who, assignment=found,
                               error=message), status
    return redirect(url_for("instructor.batch", assignment_id=found.id,
                            batch_id=batch_id), 303)


def _batch_or_404(assignment_id: str, batch_id: str) -> Any:
    who = instructor()
    svc = services()
    with svc.db.session() as s:
        found = taught_assignment(s, who, assignment_id)
        batch = find_batch(s, who.tenant_id, batch_id)
        if batch is None or s.scalar(select(Submission.assignment_id).where(
                Submission.batch_id == batch.id).limit(1)) != found.id:
            not_found("batch")
    progress = batch_progress(svc.db, who.tenant_id, batch_id)
    if progress is None:
        not_found("batch")
    return who, found, progress


@bp.get("/app/<sid>/assignments/<assignment_id>/batches/<batch_id>")
def batch(assignment_id: str, batch_id: str) -> str:
    who, found, progress = _batch_or_404(assignment_id, batch_id)
    return render_template("instructor/batch.html", who=who, assignment=found,
                           batch=progress)


@bp.get("/app/<sid>/assignments/<assignment_id>/batches/<batch_id>/progress")
def batch_progress_json(assignment_id: str, batch_id: str) -> ResponseReturnValue:
    _, _, progress = _batch_or_404(assignment_id, batch_id)
    return jsonify({"total": progress.total, "counts": progress.counts,
                    "verdicts": progress.verdicts, "done": progress.done,
                    "graded": progress.counts.get(Status.DONE, 0)})


# The tenant's own problem sets (key sign-ins).


def _key_instructor() -> Principal:
    who = instructor()
    if who.via != "key":
        raise PageError(403, "Sign in with a key", "Problem sets are managed signed in "
                        "with an instructor's API key.")
    return who


def _problems(who: Principal, error_for: str | None = None, error: str = "") -> str:
    """The problems page; ``error`` shown at the form of set ``error_for`` ("": the
    form that makes a set)."""
    with services().db.session() as s:
        sets = [(found, [(package, problemsets.versions_of(s, package.id))
                         for package in problemsets.packages_of(s, found.id)])
                for found in problemsets.sets_of(s, who.tenant_id)]
    return render_template("instructor/problems.html", who=who, sets=sets,
                           error_for=error_for, error=error)


@bp.get("/app/<sid>/problemsets")
def problems_page() -> str:
    """The tenant's sets, their problems and every version of each."""
    return _problems(_key_instructor())


@bp.post("/app/<sid>/problemsets")
def new_set() -> ResponseReturnValue:
    who = _key_instructor()
    svc = services()
    name = request.form.get("name", "").strip()
    title = " ".join(request.form.get("title", "").split())[:200]
    try:
        problemsets.create_set(svc.db, svc.settings, who.tenant_id, name, title,
                               svc.library.global_sets())
    except Refused as exc:
        return _problems(who, "", exc.detail), exc.status
    return redirect(url_for("instructor.problems_page", _anchor=f"set-{name}"), 303)


@bp.post("/app/<sid>/problemsets/<name>/problems")
def upload_package(name: str) -> ResponseReturnValue:
    """A package (the folder, zipped) stored as a new version of one of the set's
    problems and built in the background; the same files again are the same version."""
    who = _key_instructor()
    svc = services()
    with svc.db.session() as s:
        if problemsets.own_set(s, who.tenant_id, name) is None:
            not_found("problem set")
    upload = request.files.get("package")
    try:
        if upload is None or not upload.filename:
            raise Refused(422, "No file", "choose the package's folder, zipped")
        stored = problemsets.store_upload(
            svc.db, svc.celery, svc.settings, who.tenant_id, name,
            upload.read(svc.settings.max_request_bytes + 1),
            slug=request.form.get("slug", "").strip() or None,
            publish_when_ready=bool(request.form.get("publish")),
            uploaded_by=(who.name or who.user_id)[:100])
    except (Refused, PackageRejected) as exc:
        status, message = _refusal(exc)
        return _problems(who, name, message), status
    return redirect(url_for("instructor.version_page", name=name, slug=stored.slug,
                            version=stored.row.version), 303)


def _own_version(who: Principal, name: str, slug: str, version: str
                 ) -> tuple[Package, PackageVersion]:
    with services().db.session() as s:
        found = problemsets.find_version(s, who.tenant_id, f"{name}/{slug}", version)
    if found is None:
        not_found("version")
    return found


def _rejudges(who: Principal, package: Package, version: str) -> list[RejudgeReport]:
    """The reports of the latest rejudges onto the version."""
    db = services().db
    with db.session() as s:
        ids = problemsets.rejudges_of(s, who.tenant_id, package.problem, version)
    return [found for found in (report(db, who.tenant_id, i) for i in ids)
            if found is not None]


def _watched(row: PackageVersion, reports: list[RejudgeReport]) -> bool:
    """Whether the version page still changes: the build or a rejudge is running."""
    return row.status in (BuildStatus.QUEUED, BuildStatus.BUILDING) or \
        any(not r.finished for r in reports)


def _version(name: str, slug: str, version: str, error: str = "") -> str:
    who = _key_instructor()
    package, row = _own_version(who, name, slug, version)
    reports = _rejudges(who, package, version)
    return render_template("instructor/version.html", who=who, set_name=name,
                           package=package, row=row, steps=row.steps or [],
                           reports=reports, watching=_watched(row, reports), error=error)


@bp.get("/app/<sid>/problemsets/<name>/problems/<slug>/versions/<version>")
def version_page(name: str, slug: str, version: str) -> str:
    """A version's build: every check with its result, why it failed, what a ready one
    still lacks; refreshed while it builds (and while a rejudge onto it runs)."""
    return _version(name, slug, version)


@bp.get("/app/<sid>/problemsets/<name>/problems/<slug>/versions/<version>/progress")
def version_progress(name: str, slug: str, version: str) -> ResponseReturnValue:
    who = _key_instructor()
    package, row = _own_version(who, name, slug, version)
    return jsonify({"status": row.status, "checked": len(row.steps or []),
                    "total": row.total,
                    "done": not _watched(row, _rejudges(who, package, version))})


@bp.post("/app/<sid>/problemsets/<name>/problems/<slug>/versions/<version>/publish")
def make_live(name: str, slug: str, version: str) -> ResponseReturnValue:
    """The version becomes the one students are graded on; with ``rejudge``, the
    submissions graded on other versions are graded again on it."""
    who = _key_instructor()
    package, _ = _own_version(who, name, slug, version)
    svc = services()
    try:
        problemsets.go_live(svc.db, svc.celery, svc.settings, who.tenant_id,
                            package.problem, version,
                            rejudge=bool(request.form.get("rejudge")))
    except Refused as exc:
        return _version(name, slug, version, exc.detail), exc.status
    return redirect(url_for("instructor.version_page", name=name, slug=slug,
                            version=version), 303)
