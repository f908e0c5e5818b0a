"""Every grade reaches the LMS once things are fixed (issue 20, item 7): a grade or a
webhook refused by the address policy says what to set and is sent by itself once the
allow-list lets it through (the sweeper notices the change; the operator does nothing
more); a grade that failed for good is shown whole on the gradebook and sent again from
there, or with ``jaxjudge deliveries retry``; each is taken by its destination once.

The first tries are made in this process with the settings of a judge whose allow-list
misses the LMS; what follows runs in real sweeper and delivery worker processes with
the allow-list set, against the test platform over HTTP on 127.0.0.1, real Redis and
the database."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from servers import Sweeper, Worker, wait_for
from sqlalchemy import select

from service.courses import upsert_assignment
from service.db import Database
from service.models import Course, Status, Submission, Tenant
from service.scores import SCORE_SCOPE
from service.settings import ServiceSettings
from service.submissions import claim, new_id, store
from service.webhooks import verify
from tests.lti.platform import TestPlatform
from tests.lti.services_support import (
    Setup,
    delivery,
    graded,
    report,
    run_tries,
    wait_status,
)
from tests.web.pages_support import csrf_token, sign_in
from workers.context import Context

pytestmark = [pytest.mark.service]
LTI = {"webhook_allow": ["127.0.0.1"], "secret_key": "tests-secret",
       "lti_backoff_seconds": 0.2, "lti_timeout_seconds": 3.0}
ADVICE = ('to let the judge reach it, add "127.0.0.1" to JAXJUDGE_WEBHOOK_ALLOW (a JSON '
          'list of hosts, addresses or networks)')
JAXJUDGE = str(Path(sys.executable).parent / "jaxjudge")


def without_allow(ctx: Context) -> Context:
    """The delivery worker of a judge whose allow-list does not name the LMS yet."""
    return dataclasses.replace(ctx, settings=ctx.settings.model_copy(
        update={"webhook_allow": []}))


def gradebook(client: FlaskClient, sid: str, setup: Setup) -> str:
    page = client.get(f"/app/{sid}/assignments/{setup.assignment_id}/gradebook")
    assert page.status_code == 200
    return page.get_data(as_text=True)


def sweeper_rounds(sweeper: Sweeper, more: int) -> None:
    """Until the sweeper has made ``more`` rounds after this call."""
    start = sweeper.rounds()
    wait_for(lambda: sweeper.rounds() >= start + more, 60, f"{more} sweeper rounds")


def test_a_refused_grade_says_what_to_set_and_goes_by_itself_once_it_is_set(
        client: FlaskClient, keys: dict[str, str], ctx: Context, setup: Setup,
        db: Database, platform: TestPlatform,
        start_worker: Callable[..., Worker], start_sweeper: Callable[..., Sweeper]) -> None:
    _, opened = graded(setup, "ana", 2.0)
    assert opened is not None
    row = run_tries(without_allow(ctx), opened)
    # Refused, not failed: the words say which setting lifts it, whole.
    assert (row.status, row.attempts) == ("refused", 1)
    assert row.last_error == ("token endpoint: refused: 127.0.0.1 is not a public address; "
                              + ADVICE)
    assert platform.services.scores == []
    sid = sign_in(client, keys["instructor"])
    page = gradebook(client, sid, setup)
    assert row.last_error.replace('"', "&#34;") in page  # on the gradebook, not cut
    assert 'data-testid="grades-stuck"' in page and 'data-testid="send-again"' in page

    # Another assignment, whose line item is on an address the new allow-list still
    # refuses: refused under it.
    with db.session() as s:
        course = s.get(Course, setup.course_id)
        assert course is not None
        other = upsert_assignment(s, course, resource_link_id="rl-2", problem="demo/layout",
                                  lineitem_url="http://127.0.0.2:9/lineitems/x",
                                  ags_scopes=[SCORE_SCOPE]).id
    _, stays = graded(dataclasses.replace(setup, assignment_id=other), "bo", 1.0)
    assert stays is not None and run_tries(ctx, stays).status == "refused"

    # The operator sets JAXJUDGE_WEBHOOK_ALLOW and restarts: nothing more to do.
    start_worker("-Q", "webhooks", "--pool", "threads", **LTI)
    sweeper = start_sweeper(**LTI)
    sent = wait_status(db, opened, "delivered")
    assert (sent.attempts, sent.first_try) == (2, 1)
    assert platform.services.scores_for("ana") == [sent.payload]
    sweeper_rounds(sweeper, 3)
    assert platform.services.scores_for("ana") == [sent.payload]  # once
    # Refused under the allow-list the sweeper runs with: left alone, not tried again.
    left = delivery(db, stays)
    assert (left.status, left.attempts) == ("refused", 1)


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[tuple[dict[str, str], bytes]]]]:
    """A webhook receiver on 127.0.0.1 that takes every call: its URL and the calls."""
    calls: list[tuple[dict[str, str], bytes]] = []

    class Take(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            calls.append((dict(self.headers),
                          self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Take)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", calls
    server.shutdown()
    server.server_close()


def webhooked(db: Database, tenant_id: int, url: str) -> tuple[str, str]:
    """A submission with a callback, graded as a worker does: its id and its webhook's."""
    sid = new_id()
    with db.session() as s:
        s.add(Submission(id=sid, tenant_id=tenant_id, problem="demo/layout",
                         problem_version="v1", code="x = 1\n", code_sha256="0" * 64,
                         queue="interactive", status=Status.QUEUED, callback_url=url))
    taken = claim(db, sid, stale_after=30)
    assert taken is not None
    stored = store(db, sid, taken.attempt, report(2.0))
    assert stored is not None and stored.delivery is not None
    return sid, stored.delivery


