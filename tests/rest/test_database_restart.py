"""PostgreSQL restarted under a running API: 503 with Retry-After meanwhile, then it
recovers by itself (pre-ping drops the dead connections)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask import Flask
from servers import PostgresServer, RedisServer
from service_fixtures import auth, make_settings

from judge.settings import Settings
from service.migrate import upgrade
from tests_support import LAYOUT_GOOD as GOOD

pytestmark = pytest.mark.service


@pytest.fixture
def pg_app(postgres_server: PostgresServer, redis_server: RedisServer,
           judge_settings: Settings) -> Iterator[Flask]:
    from app import create_app

    url = postgres_server.new_database()
    upgrade(url)
    app = create_app(make_settings(url, redis_server.url), judge_settings)
    yield app
    app.extensions["jaxjudge"].db.dispose()


def test_the_api_answers_503_while_the_database_restarts(
        pg_app: Flask, postgres_server: PostgresServer) -> None:
    from service.keys import create_key

    with pg_app.extensions["jaxjudge"].db.session() as s:
        key = create_key(s, "course-a", "client")
    client = pg_app.test_client()
    sid = client.post("/v1/submissions", json={"problem": "demo/layout", "code": GOOD},
                      headers=auth(key)).get_json()["id"]
    postgres_server.stop()
    try:
        for r in (client.get(f"/v1/submissions/{sid}", headers=auth(key)),
                  client.post("/v1/submissions", json={"problem": "demo/layout", "code": GOOD},
                              headers=auth(key)),
                  client.get("/readyz")):
            assert r.status_code == 503, r.get_data(as_text=True)
        r = client.get(f"/v1/submissions/{sid}", headers=auth(key))
        assert r.mimetype == "application/problem+json" and r.headers["Retry-After"] == "5"
        assert client.get("/healthz").status_code == 200  # the process itself is alive
    finally:
        postgres_server.start()
    r = client.get(f"/v1/submissions/{sid}", headers=auth(key))
    assert r.status_code == 200 and r.get_json()["id"] == sid
    listed = client.get("/v1/submissions", headers=auth(key)).get_json()
    assert [i["id"] for i in listed["items"]] == [sid]  # the failed POST stored nothing
