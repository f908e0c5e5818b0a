"""Batches through the API: zip archives and JSON lists, all or nothing, progress and
exports."""

from __future__ import annotations

import csv
import io
import re
import zipfile

import pytest
from flask import Flask
from flask.testing import FlaskClient
from service_fixtures import auth
from sqlalchemy import func, select

from judge.report import TestResult as Result
from judge.report import VerdictReport
from judge.verdict import Verdict
from service.models import Batch, Submission
from service.submissions import claim, store
from tests_support import LAYOUT_GOOD

pytestmark = pytest.mark.service
GOOD = LAYOUT_GOOD.encode()


def archive(files: dict[str, bytes], symlink: str | None = None) -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = 0o120777 << 16
            z.writestr(info, "/etc/passwd")
    buffer.seek(0)
    return buffer


def upload(client: FlaskClient, key: str, data: io.BytesIO, problem: str = "demo/layout"):  # type: ignore[no-untyped-def]
    return client.post("/v1/batches", headers=auth(key), content_type="multipart/form-data",
                       data={"problem": problem, "archive": (data, "class.zip")})


def stored(app: Flask) -> tuple[int, int]:
    with app.extensions["jaxjudge"].db.session() as s:
        return (s.scalar(select(func.count()).select_from(Batch)) or 0,
                s.scalar(select(func.count()).select_from(Submission)) or 0)


def test_a_zip_of_a_class_is_queued_as_batch_work(client: FlaskClient, keys: dict[str, str],
                                                  app: Flask) -> None:
    r = upload(client, keys["instructor"], archive(
        {"alice.py": GOOD, "bob.py": GOOD, "carol@uni.edu.py": b"x = 1\n"}))
    assert r.status_code == 202, r.get_json()
    body = r.get_json()
    assert body["total"] == 3 and body["counts"]["queued"] == 3 and not body["done"]
    assert sorted(m["student_id"] for m in body["submissions"]) == ["alice", "bob", "carol@uni.edu"]
    assert app.extensions["jaxjudge"].redis.llen("batch") == 3
    assert app.extensions["jaxjudge"].redis.llen("interactive") == 0
    assert client.get(r.headers["Location"], headers=auth(keys["other"])).status_code == 404
    assert upload(client, keys["client"], archive({"a.py": GOOD})).status_code == 403


@pytest.mark.parametrize(("files", "symlink", "mentions"), [
    ({"../evil.py": GOOD}, None, "evil"),
    ({"/abs.py": GOOD}, None, "abs"),
    ({"ok.py": GOOD}, "link.py", "link"),
    ({"a/b/c.py": GOOD}, None, "c.py"),
    ({"notes.txt": b"hi"}, None, "notes.txt"),
    ({"alice.py": GOOD, "ALICE.py": GOOD}, None, "alice"),
    ({"alice.py": b"\xff\xfe\x00bad"}, None, "alice"),
    ({"alice.py": GOOD, "bob.py": b"  "}, None, "bob"),
    ({"bomb.py": b"#" * (20 << 20)}, None, "bomb"),
])
def test_a_bad_archive_is_refused_whole(client: FlaskClient, keys: dict[str, str], app: Flask,
                                        files: dict[str, bytes], symlink: str | None,
                                        mentions: str) -> None:
    r = upload(client, keys["instructor"], archive(files, symlink))
    assert r.status_code in (413, 422), r.get_json()
    assert r.mimetype == "application/problem+json"
    assert mentions.lower() in r.get_json()["detail"].lower()
    assert stored(app) == (0, 0)


def test_not_a_zip_and_missing_fields(client: FlaskClient, keys: dict[str, str],
                                      app: Flask) -> None:
    r = upload(client, keys["instructor"], io.BytesIO(b"PK\x03\x04 not really"))
    assert r.status_code == 422
    r = client.post("/v1/batches", headers=auth(keys["instructor"]),
                    content_type="multipart/form-data", data={"problem": "demo/layout"})
    assert r.status_code == 422 and "archive" in r.get_json()["detail"]
    r = upload(client, keys["instructor"], archive({"a.py": GOOD}), problem="demo/none")
    assert r.status_code == 404
    assert stored(app) == (0, 0)