def test_a_refused_webhook_goes_by_itself_once_the_allow_list_lets_it_through(
        ctx: Context, setup: Setup, db: Database,
        receiver: tuple[str, list[tuple[dict[str, str], bytes]]],
        start_worker: Callable[..., Worker], start_sweeper: Callable[..., Sweeper]) -> None:
    url, calls = receiver
    _, hook = webhooked(db, setup.tenant_id, url)
    row = run_tries(without_allow(ctx), hook)
    assert (row.status, row.last_error) == (
        "refused", "refused: 127.0.0.1 is not a public address; " + ADVICE)
    assert calls == []
    start_worker("-Q", "webhooks", "--pool", "threads", **LTI)
    start_sweeper(**LTI)
    wait_status(db, hook, "delivered")
    [(headers, body)] = calls
    assert headers["webhook-id"] == hook  # the same delivery: receivers deduplicate on it
    with db.session() as s:
        secret = s.scalar(select(Tenant.webhook_secret).where(Tenant.id == setup.tenant_id))
    assert secret is not None and verify(secret, body, headers)


def test_a_failed_grade_is_sent_again_from_the_gradebook_once(
        client: FlaskClient, keys: dict[str, str], ctx: Context, setup: Setup, db: Database,
        platform: TestPlatform, start_worker: Callable[..., Worker]) -> None:
    platform.services.fail_with = 400  # a final answer: the score fails at once
    _, ana = graded(setup, "ana", 2.0)
    _, bo = graded(setup, "bo", 1.0)
    assert ana is not None and bo is not None
    for opened in (ana, bo):
        row = run_tries(ctx, opened)
        assert (row.status, row.last_error) == ("failed", "token endpoint: HTTP 400")
    platform.services.fail_with = None  # the LMS is mended
    start_worker("-Q", "webhooks", "--pool", "threads", **LTI)
    sid = sign_in(client, keys["instructor"])
    path = f"/app/{sid}/assignments/{setup.assignment_id}/gradebook"
    page = gradebook(client, sid, setup)
    assert "token endpoint: HTTP 400" in page and page.count('data-testid="send-again"') == 2
    token = csrf_token(client, path)
    action = f"/app/{sid}/assignments/{setup.assignment_id}/scores/send-again"
    r = client.post(action, data={"csrf_token": token, "user": "ana"})
    assert r.status_code == 303 and r.headers["Location"].endswith("sent=1")
    sent = wait_status(db, ana, "delivered")
    assert platform.services.scores_for("ana") == [sent.payload]
    assert delivery(db, bo).status == "failed"  # one student's button sends one grade
    # The form sent twice: the grade is on its way or delivered, nothing is sent again.
    again = client.post(action, data={"csrf_token": token, "user": "ana"})
    assert again.headers["Location"].endswith("sent=0")
    everyone = client.post(action, data={"csrf_token": token})
    assert everyone.headers["Location"].endswith("sent=1")  # bo's
    wait_status(db, bo, "delivered")
    assert platform.services.scores_for("ana") == [sent.payload]
    assert len(platform.services.scores_for("bo")) == 1
    assert 'data-testid="grades-stuck"' not in gradebook(client, sid, setup)


@pytest.fixture
def cli(lti_settings: ServiceSettings, tmp_path: Path) -> Callable[..., Any]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("JAXJUDGE_")},
           "JAXJUDGE_DATABASE_URL": lti_settings.database_url,
           "JAXJUDGE_REDIS_URL": lti_settings.redis_url}

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([JAXJUDGE, "deliveries", "retry", *argv], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)

    return run


def test_jaxjudge_deliveries_retry_sends_what_failed_again(
        ctx: Context, setup: Setup, db: Database, platform: TestPlatform,
        receiver: tuple[str, list[tuple[dict[str, str], bytes]]],
        start_worker: Callable[..., Worker], cli: Callable[..., Any]) -> None:
    platform.services.fail_with = 400
    _, ana = graded(setup, "ana", 2.0)
    assert ana is not None and run_tries(ctx, ana).status == "failed"
    url, calls = receiver
    _, hook = webhooked(db, setup.tenant_id, url + "?to=nowhere")
    row = run_tries(without_allow(ctx), hook)
    assert row.status == "refused"
    for argv, words in (((), "--assignment ID or --failed"),
                        (("--assignment", "nope"), "no assignment 'nope'"),
                        (("--failed", "--assignment", setup.assignment_id), "--failed")):
        bad = cli(*argv)
        assert bad.returncode == 2 and words in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1
    platform.services.fail_with = None
    start_worker("-Q", "webhooks", "--pool", "threads", **LTI)
    done = cli("--assignment", setup.assignment_id)
    assert done.returncode == 0 and done.stdout.strip() == "1 deliveries sent again", done
    sent = wait_status(db, ana, "delivered")
    assert platform.services.scores_for("ana") == [sent.payload]
    assert delivery(db, hook).status == "refused"  # not the assignment's
    every = cli("--failed")
    assert every.returncode == 0 and every.stdout.strip() == "1 deliveries sent again"
    wait_status(db, hook, "delivered")
    assert len(calls) == 1 and calls[0][0]["webhook-id"] == hook
    assert cli("--failed").stdout.strip() == "0 deliveries sent again"
    assert platform.services.scores_for("ana") == [sent.payload]
