"""The objects a process shares between requests, built once by the factory and reached
from any view through :func:`services` (``current_app.extensions['jaxjudge']``).

The REST API, the pages and the LTI endpoints are siblings: each reaches the database,
the broker and the library through this accessor, never through another sibling. Where
one sibling offers something another shows (the LTI roster the gradebook reads), it puts
it here at registration (:attr:`Services.rosters`), looked up by what it does, not by
who provides it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from celery import Celery
from flask import current_app
from flask_limiter import Limiter
from redis import Redis

from app.limits import KnownKeys
from judge.settings import Settings
from service.db import Database, utcnow
from service.library import Library
from service.longpoll import Notices, WaitSlots
from service.settings import ServiceSettings


class RosterRead(Protocol):
    """What reading a course's roster from its LMS did: ``ok``, else ``error``."""

    @property
    def ok(self) -> bool: ...

    @property
    def error(self) -> str: ...


RosterSync = Callable[[int], RosterRead]  # a course id -> its roster, read and stored


@dataclass
class Services:
    settings: ServiceSettings
    judge: Settings
    db: Database
    library: Library  # the global catalog and the tenants' own sets
    celery: Celery
    redis: Redis
    limiter: Limiter
    known_keys: KnownKeys
    notices: Notices
    waits: WaitSlots
    rosters: RosterSync | None = None  # set by the LTI endpoints where they are served
    clock: Callable[[], datetime] = utcnow  # the course term's now (tests inject one)


def services() -> Services:
    found: Services = current_app.extensions["jaxjudge"]
    return found
