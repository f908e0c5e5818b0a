"""Long-polls (?wait=) hold no thread: one API process under gunicorn's gevent worker
keeps 100 of them waiting (more than the 2 x 16 threads the API once had) and still
answers other requests; a waiter is woken by its submission's done notice; an API key
holds at most ``long_poll_max_per_key`` of them."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests
from flask import Flask
from flask.testing import FlaskClient
from servers import Gunicorn, PostgresServer, RedisServer, service_env, wait_for
from service_fixtures import auth, make_settings
from sqlalchemy import select

from judge.report import VerdictReport
from judge.settings import Settings
from judge.verdict import Verdict
from service import longpoll
from service.db import Database
from service.keys import create_key
from service.longpoll import WAITS_KEY
from service.migrate import upgrade
from service.models import ApiKey
from service.submissions import claim, store
from tests_support import LAYOUT_GOOD

pytestmark = pytest.mark.service
WAITERS = 100


def finish(db: Database, redis: Any, sid: str) -> None:
    """Store a report and send the done notice, as a worker does."""
    taken = claim(db, sid, stale_after=30)
    assert taken is not None
    store(db, sid, taken.attempt, VerdictReport(
        problem="demo/layout", problem_version="v", verdict=Verdict.ACCEPTED, score=1,
        max_score=1, time_ms=1, tests=[]))
    longpoll.announce_done(redis, sid)


def key_id(db: Database, key: str) -> int:
    with db.session() as s:
        found = s.scalar(select(ApiKey.id).where(ApiKey.prefix == key[:12]))
    assert found is not None
    return found


@pytest.fixture
def one_process(postgres_server: PostgresServer, redis_server: RedisServer,
                judge_settings: Settings, tmp_path: Path) -> Iterator[tuple[str, Database]]:
    """The API as deployed (gunicorn, gevent, PostgreSQL), one process; its URL and database."""
    url = postgres_server.new_database()
    upgrade(url)
    redis_server.client().flushall()
    settings = make_settings(url, redis_server.url, long_poll_max_per_key=WAITERS + 10,
                             long_poll_max_seconds=120)
    api = Gunicorn(service_env({**settings.model_dump(), **judge_settings.model_dump()}),
                   tmp_path / "gunicorn.log", workers=1)
    db = Database(url)
    yield api.base, db
    api.stop()
    db.dispose()


def test_one_process_answers_others_while_100_long_polls_wait(
        one_process: tuple[str, Database], redis_server: RedisServer) -> None:
    base, db = one_process
    with db.session() as s:
        key = create_key(s, "course-a", "client")
    headers = auth(key)
    http = requests.Session()
    posted = [http.post(f"{base}/v1/submissions", headers=headers, timeout=30,
                        json={"problem": "demo/layout", "code": LAYOUT_GOOD}).json()
              for _ in range(WAITERS + 1)]
    assert all(p["queued_at"] for p in posted)  # Celery's publish works under gevent
    ids = [p["id"] for p in posted]
    waiting, other = ids[:WAITERS], ids[-1]
    redis = redis_server.client()
    slots = f"{WAITS_KEY}{key_id(db, key)}"

    def wait(sid: str) -> dict[str, Any]:
        with requests.Session() as own:
            r = own.get(f"{base}/v1/submissions/{sid}?wait=120", headers=headers, timeout=150)
        assert r.status_code == 200
        body: dict[str, Any] = r.json()
        return body

    with ThreadPoolExecutor(max_workers=WAITERS) as pool:
        futures: dict[str, Future[dict[str, Any]]] = {s: pool.submit(wait, s) for s in waiting}
        wait_for(lambda: redis.zcard(slots) == WAITERS or any(f.done() for f in futures.values()),
                 60, f"{WAITERS} long-polls waiting")
        assert http.get(f"{base}/healthz", timeout=150).status_code == 200
        assert http.get(f"{base}/v1/submissions/{other}", headers=headers,
                        timeout=150).json()["status"] == "queued"
        assert not any(f.done() for f in futures.values())  # answered while all still wait
        finish(db, redis, waiting[0])
        assert futures[waiting[0]].result(timeout=60)["status"] == "done"  # woken
        assert not any(futures[s].done() for s in waiting[1:])
        for sid in waiting[1:]:
            finish(db, redis, sid)
        assert {f.result(timeout=60)["status"] for f in futures.values()} == {"done"}
    assert redis.zcard(slots) == 0  # every slot given back


def test_a_key_holds_at_most_its_long_polls(app: Flask, client: FlaskClient,
                                            keys: dict[str, str],
                                            redis_server: RedisServer) -> None:
    svc = app.extensions["jaxjudge"]
    svc.waits.limit = 2
    mine, theirs = keys["client"], keys["other"]

    def submit(key: str) -> str:
        r = client.post("/v1/submissions", json={"problem": "demo/layout", "code": LAYOUT_GOOD},
                        headers=auth(key))
        sid: str = r.get_json()["id"]
        return sid

    ids = [submit(mine) for _ in range(3)]
    answers: dict[str, Any] = {}

    def wait(sid: str, key: str = mine) -> None:
        answers[sid] = app.test_client().get(f"/v1/submissions/{sid}?wait=30",
                                             headers=auth(key))

    threads = [threading.Thread(target=wait, args=(sid,)) for sid in ids[:2]]
    for t in threads:
        t.start()
    slots = f"{WAITS_KEY}{key_id(svc.db, mine)}"
    redis = redis_server.client()
    wait_for(lambda: redis.zcard(slots) == 2, 30, "two long-polls waiting")
    third = client.get(f"/v1/submissions/{ids[2]}?wait=30", headers=auth(mine))
    assert third.status_code == 200 and third.get_json()["status"] == "queued"
    assert third.headers["Jaxjudge-Wait"] == "skipped"  # answered at once
    posted = client.post("/v1/submissions?wait=30", headers=auth(mine),
                         json={"problem": "demo/layout", "code": LAYOUT_GOOD})
    assert posted.status_code == 202 and posted.headers["Jaxjudge-Wait"] == "skipped"
    # Another key is not held back by this one: it waits, and is woken.
    sid = submit(theirs)
    threads.append(threading.Thread(target=wait, args=(sid, theirs)))
    threads[-1].start()
    wait_for(lambda: redis.zcard(f"{WAITS_KEY}{key_id(svc.db, theirs)}") == 1, 30,
             "the other key's long-poll waiting")
    for done in [*ids[:2], sid]:
        finish(svc.db, redis, done)
    for t in threads:
        t.join(30)
    assert [answers[s].get_json()["status"] for s in [*ids[:2], sid]] == ["done"] * 3
    assert "Jaxjudge-Wait" not in answers[sid].headers
    assert redis.zcard(slots) == 0
