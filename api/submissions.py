"""``/v1/submissions``: submit, read (with long-polling), list, rejudge.

A submission is stored before it is queued. When the broker cannot be reached the
request still succeeds (202, status ``queued``) and the submission is published by the
workers' sweeper once the broker is back: nothing accepted is lost, and a client never
has to resend (docs/api.md, "When the broker is down").
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import time
from datetime import datetime
from typing import Any

from flask import Blueprint, Response, g, request, url_for
from redis.exceptions import RedisError
from sqlalchemy import ColumnElement, and_, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import defer

from api.app import services
from api.auth import require
from api.errors import ApiError
from api.longpoll import POLL_SECONDS, RECHECK_SECONDS
from api.spec import operation, parse_json, parse_query
from judge.grading import decode_code
from service.metrics import count_received
from service.models import Role, Status, Submission
from service.queue import INTERACTIVE
from service.submissions import code_digest, dispatch, new_id, rejudge
from service.webhooks import WebhookRefused, check_url
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
# What an answer never shows is never read: the code (up to 256 KiB) of any submission,
# and the report of a listed one (raiseload: touching it would be a bug, not a query).
WITHOUT_CODE = defer(Submission.code, raiseload=True)
WITHOUT_REPORT = defer(Submission.report, raiseload=True)
IDEMPOTENCY_HEADER = "Idempotency-Key"
WAIT_HEADER = "Jaxjudge-Wait"  # "skipped": the key held all its long-polls; answered at once
WAIT_NOTE = ("A key holds a limited number of ?wait= long-polls at once; past it the "
             f"answer comes at once, with the header {WAIT_HEADER}: skipped.")


def checked_code(code: str) -> str:
    """The size cap (413), then the core's own checks (UTF-8, empty, NUL bytes: 422)."""
    data = code.encode("utf-8", "surrogatepass")
    limit = services().judge.max_code_bytes
    if len(data) > limit:
        raise ApiError(413, "Content too large",
                       f"the code is {len(data)} bytes; the limit is {limit} bytes")
    return decode_code(data, services().judge, noun="the code")


def checked_callback(url: str | None) -> str | None:
    if url is None:
        return None
    try:
        check_url(url, services().settings.webhook_allow)
    except WebhookRefused as exc:
        raise ApiError(422, "Refused callback_url", str(exc)) from None
    return url


def received(n: int = 1) -> None:
    """Count ``n`` stored submissions for /metrics; Redis away loses the count, not the
    request."""
    try:
        count_received(services().redis, n)
    except RedisError as exc:
        log.warning("cannot count %d received submission(s): %s", n, exc)


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
    """Long-poll (api/longpoll.py): wait for the worker's notice, holding one of the key's
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
        with svc.notices.watch(row.id) as woken:
            while True:
                row = load(row.id)
                left = deadline - time.monotonic()
                if row.status == Status.DONE or left <= 0:
                    return row
                woken.wait(min(left, RECHECK_SECONDS if svc.notices.connected
                               else POLL_SECONDS))
                woken.clear()


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
             timeout=svc.settings.publish_timeout_seconds)
    return ids


def _idempotency_key() -> str | None:
    key = request.headers.get(IDEMPOTENCY_HEADER)
    if key is None:
        return None
    if not 1 <= len(key) <= 255 or not key.isprintable():
        raise ApiError(400, "Bad request", f"{IDEMPOTENCY_HEADER} must be 1 to 255 "
                       "printable characters")
    return key


def _replay(key: str, fingerprint: str) -> Submission | None:
    with services().db.session() as s:
        row = s.scalar(select(Submission).options(WITHOUT_CODE)
                       .where(Submission.tenant_id == g.tenant_id,
                              Submission.idempotency_key == key))
    if row is not None and row.request_hash != fingerprint:
        raise ApiError(422, "Idempotency-Key reused", "this Idempotency-Key was sent before "
                       "with a different request")
    return row


def _answer(row: Submission, replayed: bool = False) -> tuple[Any, int, dict[str, str]]:
    headers = {"Location": url_for("submissions.get_submission", submission_id=row.id)}
    if replayed:
        headers["Idempotent-Replayed"] = "true"
    status = 200 if row.status == Status.DONE else 202
    return submission_out(row).model_dump(mode="json"), status, headers


@bp.post("/v1/submissions")
@operation(
    "Submit code for grading", tag="submissions", body=SubmissionCreate, query=WaitQuery,
    responses={202: ("Stored and queued; poll the Location", SubmissionOut, "application/json"),
               200: ("Already graded (with ?wait=, or an idempotent replay)", SubmissionOut,
                     "application/json")},
    description="Send an Idempotency-Key header to make retries safe: the same key with "
    "the same body answers with the first submission; with another body, 422. " + WAIT_NOTE,
)
@require(Role.CLIENT)
def create_submission() -> Any:
    svc = services()
    key = _idempotency_key()
    wait = parse_query(WaitQuery).wait
    body = parse_json(SubmissionCreate)
    fingerprint = hashlib.sha256(
        json.dumps(body.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()
    if key is not None and (found := _replay(key, fingerprint)) is not None:
        return _answer(wait_done(found, wait), replayed=True)
    problem = svc.catalog.get(body.problem)
    code = checked_code(body.code)
    callback = checked_callback(body.callback_url)
    if body.metadata is not None and len(json.dumps(body.metadata)) > \
            svc.settings.max_metadata_bytes:
        raise ApiError(422, "Unprocessable submission",
                       f"metadata is over {svc.settings.max_metadata_bytes} bytes as JSON")
    row = Submission(
        id=new_id(), tenant_id=g.tenant_id, problem=problem.id,
        problem_version=problem.version, student_id=body.student_id, code=code,
        code_sha256=code_digest(code), callback_url=callback, meta=body.metadata,
        idempotency_key=key, request_hash=fingerprint, queue=INTERACTIVE,
        status=Status.QUEUED, enqueued=False, attempt=0,
    )
    try:
        with svc.db.session() as s:
            s.add(row)
    except IntegrityError:  # the same key, concurrently: answer with the winner
        if key is None or (found := _replay(key, fingerprint)) is None:
            raise
        return _answer(wait_done(found, wait), replayed=True)
    received()
    dispatch(svc.db, svc.celery, [(row.id, INTERACTIVE)],
             timeout=svc.settings.publish_timeout_seconds)
    return _answer(wait_done(load(row.id), wait))


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
    requeue((Submission.id == row.id) & (Submission.tenant_id == g.tenant_id), INTERACTIVE)
    return submission_out(load(row.id)).model_dump(mode="json"), 202
