"""``/v1/problems``: the problems a tenant sees (the judge's own sets and the live
versions of its own), with statements and sample tests; never hidden data. A package
that does not load is listed apart (``broken``), never hiding the others. Rejudging, and
the report of which verdicts a rejudge changed."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, g

from api.auth import require
from api.errors import ApiError
from api.spec import operation, parse_query
from app.services import services
from judge.problem import Problem
from service import rejudges
from service.models import ROLE_RANK, Role, Submission
from service.problems import detail, summary
from service.wire import (
    BrokenProblem,
    ProblemDetail,
    ProblemList,
    RejudgeOut,
    RejudgeQuery,
    RejudgeReport,
    VersionQuery,
)

bp = Blueprint("problems", __name__)


def scan() -> tuple[list[Problem], dict[str, str]]:
    """The tenant's problems: the global ones and its own live versions."""
    library = services().library
    return library.scan(g.tenant_id, library.global_scan())


@bp.get("/v1/problems")
@operation("List the problems", tag="problems", responses={200: ProblemList},
           description="The judge's own problems and the live version of each of the "
           "tenant's. Packages that do not load are listed in broken, with the reason "
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
           query=VersionQuery, responses={200: ProblemDetail},
           description="The live version, or with ?version= any built version of the "
           "tenant's own problem (as the submissions graded on it saw it).")
@require(Role.CLIENT)
def get_problem(problem_id: str) -> Any:
    query = parse_query(VersionQuery)
    problem = services().library.get(g.tenant_id, problem_id, query.version)
    return detail(problem).model_dump(mode="json")


def start_rejudge(problem: str, where: Any, version: str | None = None) -> RejudgeOut:
    """Record the verdicts, put the submissions back in the queue (against ``version``
    if given), dispatch them; what the answer says."""
    svc = services()
    rejudge_id, ids = rejudges.start_and_send(svc.db, svc.celery, svc.settings, g.tenant_id,
                                              problem, where, version, redis=svc.redis)
    return RejudgeOut(rejudged=len(ids), ids=ids, rejudge=rejudge_id)


@bp.post("/v1/problems/<path:problem_id>/rejudge")
@operation("Rejudge the tenant's submissions of a problem (after its tests changed)",
           tag="problems", query=RejudgeQuery,
           responses={202: RejudgeOut},
           description="A problem of the tenant's own sets is graded against its live "
           "version. GET /v1/rejudges/{rejudge} reports which verdicts changed.")
@require(Role.INSTRUCTOR)
def rejudge_problem(problem_id: str) -> Any:
    query = parse_query(RejudgeQuery)
    library = services().library
    problem = library.get(g.tenant_id, problem_id)
    where = (Submission.tenant_id == g.tenant_id) & (Submission.problem == problem.id)
    if query.outdated_only:
        where = where & (Submission.problem_version != problem.version)
    version = None if library.is_global(problem.id) else problem.version
    return start_rejudge(problem.id, where, version).model_dump(mode="json"), 202


@bp.get("/v1/rejudges/<rejudge_id>")
@operation("A rejudge's progress and the verdicts it changed", tag="problems",
           responses={200: RejudgeReport})
@require(Role.INSTRUCTOR)
def get_rejudge(rejudge_id: str) -> Any:
    found = rejudges.report(services().db, g.tenant_id, rejudge_id)
    if found is None:
        raise ApiError(404, "Not found", f"no rejudge {rejudge_id!r}")
    return found.model_dump(mode="json")
