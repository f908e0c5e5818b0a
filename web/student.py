"""The student page of an assignment: the statement, the signature and the sample
tests; an editor (a textarea, which CodeMirror takes over when JavaScript runs) and a
file upload (``.py`` or ``.ipynb``); the verdict, which arrives without a reload (the
page long-polls :func:`status`); the student's history, each submission viewable and
loadable back into the editor; and the grade sent to the LMS.

A verdict is shown exactly as the REST API shows the same submission
(:func:`service.wire.submission_out`): hidden tests with their safe messages only.
"""

from __future__ import annotations

import logging
import secrets
from functools import lru_cache
from typing import Any

from flask import (
    Blueprint,
    current_app,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)
from flask.typing import ResponseReturnValue
from pydantic import ValidationError
from sqlalchemy import select

from app.services import services
from app.sessions import Principal
from judge.errors import ProblemNotFound, SubmissionRejected, UsageError
from judge.intake import Source
from judge.notebook import source_from_upload
from service import terms
from service.grades import grade_of
from service.library import ProblemUnavailable
from service.longpoll import wait_until
from service.models import Assignment, Status, Submission
from service.pages import find_submission, history
from service.problems import detail
from service.scores import last_sent, score_states
from service.submitting import NewSubmission, Refused, fingerprint, submit
from service.terms import standing
from service.wire import ProblemDetail, SubmissionOut, submission_out
from web.access import (
    PageError,
    http_error,
    own_submission,
    principal,
    student_assignment,
)
from web.markdown import code_html, render
from web.term import refusal_words, term_words, withhold_hidden

log = logging.getLogger(__name__)
bp = Blueprint("student", __name__, template_folder="templates")
LONG_POLL_SECONDS = 25.0  # one status request waits at most this long (then asks again)
UPLOAD_SUFFIXES = (".py", ".ipynb")


bp.register_error_handler(Exception, http_error)


@lru_cache(maxsize=256)
def _statement(problem_id: str, version: str, markdown: str) -> str:
    return render(markdown)


def _problem(assignment: Assignment) -> tuple[ProblemDetail, str]:
    """The assignment's problem as shown; an error page when it cannot be: a problem
    no longer in the catalog (404), or one whose package cannot be loaded (503, naming
    it: nothing can be shown or graded until it is fixed)."""
    try:
        problem = services().library.get(assignment.tenant_id, assignment.problem)
        shown = detail(problem)
    except ProblemNotFound:
        raise PageError(404, "Problem unavailable", "The problem of this assignment is no "
                        "longer in the judge's catalog; tell your instructor.") from None
    except ProblemUnavailable as exc:
        log.error("problem %s cannot be loaded: %s", exc.problem_id, exc)
        raise PageError(503, "Problem unavailable", f"The problem of this assignment "
                        f"({exc.problem_id}) cannot be loaded: the judge's copy of it is "
                        "broken, so it can be neither shown nor graded. Tell your "
                        "instructor; nothing was submitted.") from None
    return shown, _statement(problem.id, problem.version, problem.statement)


def _context(who: Principal, assignment: Assignment, *, selected: str | None = None,
             code: str = "", error: str = "") -> dict[str, Any]:
    problem, statement = _problem(assignment)
    with services().db.session() as s:
        mine = history(s, assignment.id, who.user_id)
        shown: Submission | None = None
        if selected:
            shown = own_submission(s, who, selected)
            if shown.student_id != who.user_id or shown.assignment_id != assignment.id:
                raise PageError(404, "Not found", "There is no such submission of yours.")
        elif mine:
            shown = find_submission(s, who.tenant_id, mine[0].id)
        result = submission_out(shown) if shown else None
        score = score_states(s, assignment.id).get(who.user_id)
        sent = last_sent(s, assignment.id, who.user_id)
        found = standing(s, assignment, who.user_id, services().clock())
        grade = grade_of(s, assignment, who.user_id)
    withheld = 0
    if result is not None and result.report is not None and not found.hidden_shown:
        withheld = sum(1 for t in result.report.tests if t.visibility == "hidden")
        result = withhold_hidden(result, found)
    return {
        "who": who, "assignment": assignment, "problem": problem, "statement": statement,
        "signature_html": code_html(problem.signature), "history": mine, "result": result,
        "score": score, "sent": sent, "code": code, "error": error,
        "standing": found, "term": term_words(found, assignment), "grade": grade,
        "withheld": withheld,
        "graded_to_lms": bool(assignment.lineitem_url),
        "submit_token": secrets.token_urlsafe(16),
    }


@bp.get("/app/<sid>/assignments/<assignment_id>")
def assignment(assignment_id: str) -> str:
    """The student page. ``?submission=<id>`` shows one of the student's submissions;
    ``?load=<id>`` puts its code in the editor."""
    who = principal()
    with services().db.session() as s:
        found = student_assignment(s, who, assignment_id)
        code = ""
        if load := request.args.get("load"):
            row = own_submission(s, who, load)
            if row.student_id != who.user_id or row.assignment_id != found.id:
                raise PageError(404, "Not found", "There is no such submission of yours.")
            code = row.code
        else:  # coming back: the editor holds the latest code the student sent
            code = s.scalars(select(Submission.code).where(
                Submission.assignment_id == found.id, Submission.student_id == who.user_id)
                .order_by(Submission.received_at.desc(), Submission.id.desc()).limit(1)
            ).first() or ""
    return render_template("student/assignment.html", **_context(
        who, found, selected=request.args.get("submission") or load or None, code=code))


