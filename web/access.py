"""What every page shares: who the session is for and what it may reach, the error page,
and the security headers (a strict Content-Security-Policy, no Referer, no sniffing).

Who reaches what:

- a **learner** reaches the student page of the assignment of their session, and their
  own submissions to it; anything else is 404 (another assignment's page), or 403 for an
  instructor page;
- an **instructor** from an LTI launch reaches the instructor pages of the course of the
  launch (and the student page of its assignments); signed in with an API key, every
  course of the key's tenant. Another course's or tenant's ids are 404.

A path whose session id is unknown or expired is 401 with "open the assignment from your
course again".
"""

from __future__ import annotations

import logging
from typing import NoReturn

from flask import Response, g, render_template, request, session
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session
from werkzeug.exceptions import HTTPException

from app.sessions import PageSession, Principal
from service.models import Assignment, Course, Submission
from service.pages import find_assignment, find_course, find_submission

log = logging.getLogger(__name__)
EXPIRED = ("Your session has expired", "Pages stay open for a while after you last used "
           "them. Open the assignment from your course again (or sign in again).")


class PageError(Exception):
    """An error page: its status, a title and a sentence for the person reading it."""

    def __init__(self, status: int, title: str, detail: str = "") -> None:
        super().__init__(detail or title)
        self.status, self.title, self.detail = status, title, detail


def not_found(what: str = "page") -> NoReturn:
    raise PageError(404, "Not found", f"There is no such {what}, or it is not yours to see.")


def principal() -> Principal:
    """The session's principal; 401 when the session in the path is unknown or expired."""
    found = session if isinstance(session, PageSession) else None
    if found is None or found.sid is None or found.sid != g.get("sid") or \
            found.principal is None:
        raise PageError(401, *EXPIRED)
    return found.principal


def instructor() -> Principal:
    who = principal()
    if who.role != "instructor":
        raise PageError(403, "For instructors", "This page is for the course's instructors.")
    return who


def may_teach(who: Principal, course_id: int) -> bool:
    """Whether ``who`` reaches the instructor pages of the course (its tenant checked
    by the caller's lookup)."""
    return who.role == "instructor" and (who.via == "key" or who.course_id == course_id)


def course_for(s: Session, who: Principal, course_id: int) -> Course:
    course = find_course(s, who.tenant_id, course_id)
    if course is None or not may_teach(who, course.id):
        not_found("course")
    return course


def taught_assignment(s: Session, who: Principal, assignment_id: str) -> Assignment:
    """An assignment of a course ``who`` teaches."""
    found = find_assignment(s, who.tenant_id, assignment_id)
    if found is None or not may_teach(who, found.course_id):
        not_found("assignment")
    return found


def student_assignment(s: Session, who: Principal, assignment_id: str) -> Assignment:
    """The assignment of a learner's session, or one of a course ``who`` teaches."""
    found = find_assignment(s, who.tenant_id, assignment_id)
    if found is None:
        not_found("assignment")
    if who.role == "learner" and found.id != who.assignment_id:
        not_found("assignment")
    if who.role == "instructor" and not may_teach(who, found.course_id):
        not_found("assignment")
    return found


def own_submission(s: Session, who: Principal, submission_id: str) -> Submission:
    """A submission ``who`` may see: a learner's own to the session's assignment, or
    any to an assignment of a course ``who`` teaches."""
    row = find_submission(s, who.tenant_id, submission_id)
    if row is None or row.assignment_id is None:
        not_found("submission")
    assignment = find_assignment(s, who.tenant_id, row.assignment_id)
    if assignment is None:
        not_found("submission")
    if who.role == "learner":
        if row.student_id != who.user_id or row.assignment_id != who.assignment_id:
            not_found("submission")
    elif not may_teach(who, assignment.course_id):
        not_found("submission")
    return row


def error_page(exc: PageError) -> Response:
    body = render_template("error.html", title=exc.title, detail=exc.detail,
                           status=exc.status)
    return Response(body, status=exc.status, mimetype="text/html")


def http_error(exc: Exception) -> Response:
    """A page's HTTP error (404, 405, 413, ...) or unexpected error (500, logged) as an
    error page rather than the API's problem+json."""
    if isinstance(exc, PageError):
        return error_page(exc)
    if isinstance(exc, HTTPException):
        return error_page(PageError(exc.code or 500, exc.name, exc.description or ""))
    if isinstance(exc, OperationalError | InterfaceError | PoolTimeout):
        log.warning("database unavailable: %s", str(exc).splitlines()[0])
        return error_page(PageError(503, "Service unavailable", "The database is not "
                                    "answering; try again in a moment."))
    log.exception("unhandled error on %s %s", request.method, request.path)
    return error_page(PageError(500, "Something went wrong", "The error was logged; try "
                                "again in a moment."))
