"""``/v1/batches``: a whole class at once, as a zip of ``<student_id>.py`` files
(multipart field ``archive``, with ``problem``) or a JSON list. All or nothing: every
file is checked before anything is stored. Results as CSV and as Gradescope's
``results.json``, one per student."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from flask import Blueprint, Response, g, request, url_for
from sqlalchemy import select
from sqlalchemy.orm import Session

from api.auth import require
from api.errors import ApiError
from api.spec import operation, parse_json
from app.services import services
from judge.errors import SubmissionRejected
from judge.report import VerdictReport
from service.exports import ExportRow, gradescope_results, results_csv
from service.models import Batch, Role, Submission
from service.submitting import batch_progress, find_batch, submit_batch, zip_entries
from service.wire import BatchCreate, BatchOut

bp = Blueprint("batches", __name__)
EXPORT_PAGE = 200  # submissions (with their reports) read per query by an export
MULTIPART = {
    "multipart/form-data": {"schema": {
        "type": "object",
        "required": ["problem", "archive"],
        "properties": {
            "problem": {"type": "string"},
            "name": {"type": "string"},
            "callback_url": {"type": "string"},
            "archive": {"type": "string", "contentMediaType": "application/zip",
                        "description": "A zip of <student_id>.py files and "
                        "<student_id>.ipynb notebooks."},
        },
    }},
}


def _from_form() -> BatchCreate:
    upload = request.files.get("archive")
    if upload is None or "problem" not in request.form:
        raise ApiError(422, "Invalid request", "a multipart batch needs the fields "
                       "'problem' and 'archive' (a zip file)")
    items = zip_entries(services(), upload.read(services().settings.max_request_bytes + 1))
    return BatchCreate(problem=request.form["problem"], name=request.form.get("name", ""),
                       callback_url=request.form.get("callback_url") or None, submissions=items)


def _parse() -> BatchCreate:
    if request.mimetype == "multipart/form-data":
        return _from_form()
    return parse_json(BatchCreate)


def _batch(s: Session, batch_id: str) -> Batch:
    batch = find_batch(s, g.tenant_id, batch_id)
    if batch is None:
        raise ApiError(404, "Not found", f"no batch {batch_id!r}")
    return batch


def _progress(batch_id: str) -> BatchOut:
    found = batch_progress(services().db, g.tenant_id, batch_id)
    if found is None:
        raise ApiError(404, "Not found", f"no batch {batch_id!r}")
    return found


@bp.post("/v1/batches")
@operation("Grade a whole class: a zip of <student_id>.py files (or .ipynb notebooks) "
           "or a JSON list",
           tag="batches", body=BatchCreate, body_alternatives=MULTIPART,
           responses={202: BatchOut})
@require(Role.INSTRUCTOR)
def create_batch() -> Any:
    try:
        body = _parse()
    except SubmissionRejected as exc:  # the archive itself
        raise ApiError(422, "Unprocessable batch", str(exc)) from None
    batch_id = submit_batch(services(), g.tenant_id, body)
    return _progress(batch_id).model_dump(mode="json"), 202, {
        "Location": url_for("batches.get_batch", batch_id=batch_id)}


@bp.get("/v1/batches/<batch_id>")
@operation("A batch's progress and per-student verdicts", tag="batches", responses={200: BatchOut})
@require(Role.INSTRUCTOR)
def get_batch(batch_id: str) -> Any:
    return _progress(batch_id).model_dump(mode="json")


def _export_pages(batch_id: str) -> Iterator[list[ExportRow]]:
    """The batch's rows with their reports, EXPORT_PAGE at a time (by student id, each
    page in its own short transaction), so that an export never holds every report."""
    db = services().db
    with db.session() as s:
        batch = _batch(s, batch_id)  # 404 before the response starts

    def pages() -> Iterator[list[ExportRow]]:
        after = ""
        while True:
            with db.session() as s:
                rows = s.execute(
                    select(Submission.student_id, Submission.id, Submission.status,
                           Submission.report)
                    .where(Submission.batch_id == batch.id, Submission.student_id > after)
                    .order_by(Submission.student_id).limit(EXPORT_PAGE)).all()
            yield [ExportRow(student_id=student or "", submission_id=sid, status=status,
                             report=VerdictReport.model_validate(report) if report else None)
                   for student, sid, status, report in rows]
            if len(rows) < EXPORT_PAGE:
                return
            after = rows[-1][0]

    return pages()


@bp.get("/v1/batches/<batch_id>/results.csv")
@operation("A batch's results as CSV, one row per student", tag="batches",
           responses={200: ("CSV", {"type": "string"}, "text/csv")})
@require(Role.INSTRUCTOR)
def results(batch_id: str) -> Response:
    pages = _export_pages(batch_id)

    def body() -> Iterator[str]:
        yield results_csv([])  # the header
        for page in pages:
            yield results_csv(page, header=False)

    return Response(body(), mimetype="text/csv", headers={
        "Content-Disposition": f'attachment; filename="batch-{batch_id}.csv"'})


@bp.get("/v1/batches/<batch_id>/gradescope.json")
@operation("A batch's results in Gradescope's results.json shape, by student id",
           tag="batches",
           responses={200: ("results.json per student", {"type": "object"},
                            "application/json")})
@require(Role.INSTRUCTOR)
def gradescope(batch_id: str) -> Response:
    pages = _export_pages(batch_id)

    def body() -> Iterator[str]:
        sep = "{"
        for page in pages:
            for row in page:
                yield sep + json.dumps(row.student_id) + ": " + json.dumps(
                    gradescope_results(row.report, row.status))
                sep = ", "
        yield "{}" if sep == "{" else "}"

    return Response(body(), mimetype="application/json")
