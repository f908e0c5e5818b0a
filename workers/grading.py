"""The grading task's body: claim, grade with the core, store once, notify.

Faults of the submission are verdicts (the core's report). Faults of the judge end the
submission ``done`` with an ``internal_error`` report saying why: a problem that vanished
or whose package cannot be loaded (an operator must fix it; nothing is retried), a
grading past the soft time limit, a submission whose gradings were lost ``max_attempts``
times. Faults of the infrastructure are not verdicts: when the sandbox is unavailable
(:class:`judge.errors.SandboxError`: the engine down or restarting, the image missing, a
container not created) the submission goes back to the queue, due again after a
backoff, and only after ``sandbox_attempts`` such gradings does it end ``internal_error``
(:mod:`workers.retry`, the same policy as a build's).
A requeue stores no report, so it sends no webhook.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from celery import Celery
from celery.exceptions import SoftTimeLimitExceeded
from redis.exceptions import RedisError

from judge.errors import JudgeError, ProblemError, ProblemNotFound, SandboxError
from judge.grading import grade, internal_error
from judge.problem import Problem
from judge.report import VerdictReport
from service import logcontext, longpoll, metrics
from service.models import Submission
from service.queue import send_delivery
from service.submissions import Claim, Stored, claim, heartbeat, retry_later, store
from workers.context import Context
from workers.retry import postpone_or_give_up

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Unavailable:
    """The sandbox could not run the grading: why, and the problem if it was loaded."""

    reason: str
    problem: Problem | str


def run(ctx: Context, celery: Celery, submission_id: str, *, task_id: str | None = None) -> str:
    """Grade ``submission_id`` if it is ours to grade; returns what happened. Logs a
    line when it is claimed and one when it ends (verdict, postponed, superseded or
    skipped); ``task_id`` (Celery's) ties Celery's lines about the task to them. Every
    line logged meanwhile names the submission (:mod:`service.logcontext`)."""
    with logcontext.about(submission_id):
        return _run(ctx, celery, submission_id, task_id)


def _run(ctx: Context, celery: Celery, submission_id: str, task_id: str | None) -> str:
    started = time.monotonic()
    taken = claim(ctx.db, submission_id, stale_after=ctx.settings.stale_after_seconds)
    _waits_no_longer(ctx, submission_id)
    if taken is None:
        log.info("submission %s: skipped, not ours to grade (done, or graded by a live "
                 "worker)", submission_id)
        return "skipped"
    log.info("submission %s: claimed by worker %s (attempt %d, problem %s, queue %s%s)",
             submission_id, ctx.name, taken.attempt, taken.problem, taken.queue,
             f", task {task_id}" if task_id else "")
    result = _report(ctx, taken)
    if isinstance(result, Unavailable):
        reason = result.reason
        why = postpone_or_give_up(
            ctx.settings, f"grading {submission_id}", taken.failures, reason,
            lambda delay: retry_later(ctx.db, submission_id, taken.attempt, delay=delay,
                                      error=reason), redis=ctx.redis)
        if why is None:
            log.info("submission %s: postponed after %.0f ms (the sandbox is unavailable)",
                     submission_id, _ms(started))
            return "postponed"
        result = internal_error(result.problem, why, ctx.judge)
    if taken.source_notes:  # the report says what was removed from the notebook
        result = result.model_copy(update={"source_notes": list(taken.source_notes)})
    stored = store(ctx.db, submission_id, taken.attempt, result)
    if stored is None:
        log.info("submission %s: %s in %.0f ms, superseded (attempt %d is no longer "
                 "current: a rejudge, or taken over)", submission_id, result.verdict.value,
                 _ms(started), taken.attempt)
        return "superseded"
    log.info("submission %s: %s in %.0f ms (score %g of %g)", submission_id,
             result.verdict.value, _ms(started), result.score, result.max_score)
    _after_store(ctx, celery, submission_id, result, stored)
    return "stored"


def _ms(since: float) -> float:
    return (time.monotonic() - since) * 1000


def _waits_no_longer(ctx: Context, submission_id: str) -> None:
    """Out of the index of waiting submissions: claimed now, or not ours to grade (done,
    or graded elsewhere) either way (the sweeper mends a removal Redis missed)."""
    try:
        metrics.claimed(ctx.redis, [submission_id])
    except RedisError as exc:
        log.debug("waiting index not updated: %s", exc)


def _report(ctx: Context, taken: Claim) -> VerdictReport | Unavailable:
    try:
        problem = ctx.library.get(taken.tenant_id, taken.problem,
                                  version=taken.problem_version)
    except ProblemNotFound:
        return _broken(ctx, taken.problem, "the problem no longer exists")
    except ProblemError as exc:
        return _broken(ctx, taken.problem, f"the problem package cannot be loaded: {exc}")
    if taken.lost >= ctx.settings.max_attempts:
        return internal_error(problem, f"grading was interrupted {taken.lost} times "
                              "(a worker was lost); giving up", ctx.judge)
    with ctx.beating(lambda: heartbeat(ctx.db, taken.submission_id, taken.attempt),
                     taken.submission_id):
        return _grade(ctx, taken, problem)


def _grade(ctx: Context, taken: Claim, problem: Problem) -> VerdictReport | Unavailable:
    try:
        return grade(problem, taken.code, sandbox=ctx.sandbox, settings=ctx.judge,
                     label=taken.submission_id, samples_only=taken.sample_run)
    except SoftTimeLimitExceeded:
        return internal_error(problem, "grading took longer than "
                              f"{ctx.settings.soft_time_limit_seconds:g} s", ctx.judge)
    except SandboxError as exc:  # the infrastructure, not the submission: try again later
        return Unavailable(str(exc) or type(exc).__name__, problem)
    except ProblemError as exc:  # the stored tests do not match the package
        return _broken(ctx, problem, f"the problem package cannot be loaded: {exc}")
    except JudgeError as exc:  # a package naming an unknown checker, ...: not retried
        return _broken(ctx, problem, f"{type(exc).__name__}: {exc}")


def _broken(ctx: Context, problem: Problem | str, message: str) -> VerdictReport:
    problem_id = problem if isinstance(problem, str) else problem.id
    log.error("problem %s: %s", problem_id, message)
    return internal_error(problem, message, ctx.judge)


def _after_store(ctx: Context, celery: Celery, submission_id: str, report: VerdictReport,
                 stored: Stored) -> None:
    """Metrics, the done notice for long-polls, and the first tries of the deliveries
    opened with the report, webhook and LTI score (if one cannot be queued, the sweeper
    sends it)."""
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
    try:
        metrics.count_verdict(ctx.redis, report.verdict.value)
        metrics.observe(ctx.redis, phases)
        longpoll.announce_done(ctx.redis, submission_id)
    except RedisError as exc:
        log.warning("metrics for %s not recorded: %s", submission_id, exc)
    for delivery in stored.opened:
        try:
            send_delivery(celery, delivery, 0, timeout=ctx.settings.publish_timeout_seconds)
        except Exception as exc:  # overdue: the sweeper sends it when the broker is back
            log.error("delivery %s of %s not queued: %s", delivery, submission_id, exc)
