"""``/v1/submissions``: submit, read (with long-polling), list, rejudge.

A submission is stored before it is queued. When the broker cannot be reached the
request still succeeds (202, status ``queued``) and the submission is published by the
workers' sweeper once the broker is back: nothing accepted is lost, and a client never
has to resend (docs/api.md, "When the broker is down").
"""

from __future__ import annotations

import base64
import contextlib
import logging
import time
from datetime import datetime
from typing import Any

from flask import Blueprint, Response, g, request, url_for
from sqlalchemy import ColumnElement, and_, or_, select
from sqlalchemy.orm import defer

from api.auth import require
from api.errors import ApiError
from api.spec import operation, parse_json, parse_query
from app.services import services
from judge.errors import ProblemNotFound
from service.longpoll import wait_until
from service.models import Role, Status, Submission
from service.queue import INTERACTIVE
from service.submissions import dispatch, rejudge
from service.submitting import WITHOUT_CODE, NewSubmission, checked_source, fingerprint, submit
from service.wire import (
    SubmissionCreate,
    SubmissionOut,
    SubmissionPage,
    SubmissionQuery,
    WaitQuery,
    submission_out,
)

bp = Blueprint("submissions", __name__)
log = logging.getLogger(__name__)
# What an answer never shows is never read: the code (WITHOUT_CODE), and the report of a
# listed one (raiseload: touching it would be a bug, not a query).
WITHOUT_REPORT = defer(Submission.report, raiseload=True)
IDEMPOTENCY_HEADER = "Idempotency-Key"
WAIT_HEADER = "Jaxjudge-Wait"  # "skipped": the key held all its long-polls; answered at once
WAIT_NOTE = ("A key holds a limited number of ?wait= long-polls at once; past it the "
             f"answer comes at once, with the header {WAIT_HEADER}: skipped.")


def load(submission_id: str) -> Submission:
    """The caller's tenant's submission, or 404 (also for another tenant's)."""
    with services().db.session() as s:
        row = s.scalar(select(Submission).options(WITHOUT_CODE)
                       .where(Submission.id == submission_id,
                              Submission.tenant_id == g.tenant_id))
    if row is None:
        raise ApiError(404, "Not found", f"no submission {submission_id!r}")
    return row


def wait_done(row: Submission, seconds: float) -> Submission:
    """Long-poll (service/longpoll.py): wait for the worker's notice, holding one of the key's
    wait slots, and re-read the database (the truth) when woken. Without a free slot,
    answer at once (``Jaxjudge-Wait: skipped``)."""
    svc = services()
    seconds = min(seconds, svc.settings.long_poll_max_seconds)
    if row.status == Status.DONE or seconds <= 0:
        return row
    deadline = time.monotonic() + seconds
    with svc.waits.slot(g.key_id, seconds) as granted:
        if not granted:
            g.wait_skipped = True
            return row
        return wait_until(svc.notices, row.id, deadline - time.monotonic(),
                          lambda: load(row.id), lambda r: r.status == Status.DONE)


@bp.after_request
def _skipped_wait(response: Response) -> Response:
    if g.get("wait_skipped"):
        response.headers[WAIT_HEADER] = "skipped"
    return response


def requeue(where: ColumnElement[bool], queue: str) -> list[str]:
    svc = services()
    with svc.db.session() as s:
        ids = rejudge(s, where)
    dispatch(svc.db, svc.celery, [(i, queue) for i in ids],
             timeout=svc.settings.publish_timeout_seconds, redis=svc.redis)
    return ids


def _idempotency_key() -> str | None:
    key = request.headers.get(IDEMPOTENCY_HEADER)
    if key is None:
        return None
    if not 1 <= len(key) <= 255 or not key.isprintable():
        raise ApiError(400, "Bad request", f"{IDEMPOTENCY_HEADER} must be 1 to 255 "
                       "printable characters")
    return key


def _answer(row: Submission, replayed: bool = False) -> tuple[Any, int, dict[str, str]]:
    headers = {"Location": url_for("submissions.get_submission", submission_id=row.id)}
    if replayed:
        headers["Idempotent-Replayed"] = "true"
    status = 200 if row.status == Status.DONE else 202
    return submission_out(row).model_dump(mode="json"), status, headers


