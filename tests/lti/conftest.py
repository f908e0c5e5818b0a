"""Fixtures of the LTI tests: the tool (the whole app: API, pages, LTI endpoints) served
over HTTP on 127.0.0.1 by a thread, with real Redis and the SQLite database of the shared
fixtures; the test platform (tests/lti/platform.py) served beside it and registered with
tenant ``course-a``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from flask import Flask
from redis import Redis
from servers import RedisServer, free_port
from service_fixtures import make_settings
from werkzeug.serving import make_server

from judge.catalog import Catalog
from judge.settings import Settings
from lti import platforms
from lti.keysets import KeySets
from service.db import Database
from service.library import Library
from service.settings import ServiceSettings
from tests.lti.platform import TestPlatform
from tests.lti.services_support import Setup, make_setup
from tests_support import FIXTURE_PROBLEMS
from workers.context import Context

TENANT = "course-a"


@dataclass
class Tool:
    app: Flask
    base: str

    @property
    def db(self) -> Database:
        found: Database = self.app.extensions["jaxjudge"].db
        return found

    @property
    def keysets(self) -> KeySets:
        found: KeySets = self.app.extensions["jaxjudge.lti.keysets"]
        return found


@pytest.fixture
def service_settings(database_url: str, redis_server: RedisServer) -> ServiceSettings:
    """The shared settings, with the test platform's address (127.0.0.1) let through the
    SSRF policy of the judge's outgoing requests, as an LMS on a private address is."""
    redis_server.client().flushall()
    return make_settings(database_url, redis_server.url,
                         webhook_allow=["127.0.0.1", "localhost"])


@pytest.fixture
def lti_settings(service_settings: ServiceSettings) -> ServiceSettings:
    """The settings of tries made in this process (quick retries)."""
    return service_settings.model_copy(update={
        "secret_key": "tests-secret", "webhook_allow": ["127.0.0.1"],
        "lti_backoff_seconds": 0.1, "lti_timeout_seconds": 3.0})


@pytest.fixture
def db(tool: Tool) -> Database:
    return tool.db


@pytest.fixture
def ctx(db: Database, lti_settings: ServiceSettings, redis_server: RedisServer) -> Context:
    """What the delivery task's body needs, to make tries in this process."""
    return Context(settings=lti_settings, judge=Settings(problems_dir=FIXTURE_PROBLEMS),
                   db=db, redis=Redis.from_url(redis_server.url),
                   library=Library(Catalog(FIXTURE_PROBLEMS), db, lti_settings.packages_dir),
                   name="test")


@pytest.fixture
def setup(db: Database, lti_settings: ServiceSettings, platform: TestPlatform) -> Setup:
    return make_setup(db, lti_settings, platform)


@pytest.fixture
def tool(app: Flask) -> Iterator[Tool]:
    port = free_port()
    server = make_server("127.0.0.1", port, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    found = Tool(app, f"http://127.0.0.1:{port}")
    # A rotated platform key is fetched at the next launch (the cooldown that spaces the
    # refreshes of a process is a matter of time, which the tests do not wait for).
    found.keysets.cooldown = 0
    yield found
    server.shutdown()
    server.server_close()


@pytest.fixture
def platform(tool: Tool) -> Iterator[TestPlatform]:
    with TestPlatform(tool.base) as found:
        with tool.db.session() as s:
            found.platform_id = platforms.add(s, TENANT, **found.registration).id
        yield found
