"""service/logcontext.py: a line logged while a submission is current names it, whoever
logs it (the judge's sandbox modules too); a line may name its own; other lines say -."""

from __future__ import annotations

import contextvars
import io
import logging
import threading
from collections.abc import Iterator

import pytest

from service import logcontext


@pytest.fixture
def out() -> Iterator[io.StringIO]:
    """A handler on the root logger in a format with %(submission)s, as a worker's."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    logcontext.install(root, "%(submission)s %(name)s %(message)s")
    level = root.level
    root.setLevel(logging.INFO)
    yield stream
    root.removeHandler(handler)
    root.setLevel(level)


def test_every_line_in_the_block_names_the_submission_and_no_other(out: io.StringIO) -> None:
    pool = logging.getLogger("judge.sandbox.pool")
    pool.warning("before")
    with logcontext.about("s1"):
        pool.warning("a pooled sandbox did not become ready")
        logging.getLogger("workers.grading").info("graded")
        logging.getLogger("service.sweeper").info("other", extra={"submission": "s2"})
    pool.warning("after")
    assert out.getvalue().splitlines() == [
        "- judge.sandbox.pool before",
        "s1 judge.sandbox.pool a pooled sandbox did not become ready",
        "s1 workers.grading graded",
        "s2 service.sweeper other",
        "- judge.sandbox.pool after"]


def test_a_thread_sees_it_only_in_a_copy_of_the_context(out: io.StringIO) -> None:
    def say(what: str) -> None:
        logging.getLogger("workers.context").info(what)

    with logcontext.about("s1"):
        for thread in (threading.Thread(target=say, args=("beat",)),
                       threading.Thread(target=contextvars.copy_context().run,
                                        args=(say, "beat"))):
            thread.start()
            thread.join()
    assert out.getvalue().splitlines() == ["- workers.context beat",
                                           "s1 workers.context beat"]


def test_install_adds_the_filter_once() -> None:
    logger = logging.getLogger("tests.logcontext")
    handler = logging.NullHandler()
    logger.addHandler(handler)
    try:
        logcontext.install(logger)
        logcontext.install(logger)
        assert len(handler.filters) == 1
    finally:
        logger.removeHandler(handler)
