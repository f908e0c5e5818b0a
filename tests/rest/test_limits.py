"""Rate limits per key, backed by Redis, answered 429 as problem details."""

from __future__ import annotations

import pytest
from servers import RedisServer
from service_fixtures import auth, make_settings

from judge.settings import Settings

pytestmark = pytest.mark.service


def test_rate_limits_count_per_key(database_url: str, redis_server: RedisServer,
                                   judge_settings: Settings) -> None:
    from api import create_app
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
