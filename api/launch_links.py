"""``POST /v1/launch-links``: a short-lived, signed, single-use link that opens the
student page of one problem for one student (:mod:`service.launch_links`), for an
integrator with a platform of its own instead of an LMS."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from flask import Blueprint, g, request

from api.auth import require
from api.errors import ApiError
from api.spec import operation, parse_json
from app.services import services
from service.launch_links import mint
from service.models import Role
from service.secret import secret_key
from service.wire import LaunchLinkCreate, LaunchLinkOut

bp = Blueprint("launch_links", __name__)


@bp.post("/v1/launch-links")
@operation(
    "A signed link that opens the student page of a problem for one student",
    tag="launch links", body=LaunchLinkCreate, responses={201: LaunchLinkOut},
    description="The link opens once (single-use) before expires_at; send the student "
    "to it right away. It makes (or finds) the course, an assignment of the problem in "
    "it and the student as a member.",
)
@require(Role.CLIENT)
def create_launch_link() -> Any:
    svc = services()
    body = parse_json(LaunchLinkCreate)
    if body.expires_in > svc.settings.launch_link_max_seconds:
        raise ApiError(422, "Invalid request", f"expires_in is over "
                       f"{svc.settings.launch_link_max_seconds} seconds (the most a link "
                       "may live)")
    problem = svc.library.get(g.tenant_id, body.problem)  # 404 for an unknown problem
    token, expires = mint(secret_key(svc.settings), tenant_id=g.tenant_id,
                          problem=problem.id, student_id=body.student_id, name=body.name,
                          course=body.course, seconds=body.expires_in)
    base = svc.settings.public_url.rstrip("/") or request.host_url.rstrip("/")
    return LaunchLinkOut(url=f"{base}/launch/{token}",
                         expires_at=datetime.fromtimestamp(expires, UTC)
                         ).model_dump(mode="json"), 201
