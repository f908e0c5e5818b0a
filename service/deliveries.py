"""The outbox: reports to deliver, one row per report and destination
(:class:`service.models.Delivery`).

A delivery is opened by :func:`service.submissions.store` in the transaction that stores
the report, due at once; the worker then queues its first try. Every try is keyed by the
delivery id and its number: :func:`claim_try` begins try ``n`` only if ``n`` tries were
begun before and the delivery is still pending, so a try is made once however many
messages ask for it, and a message of a delivery that a rejudge cancelled finds nothing
to do. :func:`resend_overdue` (the sweeper) queues again a try that is overdue: its
message was never queued (the broker was away, the worker died before queuing it) or was
lost with the broker, or the worker making it died.

Destinations have a kind, and every kind goes through the same table, tries, task and
sweeper: ``webhook`` (the submission's ``callback_url``) and ``lti-score`` (the grade of a
submission made to an LMS assignment, to the assignment's AGS line item; its body is
fixed at the first try, :mod:`service.scores`).

A delivery that failed for good or was refused by the address policy is not lost: it
can be sent again (:func:`stuck` finds those whose sending still matters, :func:`reopen`
starts a new round of tries on the same row, its id and body kept, and :func:`queue`
queues each round's first try): from the gradebook, with ``jaxjudge deliveries retry``,
and by the sweeper (:func:`reopen_allowed`) for every refusal made under another
allow-list than the one it runs with, so an operator who sets ``JAXJUDGE_WEBHOOK_ALLOW``
late needs to do nothing more. A round is claimed like any try (one conditional UPDATE
from the failed or refused state with the tries it had), so two operators, or an
operator and the sweeper, never start two.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from celery import Celery
from sqlalchemy import and_, exists, or_, select, update
from sqlalchemy.orm import Session, aliased

from service.db import MAX_BIND, Database, changed, utcnow
from service.models import Delivery, DeliveryStatus, Status, Submission, Tenant
from service.outbound import allow_key
from service.queue import send_delivery
from service.settings import ServiceSettings
from service.wire import WebhookEvent, WebhookState, submission_out

log = logging.getLogger(__name__)
WEBHOOK = "webhook"
LTI_SCORE = "lti-score"
REPORT = "report"  # the cause of a delivery opened with the report it carries
OVER = (DeliveryStatus.FAILED, DeliveryStatus.REFUSED)  # may be sent again
MAX_ERROR = 500  # characters of a try's error kept (the column's size)


def open_delivery(s: Session, submission_id: str, attempt: int, tenant_id: int, url: str,
                  now: datetime, kind: str = WEBHOOK, cause: str = REPORT) -> str:
    """Open the delivery of ``kind`` of the report ``attempt`` stored, due now; its id.
    ``cause`` tells deliveries of one report and kind apart (a policy switch's score)."""
    delivery = Delivery(id=uuid.uuid4().hex, kind=kind, submission_id=submission_id,
                        attempt=attempt, tenant_id=tenant_id, url=url,
                        status=DeliveryStatus.PENDING, attempts=0, due_at=now,
                        cause=cause, first_try=0, created_at=now, updated_at=now)
    s.add(delivery)
    return delivery.id


def clip(text: str, limit: int = MAX_ERROR) -> str:
    """``text`` whole when it fits in ``limit`` characters, else cut after its last whole
    word that fits, with an ellipsis: a reason is never cut mid-word."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    head = cut.rsplit(" ", 1)[0] if " " in cut else cut
    return head.rstrip(",;:") + "…"


def cancel(s: Session, submission_ids: Sequence[str], now: datetime) -> None:
    """End the open deliveries of these submissions (a rejudge replaces their reports)."""
    changed(s, update(Delivery).where(Delivery.submission_id.in_(submission_ids),
                                      Delivery.status == DeliveryStatus.PENDING)
            .values(status=DeliveryStatus.CANCELLED, due_at=None, updated_at=now))


@dataclass(frozen=True)
class Try:
    delivery_id: str
    number: int  # from 0
    submission_id: str
    attempt: int
    tenant_id: int
    url: str
    kind: str = WEBHOOK
    payload: dict[str, Any] | None = None  # what an earlier try fixed (an LTI score)
    first: int = 0  # the try its round began at (a delivery sent again starts a round)
    cause: str = REPORT  # why it was opened: with a report, or a change of the term


def claim_try(db: Database, delivery_id: str, number: int, *, lease: float) -> Try | None:
    """Begin try ``number``; None when it was begun already or the delivery is over
    (delivered, given up, cancelled by a rejudge). The try is overdue after ``lease``
    seconds, should it never finish."""
    now = utcnow()
    with db.session() as s:
        if not changed(s, update(Delivery).where(
                Delivery.id == delivery_id, Delivery.status == DeliveryStatus.PENDING,
                Delivery.attempts == number,
        ).values(attempts=number + 1, due_at=now + timedelta(seconds=lease), updated_at=now)):
            return None
        row = s.get(Delivery, delivery_id)
        assert row is not None
        return Try(delivery_id, number, row.submission_id, row.attempt, row.tenant_id, row.url,
                   row.kind, row.payload, row.first_try, row.cause)


def finish_try(db: Database, taken: Try, *, status: DeliveryStatus, error: str,
               retry_in: float | None, refused_under: str | None = None) -> bool:
    """Record how a try ended and when the next one is due (None: no next). A refusal
    records the fingerprint of the allow-list that refused it (``refused_under``). False
    when the try was no longer the delivery's current one (nothing written)."""
    now = utcnow()
    due = now + timedelta(seconds=retry_in) if retry_in is not None else None
    with db.session() as s:
        return changed(s, update(Delivery).where(
            Delivery.id == taken.delivery_id, Delivery.status == DeliveryStatus.PENDING,
            Delivery.attempts == taken.number + 1,
        ).values(status=status, last_error=clip(error) or None, due_at=due, updated_at=now,
                 refused_allow=refused_under if status == DeliveryStatus.REFUSED else None
                 )) == 1


def render(db: Database, taken: Try) -> tuple[bytes, str] | None:
    """The event body of a webhook try and the tenant secret that signs it; None when the
    report it carries is no longer the submission's (a rejudge came in between)."""
    with db.session() as s:
        row = s.get(Submission, taken.submission_id)
        if row is None or row.status != Status.DONE or row.attempt != taken.attempt:
            return None
        tenant = s.get(Tenant, taken.tenant_id)
        assert tenant is not None
        out = submission_out(row).model_copy(update={"webhook": WebhookState(
            status="pending", attempts=taken.number + 1)})  # counting this try
        event = WebhookEvent(delivery_id=taken.delivery_id, tenant=tenant.name, submission=out)
        return event.model_dump_json().encode(), tenant.webhook_secret


def resend_overdue(db: Database, celery: Celery, *, timeout: float, grace: float,
                   resend_after: float, page: int = 500) -> int:
    """Queue the next try of every delivery overdue by more than ``grace`` seconds, a page
    at a time (keyset on the id). A resent try gets ``resend_after`` seconds before it is
    resent again (a backlog is not a loss). Stops at the first broker failure."""
    cutoff = utcnow() - timedelta(seconds=grace)
    sent, after = 0, ""
    while True:
        with db.session() as s:
            rows = s.execute(select(Delivery.id, Delivery.attempts).where(
                Delivery.status == DeliveryStatus.PENDING, Delivery.due_at < cutoff,
                Delivery.id > after).order_by(Delivery.id).limit(page)).all()
        for delivery_id, tries in rows:
            try:
                send_delivery(celery, delivery_id, tries, timeout=timeout)
            except Exception as exc:
                log.warning("delivery tries still unsent: %s", exc)
                return sent
            with db.session() as s:
                changed(s, update(Delivery).where(Delivery.id == delivery_id,
                                                  Delivery.status == DeliveryStatus.PENDING,
                                                  Delivery.attempts == tries)
                        .values(due_at=utcnow() + timedelta(seconds=resend_after)))
            sent += 1
        if len(rows) < page:
            return sent
        after = rows[-1][0]


def stuck(s: Session, *, statuses: Sequence[DeliveryStatus] = OVER,
          assignment_id: str | None = None, user_id: str | None = None,
          not_under: str | None = None, before: datetime | None = None, after: str = "",
          limit: int | None = None) -> list[tuple[str, int]]:
    """(id, tries begun) of the deliveries in ``statuses`` whose sending still matters,
    by id: a webhook that carries the report its submission holds now, and the newest
    score of each (assignment, student) (an older one is overtaken: the newest carries
    the policy's grade over every graded submission). Narrowed to an assignment, one of
    its students, refusals not made under the allow-list ``not_under``, rows last
    changed ``before`` a time, ids after ``after``."""
    later, theirs = aliased(Delivery), aliased(Submission)
    overtaken = exists().where(
        later.submission_id == theirs.id, later.kind == LTI_SCORE,
        theirs.assignment_id == Submission.assignment_id,
        theirs.student_id == Submission.student_id,
        or_(later.created_at > Delivery.created_at,
            and_(later.created_at == Delivery.created_at, later.id > Delivery.id)))
    query = (select(Delivery.id, Delivery.attempts)
             .join(Submission, Submission.id == Delivery.submission_id)
             .where(Delivery.status.in_(list(statuses)), Delivery.id > after,
                    or_(and_(Delivery.kind == WEBHOOK, Delivery.attempt == Submission.attempt,
                             Submission.status == Status.DONE),
                        and_(Delivery.kind == LTI_SCORE, ~overtaken)))
             .order_by(Delivery.id))
    if assignment_id is not None:
        query = query.where(Submission.assignment_id == assignment_id)
    if user_id is not None:
        query = query.where(Submission.student_id == user_id)
    if not_under is not None:
        query = query.where(or_(Delivery.refused_allow.is_(None),
                                Delivery.refused_allow != not_under))
    if before is not None:
        query = query.where(Delivery.updated_at < before)
    if limit is not None:
        query = query.limit(limit)
    return [(delivery_id, tries) for delivery_id, tries in s.execute(query).all()]


def reopen(s: Session, found: Sequence[tuple[str, int]], now: datetime) -> list[tuple[str, int]]:
    """Start a new round of tries of each (delivery, tries begun) that is still failed or
    refused with that many tries begun: pending, due now, its id and body kept. The
    (delivery, try) of each round's first try, to :func:`queue` once committed; a
    delivery another caller reopened first is not in it."""
    opened = []
    for delivery_id, tries in found:
        if changed(s, update(Delivery).where(
                Delivery.id == delivery_id, Delivery.status.in_(list(OVER)),
                Delivery.attempts == tries,
        ).values(status=DeliveryStatus.PENDING, due_at=now, first_try=tries, updated_at=now)):
            opened.append((delivery_id, tries))
    return opened


def queue(celery: Celery, tries: Sequence[tuple[str, int]], *, timeout: float) -> int:
    """Queue each (delivery, try); how many were queued. Stops at the first broker
    failure: the rest are due, and the sweeper sends them once they are overdue."""
    for done, (delivery_id, number) in enumerate(tries):
        try:
            send_delivery(celery, delivery_id, number, timeout=timeout)
        except Exception as exc:
            log.warning("delivery tries left to the sweeper: %s", exc)
            return done
    return len(tries)


def queue_opened(celery: Celery, settings: ServiceSettings, opened: Sequence[str]) -> int:
    """Queue the first try of each LTI score a change of the course term opened (the
    policy, the dates and rules, an extension, an override, the LMS's dates), once the
    change is committed; how many were queued (:func:`queue`: the sweeper sends the rest)."""
    return queue(celery, [(d, 0) for d in opened], timeout=settings.publish_timeout_seconds)


def send_again(db: Database, celery: Celery, *, timeout: float, **narrowed: Any) -> int:
    """Send again every failed or refused delivery whose sending still matters (narrowed
    as :func:`stuck` says), a page at a time; how many rounds were started."""
    started, after = 0, ""
    while True:
        with db.session() as s:
            found = stuck(s, after=after, limit=MAX_BIND, **narrowed)
            opened = reopen(s, found, utcnow())
        queue(celery, opened, timeout=timeout)
        started += len(opened)
        if len(found) < MAX_BIND:
            return started
        after = found[-1][0]


def reopen_allowed(db: Database, celery: Celery, allow: Sequence[str], *, grace: float,
                   timeout: float) -> int:
    """The sweeper's part: send again every refusal made under another allow-list than
    ``allow`` (the operator changed ``JAXJUDGE_WEBHOOK_ALLOW`` since; refusals made
    before refusals were fingerprinted count too) and last changed over ``grace``
    seconds ago. One more round each: a destination the new list still refuses is
    refused again under it and left alone until the list changes again."""
    return send_again(db, celery, timeout=timeout, statuses=[DeliveryStatus.REFUSED],
                      not_under=allow_key(allow),
                      before=utcnow() - timedelta(seconds=grace))
