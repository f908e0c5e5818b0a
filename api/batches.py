"""``/v1/batches``: a whole class at once, as a zip of ``<student_id>.py`` files
(multipart field ``archive``, with ``problem``) or a JSON list. All or nothing: every
file is checked before anything is stored. Results as CSV and as Gradescope's
``results.json``, one per student."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, g, request, url_for
from sqlalchemy import select

from api.app import services
from api.auth import require
from api.errors import ApiError
from api.spec import operation, parse_json
from api.submissions import checked_callback, checked_code
from judge.errors import SubmissionRejected
from judge.report import VerdictReport
from service.batchzip import read_batch_zip
from service.exports import ExportRow, gradescope_json, results_csv
from service.models import Batch, Role, Status, Submission
from service.queue import BATCH
from service.submissions import code_digest, dispatch, new_id
from service.wire import BatchCreate, BatchEntry, BatchMember, BatchOut

bp = Blueprint("batches", __name__)
MULTIPART = {
    "multipart/form-data": {"schema": {
        "type": "object",
        "required": ["problem", "archive"],
        "properties": {
            "problem": {"type": "string"},
            "name": {"type": "string"},
            "callback_url": {"type": "string"},
            "archive": {"type": "string", "contentMediaType": "application/zip",
                        "description": "A zip of <student_id>.py files."},
        },
    }},
}


def _from_form() -> BatchCreate:
    svc = services().settings
    upload = request.files.get("archive")
    if upload is None or "problem" not in request.form:
        raise ApiError(422, "Invalid request", "a multipart batch needs the fields "
                       "'problem' and 'archive' (a zip file)")
    data = upload.read(svc.max_request_bytes + 1)
    entries = read_batch_zip(data, max_files=svc.max_batch_submissions,
                             max_total_bytes=svc.max_batch_bytes,
                             max_file_bytes=services().judge.max_code_bytes)
    items = []
    for student, raw in entries:
        try:
            code = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ApiError(422, "Unprocessable batch",
                           f"{student}.py is not UTF-8 (byte {exc.start})") from None
        items.append(BatchEntry(student_id=student, code=code))
    return BatchCreate(problem=request.form["problem"], name=request.form.get("name", ""),
                       callback_url=request.form.get("callback_url") or None, submissions=items)


def _parse() -> BatchCreate:
    if request.mimetype == "multipart/form-data":
        return _from_form()
    return parse_json(BatchCreate)


def _load(batch_id: str) -> tuple[Batch, list[Submission]]:
    with services().db.session() as s:
        batch = s.scalar(select(Batch).where(Batch.id == batch_id, Batch.tenant_id == g.tenant_id))
        if batch is None:
            raise ApiError(404, "Not found", f"no batch {batch_id!r}")
        rows = list(s.scalars(select(Submission).where(Submission.batch_id == batch.id)
                              .order_by(Submission.student_id)))
    return batch, rows


def _wire(batch: Batch, rows: list[Submission]) -> BatchOut:
    counts = {s.value: 0 for s in Status}
    verdicts: dict[str, int] = {}
    for r in rows:
        counts[r.status] += 1
        if r.verdict:
            verdicts[r.verdict] = verdicts.get(r.verdict, 0) + 1
    return BatchOut(
        id=batch.id, problem=batch.problem, name=batch.name, total=batch.total,
        created_at=batch.created_at, counts=counts, verdicts=verdicts,  # type: ignore[arg-type]
        done=counts[Status.DONE] == batch.total,
        submissions=[BatchMember(student_id=r.student_id or "", submission_id=r.id,
                                 status=r.status, verdict=r.verdict,  # type: ignore[arg-type]
                                 score=r.score, max_score=r.max_score) for r in rows],
    )


@bp.post("/v1/batches")
@operation("Grade a whole class: a zip of <student_id>.py files or a JSON list",
           tag="batches", body=BatchCreate, body_alternatives=MULTIPART,
           responses={202: BatchOut})
@require(Role.INSTRUCTOR)
def create_batch() -> Any:
    svc = services()
    try:
        body = _parse()
    except SubmissionRejected as exc:  # the archive itself
        raise ApiError(422, "Unprocessable batch", str(exc)) from None
    if len(body.submissions) > svc.settings.max_batch_submissions:
        raise ApiError(413, "Content too large", f"{len(body.submissions)} submissions; the "
                       f"limit is {svc.settings.max_batch_submissions}")
    seen: set[str] = set()
    for entry in body.submissions:
        if entry.student_id.lower() in seen:
            raise ApiError(422, "Unprocessable batch", f"student {entry.student_id!r} "
                           "appears twice")
        seen.add(entry.student_id.lower())
    problem = svc.catalog.get(body.problem)
    callback = checked_callback(body.callback_url)
    codes = []
    for entry in body.submissions:
        try:
            codes.append(checked_code(entry.code))
        except (ApiError, SubmissionRejected) as exc:
            detail = exc.detail if isinstance(exc, ApiError) else str(exc)
            raise ApiError(422, "Unprocessable batch", f"{entry.student_id}: {detail}") from None
    batch = Batch(id=new_id(), tenant_id=g.tenant_id, problem=problem.id, name=body.name,
                  total=len(codes))
    rows = [
        Submission(id=new_id(), tenant_id=g.tenant_id, batch_id=batch.id, problem=problem.id,
                   problem_version=problem.version, student_id=e.student_id, code=code,
                   code_sha256=code_digest(code), callback_url=callback, queue=BATCH,
                   status=Status.QUEUED, enqueued=False, attempt=0)
        for e, code in zip(body.submissions, codes, strict=True)
    ]
    with svc.db.session() as s:
        s.add(batch)
        s.flush()
        s.add_all(rows)
    dispatch(svc.db, svc.celery, [(r.id, BATCH) for r in rows],
             timeout=svc.settings.publish_timeout_seconds)
    out = _wire(*_load(batch.id))
    return out.model_dump(mode="json"), 202, {
        "Location": url_for("batches.get_batch", batch_id=batch.id)}


@bp.get("/v1/batches/<batch_id>")
@operation("A batch's progress and per-student verdicts", tag="batches", responses={200: BatchOut})
@require(Role.INSTRUCTOR)
def get_batch(batch_id: str) -> Any:
    return _wire(*_load(batch_id)).model_dump(mode="json")


def _export_rows(batch_id: str) -> list[ExportRow]:
    _batch, rows = _load(batch_id)
    return [ExportRow(student_id=r.student_id or "", submission_id=r.id, status=r.status,
                      report=VerdictReport.model_validate(r.report) if r.report else None)
            for r in rows]


@bp.get("/v1/batches/<batch_id>/results.csv")
@operation("A batch's results as CSV, one row per student", tag="batches",
           responses={200: ("CSV", {"type": "string"}, "text/csv")})
@require(Role.INSTRUCTOR)
def results(batch_id: str) -> Response:
    body = results_csv(_export_rows(batch_id))
    return Response(body, mimetype="text/csv", headers={
        "Content-Disposition": f'attachment; filename="batch-{batch_id}.csv"'})


@bp.get("/v1/batches/<batch_id>/gradescope.json")
@operation("A batch's results in Gradescope's results.json shape, by student id",
           tag="batches",
           responses={200: ("results.json per student", {"type": "object"},
                            "application/json")})
@require(Role.INSTRUCTOR)
def gradescope(batch_id: str) -> Any:
    return gradescope_json(_export_rows(batch_id))
