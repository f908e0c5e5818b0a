"""Notebooks through the API: ``POST /v1/submissions`` with ``notebook`` (a JSON object
or the file's text), batch zips with ``.ipynb`` members and JSON batches with notebooks;
what is stored (the converted code, the notes), what is refused (problem+json, nothing
stored), and with a real worker the report's ``source_notes``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import nbformat
import pytest
from flask import Flask
from flask.testing import FlaskClient
from nbformat import v4
from servers import Worker
from service_fixtures import auth, wait_done
from sqlalchemy import func, select

from service.models import Batch, Submission
from tests_support import FIXTURE_NOTEBOOKS, LAYOUT_GOOD, zip_archive

pytestmark = pytest.mark.service
NOTEBOOK_TEXT = (FIXTURE_NOTEBOOKS / "layout.ipynb").read_text()
NOTES = ["cell 2: removed 1 IPython magic (line 1), 1 shell escape (line 2)",
         "cell 4: left out whole (a %%time cell: its body is not run)",
         "cell 5: removed 1 help request (line 1)"]


def stored(app: Flask) -> list[Submission]:
    with app.extensions["jaxjudge"].db.session() as s:
        return list(s.scalars(select(Submission).order_by(Submission.student_id)))


def batches(app: Flask) -> int:
    with app.extensions["jaxjudge"].db.session() as s:
        return s.scalar(select(func.count()).select_from(Batch)) or 0


def post(client: FlaskClient, key: str, **body: Any) -> Any:
    return client.post("/v1/submissions", json={"problem": "demo/layout", **body},
                       headers=auth(key))


@pytest.mark.parametrize("form", ["object", "text"])
def test_a_notebook_is_stored_as_its_code_with_notes(client: FlaskClient, keys: dict[str, str],
                                                     app: Flask, form: str) -> None:
    notebook = json.loads(NOTEBOOK_TEXT) if form == "object" else NOTEBOOK_TEXT
    r = post(client, keys["client"], notebook=notebook, student_id="alice")
    assert r.status_code == 202, r.get_json()
    [row] = stored(app)
    assert row.source_notes == NOTES
    assert row.code.startswith("# %% cell 2\npass  # jaxjudge: removed IPython magic\n")
    assert LAYOUT_GOOD.rstrip() in row.code and "layout(4, 16, 32)" not in row.code
    assert app.extensions["jaxjudge"].redis.llen("interactive") == 1


def test_python_code_has_no_notes(client: FlaskClient, keys: dict[str, str], app: Flask) -> None:
    assert post(client, keys["client"], code=LAYOUT_GOOD).status_code == 202
    assert stored(app)[0].source_notes is None


def _notebook_of(source: str) -> str:
    return nbformat.writes(v4.new_notebook(cells=[v4.new_code_cell(source)]))


@pytest.mark.parametrize(("body", "status", "detail"), [
    ({"notebook": "{not json"}, 422, "the notebook is not valid JSON"),
    ({"notebook": {"cells": []}}, 422, "the notebook is not a Jupyter notebook"),
    ({"notebook": {"nbformat": 4, "nbformat_minor": 5, "cells": []}}, 422,
     "the notebook is not a valid Jupyter notebook"),
    ({"notebook": _notebook_of("%pip install jax")}, 422, "has no code cells with code"),
    ({"notebook": _notebook_of("x = 1\n" * 50_000)}, 422, "the code of the notebook is"),
    ({"notebook": "{" + " " * (4 << 20) + "}"}, 413, "the limit is 4194304 bytes"),
    ({"notebook": NOTEBOOK_TEXT, "code": LAYOUT_GOOD}, 422, "either code or notebook"),
    ({}, 422, "either code or notebook"),
    ({"notebook": 5}, 422, "notebook"),
])
def test_a_bad_notebook_is_a_problem_and_stores_nothing(
        client: FlaskClient, keys: dict[str, str], app: Flask, body: dict[str, Any],
        status: int, detail: str) -> None:
    r = post(client, keys["client"], **body)
    assert r.status_code == status, r.get_json()
    assert r.mimetype == "application/problem+json"
    assert detail in str(r.get_json())
    assert stored(app) == []


def upload(client: FlaskClient, key: str, files: dict[str, str | bytes]) -> Any:
    return client.post("/v1/batches", headers=auth(key), content_type="multipart/form-data",
                       data={"problem": "demo/layout", "archive": (zip_archive(files), "class.zip")})


def test_a_batch_zip_takes_notebooks_beside_python_files(
        client: FlaskClient, keys: dict[str, str], app: Flask) -> None:
    r = upload(client, keys["instructor"], {"class/alice.ipynb": NOTEBOOK_TEXT,
                                            "class/bob.py": LAYOUT_GOOD})
    assert r.status_code == 202, r.get_json()
    alice, bob = stored(app)
    assert (alice.student_id, alice.source_notes) == ("alice", NOTES)
    assert LAYOUT_GOOD.rstrip() in alice.code and alice.code.startswith("# %% cell 2\n")
    assert (bob.code, bob.source_notes) == (LAYOUT_GOOD, None)


@pytest.mark.parametrize(("member", "detail"), [
    (b"{not json", "alice: the notebook is not valid JSON"),
    (b"\xff\xfe{}", "alice.ipynb is not UTF-8"),
    (b'{"nbformat": 4}', "alice: the notebook is not a valid Jupyter notebook"),
])
def test_a_bad_notebook_in_a_batch_refuses_the_whole_batch(
        client: FlaskClient, keys: dict[str, str], app: Flask, member: bytes,
        detail: str) -> None:
    r = upload(client, keys["instructor"], {"bob.py": LAYOUT_GOOD, "alice.ipynb": member})
    assert r.status_code == 422 and r.mimetype == "application/problem+json"
    assert detail in r.get_json()["detail"]
    assert (stored(app), batches(app)) == ([], 0)


def test_a_json_batch_may_carry_notebooks(client: FlaskClient, keys: dict[str, str],
                                          app: Flask) -> None:
    r = client.post("/v1/batches", headers=auth(keys["instructor"]), json={
        "problem": "demo/layout", "submissions": [
            {"student_id": "alice", "notebook": json.loads(NOTEBOOK_TEXT)},
            {"student_id": "bob", "code": LAYOUT_GOOD}]})
    assert r.status_code == 202, r.get_json()
    assert [row.source_notes for row in stored(app)] == [NOTES, None]
    r = client.post("/v1/batches", headers=auth(keys["instructor"]), json={
        "problem": "demo/layout", "submissions": [
            {"student_id": "carol", "code": LAYOUT_GOOD},
            {"student_id": "dave", "notebook": {"cells": []}}]})
    assert r.status_code == 422 and "dave: the notebook is not a Jupyter" in r.get_json()["detail"]
    assert batches(app) == 1


@pytest.mark.slow
def test_a_graded_notebook_reports_what_was_removed(
        client: FlaskClient, keys: dict[str, str], app: Flask,
        start_worker: Callable[..., Worker]) -> None:
    start_worker("-Q", "interactive,batch", "--concurrency", "1")
    r = post(client, keys["client"], notebook=NOTEBOOK_TEXT)
    assert r.status_code == 202, r.get_json()
    done = wait_done(client, keys["client"], r.get_json()["id"])
    assert done["verdict"] == "accepted", done["report"]
    assert done["report"]["source_notes"] == NOTES
    # a rejudge grades the stored code again, and the notes come with the new report
    sid = done["id"]
    assert client.post(f"/v1/submissions/{sid}/rejudge",
                       headers=auth(keys["instructor"])).status_code == 202
    again = wait_done(client, keys["instructor"], sid)
    assert again["attempt"] == 2 and again["report"]["source_notes"] == NOTES
