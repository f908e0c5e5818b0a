"""/v1/problems with broken packages among good ones: the good ones are listed, the
broken ones apart (why, for instructors), and /readyz reports them as degraded."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from servers import RedisServer
from service_fixtures import auth

from judge.settings import Settings
from service import metrics
from service.settings import ServiceSettings
from tests_support import FIXTURE_PROBLEMS

pytestmark = pytest.mark.service


@pytest.fixture
def broken_app(tmp_path: Path, service_settings: ServiceSettings) -> Iterator[Flask]:
    """The fixture problems, plus demo/layout-copy whose test data was edited after it
    was built, and demo/sharded with a problem.yaml that is not YAML."""
    from app import create_app

    root = tmp_path / "problemsets"
    shutil.copytree(FIXTURE_PROBLEMS, root)
    shutil.copytree(root / "demo" / "layout", root / "demo" / "layout-copy")
    hidden = root / "demo" / "layout-copy" / "data" / "hidden" / "01-one.json"
    hidden.write_text(hidden.read_text().replace("5", "6", 1))
    (root / "demo" / "sharded" / "problem.yaml").write_text("title: [unclosed\n")
    app = create_app(service_settings, Settings(problems_dir=root, sandbox="docker"))
    yield app
    app.extensions["jaxjudge"].db.dispose()


def test_broken_packages_are_listed_apart(broken_app: Flask) -> None:
    from service.keys import create_key

    with broken_app.extensions["jaxjudge"].db.session() as s:
        client_key = create_key(s, "a", "client")
        instructor_key = create_key(s, "a", "instructor")
    client = broken_app.test_client()
    listing = client.get("/v1/problems", headers=auth(client_key)).get_json()
    assert [p["id"] for p in listing["items"]] == ["demo/layout", "demo/probed"]
    assert listing["broken"] == [{"id": "demo/layout-copy", "error": None},
                                 {"id": "demo/sharded", "error": None}]
    reasons = {b["id"]: b["error"] for b in client.get(
        "/v1/problems", headers=auth(instructor_key)).get_json()["broken"]}
    assert "does not match its hash" in reasons["demo/layout-copy"]
    assert "problem.yaml" in reasons["demo/sharded"]


def test_readyz_is_degraded_by_broken_packages(broken_app: Flask,
                                               redis_server: RedisServer) -> None:
    metrics.publish_worker(redis_server.client(), "grader@a:1", {
        "sandbox": "docker", "sandbox_ready": True, "isolated": True}, ttl=60)
    r = broken_app.test_client().get("/readyz")
    assert r.status_code == 200, r.get_json()  # the other problems can still be graded
    body = r.get_json()
    assert body["status"] == "degraded"
    assert body["checks"]["problems"] == {
        "ok": False, "detail": "broken: demo/layout-copy, demo/sharded"}
