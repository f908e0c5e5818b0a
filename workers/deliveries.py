"""The delivery task's body: one try of a delivery from the outbox, a webhook or a grade
for an LMS. :func:`attempt` is the entry point (task ``jaxjudge.deliver``); the path a
grade takes reads top-down from here.

Grade passback, end to end:

0. **Opened with the report.** A grading stores its report
   (:func:`service.submissions.store`) and, in the same transaction, opens a delivery
   of kind ``lti-score`` in the outbox (:mod:`service.deliveries`) to the scores URL of
   the assignment's line item (:func:`service.scores.scores_url`: only when the
   platform granted the score scope). An instructor switching the assignment's grade
   policy opens more (:func:`service.scores.switch_policy`). The grading worker queues
   try 0; the sweeper queues any try that is overdue
   (:func:`service.deliveries.resend_overdue`).
1. **Claim the try** (:func:`service.deliveries.claim_try`): try ``n`` is made once
   however many messages ask for it, and only while the delivery is pending.
2. **Find what to send** (:func:`service.scores.fix`): the score of the assignment's
   policy over the student's graded submissions, fixed at the first try with a
   timestamp later than any before it and stored, so every retry sends the same body.
   Nothing to send (a rejudge replaced the report): the delivery is ``cancelled``.
3. **Find the platform** (:func:`lti.ags.platform_of`) and **obtain a token** with the
   score scope (:func:`lti.tokens.authorized`: cached, and asked for again once when a
   cached token is refused).
4. **Send** (:func:`lti.ags.post_score`, through :func:`service.outbound.fetch`: the
   address policy, bounded answers); a 409 is read by :func:`lti.ags.conflict`.
5. **Record the outcome** (:func:`record`, :func:`service.deliveries.finish_try`):
   delivered; or pending again after a backoff (:func:`service.backoff.backoff` from
   ``lti_backoff_seconds``, counted from the try the round began at) while the answer
   may pass (connection errors, timeouts, 429, 5xx) and fewer than
   ``lti_max_attempts`` tries were made (the task retries itself with that countdown,
   :mod:`workers.app`); else failed, or refused by the address policy (the allow-list it
   was refused under is recorded, and the sweeper sends it again once the list changes).

A webhook takes the same path with its own steps 2 to 4 (:func:`send_webhook`: the
event of the report, signed with the tenant's secret, POSTed to the callback) and its
own backoff and number of tries (``webhook_*``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from redis.exceptions import RedisError

from lti import ags
from lti.tokens import Tokens, authorized
from service import logcontext, metrics, scores
from service.backoff import backoff
from service.deliveries import LTI_SCORE, OVER, Try, claim_try, finish_try, render
from service.models import DeliveryStatus
from service.outbound import Outcome, allow_key
from service.webhooks import deliver, sign
from workers.context import Context

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sent:
    """How a try's request ended: the HTTP outcome, and the delivery status it leads to
    when the outcome alone does not say (a score's 409)."""

    outcome: Outcome
    status: DeliveryStatus | None = None


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
    with logcontext.about(taken.submission_id):
        if taken.kind == LTI_SCORE:
            sent = send_grade(ctx, taken)
            tries, base = settings.lti_max_attempts, settings.lti_backoff_seconds
        else:
            sent = send_webhook(ctx, taken)
            tries, base = settings.webhook_max_attempts, settings.webhook_backoff_seconds
        return record(ctx, taken, sent, tries=tries, base=base)


def send_grade(ctx: Context, taken: Try) -> Sent | None:
    """Steps 2 to 4 of a score: its body, its platform, a token, the POST. None when
    there is nothing to send any more (a rejudge replaced the report, the assignment is
    gone, or the try is no longer ours)."""
    body = scores.fix(ctx.db, taken)
    if body is None:
        return None
    platform = ags.platform_of(ctx.db, taken.submission_id)
    if platform is None:
        return Sent(Outcome(False, None, "the assignment's platform is no longer registered",
                            retry=False))
    got = authorized(Tokens(ctx.db, ctx.settings, ctx.redis), platform, [scores.SCORE_SCOPE],
                     lambda token: ags.post_score(ctx.settings, taken.url, body, token))
    if got.status != 409:
        return Sent(got)
    return Sent(*ags.conflict(overtaken=scores.superseded(ctx.db, taken, body),
                              retry=taken.number > 0))


def send_webhook(ctx: Context, taken: Try) -> Sent | None:
    """Steps 2 to 4 of a webhook: the event of the report, signed, POSTed to the
    submission's callback (:mod:`service.webhooks`). None when its report was replaced
    by a rejudge."""
    found = render(ctx.db, taken)
    if found is None:
        return None
    body, secret = found
    return Sent(deliver(taken.url, body, sign(secret, taken.delivery_id, body),
                        allow=ctx.settings.webhook_allow,
                        timeout=ctx.settings.webhook_timeout_seconds))


def record(ctx: Context, taken: Try, sent: Sent | None, *, tries: int,
           base: float) -> float | None:
    """Step 5: record how the try ended; the delay before the next try (None: no next).
    ``tries`` and ``base`` are the kind's number of tries a round and backoff base."""
    if sent is None:  # a rejudge replaced the report since the try was queued
        finish_try(ctx.db, taken, status=DeliveryStatus.CANCELLED,
                   error="the report was replaced by a rejudge", retry_in=None)
        return None
    result = sent.outcome
    made = taken.number + 1 - taken.first  # tries of this round, this one included
    again = sent.status is None and result.retry and made < tries
    if sent.status is not None:
        status = sent.status
    elif result.ok:
        status = DeliveryStatus.DELIVERED
    elif again:
        status = DeliveryStatus.PENDING
    else:
        status = DeliveryStatus.REFUSED if result.refused else DeliveryStatus.FAILED
    delay = backoff(made, base) if again else None
    ended = finish_try(ctx.db, taken, status=status, error=result.error, retry_in=delay,
                       refused_under=allow_key(ctx.settings.webhook_allow))
    if ended and status in OVER:
        _given_up(ctx, taken, status, result.error)
    return delay


def _given_up(ctx: Context, taken: Try, status: DeliveryStatus, error: str) -> None:
    """The round ended undelivered: a line in the log, and one more
    ``jaxjudge_deliveries_failed_total`` of its kind (what a deployment alerts on)."""
    log.warning("delivery %s (%s) of submission %s %s after try %d: %s", taken.delivery_id,
                taken.kind, taken.submission_id, status.value, taken.number + 1, error)
    try:
        metrics.count_delivery_failed(ctx.redis, taken.kind)
    except RedisError as exc:
        log.debug("failed delivery not counted: %s", exc)
