"""The delivery task's body: one try of a delivery from the outbox
(:mod:`service.deliveries`), of either kind: claim the try, make its request (a signed
webhook, :mod:`workers.webhooks`; an LTI score, :func:`lti.ags.send_score`), record how
it ended, and say when the next try is due while the destination fails in a way that
may pass (connection errors, timeouts, 429, 5xx), with each kind's backoff and number of
tries, counted from the try its round began at (a delivery sent again has them all). A
refusal by the address policy records the allow-list it was made under, so the sweeper
sends it again once the list changes."""

from __future__ import annotations

from lti.ags import send_score
from lti.tokens import Tokens
from service.backoff import backoff
from service.deliveries import LTI_SCORE, claim_try, finish_try
from service.models import DeliveryStatus
from service.webhooks import Outcome, allow_key
from workers import webhooks
from workers.context import Context


def attempt(ctx: Context, delivery_id: str, try_no: int) -> float | None:
    """Try ``try_no`` (from 0) of ``delivery_id``. Returns the delay before the next try,
    or None when there is none (delivered, refused, given up, cancelled, or this try was
    made already)."""
    settings = ctx.settings
    # A score try may ask for a token twice and post twice (a cached token refused).
    lease = max(2 * settings.webhook_timeout_seconds, 4 * settings.lti_timeout_seconds) + 5
    taken = claim_try(ctx.db, delivery_id, try_no, lease=lease)
    if taken is None:
        return None  # a duplicate message, or the delivery is over
    result: Outcome | None
    final: DeliveryStatus | None = None
    if taken.kind == LTI_SCORE:
        sent = send_score(Tokens(ctx.db, settings, ctx.redis), taken)
        result, final = (sent.outcome, sent.status) if sent else (None, None)
        tries, base = settings.lti_max_attempts, settings.lti_backoff_seconds
    else:
        result = webhooks.send(ctx, taken)
        tries, base = settings.webhook_max_attempts, settings.webhook_backoff_seconds
    if result is None:  # a rejudge replaced the report since the try was queued
        finish_try(ctx.db, taken, status=DeliveryStatus.CANCELLED,
                   error="the report was replaced by a rejudge", retry_in=None)
        return None
    made = try_no + 1 - taken.first  # tries of this round, this one included
    again = final is None and result.retry and made < tries
    if final is not None:
        status = final
    elif result.ok:
        status = DeliveryStatus.DELIVERED
    elif again:
        status = DeliveryStatus.PENDING
    else:
        status = DeliveryStatus.REFUSED if result.refused else DeliveryStatus.FAILED
    delay = backoff(made, base) if again else None
    finish_try(ctx.db, taken, status=status, error=result.error, retry_in=delay,
               refused_under=allow_key(settings.webhook_allow))
    return delay
