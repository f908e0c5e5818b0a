"""The Celery app of the workers: ``celery -A workers.app worker ...``.

Tasks are named (``jaxjudge.grade``, ``jaxjudge.build``: an uploaded package built and
verified, ``jaxjudge.deliver``: one try of a webhook or an
LTI score) so the API can send
them without importing this package. A grading worker (one that consumes ``interactive``
or ``batch``) checks in its main process, before any pool process exists, that its
sandbox isolates, and refuses to start otherwise (:mod:`workers.isolation`). Each prefork
child builds its own context after the fork (database connections and the warm pool
must not cross a fork). The sweeper is a process of its own (``python -m workers.sweeper``).

Every line a worker logs says which submission it is about (``submission=<id>``, or
``-``: :mod:`service.logcontext`): a grading task's id is current from its prerun signal
to its postrun, so Celery's own lines about the task (its result, its failure) carry it
too; a delivery's submission is current once its try is claimed.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, bootsteps
from celery.signals import (
    after_setup_logger,
    after_setup_task_logger,
    task_postrun,
    task_prerun,
    worker_process_init,
    worker_process_shutdown,
)
from celery.utils.log import get_multiprocessing_logger

from judge.errors import SandboxError
from judge.sandbox import backend
from judge.settings import Settings, load
from service import logcontext
from service.queue import (
    BUILD_TASK,
    DELIVER_TASK,
    GRADE_TASK,
    GRADING_QUEUES,
    WEBHOOK_TASK,
    make_celery,
)
from service.settings import ServiceSettings
from workers import building, deliveries, grading
from workers.context import Context
from workers.isolation import Refused, grading_sandbox

log = logging.getLogger(__name__)
_settings = load(ServiceSettings)  # a bad JAXJUDGE_* value: one line, exit 2
app = make_celery(_settings)
app.conf.worker_log_format = ("[%(asctime)s: %(levelname)s/%(processName)s] "
                              "submission=%(submission)s %(message)s")
app.conf.worker_task_log_format = ("[%(asctime)s: %(levelname)s/%(processName)s] "
                                   "submission=%(submission)s %(task_name)s[%(task_id)s]: "
                                   "%(message)s")
_context: Context | None = None
_sandbox: str | None = None  # the backend the main process resolved; children inherit it


def context() -> Context:
    global _context
    if _context is None:
        _context = Context.build(_sandbox)
    return _context


class SandboxCheck(bootsteps.Step):
    """Fail closed: a grading worker whose sandbox does not isolate exits with status 1
    and a one-line reason, before its pool forks (``__init__`` runs while the worker is
    built, before any step starts)."""

    name = "jaxjudge sandbox check"

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        global _sandbox
        if not set(parent.app.amqp.queues.consume_from) & set(GRADING_QUEUES):
            return  # a delivery worker: it grades nothing
        try:
            _sandbox = grading_sandbox(load(Settings), ServiceSettings().insecure_unsandboxed_grading)
        except Refused as exc:
            log.critical("refusing to start: %s", exc)
            raise SystemExit(1) from None
        if not backend(_sandbox).isolated:
            log.warning("GRADING WITHOUT ISOLATION: the %s sandbox runs submissions as this "
                        "worker's user (insecure_unsandboxed_grading is on)", _sandbox)


app.steps["worker"].add(SandboxCheck)


@after_setup_logger.connect
def _logs_name_submissions(logger: logging.Logger, **_: Any) -> None:
    """The handlers Celery made with :data:`worker_log_format` (the root's, and the
    multiprocessing logger's, which uses the same format) get the filter that fills
    ``%(submission)s``."""
    logcontext.install(logger)
    logcontext.install(get_multiprocessing_logger())


@after_setup_task_logger.connect
def _task_logs_name_submissions(logger: logging.Logger, **_: Any) -> None:
    logcontext.install(logger)


@task_prerun.connect
def _task_started(task: Task, args: tuple[Any, ...] | None = None, **_: Any) -> None:
    """A grading task's submission is current while it runs; any other task starts with
    none (a delivery names its own once it has claimed a try)."""
    logcontext.set_current(str(args[0]) if task.name == GRADE_TASK and args else None)


@task_postrun.connect
def _task_ended(**_: Any) -> None:
    logcontext.set_current(None)


@worker_process_init.connect
def _child_started(**_: Any) -> None:
    """Warm the sandbox pool in each grading child as soon as it exists."""
    ctx = context()
    try:
        ctx.sandbox  # noqa: B018 - starts the pool's filler
    except SandboxError as exc:  # the engine away: each grading tries again
        log.warning("sandbox not available yet: %s", exc)
    ctx.start_announcing()


@worker_process_shutdown.connect
def _child_stopping(**_: Any) -> None:
    if _context is not None:
        _context.close()


@app.task(name=GRADE_TASK, bind=True)
def grade(self: Task, submission_id: str) -> str:
    return grading.run(context(), app, submission_id, task_id=self.request.id)


@app.task(name=BUILD_TASK, bind=True, soft_time_limit=_settings.build_time_limit_seconds,
          time_limit=_settings.build_time_limit_seconds + 60)
def build_package(self: Task, version_id: str) -> str:
    """Build and verify an uploaded package version in the sandbox."""
    return building.run(context(), version_id)


def _deliver(task: Task, args: tuple[Any, ...]) -> None:
    delivery_id, try_no = args[-2], args[-1]
    delay = deliveries.attempt(context(), delivery_id, try_no)
    if delay is not None:
        raise task.retry(args=[delivery_id, try_no + 1], countdown=delay)


@app.task(name=DELIVER_TASK, bind=True, max_retries=None)
def deliver(self: Task, *args: Any) -> None:
    """Args ``(delivery_id, try_no)``: a try of a webhook or an LTI score."""
    _deliver(self, args)


@app.task(name=WEBHOOK_TASK, bind=True, max_retries=None)
def deliver_webhook(self: Task, *args: Any) -> None:
    """The task's name before LTI scores, for messages queued then: ``(delivery_id,
    try_no)``, or ``(submission_id, delivery_id, try_no)`` from before the outbox table
    (a moved delivery kept its id)."""
    _deliver(self, args)
