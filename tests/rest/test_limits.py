"""Rate limits per key and failed authentications per address, backed by Redis,
answered 429 as problem details; a body limit per route."""

from __future__ import annotations

import io
import json
import secrets
from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient
from servers import RedisServer
from service_fixtures import auth, make_settings

from judge.settings import Settings

pytestmark = pytest.mark.service


def test_rate_limits_count_per_key(database_url: str, redis_server: RedisServer,
                                   judge_settings: Settings) -> None:
    from app import create_app
    from service.keys import create_key

    redis_server.client().flushall()
    app = create_app(make_settings(database_url, redis_server.url, rate_limit="5/minute",
                                   submit_rate_limit="2/minute"), judge_settings)
    with app.extensions["jaxjudge"].db.session() as s:
        mine, theirs = create_key(s, "a", "client"), create_key(s, "b", "client")
    client = app.test_client()
    codes = [client.get("/v1/problems", headers=auth(mine)).status_code for _ in range(6)]
    assert codes == [200] * 5 + [429]
    r = client.get("/v1/problems", headers=auth(mine))
    assert r.mimetype == "application/problem+json" and int(r.headers["Retry-After"]) > 0
    assert client.get("/v1/problems", headers=auth(theirs)).status_code == 200  # per key
    assert client.get("/healthz").status_code == 200  # never limited
    body = {"problem": "demo/layout", "code": "x = 1"}
    posts = [client.post("/v1/submissions", json=body, headers=auth(theirs)).status_code
             for _ in range(3)]
    assert posts == [202, 202, 429]
    assert any(b"rate" in k for k in redis_server.client().keys("*"))  # counted in Redis


def random_key() -> str:
    return "jj_" + secrets.token_urlsafe(32)


def key_lookups(statements: list[str]) -> int:
    return sum("api_keys" in s for s in statements)


def test_random_keys_from_one_address_are_refused_before_the_database(
        database_url: str, redis_server: RedisServer, judge_settings: Settings,
        statements: Callable[[Flask], list[str]]) -> None:
    from app import create_app
    from service.keys import create_key

    redis_server.client().flushall()
    app = create_app(make_settings(database_url, redis_server.url, auth_failure_limit="5/minute"),
                     judge_settings)
    with app.extensions["jaxjudge"].db.session() as s:
        real = create_key(s, "a", "client")
    client = app.test_client()
    attacker = {"REMOTE_ADDR": "203.0.113.9"}
    assert client.get("/v1/problems", headers=auth(real), environ_base=attacker).status_code == 200
    seen = statements(app)
    codes = [client.get("/v1/problems", headers=auth(random_key()),
                        environ_base=attacker).status_code for _ in range(12)]
    assert codes == [401] * 5 + [429] * 7
    assert key_lookups(seen) == 5  # the 7 refused keys never reached the database
    r = client.get("/v1/submissions", headers=auth(random_key()), environ_base=attacker)
    assert r.status_code == 429 and r.mimetype == "application/problem+json"
    assert int(r.headers["Retry-After"]) > 0
    # The real key behind the same address still works: it authenticated before.
    assert client.get("/v1/problems", headers=auth(real), environ_base=attacker).status_code == 200
    other = {"REMOTE_ADDR": "198.51.100.4"}
    assert client.get("/v1/problems", headers=auth(random_key()),
                      environ_base=other).status_code == 401


def test_behind_a_proxy_the_forwarded_client_address_counts(
        database_url: str, redis_server: RedisServer, judge_settings: Settings) -> None:
    from app import create_app

    def codes(app: Flask, forwarded_for: list[str]) -> list[int]:
        client = app.test_client()
        return [client.get("/v1/problems", headers={**auth(random_key()), "X-Forwarded-For": f},
                           environ_base={"REMOTE_ADDR": "10.0.0.2"}).status_code
                for f in forwarded_for]

    redis_server.client().flushall()
    proxied = create_app(make_settings(database_url, redis_server.url, auth_failure_limit="2/minute",
                                       trusted_proxy_hops=1), judge_settings)
    assert codes(proxied, ["198.51.100.1"] * 3) == [401, 401, 429]
    assert codes(proxied, ["198.51.100.2"]) == [401]  # another client behind the same proxy
    # Without a trusted proxy the header is the client's to forge: the peer address counts.
    redis_server.client().flushall()
    direct = create_app(make_settings(database_url, redis_server.url, auth_failure_limit="2/minute"),
                        judge_settings)
    assert codes(direct, ["198.51.100.1", "198.51.100.2", "198.51.100.3"]) == [401, 401, 429]


def test_each_route_has_its_own_body_limit(client: FlaskClient, keys: dict[str, str],
                                           app: Flask) -> None:
    # Past the submitting limit: twice the notebook limit (4 MiB) and a little.
    body = json.dumps({"problem": "demo/layout", "code": "x = 1\n" * ((9 << 20) // 6 + 1)}).encode()
    assert len(body) >= 9 << 20
    stream = io.BytesIO(body)
    r = client.post("/v1/submissions", input_stream=stream, content_length=len(body),
                    content_type="application/json", headers=auth(keys["client"]))
    assert r.status_code == 413 and r.mimetype == "application/problem+json"
    assert stream.tell() == 0  # refused on its length, not read
    # Code at the limit still fits however JSON escapes it (\u0001: 6 bytes a character).
    code = "x = '" + "\x01" * (app.extensions["jaxjudge"].judge.max_code_bytes - 7) + "'\n"
    r = client.post("/v1/submissions", json={"problem": "demo/layout", "code": code},
                    headers=auth(keys["client"]))
    assert r.status_code == 202, r.get_json()
    # Batches have their own, larger limit.
    batch = json.dumps({"problem": "demo/layout", "submissions": [
        {"student_id": f"s{i}", "code": "x = 1\n" * 20_000} for i in range(20)]}).encode()
    assert 2 << 20 < len(batch) < app.extensions["jaxjudge"].settings.max_request_bytes
    r = client.post("/v1/batches", data=batch, content_type="application/json",
                    headers=auth(keys["instructor"]))
    assert r.status_code == 202, r.get_json()
