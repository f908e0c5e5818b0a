"""Assignment and Grade Services, the platform's side of a grade: where a score goes, the
request that posts it, and what the platform's answer means. The path a grade takes end
to end (the outbox, the body, the token, this request, the retries) is told in
:mod:`workers.deliveries`; the body is fixed by :func:`service.scores.fix`.

The request, sent unchanged by every retry of a score::

    POST <line item URL, /scores appended to its path>
    Authorization: Bearer <a token with the score scope, lti.tokens>
    Content-Type: application/vnd.ims.lis.v1.score+json

How a try ends:

- 2xx: delivered.
- Connection errors, timeouts, 429 and 5xx (from the token endpoint too): tried again
  with backoff, the same body, up to ``lti_max_attempts`` tries.
- 409 (Moodle: the timestamp is not after the one it holds), :func:`conflict`. Our
  timestamps for a student only grow, and a retry sends the same timestamp, so the
  platform holds a later score of ours (a newer submission's score overtook this one:
  ``cancelled``; nothing is lost, the later one carries the policy's grade over every
  graded submission), or else, on a retry, this very score (an earlier try reached it
  and its answer was lost to a timeout or a dropped connection: ``delivered``). A 409 to
  a first try whose timestamp is still the latest is ``failed``: the platform holds a
  newer grade from elsewhere.
- Other 4xx, 3xx, a refused token (invalid client, scope): ``failed``, with the reason.

The line item itself is read too (:func:`read_lineitem`), for its ``endDateTime`` (the
assignment's due date where the platform keeps one there; :mod:`lti.dates`)::

    GET <line item URL>
    Authorization: Bearer <a token with the lineitem.readonly (or lineitem) scope>
    Accept: application/vnd.ims.lis.v2.lineitem+json

at most :data:`MAX_LINEITEM_BYTES` of JSON, through the same outgoing client and its
address policy; any failure is a :class:`LineItemUnread`, never a wrong answer.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from judge.nesting import load_json
from lti.tokens import Platform, Tokens, authorized_get
from service.db import Database
from service.models import Assignment, Course, DeliveryStatus, LtiPlatform, Submission
from service.outbound import Outcome, fetch
from service.settings import ServiceSettings

SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
LINEITEM_READONLY = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
MAX_LINEITEM_BYTES = 64 * 1024


def platform_of(db: Database, submission_id: str) -> Platform | None:
    """The platform of the course of the submission's assignment (None when it is no
    longer registered)."""
    with db.session() as s:
        row = s.execute(
            select(LtiPlatform.id, LtiPlatform.client_id, LtiPlatform.token_url)
            .join(Course, Course.platform_id == LtiPlatform.id)
            .join(Assignment, Assignment.course_id == Course.id)
            .join(Submission, Submission.assignment_id == Assignment.id)
            .where(Submission.id == submission_id)).first()
    return Platform(*row) if row else None


def post_score(settings: ServiceSettings, url: str, body: dict[str, Any],
               token: str) -> Outcome:
    """POST the score ``body`` to the line item's scores ``url`` with ``token``."""
    data = json.dumps(body, separators=(",", ":")).encode()
    return fetch("POST", url, body=data, content_type=SCORE_TYPE,
                 headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
                 allow=settings.webhook_allow, timeout=settings.lti_timeout_seconds)


def conflict(*, overtaken: bool, retry: bool) -> tuple[Outcome, DeliveryStatus]:
    """What a 409 to a score means: ``overtaken`` when a later score of the student was
    fixed since this one, ``retry`` when this try is not the score's first."""
    if overtaken:
        return (Outcome(False, 409, "HTTP 409: a later score of this student was sent",
                        retry=False), DeliveryStatus.CANCELLED)
    if retry:  # an earlier try of this very body reached the platform
        return (Outcome(True, 409, "HTTP 409 to a retry: an earlier try was taken",
                        retry=False), DeliveryStatus.DELIVERED)
    return (Outcome(False, 409, "HTTP 409: the platform holds a newer score from elsewhere",
                    retry=False), DeliveryStatus.FAILED)


class LineItemUnread(Exception):
    """The line item could not be read (one line, without the token)."""


def lineitem_scope(granted: list[str]) -> str | None:
    """The scope to read a line item with, of those a launch says the platform grants:
    the read-only one if granted, else the full one; None when neither is."""
    for scope in (LINEITEM_READONLY, LINEITEM_SCOPE):
        if scope in granted:
            return scope
    return None


def read_lineitem(tokens: Tokens, platform: Platform, url: str, scope: str) -> dict[str, Any]:
    """The line item at ``url`` (a JSON object), read with a token for ``scope``; raises
    :class:`LineItemUnread`. Every request, the token's included, waits at most
    ``tokens.settings.lti_timeout_seconds``."""
    got = authorized_get(tokens, platform, url, scope, accept=LINEITEM_TYPE,
                         limit=MAX_LINEITEM_BYTES)
    if not got.ok:
        raise LineItemUnread(got.error)
    if not got.complete:
        raise LineItemUnread(f"the line item is larger than {MAX_LINEITEM_BYTES} bytes")
    try:
        item = load_json(got.body)
    except ValueError as exc:
        raise LineItemUnread(f"the line item is not JSON ({type(exc).__name__})") from None
    if not isinstance(item, dict):
        raise LineItemUnread("the line item is not a JSON object")
    return item
