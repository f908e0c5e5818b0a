"""A webhook try's request: sign the event of the report it carries and POST it to the
submission's callback (:mod:`service.webhooks`). The try itself (claim, record, retry)
is :mod:`workers.deliveries`, the same for every kind of destination."""

from __future__ import annotations

from service.deliveries import Try, render
from service.webhooks import Outcome, deliver, sign
from workers.context import Context


def send(ctx: Context, taken: Try) -> Outcome | None:
    """POST the event of ``taken``; None when its report was replaced by a rejudge."""
    found = render(ctx.db, taken)
    if found is None:
        return None
    body, secret = found
    return deliver(taken.url, body, sign(secret, taken.delivery_id, body),
                   allow=ctx.settings.webhook_allow,
                   timeout=ctx.settings.webhook_timeout_seconds)
