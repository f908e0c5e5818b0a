"""The Celery app of the workers: ``celery -A workers.app worker ...``.

Tasks are named (``jaxjudge.grade``, ``jaxjudge.deliver_webhook``) so the API can send
them without importing this package. Each prefork child builds its own context after the
fork (database connections and the warm pool must not cross a fork); a worker's main
process runs the sweeper unless started with ``--without-sweeper``.
"""

from __future__ import annotations

import logging
from typing import Any

import click
from celery import Task, bootsteps
from celery.signals import worker_process_init, worker_process_shutdown

from service.queue import GRADE_TASK, WEBHOOK_TASK, make_celery
from service.settings import ServiceSettings
from service.submissions import sweep
from workers import grading, webhooks
from workers.context import Context

log = logging.getLogger(__name__)
app = make_celery(ServiceSettings())
_context: Context | None = None


def context() -> Context:
    global _context
    if _context is None:
        _context = Context.build()
    return _context


@worker_process_init.connect
def _child_started(**_: Any) -> None:
    """Warm the sandbox pool in each grading child as soon as it exists."""
    ctx = context()
    ctx.sandbox  # noqa: B018 - starts the pool's filler
    ctx.start_announcing()


@worker_process_shutdown.connect
def _child_stopping(**_: Any) -> None:
    if _context is not None:
        _context.close()


@app.task(name=GRADE_TASK, bind=True)
def grade(self: Task, submission_id: str) -> str:
    return grading.run(context(), app, submission_id)


@app.task(name=WEBHOOK_TASK, bind=True, max_retries=None)
def deliver_webhook(self: Task, submission_id: str, delivery_id: str, try_no: int) -> None:
    delay = webhooks.attempt(context(), submission_id, delivery_id, try_no)
    if delay is not None:
        raise self.retry(args=[submission_id, delivery_id, try_no + 1], countdown=delay)


class Sweeper(bootsteps.StartStopStep):
    """Every ``sweep_seconds``: requeue lost gradings, publish what the broker missed."""

    requires = {"celery.worker.components:Timer"}

    def __init__(self, parent: Any, without_sweeper: bool = False, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.enabled = not without_sweeper
        self.tref: Any = None
        self.ctx: Context | None = None

    def start(self, worker: Any) -> None:
        self.ctx = Context.build()
        self.tref = worker.timer.call_repeatedly(self.ctx.settings.sweep_seconds, self.sweep,
                                                 priority=10)

    def sweep(self) -> None:
        assert self.ctx is not None
        try:
            sweep(self.ctx.db, app, self.ctx.settings)
        except Exception as exc:  # the database or broker away: next time
            log.warning("sweep failed: %s", exc)

    def stop(self, worker: Any) -> None:
        if self.tref is not None:
            self.tref.cancel()
        if self.ctx is not None:
            self.ctx.db.dispose()


app.user_options["worker"].add(click.Option(
    ["--without-sweeper"], is_flag=True, default=False,
    help="Do not run the jaxjudge sweeper in this worker."))
app.steps["worker"].add(Sweeper)