@bp.post("/v1/submissions")
@operation(
    "Submit code (or a Jupyter notebook) for grading", tag="submissions",
    body=SubmissionCreate, query=WaitQuery,
    responses={202: ("Stored and queued; poll the Location", SubmissionOut, "application/json"),
               200: ("Already graded (with ?wait=, or an idempotent replay)", SubmissionOut,
                     "application/json")},
    description="Send an Idempotency-Key header to make retries safe: the same key with "
    "the same body answers with the first submission; with another body, 422. " + WAIT_NOTE,
)
@require(Role.CLIENT)
def create_submission() -> Any:
    key = _idempotency_key()
    wait = parse_query(WaitQuery).wait
    body = parse_json(SubmissionCreate)
    seen = fingerprint(body.model_dump(mode="json"))
    source = checked_source(services(), body.code, body.notebook)  # a notebook's code, notes
    row, replayed = submit(services(), NewSubmission(
        tenant_id=g.tenant_id, problem=body.problem, code=source.code,
        source_notes=source.notes, student_id=body.student_id,
        callback_url=body.callback_url, metadata=body.metadata,
        idempotency_key=key, fingerprint=seen))
    return _answer(wait_done(row, wait), replayed=replayed)


@bp.get("/v1/submissions/<submission_id>")
@operation("A submission, with its report when done; ?wait=N long-polls",
           tag="submissions", query=WaitQuery, responses={200: SubmissionOut},
           description=WAIT_NOTE)
@require(Role.CLIENT)
def get_submission(submission_id: str) -> Any:
    wait = parse_query(WaitQuery).wait
    return submission_out(wait_done(load(submission_id), wait)).model_dump(mode="json")


def _cursor(row: Submission) -> str:
    raw = f"{row.received_at.isoformat()}|{row.id}".encode()
    return base64.urlsafe_b64encode(raw).decode()


def _after(cursor: str) -> ColumnElement[bool]:
    try:
        stamp, _, sid = base64.urlsafe_b64decode(cursor.encode()).decode().partition("|")
        when = datetime.fromisoformat(stamp)
        if when.tzinfo is None:
            raise ValueError
    except ValueError:
        raise ApiError(400, "Bad request", "cursor is not one this API gave out") from None
    return or_(Submission.received_at < when,
               and_(Submission.received_at == when, Submission.id < sid))


@bp.get("/v1/submissions")
@operation("List the tenant's submissions, newest first", tag="submissions",
           query=SubmissionQuery, responses={200: SubmissionPage})
@require(Role.CLIENT)
def list_submissions() -> Any:
    q = parse_query(SubmissionQuery)
    query = select(Submission).options(WITHOUT_CODE, WITHOUT_REPORT).where(
        Submission.tenant_id == g.tenant_id)
    for column, value in ((Submission.student_id, q.student_id),
                          (Submission.problem, q.problem), (Submission.status, q.status),
                          (Submission.batch_id, q.batch_id)):
        if value is not None:
            query = query.where(column == value)
    if q.cursor:
        query = query.where(_after(q.cursor))
    query = query.order_by(Submission.received_at.desc(), Submission.id.desc()).limit(q.limit + 1)
    with services().db.session() as s:
        rows = list(s.scalars(query))
    page = rows[:q.limit]
    return SubmissionPage(
        items=[submission_out(r, with_report=False) for r in page],
        next_cursor=_cursor(page[-1]) if len(rows) > q.limit else None,
    ).model_dump(mode="json")


@bp.post("/v1/submissions/<submission_id>/rejudge")
@operation("Grade a submission again", tag="submissions",
           responses={202: SubmissionOut})
@require(Role.INSTRUCTOR)
def rejudge_submission(submission_id: str) -> Any:
    row = load(submission_id)
    with contextlib.suppress(ProblemNotFound):  # gone: the grading ends it, saying so
        # A package that cannot be loaded would only end it internal_error: 503, named.
        services().library.get(g.tenant_id, row.problem, row.problem_version or None)
    requeue((Submission.id == row.id) & (Submission.tenant_id == g.tenant_id), INTERACTIVE)
    return submission_out(load(row.id)).model_dump(mode="json"), 202
