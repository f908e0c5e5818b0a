"""Class analytics for instructors: ``GET /v1/assignments/{id}/analytics`` and
``GET /v1/problems/{id}/analytics``, the numbers the instructor's analytics pages draw
(:mod:`service.analytics`, docs/analytics.md). ``?format=csv`` answers the same numbers
as one CSV document instead of JSON. Another tenant's assignment or problem, like an
unknown one, is a 404."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, g

from api.auth import require
from api.errors import ApiError
from api.spec import operation, parse_query
from app.services import services
from service.analytics import analytics_csv, assignment_analytics, problem_analytics
from service.library import ProblemUnavailable
from service.models import Role
from service.pages import find_assignment
from service.wire_analytics import Analytics, AnalyticsQuery

bp = Blueprint("analytics", __name__)
RESPONSES: dict[int, Any] = {200: Analytics}
CSV_NOTE = ("?format=csv: the same numbers as text/csv, one row per number with a chart "
            "column (docs/analytics.md, CSV).")


def _answer(found: Analytics, query: AnalyticsQuery, name: str) -> Any:
    if query.format == "csv":
        return Response(analytics_csv(found), mimetype="text/csv", headers={
            "Content-Disposition": f'attachment; filename="analytics-{name}.csv"'})
    return found.model_dump(mode="json")


@bp.get("/v1/assignments/<assignment_id>/analytics")
@operation("An assignment's class analytics", tag="assignments", query=AnalyticsQuery,
           responses=RESPONSES,
           description="The roster's learners and everyone who submitted: score "
           "histogram (the gradebook's grades), pass rate and failure reasons per test, "
           "submissions over time against the due date, attempts to the first accepted, "
           "never started / started / stuck / accepted, and the most common wrong "
           "outputs of the sample tests. " + CSV_NOTE)
@require(Role.INSTRUCTOR)
def assignment(assignment_id: str) -> Any:
    query = parse_query(AnalyticsQuery)
    svc = services()
    with svc.db.session() as s:
        found = find_assignment(s, g.tenant_id, assignment_id)
        if found is None:
            raise ApiError(404, "Not found", f"no assignment {assignment_id}")
        result = assignment_analytics(s, found, now=svc.clock())
    return _answer(result, query, assignment_id)


@bp.get("/v1/problems/<path:problem_id>/analytics")
@operation("A problem's class analytics over all the tenant's submissions",
           tag="problems", query=AnalyticsQuery, responses=RESPONSES,
           description="Every submission of the tenant to the problem, in any assignment "
           "or none; the histogram is each student's best score. " + CSV_NOTE)
@require(Role.INSTRUCTOR)
def problem(problem_id: str) -> Any:
    query = parse_query(AnalyticsQuery)
    svc = services()
    try:  # 404 for a problem the tenant does not see
        title = svc.library.get(g.tenant_id, problem_id).spec.title
    except ProblemUnavailable:  # its package does not load: its submissions still count
        title = problem_id
    with svc.db.session() as s:
        result = problem_analytics(s, g.tenant_id, problem_id, title, now=svc.clock())
    return _answer(result, query, problem_id.replace("/", "-"))
