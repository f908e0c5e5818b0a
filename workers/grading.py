"""The grading task's body: claim, grade with the core, store once, notify.

Failures become verdicts: a problem that vanished, a grading past the soft time limit,
or a submission whose gradings were lost ``max_attempts`` times all end ``done`` with an
``internal_error`` report. A sandbox that cannot start (the engine is away) puts the
submission back in the queue for the sweeper instead, since no verdict could be trusted.
"""

from __future__ import annotations

import logging
import threading

from celery import Celery
from celery.exceptions import SoftTimeLimitExceeded
from redis.exceptions import RedisError

from judge.errors import JudgeError, ProblemNotFound
from judge.grading import grade, internal_error
from judge.report import VerdictReport
from judge.verdict import Verdict
from service import metrics
from service.models import Submission
from service.queue import send_webhook
from service.submissions import Claim, claim, heartbeat, release, start_webhook, store
from workers.context import Context

log = logging.getLogger(__name__)


def run(ctx: Context, celery: Celery, submission_id: str) -> str:
    """Grade ``submission_id`` if it is ours to grade; returns what happened."""
    taken = claim(ctx.db, submission_id, stale_after=ctx.settings.stale_after_seconds)
    if taken is None:
        return "skipped"
    report = _report(ctx, taken)
    if report is None:
        release(ctx.db, submission_id, taken.attempt)
        return "released"
    if not store(ctx.db, submission_id, taken.attempt, report):
        return "superseded"
    _after_store(ctx, celery, submission_id, report)
    return "stored"


def _report(ctx: Context, taken: Claim) -> VerdictReport | None:
    try:
        problem = ctx.catalog.get(taken.problem)
    except ProblemNotFound:
        return VerdictReport(problem=taken.problem, problem_version="",
                             verdict=Verdict.INTERNAL_ERROR, score=0, max_score=0, time_ms=0,
                             message="the problem no longer exists", tests=[])
    if taken.tries > ctx.settings.max_attempts:
        return internal_error(problem, f"grading was interrupted {taken.tries - 1} times "
                              "(a worker was lost); giving up", ctx.judge)
    stop = threading.Event()
    beat = threading.Thread(target=_beat, args=(ctx, taken, stop), daemon=True)
    beat.start()
    try:
        return grade(problem, taken.code, sandbox=ctx.sandbox, settings=ctx.judge,
                     label=taken.submission_id)
    except SoftTimeLimitExceeded:
        return internal_error(problem, "grading took longer than "
                              f"{ctx.settings.soft_time_limit_seconds:g} s", ctx.judge)
    except JudgeError as exc:  # the sandbox could not run at all
        log.error("grading %s failed, left for the sweeper: %s", taken.submission_id, exc)
        return None
    finally:
        stop.set()


def _beat(ctx: Context, taken: Claim, stop: threading.Event) -> None:
    while not stop.wait(ctx.settings.heartbeat_seconds):
        try:
            heartbeat(ctx.db, taken.submission_id, taken.attempt)
        except Exception as exc:  # the database away for a moment: try again next beat
            log.warning("heartbeat of %s failed: %s", taken.submission_id, exc)


def _after_store(ctx: Context, celery: Celery, submission_id: str,
                 report: VerdictReport) -> None:
    with ctx.db.session() as s:
        row = s.get(Submission, submission_id)
        assert row is not None
        phases = {"tests": report.timings.tests_ms / 1000,
                  "startup": (report.timings.startup_ms + report.timings.import_ms) / 1000,
                  "grading": report.timings.total_ms / 1000}
        if row.started_at and row.finished_at:
            phases["total"] = (row.finished_at - row.received_at).total_seconds()
            if row.queued_at:
                phases["queue"] = max(0.0, (row.started_at - row.queued_at).total_seconds())
        callback = row.callback_url
    try:
        metrics.observe(ctx.redis, phases)
        metrics.announce_done(ctx.redis, submission_id)
    except RedisError as exc:
        log.warning("metrics for %s not recorded: %s", submission_id, exc)
    if callback:
        delivery = start_webhook(ctx.db, submission_id)
        try:
            send_webhook(celery, submission_id, delivery, 0,
                         timeout=ctx.settings.publish_timeout_seconds)
        except Exception as exc:  # overdue: the sweeper sends it when the broker is back
            log.error("webhook for %s not queued: %s", submission_id, exc)
