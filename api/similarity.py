"""``GET /v1/assignments/{id}/similarity`` and ``GET /v1/batches/{id}/similarity``: pairs
of a class's submissions ranked by the code they share, the problem's starter code and
reference left out (:mod:`service.similarity`, :mod:`judge.similarity`). Instructor keys
only; what it answers is a lead to check, not a verdict."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, g

from api.auth import require
from api.errors import ApiError
from api.spec import operation, parse_query
from app.services import services
from service import similarity
from service.models import Role
from service.pages import find_assignment
from service.submitting import find_batch
from service.wire_similarity import SimilarityOut, SimilarityQuery

bp = Blueprint("similarity", __name__)
ABOUT = ("One submission per student (the one the grade hangs on, else the latest "
         "finished), compared by winnowed fingerprints of their normalised tokens; the "
         "problem's starter code and reference are left out and code most of the class "
         "shares is discounted (docs/similarity.md). A lead to check, not a verdict.")


@bp.get("/v1/assignments/<assignment_id>/similarity")
@operation("Submissions of an assignment ranked by similarity", tag="assignments",
           query=SimilarityQuery, responses={200: SimilarityOut}, description=ABOUT)
@require(Role.INSTRUCTOR)
def assignment_similarity(assignment_id: str) -> Any:
    query = parse_query(SimilarityQuery)
    svc = services()
    with svc.db.session() as s:
        found = find_assignment(s, g.tenant_id, assignment_id)
        if found is None:
            raise ApiError(404, "Not found", f"no assignment {assignment_id}")
        problem, members = found.problem, similarity.assignment_code(s, found)
    return similarity.similarity(
        svc.library, g.tenant_id, "assignment", assignment_id, problem, members,
        threshold=query.threshold, limit=query.limit).model_dump(mode="json")


@bp.get("/v1/batches/<batch_id>/similarity")
@operation("Submissions of a batch ranked by similarity", tag="batches",
           query=SimilarityQuery, responses={200: SimilarityOut},
           description=ABOUT.replace("One submission per student (the one the grade "
                                     "hangs on, else the latest finished)",
                                     "Every submission of the batch"))
@require(Role.INSTRUCTOR)
def batch_similarity(batch_id: str) -> Any:
    query = parse_query(SimilarityQuery)
    svc = services()
    with svc.db.session() as s:
        batch = find_batch(s, g.tenant_id, batch_id)
        if batch is None:
            raise ApiError(404, "Not found", f"no batch {batch_id!r}")
        problem, members = batch.problem, similarity.batch_code(s, batch)
    return similarity.similarity(
        svc.library, g.tenant_id, "batch", batch_id, problem, members,
        threshold=query.threshold, limit=query.limit).model_dump(mode="json")
