"""The webhook task's body: one try of a delivery from the outbox
(:mod:`service.deliveries`): claim the try, sign the event, POST it, record how it
ended, and say when the next try is due while the receiver fails in a way that may pass."""

from __future__ import annotations

from service.backoff import backoff
from service.deliveries import claim_try, finish_try, render
from service.models import DeliveryStatus
from service.webhooks import deliver, sign
from workers.context import Context


def attempt(ctx: Context, delivery_id: str, try_no: int) -> float | None:
    """Try ``try_no`` (from 0) of ``delivery_id``. Returns the delay before the next try,
    or None when there is none (delivered, refused, given up, cancelled, or this try was
    made already)."""
    settings = ctx.settings
    taken = claim_try(ctx.db, delivery_id, try_no,
                      lease=2 * settings.webhook_timeout_seconds + 5)
    if taken is None:
        return None  # a duplicate message, or the delivery is over
    found = render(ctx.db, taken)
    if found is None:  # a rejudge replaced the report since the try was queued
        finish_try(ctx.db, taken, status=DeliveryStatus.CANCELLED,
                   error="the report was replaced by a rejudge", retry_in=None)
        return None
    body, secret = found
    result = deliver(taken.url, body, sign(secret, delivery_id, body),
                     allow=settings.webhook_allow, timeout=settings.webhook_timeout_seconds)
    again = result.retry and try_no + 1 < settings.webhook_max_attempts
    if result.ok:
        status = DeliveryStatus.DELIVERED
    elif again:
        status = DeliveryStatus.PENDING
    else:
        status = DeliveryStatus.REFUSED if result.error.startswith("refused") \
            else DeliveryStatus.FAILED
    delay = backoff(try_no + 1, settings.webhook_backoff_seconds) if again else None
    finish_try(ctx.db, taken, status=status, error=result.error, retry_in=delay)
    return delay
