"""The submission a log line is about: every line logged while a submission is received
(the API) or graded (a worker) carries its id as ``submission=<id>``, the judge's and
the sandbox's lines included, so ``grep <id>`` over the logs of every process finds its
whole story. Lines about no submission say ``submission=-``.

The id lives in a context variable (:func:`about` sets it for a block; a Celery task's
signals set it for the task, :mod:`workers.app`); :class:`SubmissionFilter`, installed on
a process's handlers (:func:`install`), copies it onto each record as
``record.submission``, which the formats below print. A line may also name its
submission itself (``log.info(..., extra={"submission": sid})``: the sweeper's lines).
A thread started while a submission is current does not see it unless it runs in a copy
of the context (``contextvars.copy_context().run``, as the grading heartbeat does).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from contextvars import ContextVar

NONE = "-"  # what a line about no submission says
# The API's lines when nothing else configured logging (gunicorn leaves the root alone).
API_FORMAT = ("[%(asctime)s: %(levelname)s/api %(process)d] submission=%(submission)s "
              "%(name)s: %(message)s")
_current: ContextVar[str | None] = ContextVar("jaxjudge_submission", default=None)


def current() -> str | None:
    return _current.get()


def set_current(submission_id: str | None) -> None:
    """Make ``submission_id`` current until set again (for a Celery task's prerun and
    postrun signals; a block uses :func:`about`)."""
    _current.set(submission_id)


@contextlib.contextmanager
def about(submission_id: str) -> Iterator[None]:
    """Lines logged in the block (in this thread or greenlet) carry ``submission_id``."""
    token = _current.set(submission_id)
    try:
        yield
    finally:
        _current.reset(token)


class SubmissionFilter(logging.Filter):
    """Sets ``record.submission``: the id the line names itself, else the current one,
    else ``-``. Never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "submission", None):
            record.submission = _current.get() or NONE
        return True


def install(logger: logging.Logger, fmt: str | None = None) -> None:
    """Put the filter on every handler of ``logger`` (once each), so that a format with
    ``%(submission)s`` can be used on them; with ``fmt``, give them that format too."""
    for handler in logger.handlers:
        if not any(isinstance(f, SubmissionFilter) for f in handler.filters):
            handler.addFilter(SubmissionFilter())
        if fmt is not None:
            handler.setFormatter(logging.Formatter(fmt))


def configure_api() -> None:
    """The API process's logging: when nothing configured the root logger (gunicorn does
    not, unless given ``--log-config``), INFO and up to standard error in
    :data:`API_FORMAT`; otherwise the filter is added to the handlers found, whose format
    is the configurer's."""
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.StreamHandler(sys.stderr))
        root.setLevel(logging.INFO)
        install(root, API_FORMAT)
    else:
        install(root)
