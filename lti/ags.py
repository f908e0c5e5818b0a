"""Assignment and Grade Services: one try of a score delivery (kind ``lti-score`` of the
outbox, :mod:`service.deliveries`), made by the delivery worker.

The body is fixed at the first try (:func:`service.scores.fix`: the policy's score, the
verdict in fixed words, a timestamp strictly later than the last one for the student)
and sent unchanged by every retry::

    POST <line item URL, /scores appended to its path>
    Authorization: Bearer <a token with the score scope, lti.tokens>
    Content-Type: application/vnd.ims.lis.v1.score+json

How a try ends:

- 2xx: delivered.
- Connection errors, timeouts, 429 and 5xx (from the token endpoint too): tried again
  with backoff, the same body, up to ``lti_max_attempts`` tries.
- 409 (Moodle: the timestamp is not after the one it holds). Our timestamps for a
  student only grow, and a retry sends the same timestamp, so the platform holds a
  later score of ours (a newer submission's score overtook this one: ``cancelled``;
  nothing is lost, the later one carries the policy's grade over every graded
  submission), or else, on a retry, this very score (an earlier try reached it and its
  answer was lost to a timeout or a dropped connection: ``delivered``). A 409 to a first
  try whose timestamp is still the latest is ``failed``: the platform holds a newer grade
  from elsewhere.
- Other 4xx, 3xx, a refused token (invalid client, scope): ``failed``, with the reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlalchemy import select

from lti.tokens import Platform, Tokens, authorized
from service import scores
from service.deliveries import Try
from service.models import Assignment, Course, DeliveryStatus, LtiPlatform, Submission
from service.webhooks import Outcome, fetch


@dataclass(frozen=True)
class Sent:
    """How a score try ended: the HTTP outcome, and the delivery status it leads to when
    the outcome alone does not say (a 409)."""

    outcome: Outcome
    status: DeliveryStatus | None = None


def platform_of(tokens: Tokens, submission_id: str) -> Platform | None:
    """The platform of the course of the submission's assignment."""
    with tokens.db.session() as s:
        row = s.execute(
            select(LtiPlatform.id, LtiPlatform.client_id, LtiPlatform.token_url)
            .join(Course, Course.platform_id == LtiPlatform.id)
            .join(Assignment, Assignment.course_id == Course.id)
            .join(Submission, Submission.assignment_id == Assignment.id)
            .where(Submission.id == submission_id)).first()
    return Platform(*row) if row else None


def send_score(tokens: Tokens, taken: Try) -> Sent | None:
    """Try ``taken`` of a score delivery; None when there is nothing to send any more (a
    rejudge replaced the report, the assignment is gone, or the try is no longer ours)."""
    body = scores.fix(tokens.db, taken)
    if body is None:
        return None
    platform = platform_of(tokens, taken.submission_id)
    if platform is None:
        return Sent(Outcome(False, None, "the assignment's platform is no longer registered",
                            retry=False))
    data = json.dumps(body, separators=(",", ":")).encode()
    settings = tokens.settings

    def post(token: str) -> Outcome:
        return fetch("POST", taken.url, body=data, content_type=scores.SCORE_TYPE,
                     headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
                     allow=settings.webhook_allow, timeout=settings.lti_timeout_seconds)

    got = authorized(tokens, platform, [scores.SCORE_SCOPE], post)
    if got.status != 409:
        return Sent(got)
    if scores.superseded(tokens.db, taken, body):
        return Sent(Outcome(False, 409, "HTTP 409: a later score of this student was sent",
                            retry=False), DeliveryStatus.CANCELLED)
    if taken.number > 0:  # an earlier try of this very body reached the platform
        return Sent(Outcome(True, 409, "HTTP 409 to a retry: an earlier try was taken",
                            retry=False), DeliveryStatus.DELIVERED)
    return Sent(Outcome(False, 409, "HTTP 409: the platform holds a newer score from "
                        "elsewhere", retry=False), DeliveryStatus.FAILED)
