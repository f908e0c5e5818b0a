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
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from celery import Celery
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from service.db import Database, changed, utcnow
from service.models import Delivery, DeliveryStatus, Status, Submission, Tenant
from service.queue import send_delivery
from service.wire import WebhookEvent, WebhookState, submission_out

log = logging.getLogger(__name__)
WEBHOOK = "webhook"
LTI_SCORE = "lti-score"


def open_delivery(s: Session, submission_id: str, attempt: int, tenant_id: int, url: str,
                  now: datetime, kind: str = WEBHOOK) -> str:
    """Open the delivery of ``kind`` of the report ``attempt`` stored, due now; its id."""
    delivery = Delivery(id=uuid.uuid4().hex, kind=kind, submission_id=submission_id,
                        attempt=attempt, tenant_id=tenant_id, url=url,
                        status=DeliveryStatus.PENDING, attempts=0, due_at=now,
                        created_at=now, updated_at=now)
    s.add(delivery)
    return delivery.id


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
                   row.kind, row.payload)


def finish_try(db: Database, taken: Try, *, status: DeliveryStatus, error: str,
               retry_in: float | None) -> None:
    """Record how a try ended and when the next one is due (None: no next)."""
    now = utcnow()
    due = now + timedelta(seconds=retry_in) if retry_in is not None else None
    with db.session() as s:
        changed(s, update(Delivery).where(
            Delivery.id == taken.delivery_id, Delivery.status == DeliveryStatus.PENDING,
            Delivery.attempts == taken.number + 1,
        ).values(status=status, last_error=error[:500] or None, due_at=due, updated_at=now))


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