def _uploaded() -> Source | None:
    """The uploaded file's code, if one was sent (a notebook's code cells, with notes on
    what was removed)."""
    upload = request.files.get("upload")
    if upload is None or not upload.filename:
        return None
    name = upload.filename
    if not name.lower().endswith(UPLOAD_SUFFIXES):
        raise Refused(422, "Unprocessable submission",
                      f"upload a .py or .ipynb file ({name!r} is neither)")
    limit = max(services().judge.max_code_bytes, services().judge.max_notebook_bytes)
    data = upload.read(limit + 1)
    return source_from_upload(name, data, services().judge, noun=f"the file {name!r}")


@bp.post("/app/<sid>/assignments/<assignment_id>/submissions")
def submit_code(assignment_id: str) -> ResponseReturnValue:
    who = principal()
    with services().db.session() as s:
        found = student_assignment(s, who, assignment_id)
    _problem(found)  # a problem that cannot be shown takes nothing (an error page)
    code = request.form.get("code", "")
    sample = request.form.get("action") == "sample"  # "Run the sample tests"
    try:
        source = _uploaded() or Source(code)
        code = source.code
        token = request.form.get("submit_token", "")
        now = services().clock()
        new = NewSubmission(
            tenant_id=who.tenant_id, problem=found.problem, code=code,
            source_notes=source.notes,
            student_id=who.user_id, assignment_id=found.id, sample_run=sample,
            received_at=now,
            # One form, one submission: a double click sends the same token.
            idempotency_key=f"page:{found.id}:{token}:{int(sample)}"[:255] if token else None,
            fingerprint=fingerprint({"assignment": found.id, "student": who.user_id,
                                     "code": code, "sample": sample}))
        gate = terms.gate(found.id, who.user_id, now, sample_run=sample)
        try:
            row, _ = submit(services(), new, gate)
        except Refused as exc:
            if exc.title != "Idempotency-Key reused":
                raise
            # The same form sent again with other code (back, edit, submit): a new one.
            row, _ = submit(services(), NewSubmission(**{**new.__dict__,
                                                         "idempotency_key": None}), gate)
    except (Refused, UsageError, SubmissionRejected, ValidationError) as exc:
        status = exc.status if isinstance(exc, Refused) else 422
        message = exc.detail if isinstance(exc, Refused) else str(exc)
        if isinstance(exc, terms.NotAdmitted):
            message = refusal_words(exc.standing)
        body = render_template("student/assignment.html", **_context(
            who, found, code=code, error=message))
        return body, status
    return redirect(url_for("student.assignment", assignment_id=found.id,
                            submission=row.id, _anchor="result"), 303)


def _live(who: Principal, row: Submission, out: SubmissionOut) -> dict[str, Any]:
    body: dict[str, Any] = {"id": out.id, "status": out.status, "verdict": out.verdict,
                            "score": out.score, "max_score": out.max_score,
                            "done": out.status == Status.DONE}
    if body["done"] and row.assignment_id:
        with services().db.session() as s:
            found = student_assignment(s, who, row.assignment_id)
        context = _context(who, found, selected=row.id)
        body["result_html"] = render_template("student/_result.html", **context)
        body["history_html"] = render_template("student/_history.html", **context)
        body["score_html"] = render_template("student/_score.html", **context)
    return body


@bp.get("/app/<sid>/submissions/<submission_id>/status")
def status(submission_id: str) -> ResponseReturnValue:
    """A submission's status as JSON, waiting up to ``?wait=`` seconds (at most
    LONG_POLL_SECONDS) for it to be done, as the REST API's long-poll does (a Redis
    notice wakes the wait; under gevent it holds a greenlet, not a thread). Done, it
    carries the page's result, history and grade panels, rendered."""
    who = principal()
    svc = services()

    def read() -> Submission:
        with svc.db.session() as s:
            return own_submission(s, who, submission_id)

    row = read()
    try:
        wait = min(float(request.args.get("wait", "0")), LONG_POLL_SECONDS,
                   svc.settings.long_poll_max_seconds)
    except ValueError:
        wait = 0.0
    if row.status != Status.DONE and wait > 0:
        with svc.waits.slot(f"page:{who.tenant_id}:{who.user_id}", wait) as granted:
            if granted:
                row = wait_until(svc.notices, row.id, wait, read,
                                 lambda r: r.status == Status.DONE)
    return jsonify(_live(who, row, submission_out(row)))


@bp.get("/app/<sid>/assignments/<assignment_id>/score")
def score_panel(assignment_id: str) -> ResponseReturnValue:
    """The "Grade in your course" panel as JSON: ``state`` (none, not-sent, pending,
    delivered, failed, refused or cancelled) and ``score_html``, the panel rendered from
    the page's own template and context. The page's script asks again while the state
    is pending, so the panel follows a score until the LMS has it or it failed."""
    who = principal()
    with services().db.session() as s:
        found = student_assignment(s, who, assignment_id)
    context = _context(who, found)
    current_app.update_template_context(context)
    # The template sets the panel's state at its top level: a module exports it.
    panel = current_app.jinja_env.get_template("student/_score.html").make_module(context)
    state = str(getattr(panel, "state", ""))
    response = jsonify({"state": state, "score_html": str(panel)})
    response.headers["Cache-Control"] = "no-store"
    return response