def test_a_json_batch_and_its_exports(client: FlaskClient, keys: dict[str, str],
                                      app: Flask) -> None:
    formula = client.post("/v1/batches", headers=auth(keys["instructor"]), json={
        "problem": "demo/layout", "submissions": [{"student_id": "=cmd()", "code": "x"}]})
    assert formula.status_code == 422  # ids that a spreadsheet would run never get in
    r = client.post("/v1/batches", headers=auth(keys["instructor"]), json={
        "problem": "demo/layout", "name": "week 3",
        "submissions": [{"student_id": "alice", "code": GOOD.decode()},
                        {"student_id": "bob", "code": GOOD.decode()}]})
    assert r.status_code == 202
    batch = r.get_json()
    db = app.extensions["jaxjudge"].db
    alice = next(m["submission_id"] for m in batch["submissions"] if m["student_id"] == "alice")
    taken = claim(db, alice, stale_after=30)
    assert taken is not None
    store(db, alice, taken.attempt, VerdictReport(
        problem="demo/layout", problem_version="v", verdict=Verdict.WRONG_ANSWER, score=1,
        max_score=2, time_ms=3, tests=[
            Result(name="a", visibility="sample", verdict=Verdict.ACCEPTED, score=1,
                   max_score=1, time_ms=1),
            Result(name="b", visibility="hidden", verdict=Verdict.WRONG_ANSWER, score=0,
                   max_score=1, time_ms=2, message="wrong value")]))
    progress = client.get(f"/v1/batches/{batch['id']}", headers=auth(keys["instructor"]))
    assert progress.get_json()["counts"] == {"queued": 1, "running": 0, "done": 1}
    assert progress.get_json()["verdicts"] == {"wrong_answer": 1}
    text = client.get(f"/v1/batches/{batch['id']}/results.csv",
                      headers=auth(keys["instructor"])).get_data(as_text=True)
    rows = {r["student_id"]: r for r in csv.DictReader(io.StringIO(text))}
    assert rows["alice"]["verdict"] == "wrong_answer" and rows["alice"]["passed"] == "1"
    assert rows["bob"]["status"] == "queued" and rows["bob"]["verdict"] == ""
    gs = client.get(f"/v1/batches/{batch['id']}/gradescope.json",
                    headers=auth(keys["instructor"])).get_json()
    assert gs["alice"]["score"] == 1
    assert [t["status"] for t in gs["alice"]["tests"]] == ["passed", "failed"]
    assert gs["alice"]["tests"][1]["visibility"] == "after_published"
    bad = client.post("/v1/batches", headers=auth(keys["instructor"]), json={
        "problem": "demo/layout",
        "submissions": [{"student_id": "a", "code": "x"}, {"student_id": "b", "code": "\0"}]})
    assert bad.status_code == 422 and "b:" in bad.get_json()["detail"]
    assert stored(app) == (1, 2)


def selects(statements: list[str], column: str) -> bool:
    return any(re.search(rf"submissions\.{column}\b", s) for s in statements)


def test_progress_and_listings_read_no_code_or_report(client: FlaskClient, keys: dict[str, str],
                                                      app: Flask, sql: list[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    r = client.post("/v1/batches", headers=auth(keys["instructor"]), json={
        "problem": "demo/layout",
        "submissions": [{"student_id": s, "code": GOOD.decode()} for s in ("a", "b", "c")]})
    batch = r.get_json()
    db = app.extensions["jaxjudge"].db
    first = batch["submissions"][0]["submission_id"]
    taken = claim(db, first, stale_after=30)
    assert taken is not None
    store(db, first, taken.attempt, VerdictReport(
        problem="demo/layout", problem_version="v", verdict=Verdict.ACCEPTED, score=1,
        max_score=1, time_ms=3, tests=[]))
    sql.clear()
    progress = client.get(f"/v1/batches/{batch['id']}", headers=auth(keys["instructor"]))
    assert progress.get_json()["counts"] == {"queued": 2, "running": 0, "done": 1}
    assert progress.get_json()["verdicts"] == {"accepted": 1}
    assert any("GROUP BY" in s for s in sql)  # counted by the database
    assert not selects(sql, "code") and not selects(sql, "report")
    sql.clear()
    listed = client.get(f"/v1/submissions?batch_id={batch['id']}", headers=auth(keys["client"]))
    assert len(listed.get_json()["items"]) == 3
    assert not selects(sql, "code") and not selects(sql, "report")
    sql.clear()
    one = client.get(f"/v1/submissions/{first}", headers=auth(keys["client"]))
    assert one.get_json()["report"]["verdict"] == "accepted"
    assert selects(sql, "report") and not selects(sql, "code")
    # Exports read the reports a page at a time, and stream.
    monkeypatch.setattr("api.batches.EXPORT_PAGE", 2)
    sql.clear()
    r = client.get(f"/v1/batches/{batch['id']}/results.csv", headers=auth(keys["instructor"]))
    assert r.is_streamed
    rows = list(csv.DictReader(io.StringIO(r.get_data(as_text=True))))
    assert [(row["student_id"], row["verdict"]) for row in rows] == [
        ("a", "accepted"), ("b", ""), ("c", "")]
    assert sum(selects([s], "report") for s in sql) == 2  # two pages: a, b; then c
    r = client.get(f"/v1/batches/{batch['id']}/gradescope.json", headers=auth(keys["instructor"]))
    assert r.is_streamed and sorted(r.get_json()) == ["a", "b", "c"]
    assert r.get_json()["a"]["score"] == 1
    missing = client.get("/v1/batches/nope/results.csv", headers=auth(keys["instructor"]))
    assert missing.status_code == 404 and missing.mimetype == "application/problem+json"
