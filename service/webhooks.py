"""Verdict callbacks: POST the report to a submission's ``callback_url``, signed.

Signed as the Standard Webhooks specification says (https://www.standardwebhooks.com/),
with the ``standardwebhooks`` package. Headers of every delivery::

    Content-Type: application/json
    webhook-id: <the delivery id: the same on every retry; receivers deduplicate on it>
    webhook-timestamp: <Unix seconds when this try was signed>
    webhook-signature: v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">

The HMAC key is the tenant secret, ``whsec_<base64 of the key>``. A receiver verifies the
raw body and refuses a timestamp too far from its clock (the package's ``verify`` allows
5 minutes), so a captured delivery cannot be replayed later::

    from standardwebhooks import Webhook
    event = Webhook(SECRET).verify(request.get_data(), dict(request.headers))

The POST goes through the judge's outgoing client (:mod:`service.outbound`: the SSRF
policy, redirects never followed, at most 64 KiB of a response read). Retry policy: a
2xx is success. Connection errors, timeouts, 429 and 5xx are retried with
``service.backoff`` (exponential, ±20% jitter, capped); other 4xx, 3xx and policy
refusals are final (:mod:`workers.deliveries`).
"""

from __future__ import annotations

import base64
import secrets
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from standardwebhooks import Webhook, WebhookVerificationError

from service.outbound import Outcome, fetch

ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    """A tenant's signing secret: 32 random bytes, in the Standard Webhooks form."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def sign(secret: str, delivery_id: str, body: bytes, at: float | None = None) -> dict[str, str]:
    """The Standard Webhooks headers of ``body`` sent under ``delivery_id`` at ``at``
    (Unix seconds; now when None)."""
    when = datetime.fromtimestamp(int(time.time() if at is None else at), UTC)
    signature = Webhook(secret).sign(delivery_id, when, body.decode())
    return {ID_HEADER: delivery_id, TIMESTAMP_HEADER: str(int(when.timestamp())),
            SIGNATURE_HEADER: signature}


def verify(secret: str, body: bytes, headers: Mapping[str, str]) -> bool:
    """What a receiver does: the signature matches and the timestamp is within 5 minutes."""
    try:
        Webhook(secret).verify(body, dict(headers), json_parse=False)
    except (WebhookVerificationError, ValueError):  # a malformed header: ValueError
        return False
    return True


def deliver(url: str, body: bytes, headers: Mapping[str, str], *,
            allow: Sequence[str], timeout: float,
            content_type: str = "application/json") -> Outcome:
    """POST ``body`` to ``url`` (:func:`service.outbound.fetch`: pinned to a checked
    address); never raises for network trouble."""
    return fetch("POST", url, body=body, headers=headers, allow=allow, timeout=timeout,
                 content_type=content_type)
