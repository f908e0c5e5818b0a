"""``GET /v1/assignments/{id}/similarity`` and ``/v1/batches/{id}/similarity``: the
submission that counts per student, the starter and reference left out, instructors of
the tenant only, bad parameters as problem+json."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from service_fixtures import auth
from similarity_class import COPIED, make_class
from sqlalchemy import select

from service.models import Assignment, Batch, Course, Submission, Tenant

PROBLEM = "jax-sharding/tensor-parallel-mlp"
STARTER = (Path(__file__).parents[2] / "problemsets" / PROBLEM / "starter.py").read_text()
T0 = datetime(2026, 3, 1, tzinfo=UTC)


def row(tenant_id: int, student: str, code: str, at: datetime, **extra: Any) -> Submission:
    fields: dict[str, Any] = {"status": "done", "verdict": "accepted", "score": 10.0,
                              "max_score": 10.0, "report": {"tests": []}} | extra
    return Submission(id=uuid.uuid4().hex, tenant_id=tenant_id, problem=PROBLEM,
                      problem_version="v", student_id=student, code=code,
                      code_sha256="0" * 64, queue="default", attempt=1, received_at=at,
                      finished_at=at, **fields)


def build(app: Flask) -> tuple[str, str]:
    """An assignment and a batch holding the class of 30; in the assignment, each copy's
    copier also has a later, worse attempt of other code (the grade hangs on the best)."""
    code = make_class(STARTER)
    with app.extensions["jaxjudge"].db.session() as s:
        tenant_id = s.scalar(select(Tenant.id).where(Tenant.name == "course-a"))
        assert tenant_id is not None
        course = Course(tenant_id=tenant_id, context_id="c1", title="Sharding")
        s.add(course)
        s.flush()
        aid, bid = uuid.uuid4().hex, uuid.uuid4().hex
        s.add(Assignment(id=aid, tenant_id=tenant_id, course_id=course.id,
                         resource_link_id="r1", problem=PROBLEM, title="TP MLP"))
        s.add(Batch(id=bid, tenant_id=tenant_id, problem=PROBLEM, total=len(code)))
        s.flush()
        for n, (student, text) in enumerate(code.items()):
            s.add(row(tenant_id, student, text, T0 + timedelta(minutes=n), assignment_id=aid))
            s.add(row(tenant_id, student, text, T0, batch_id=bid))
        for _, copier in COPIED:
            s.add(row(tenant_id, copier, "print('late and wrong')\n", T0 + timedelta(hours=2),
                      assignment_id=aid, verdict="wrong_answer", score=0.0))
    return aid, bid


def test_the_copies_rank_first_for_an_assignment_and_a_batch(
        app: Flask, client: FlaskClient, keys: dict[str, str]) -> None:
    aid, bid = build(app)
    for path in (f"/v1/assignments/{aid}/similarity?limit=3&threshold=0.99",
                 f"/v1/batches/{bid}/similarity?limit=3&threshold=0.99"):
        r = client.get(path, headers=auth(keys["instructor"]))
        assert r.status_code == 200, r.get_json()
        body = r.get_json()
        assert body["documents"] == 30 and body["problem"] == PROBLEM
        assert {(p["a"], p["b"]) for p in body["pairs"]} == {tuple(sorted(c)) for c in COPIED}
        assert body["total_pairs"] > 3 and body["clusters"] == []
        assert "a lead to check, not a verdict" in body["note"]
        first = body["pairs"][0]
        assert first["fragments"] and first["a_submission"] != first["b_submission"]
    r = client.get(f"/v1/assignments/{aid}/similarity?threshold=0.5",
                   headers=auth(keys["instructor"]))
    assert any(len(c["members"]) >= 2 for c in r.get_json()["clusters"])


def test_instructors_of_the_tenant_only_and_bad_parameters(
        app: Flask, client: FlaskClient, keys: dict[str, str]) -> None:
    aid, bid = build(app)
    path = f"/v1/assignments/{aid}/similarity"
    assert client.get(path, headers=auth(keys["client"])).status_code == 403
    assert client.get(path, headers=auth(keys["other"])).status_code == 404
    assert client.get(f"/v1/batches/{bid}/similarity",
                      headers=auth(keys["other"])).status_code == 404
    assert client.get(path).status_code == 401
    for query in ("limit=0", "limit=1001", "threshold=2", "threshold=x", "limit=1&limit=2",
                  "color=red"):
        r = client.get(f"{path}?{query}", headers=auth(keys["instructor"]))
        assert 400 <= r.status_code < 500, query
        assert r.mimetype == "application/problem+json"
