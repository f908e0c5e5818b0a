"""POST/GET/list/rejudge of submissions, through the Flask app with real Redis and a
real database (no worker: these tests look at what the API stores and answers)."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from service_fixtures import auth
from sqlalchemy import func, select

from service.models import Submission
from tests_support import LAYOUT_GOOD as GOOD

pytestmark = pytest.mark.service


def count(app: Flask) -> int:
    with app.extensions["jaxjudge"].db.session() as s:
        return s.scalar(select(func.count()).select_from(Submission)) or 0


def submit(client: FlaskClient, key: str, **body: Any) -> Any:
    payload = {"problem": "demo/layout", "code": GOOD, **body}
    return client.post("/v1/submissions", json=payload, headers=auth(key))


def test_a_submission_is_stored_queued_and_readable(client: FlaskClient, keys: dict[str, str],
                                                    app: Flask) -> None:
    r = submit(client, keys["client"], student_id="alice", metadata={"lms": 7})
    assert r.status_code == 202
    body = r.get_json()
    assert body["status"] == "queued" and body["queued_at"] is not None
    assert r.headers["Location"] == f"/v1/submissions/{body['id']}"
    got = client.get(r.headers["Location"], headers=auth(keys["client"])).get_json()
    assert got["student_id"] == "alice" and got["metadata"] == {"lms": 7}
    assert got["report"] is None
    redis = app.extensions["jaxjudge"].redis
    assert redis.llen("interactive") == 1  # published to the interactive queue


def test_another_tenant_gets_404(client: FlaskClient, keys: dict[str, str]) -> None:
    sid = submit(client, keys["client"]).get_json()["id"]
    r = client.get(f"/v1/submissions/{sid}", headers=auth(keys["other"]))
    assert r.status_code == 404 and r.mimetype == "application/problem+json"
    listed = client.get("/v1/submissions", headers=auth(keys["other"])).get_json()
    assert listed["items"] == []
    r = client.post(f"/v1/submissions/{sid}/rejudge", headers=auth(keys["other"]))
    assert r.status_code == 404


def test_keys_and_roles(client: FlaskClient, keys: dict[str, str]) -> None:
    assert client.get("/v1/problems").status_code == 401
    r = client.get("/v1/problems", headers=auth("jj_not-a-key"))
    assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer")
    sid = submit(client, keys["client"]).get_json()["id"]
    r = client.post(f"/v1/submissions/{sid}/rejudge", headers=auth(keys["client"]))
    assert r.status_code == 403 and r.get_json()["title"] == "Forbidden"
    r = client.post(f"/v1/submissions/{sid}/rejudge", headers=auth(keys["instructor"]))
    assert r.status_code == 202


def test_idempotency_key_makes_retries_safe(client: FlaskClient, keys: dict[str, str],
                                            app: Flask) -> None:
    headers = {**auth(keys["client"]), "Idempotency-Key": "attempt-1"}
    body = {"problem": "demo/layout", "code": GOOD}
    first = client.post("/v1/submissions", json=body, headers=headers)
    again = client.post("/v1/submissions", json=body, headers=headers)
    assert first.get_json()["id"] == again.get_json()["id"]
    assert again.headers["Idempotent-Replayed"] == "true"
    assert count(app) == 1
    other = client.post("/v1/submissions", json={**body, "student_id": "bob"}, headers=headers)
    assert other.status_code == 422 and count(app) == 1
    # Keys are per tenant.
    theirs = client.post("/v1/submissions", json=body,
                         headers={**auth(keys["other"]), "Idempotency-Key": "attempt-1"})
    assert theirs.status_code == 202 and count(app) == 2


BAD_BODIES = [
    ({"code": GOOD}, 422, "problem"),
    ({"problem": "demo/layout"}, 422, "code"),
    ({"problem": "demo/layout", "code": 5}, 422, "code"),
    ({"problem": "demo/layout", "code": GOOD, "extra": 1}, 422, "extra"),
    ({"problem": "demo/nope", "code": GOOD}, 404, "demo/nope"),
    ({"problem": "demo/layout", "code": "   \n"}, 422, "empty"),
    ({"problem": "demo/layout", "code": "x = '\0'"}, 422, "NUL"),
    ({"problem": "demo/layout", "code": "x = '\ud800'"}, 422, "not UTF-8"),
    ({"problem": "demo/layout", "code": "x" * 300_000}, 413, "limit"),
    ({"problem": "demo/layout", "code": GOOD, "student_id": "../etc"}, 422, "student_id"),
    ({"problem": "demo/layout", "code": GOOD, "callback_url": "http://10.0.0.1/hook"}, 422,
     "callback"),
    ({"problem": "demo/layout", "code": GOOD, "callback_url": "file:///etc/passwd"}, 422,
     "callback"),
    ({"problem": "demo/layout", "code": GOOD, "callback_url": "http://localhost:8000/"}, 422,
     "callback"),
    ({"problem": "demo/layout", "code": GOOD, "metadata": {"x": "y" * 5000}}, 422, "metadata"),
]


@pytest.mark.parametrize(("body", "status", "mentions"), BAD_BODIES)
def test_bad_input_is_a_problem_and_stores_nothing(client: FlaskClient, keys: dict[str, str],
                                                    app: Flask, body: dict[str, Any],
                                                    status: int, mentions: str) -> None:
    r = client.post("/v1/submissions", json=body, headers=auth(keys["client"]))
    assert r.status_code == status, r.get_json()
    assert r.mimetype == "application/problem+json"
    problem = r.get_json()
    assert problem["status"] == status and mentions.lower() in str(problem).lower()
    assert count(app) == 0


def test_code_errors_speak_of_the_code_not_a_file(client: FlaskClient, keys: dict[str, str],
                                                  app: Flask) -> None:
    for code, detail in (("  \n", "the code is empty"),
                         ("x = '\0'", "the code contains NUL bytes")):
        r = submit(client, keys["client"], code=code)
        assert (r.status_code, r.get_json()["detail"]) == (422, detail)
    r = client.post("/v1/batches", headers=auth(keys["instructor"]), json={
        "problem": "demo/layout", "submissions": [{"student_id": "bob", "code": "  "}]})
    assert (r.status_code, r.get_json()["detail"]) == (422, "bob: the code is empty")
    assert count(app) == 0


@pytest.mark.parametrize(("data", "content_type", "status"), [
    (b'{"problem": "demo/layout", "code": "\xff\xfe"}', "application/json", 400),
    (b"{not json", "application/json", 400),
    (b"problem=demo/layout", "application/x-www-form-urlencoded", 415),
    (b"[1, 2]", "application/json", 422),
])
def test_undecodable_bodies(client: FlaskClient, keys: dict[str, str], app: Flask, data: bytes,
                            content_type: str, status: int) -> None:
    r = client.post("/v1/submissions", data=data, content_type=content_type,
                    headers=auth(keys["client"]))
    assert r.status_code == status and r.mimetype == "application/problem+json"
    assert count(app) == 0


def test_listing_filters_and_pages(client: FlaskClient, keys: dict[str, str]) -> None:
    ids = [submit(client, keys["client"], student_id=f"s{i % 2}").get_json()["id"]
           for i in range(5)]
    seen: list[str] = []
    url = "/v1/submissions?limit=2"
    while True:
        page = client.get(url, headers=auth(keys["client"])).get_json()
        assert len(page["items"]) <= 2
        seen += [item["id"] for item in page["items"]]
        if page["next_cursor"] is None:
            break
        url = f"/v1/submissions?limit=2&cursor={page['next_cursor']}"
    assert seen == ids[::-1]  # newest first, each once
    only = client.get("/v1/submissions?student_id=s1", headers=auth(keys["client"])).get_json()
    assert {i["student_id"] for i in only["items"]} == {"s1"} and len(only["items"]) == 2
    r = client.get("/v1/submissions?cursor=garbage", headers=auth(keys["client"]))
    assert r.status_code == 400
    r = client.get("/v1/submissions?status=lost", headers=auth(keys["client"]))
    assert r.status_code == 422


def test_broker_down_still_stores_and_leaves_it_for_the_sweeper(
        client: FlaskClient, keys: dict[str, str], app: Flask, redis_server: Any) -> None:
    redis_server.stop()
    try:
        r = submit(client, keys["client"])
        assert r.status_code == 202 and r.get_json()["status"] == "queued"
        assert r.get_json()["queued_at"] is None  # stored, not yet published
    finally:
        redis_server.start()
    with app.extensions["jaxjudge"].db.session() as s:
        row = s.get(Submission, r.get_json()["id"])
        assert row is not None and row.enqueued is False
