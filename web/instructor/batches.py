"""Class uploads: a zip of ``<student_id>.py`` files graded as one batch of an
assignment, and the batch's page with its progress."""

from __future__ import annotations

from typing import Any

from flask import jsonify, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.services import services
from judge.errors import SubmissionRejected, UsageError
from service.models import Assignment, Batch, Status, Submission
from service.submitting import (
    Refused,
    batch_progress,
    find_batch,
    submit_batch,
    zip_entries,
)
from service.wire import BatchCreate
from web.access import (
    instructor,
    not_found,
    taught_assignment,
)
from web.instructor.blueprint import bp, refusal


@bp.get("/app/<sid>/assignments/<assignment_id>/batches")
def batch_form(assignment_id: str) -> str:
    who = instructor()
    with services().db.session() as s:
        found = taught_assignment(s, who, assignment_id)
    return render_template("instructor/batch_new.html", who=who, assignment=found, error="")


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
        status, message = refusal(exc)
        return render_template("instructor/batch_new.html", who=who, assignment=found,
                               error=message), status
    return redirect(url_for("instructor.batch", assignment_id=found.id,
                            batch_id=batch_id), 303)


def batch_of(s: Session, tenant_id: int, assignment: Assignment, batch_id: str) -> Batch:
    """A class upload to ``assignment`` (404 for any other batch)."""
    batch = find_batch(s, tenant_id, batch_id)
    if batch is None or s.scalar(select(Submission.assignment_id).where(
            Submission.batch_id == batch.id).limit(1)) != assignment.id:
        not_found("batch")
    return batch


def _batch_or_404(assignment_id: str, batch_id: str) -> Any:
    who = instructor()
    svc = services()
    with svc.db.session() as s:
        found = taught_assignment(s, who, assignment_id)
        batch_of(s, who.tenant_id, found, batch_id)
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
