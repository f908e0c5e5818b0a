"""``/v1/assignments``: the tenant's assignments (LTI resource links and launch-link
assignments) and their course term: ``GET`` and ``PATCH`` of the dates, the late
policy, attempts, hidden results, extensions and score overrides
(:mod:`service.terms`), and ``POST /v1/assignments/{id}/submissions``, a submission to
an assignment on a student's behalf, let in only as the term allows (refusals are 403
or 429 problem+json with ``refusal`` and the date or time to wait)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, g, url_for
from sqlalchemy import select

from api.auth import require
from api.errors import ApiError
from api.spec import operation, parse_json
from app.services import services
from service import deliveries, terms
from service.models import Assignment, Role, Status
from service.submitting import NewSubmission, checked_source, fingerprint, submit
from service.wire import SubmissionOut, submission_out
from service.wire_assignments import (
    AssignmentOut,
    AssignmentPage,
    AssignmentPatch,
    AssignmentSubmissionCreate,
    AssignmentSummaryOut,
)

bp = Blueprint("assignments", __name__)
REFUSALS = ("403 (not open yet, closed, no attempts left) and 429 (cooling down) are "
            "problem+json with refusal (not_open, closed, no_attempts, cooling_down), "
            "wait_until or closed_at, and Retry-After where waiting helps.")


def _load(s: Any, assignment_id: str) -> Assignment:
    found = s.scalar(select(Assignment).where(Assignment.id == assignment_id,
                                              Assignment.tenant_id == g.tenant_id))
    if found is None:
        raise ApiError(404, "Not found", f"no assignment {assignment_id}")
    return found


@bp.get("/v1/assignments")
@operation("List the tenant's assignments", tag="assignments",
           responses={200: AssignmentPage})
@require(Role.INSTRUCTOR)
def list_assignments() -> Any:
    with services().db.session() as s:
        rows = s.scalars(select(Assignment).where(Assignment.tenant_id == g.tenant_id)
                         .order_by(Assignment.created_at, Assignment.id).limit(1000))
        items = [AssignmentSummaryOut(id=a.id, course_id=a.course_id, problem=a.problem,
                                      title=a.title, due_at=a.due_at) for a in rows]
    return AssignmentPage(items=items).model_dump(mode="json")


@bp.get("/v1/assignments/<assignment_id>")
@operation("An assignment and its course term", tag="assignments",
           responses={200: AssignmentOut})
@require(Role.INSTRUCTOR)
def get_assignment(assignment_id: str) -> Any:
    with services().db.session() as s:
        return terms.assignment_out(s, _load(s, assignment_id)).model_dump(mode="json")


@bp.patch("/v1/assignments/<assignment_id>")
@operation(
    "Change an assignment's course term", tag="assignments", body=AssignmentPatch,
    responses={200: AssignmentOut},
    description="Only the fields sent change. Each grade the change moves (a date, the "
    "penalty, an extension, an override, the policy) is sent to the LMS again, once; "
    "grades it does not move are not sent. Dates set here are the instructor's: a date "
    "the LMS later changes on its side wins (docs/lti.md, Course term).",
)
@require(Role.INSTRUCTOR)
def patch_assignment(assignment_id: str) -> Any:
    svc = services()
    patch = parse_json(AssignmentPatch)
    now = svc.clock()
    with svc.db.session() as s:
        found = _load(s, assignment_id)
        opened = terms.apply_patch(s, found, patch, actor=f"api-key:{g.key_id}", now=now)
    deliveries.queue_opened(svc.celery, svc.settings, opened)
    with svc.db.session() as s:
        return terms.assignment_out(s, _load(s, assignment_id)).model_dump(mode="json")


@bp.post("/v1/assignments/<assignment_id>/submissions")
@operation(
    "Submit a student's code to an assignment, as its course term allows",
    tag="assignments", body=AssignmentSubmissionCreate,
    responses={202: ("Stored and queued; poll the Location", SubmissionOut,
                     "application/json")},
    description="A graded attempt is let in only while the assignment is open, with "
    "attempts left and past the cooldown; after due_at (until late_until) it is taken "
    "and its grade loses the late penalty. sample_run: the sample tests only, always "
    "let in, counting for nothing. " + REFUSALS,
)
@require(Role.CLIENT)
def submit_to_assignment(assignment_id: str) -> Any:
    svc = services()
    body = parse_json(AssignmentSubmissionCreate)
    with svc.db.session() as s:
        found = _load(s, assignment_id)
        problem = found.problem
    source = checked_source(svc, body.code, body.notebook)
    now = svc.clock()
    row, _ = submit(svc, NewSubmission(
        tenant_id=g.tenant_id, problem=problem, code=source.code, source_notes=source.notes,
        student_id=body.student_id, metadata=body.metadata, assignment_id=assignment_id,
        sample_run=body.sample_run, received_at=now,
        fingerprint=fingerprint(body.model_dump(mode="json"))),
        gate=terms.gate(assignment_id, body.student_id, now, sample_run=body.sample_run))
    headers = {"Location": url_for("submissions.get_submission", submission_id=row.id)}
    status = 200 if row.status == Status.DONE else 202
    return submission_out(row).model_dump(mode="json"), status, headers
