"""Fixtures of the service tests, built on each other:
servers -> database url -> settings -> app -> client -> keys; and worker and sweeper
processes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from servers import PostgresServer, RedisServer, Sweeper, Worker, service_env, wait_for

from judge.settings import Settings
from service import metrics
from service.migrate import upgrade
from service.settings import ServiceSettings
from tests_support import FIXTURE_PROBLEMS, LAYOUT_GOOD

FAST = {"heartbeat_seconds": 0.3, "stale_after_seconds": 6.0, "sweep_seconds": 0.5,
        "publish_timeout_seconds": 0.5, "rate_limit": "", "submit_rate_limit": "",
        "auth_failure_limit": "", "secret_key": "tests-secret",
        "webhook_backoff_seconds": 0.2, "webhook_timeout_seconds": 3.0}


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = PostgresServer()
    server.init()
    server.start()
    yield server
    server.stop()
    server.remove()


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    """SQLite, the embedded default. Tests that must hold on both use ``any_database_url``."""
    url = f"sqlite:///{tmp_path / 'jaxjudge.db'}"
    upgrade(url)
    return url


@pytest.fixture(params=["sqlite", "postgresql"])
def any_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'jaxjudge.db'}"
    else:
        url = request.getfixturevalue("postgres_server").new_database()
    upgrade(url)
    return url


def make_settings(database_url: str, redis_url: str, **overrides: Any) -> ServiceSettings:
    return ServiceSettings(database_url=database_url, redis_url=redis_url,
                           **{**FAST, **overrides})


@pytest.fixture
def service_settings(database_url: str, redis_server: RedisServer,
                     tmp_path: Path) -> ServiceSettings:
    redis_server.client().flushall()
    return make_settings(database_url, redis_server.url, packages_dir=tmp_path / "packages")


@pytest.fixture
def judge_settings() -> Settings:
    return Settings(problems_dir=FIXTURE_PROBLEMS, sandbox="docker", pool_size=1)


@pytest.fixture
def app(service_settings: ServiceSettings, judge_settings: Settings) -> Iterator[Flask]:
    from app import create_app

    app = create_app(service_settings, judge_settings)
    app.testing = True
    yield app
    app.extensions["jaxjudge"].db.dispose()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def keys(app: Flask) -> dict[str, str]:
    """Keys of tenant ``course-a`` by role, and ``other``: a client of ``course-b``."""
    from service.keys import create_key

    with app.extensions["jaxjudge"].db.session() as s:
        found = {role: create_key(s, "course-a", role) for role in
                 ("client", "instructor", "admin")}
        found["other"] = create_key(s, "course-b", "admin")
    return found


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def submit(client: FlaskClient, key: str, code: str = LAYOUT_GOOD, **body: Any) -> str:
    """POST a submission (of demo/layout unless ``problem`` says otherwise); its id."""
    r = client.post("/v1/submissions", json={"problem": "demo/layout", "code": code, **body},
                    headers=auth(key))
    assert r.status_code in (200, 202), r.get_json()
    sid: str = r.get_json()["id"]
    return sid


def wait_done(client: FlaskClient, key: str, sid: str, timeout: float = 120) -> dict[str, Any]:
    """The submission once it is done (long-polling the API)."""
    def check() -> dict[str, Any] | None:
        body = client.get(f"/v1/submissions/{sid}?wait=2", headers=auth(key)).get_json()
        return body if body["status"] == "done" else None

    found: dict[str, Any] = wait_for(check, timeout, f"submission {sid} done")
    return found


@pytest.fixture
def start_worker(service_settings: ServiceSettings, judge_settings: Settings,
                 tmp_path: Path) -> Iterator[Callable[..., Worker]]:
    """Start real Celery workers with the test's settings; all are stopped afterwards."""
    started: list[Worker] = []

    def start(*args: str, wait: bool = True, **overrides: Any) -> Worker:
        values = {**service_settings.model_dump(), **judge_settings.model_dump(), **overrides}
        worker = Worker(service_env(values), tmp_path / f"worker{len(started)}.log", *args)
        started.append(worker)
        if wait and "webhooks" not in " ".join(args):
            wait_ready(service_settings)
        return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def start_sweeper(service_settings: ServiceSettings, judge_settings: Settings,
                  tmp_path: Path) -> Iterator[Callable[..., Sweeper]]:
    """Start sweeper processes with the test's settings; all are stopped afterwards."""
    started: list[Sweeper] = []

    def start(**overrides: Any) -> Sweeper:
        values = {**service_settings.model_dump(), **judge_settings.model_dump(), **overrides}
        sweeper = Sweeper(service_env(values), tmp_path / f"sweeper{len(started)}.log")
        started.append(sweeper)
        return sweeper

    yield start
    for sweeper in started:
        sweeper.stop()


def wait_ready(settings: ServiceSettings, timeout: float = 90) -> None:
    """Until a grading process announces a ready sandbox."""
    import redis

    client = redis.Redis.from_url(settings.redis_url)
    wait_for(lambda: any(w.get("pool_ready") for w in metrics.workers(client).values()),
             timeout, "a worker with a warm sandbox", every=0.2)
