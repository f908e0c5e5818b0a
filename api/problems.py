"""``/v1/problems``: the catalog, with statements and sample tests; never hidden data.
A package that does not load is listed apart (``broken``), never hiding the others."""

from __future__ import annotations

import time
from typing import Any

from flask import Blueprint, current_app, g

from api.app import services
from api.auth import require
from api.spec import operation, parse_query
from api.submissions import requeue
from judge.problem import Problem
from service.models import ROLE_RANK, Role, Submission
from service.problems import detail, summary
from service.queue import BATCH
from service.wire import (
    BrokenProblem,
    ProblemDetail,
    ProblemList,
    RejudgeOut,
    RejudgeQuery,
)

bp = Blueprint("problems", __name__)
SCAN_SECONDS = 10.0  # how stale the list of good and broken packages may be


def scan() -> tuple[list[Problem], dict[str, str]]:
    """:meth:`Catalog.scan` (which hashes every package's test data, tens of ms for 20
    problems), at most once per SCAN_SECONDS in a process."""
    cache: dict[str, Any] = current_app.extensions.setdefault("jaxjudge.scan", {})
    now = time.monotonic()
    if cache.get("at") is None or now - cache["at"] > SCAN_SECONDS:
        cache["result"], cache["at"] = services().catalog.scan(), now
    found: tuple[list[Problem], dict[str, str]] = cache["result"]
    return found


@bp.get("/v1/problems")
@operation("List the problems", tag="problems", responses={200: ProblemList},
           description="Packages that do not load are listed in broken, with the reason "
           "for instructor and admin keys.")
@require(Role.CLIENT)
def list_problems() -> Any:
    good, broken = scan()
    reasons = ROLE_RANK[g.role] >= ROLE_RANK[Role.INSTRUCTOR]
    return ProblemList(
        items=[summary(p) for p in good],
        broken=[BrokenProblem(id=i, error=why if reasons else None)
                for i, why in sorted(broken.items())],
    ).model_dump(mode="json")


@bp.get("/v1/problems/<path:problem_id>")
@operation("A problem: statement, signature, limits and sample tests", tag="problems",
           responses={200: ProblemDetail})
@require(Role.CLIENT)
def get_problem(problem_id: str) -> Any:
    return detail(services().catalog.get(problem_id)).model_dump(mode="json")


@bp.post("/v1/problems/<path:problem_id>/rejudge")
@operation("Rejudge the tenant's submissions of a problem (after its tests changed)",
           tag="problems", query=RejudgeQuery,
           responses={202: RejudgeOut})
@require(Role.INSTRUCTOR)
def rejudge_problem(problem_id: str) -> Any:
    query = parse_query(RejudgeQuery)
    problem = services().catalog.get(problem_id)
    where = (Submission.tenant_id == g.tenant_id) & (Submission.problem == problem.id)
    if query.outdated_only:
        where = where & (Submission.problem_version != problem.version)
    ids = requeue(where, BATCH)
    return RejudgeOut(rejudged=len(ids), ids=ids).model_dump(mode="json"), 202
