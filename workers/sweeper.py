"""The sweeper's process: ``python -m workers.sweeper [--loglevel LEVEL]``.

Runs :func:`service.sweeper.run` until SIGTERM or SIGINT. Start one or more per service
(one sweeps at a time, the others stand by; see :mod:`service.sweeper`).
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from typing import Any

from redis import Redis

from judge.settings import load
from service import logcontext
from service.db import Database
from service.queue import make_celery
from service.settings import ServiceSettings
from service.sweeper import run


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m workers.sweeper",
                                     description="The jaxjudge sweeper (settings: JAXJUDGE_*).")
    parser.add_argument("--loglevel", default="INFO",
                        choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.loglevel, format="[%(asctime)s: %(levelname)s/sweeper] "
                        "submission=%(submission)s %(message)s")
    logcontext.install(logging.getLogger())
    stop = threading.Event()

    def stopping(*_: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    settings = load(ServiceSettings)
    db = Database(settings.database_url)
    redis = Redis.from_url(settings.redis_url, socket_connect_timeout=2, socket_timeout=10)
    logging.getLogger(__name__).info("sweeper started, every %g s", settings.sweep_seconds)
    try:
        run(db, make_celery(settings), redis, settings, stop)
    finally:
        db.dispose()
        logging.getLogger(__name__).info("sweeper stopped")


if __name__ == "__main__":
    main()
