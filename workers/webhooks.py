"""The webhook task's body: sign the event, deliver it, record the outcome, retry with
backoff while the receiver fails in a way that may pass."""

from __future__ import annotations

from service.models import Status, Submission, Tenant
from service.submissions import claim_webhook_try, finish_webhook_try
from service.webhooks import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    Delivery,
    backoff,
    deliver,
    sign,
)
from service.wire import WebhookEvent, WebhookState, submission_out
from workers.context import Context


def event_body(ctx: Context, submission_id: str, delivery_id: str) -> tuple[str, bytes, str] | None:
    """(url, body, tenant secret) of a done submission with a callback, else None."""
    with ctx.db.session() as s:
        row = s.get(Submission, submission_id)
        if row is None or row.status != Status.DONE or not row.callback_url:
            return None
        tenant = s.get(Tenant, row.tenant_id)
        assert tenant is not None
        out = submission_out(row).model_copy(update={"webhook": WebhookState(
            status="pending", attempts=row.webhook_attempts)})  # counting this try
        event = WebhookEvent(delivery_id=delivery_id, tenant=tenant.name, submission=out)
        return row.callback_url, event.model_dump_json().encode(), tenant.webhook_secret


def attempt(ctx: Context, submission_id: str, delivery_id: str, tries: int) -> float | None:
    """Try ``tries`` (``tries`` before it). Returns the delay before the next try, or None
    when there is none (delivered, refused, given up, or this try was made already)."""
    settings = ctx.settings
    if not claim_webhook_try(ctx.db, submission_id, tries,
                             lease=2 * settings.webhook_timeout_seconds + 5):
        return None  # a duplicate message, or the delivery is over
    found = event_body(ctx, submission_id, delivery_id)
    if found is None:
        return None
    url, body, secret = found
    headers = {SIGNATURE_HEADER: sign(secret, body), EVENT_HEADER: "submission.done",
               DELIVERY_HEADER: delivery_id}
    result: Delivery = deliver(url, body, headers, allow=settings.webhook_allow,
                               timeout=settings.webhook_timeout_seconds)
    again = result.retry and tries + 1 < settings.webhook_max_attempts
    if result.ok:
        state = "delivered"
    elif again:
        state = "pending"
    else:
        state = "refused" if result.error.startswith("refused") else "failed"
    delay = backoff(tries + 1, settings.webhook_backoff_seconds) if again else None
    finish_webhook_try(ctx.db, submission_id, tries, state=state, error=result.error,
                       retry_in=delay)
    return delay
