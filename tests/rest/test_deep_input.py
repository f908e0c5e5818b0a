"""Input nested deeply, against the API as deployed (gunicorn, one gevent worker process,
PostgreSQL): refused with a 4xx problem+json that says so, and the process that read it
serves the next request (issue 20). Before, a ``problem.yaml`` 50,000 deep in an uploaded
package killed the worker with SIGSEGV (libyaml's composer), losing every request in
flight on it; JSON bodies 50,000 or 100,000 deep, and notebooks a few hundred deep (the
schema check recursed), were 500s."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests
from nesting_support import nested_list, nested_object, notebook
from packages_support import scaffold_files, slim, zip_package
from servers import Gunicorn, PostgresServer, RedisServer, service_env
from service_fixtures import auth, make_settings

from judge.settings import Settings
from service.db import Database
from service.keys import create_key
from service.migrate import upgrade
from tests_support import FIXTURE_PROBLEMS, LAYOUT_GOOD, zip_archive

pytestmark = pytest.mark.service
TOO_DEEP = "nested more than 200 levels deep"


@dataclass
class Api:
    base: str
    keys: dict[str, str]
    server: Gunicorn

    def workers(self) -> list[int]:
        """The pids of gunicorn's worker processes (a dead one is replaced by a new pid)."""
        out = subprocess.run(["pgrep", "-P", str(self.server.proc.pid)], capture_output=True,
                             text=True)
        return sorted(int(p) for p in out.stdout.split())

    def post(self, path: str, role: str = "instructor", **kwargs: Any) -> requests.Response:
        return requests.post(self.base + path, headers={**auth(self.keys[role]),
                                                        **kwargs.pop("headers", {})},
                             timeout=60, **kwargs)


@pytest.fixture(scope="module")
def api(postgres_server: PostgresServer, redis_server: RedisServer,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    url = postgres_server.new_database()
    upgrade(url)
    folder = tmp_path_factory.mktemp("deep-input")
    settings = make_settings(url, redis_server.url, packages_dir=folder / "packages")
    judge = Settings(problems_dir=FIXTURE_PROBLEMS, sandbox="docker")
    server = Gunicorn(service_env({**settings.model_dump(), **judge.model_dump()}),
                      folder / "gunicorn.log", workers=1)
    db = Database(url)
    with db.session() as s:
        keys = {role: create_key(s, "course-a", role) for role in ("client", "instructor")}
    db.dispose()
    yield Api(server.base, keys, server)
    server.stop()


@pytest.fixture
def same_process(api: Api) -> Iterator[None]:
    """The test's requests are all served by the one worker process there was before."""
    before = api.workers()
    assert len(before) == 1
    yield
    r = requests.get(f"{api.base}/v1/problems", headers=auth(api.keys["client"]), timeout=60)
    assert r.status_code == 200  # a request after the bad ones is served ...
    assert api.workers() == before  # ... by the same process: none died


def refused(r: requests.Response, status: int, says: str) -> str:
    assert r.status_code == status, (r.status_code, r.text[:500])
    assert r.headers["Content-Type"] == "application/problem+json"
    detail: str = r.json()["detail"]
    assert says in detail, detail
    assert "\n" not in detail
    return detail


def test_a_package_whose_problem_yaml_is_50000_deep_is_refused_and_the_process_lives(
        api: Api, same_process: None) -> None:
    r = api.post("/v1/problemsets", json={"name": "deep-set", "title": "Deep"})
    assert r.status_code == 201, r.text
    files = slim(scaffold_files())
    text = files["problem.yaml"].decode()
    files["problem.yaml"] = "\n".join(f"title: {nested_list()}" if line.startswith("title:")
                                      else line for line in text.splitlines()).encode()
    assert 100_000 < len(files["problem.yaml"]) < 256 << 10  # under the size cap, no anchors
    for _ in range(2):  # repeatable, and the process stays
        r = api.post("/v1/problemsets/deep-set/problems?slug=softmax",
                     data=zip_package(files), headers={"Content-Type": "application/zip"})
        refused(r, 422, f"package archive: problem.yaml is {TOO_DEEP} (at line ")
    listed = requests.get(f"{api.base}/v1/problemsets/deep-set", timeout=60,
                          headers=auth(api.keys["instructor"])).json()
    assert listed["problems"] == []  # nothing stored


def metadata_100000() -> str:
    return json.dumps({"problem": "demo/layout", "code": LAYOUT_GOOD}).replace(
        "}", ', "metadata": {"a": ' + nested_list(100_000) + "}}")


def notebook_object_50000() -> str:
    return json.dumps({"problem": "demo/layout"}).replace(
        "}", ', "notebook": ' + nested_object() + "}")


@pytest.mark.parametrize(("path", "body"), [
    ("/v1/submissions", metadata_100000),
    ("/v1/submissions", notebook_object_50000),
    ("/v1/submissions", lambda: nested_list()),
    ("/v1/batches", lambda: '{"problem": "demo/layout", "submissions": [{"student_id": "a", '
     '"notebook": ' + nested_object() + "}]}"),
    # 64 KiB routes: 20,000 levels (json gave up at 1,000)
    ("/v1/launch-links", lambda: '{"problem": "demo/layout", "student_id": '
     + nested_list(20_000) + "}"),
    ("/v1/problemsets", lambda: '{"name": "x", "title": ' + nested_list(20_000) + "}"),
], ids=["metadata-100000", "notebook-50000", "body-50000", "batch", "launch-link",
        "problemset"])
def test_a_json_body_nested_too_deeply_is_a_400_that_says_so(
        api: Api, same_process: None, path: str, body: Any) -> None:
    r = api.post(path, data=body(), headers={"Content-Type": "application/json"})
    detail = refused(r, 400, f"the body is JSON {TOO_DEEP}")
    assert "the limit is 200 levels" in detail


@pytest.mark.parametrize("depth", [500, 50_000])
def test_a_notebook_nested_too_deeply_is_refused_as_a_notebook(
        api: Api, same_process: None, depth: int) -> None:
    """A notebook sent as its text (a JSON string, so the body itself is shallow): before,
    500 levels of cell metadata passed ``json`` and broke nbformat's schema check."""
    text = notebook(nested_object(depth, "{}"))
    r = api.post("/v1/submissions", role="client",
                 json={"problem": "demo/layout", "notebook": text})
    refused(r, 422, f"the notebook is {TOO_DEEP}")
    r = api.post("/v1/batches", files={"archive": ("class.zip", zip_archive(
        {"alice.ipynb": text, "bob.py": LAYOUT_GOOD}))}, data={"problem": "demo/layout"})
    refused(r, 422, f"alice: the notebook is {TOO_DEEP}")


def test_a_notebook_within_the_bound_is_taken(api: Api, same_process: None) -> None:
    r = api.post("/v1/submissions", role="client",
                 json={"problem": "demo/layout", "notebook": notebook(nested_object(150, "{}"))})
    assert r.status_code == 202, r.text
    assert r.json()["status"] == "queued"


def test_metadata_within_the_bound_is_taken(api: Api, same_process: None) -> None:
    r = api.post("/v1/submissions", role="client", data=json.dumps(
        {"problem": "demo/layout", "code": LAYOUT_GOOD}).replace(
        "}", ', "metadata": {"a": ' + nested_list(150) + "}}"),
        headers={"Content-Type": "application/json"})
    assert r.status_code == 202, r.text

