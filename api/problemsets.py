"""``/v1/problemsets``: the judge's own sets (global, read-only) and the tenant's own;
uploading a package to a set, following its build, choosing the live version.

A set, package or version of another tenant is answered 404, exactly as one that does
not exist."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, g, request, url_for

from api.auth import require
from api.errors import ApiError
from api.spec import operation, parse_json, parse_query
from app.services import services
from service import problemsets
from service.models import Package, PackageVersion, ProblemSet, Role
from service.wire import (
    BuildStep,
    ProblemSetCreate,
    ProblemSetList,
    ProblemSetOut,
    PublishCreate,
    PublishOut,
    RejudgeOut,
    UploadQuery,
    VersionList,
    VersionOut,
)

bp = Blueprint("problemsets", __name__)
ZIP_BODY: dict[str, dict[str, Any]] = {
    "application/zip": {"schema": {"type": "string", "contentMediaType": "application/zip",
                                   "description": "The package folder, zipped."}},
    "multipart/form-data": {"schema": {
        "type": "object", "required": ["package"],
        "properties": {"package": {"type": "string", "contentMediaType": "application/zip"}},
    }},
}


def version_out(package: Package, row: PackageVersion) -> VersionOut:
    return VersionOut(
        problem=package.problem, version=row.version, status=row.status,  # type: ignore[arg-type]
        live=package.live_version == row.version,
        steps=[BuildStep.model_validate(step) for step in row.steps or []],
        done=len(row.steps or []), total=row.total, error=row.error,
        weaknesses=list(row.weaknesses or []), ignored=list(row.ignored or []),
        size_bytes=row.size_bytes, build_seconds=row.build_seconds,
        uploaded_at=row.uploaded_at, finished_at=row.finished_at)


def _own_set(name: str) -> ProblemSet:
    with services().db.session() as s:
        found = problemsets.own_set(s, g.tenant_id, name)
    if found is None:
        raise ApiError(404, "Not found", f"no problem set {name!r} of yours")
    return found


def _set_out(found: ProblemSet) -> ProblemSetOut:
    with services().db.session() as s:
        ids = [p.problem for p in problemsets.packages_of(s, found.id)]
    return ProblemSetOut(name=found.name, title=found.title, owned=True, problems=ids)


@bp.get("/v1/problemsets")
@operation("The problem sets the tenant sees: the judge's own and its own", tag="problemsets",
           responses={200: ProblemSetList})
@require(Role.CLIENT)
def list_sets() -> Any:
    library = services().library
    items: dict[str, ProblemSetOut] = {}
    for problem_id in library.catalog.ids():
        name = problem_id.split("/", 1)[0]
        items.setdefault(name, ProblemSetOut(name=name, title="", owned=False, problems=[]))
        items[name].problems.append(problem_id)
    with services().db.session() as s:
        own = problemsets.sets_of(s, g.tenant_id)
    out = list(items.values()) + [_set_out(found) for found in own]
    return ProblemSetList(items=out).model_dump(mode="json")


@bp.post("/v1/problemsets")
@operation("Make a problem set of the tenant's own", tag="problemsets", body=ProblemSetCreate,
           responses={201: ProblemSetOut})
@require(Role.INSTRUCTOR)
def create_set() -> Any:
    body = parse_json(ProblemSetCreate)
    svc = services()
    made = problemsets.create_set(svc.db, svc.settings, g.tenant_id, body.name, body.title,
                                  svc.library.global_sets())
    return _set_out(made).model_dump(mode="json"), 201, {
        "Location": url_for("problemsets.get_set", name=made.name)}


@bp.get("/v1/problemsets/<name>")
@operation("One of the tenant's problem sets", tag="problemsets",
           responses={200: ProblemSetOut})
@require(Role.CLIENT)
def get_set(name: str) -> Any:
    return _set_out(_own_set(name)).model_dump(mode="json")


def _package_bytes() -> bytes:
    limit = services().settings.max_request_bytes
    if request.mimetype == "multipart/form-data":
        upload = request.files.get("package")
        if upload is None:
            raise ApiError(422, "Invalid request", "a multipart upload needs the field "
                           "'package' (the package folder, zipped)")
        return upload.read(limit + 1)
    if request.mimetype != "application/zip":
        raise ApiError(415, "Unsupported media type", "send the package as application/zip "
                       "(or multipart/form-data with a field 'package')")
    return request.get_data(cache=False)


@bp.post("/v1/problemsets/<name>/problems")
@operation("Upload a problem package (a new version); it is built and verified in the "
           "sandbox in the background", tag="problemsets", query=UploadQuery,
           body_alternatives=ZIP_BODY, responses={202: VersionOut, 200: VersionOut},
           description="202 with the new version (queued for its build); 200 when the "
           "same files were uploaded before (the same version). Follow the Location.")
@require(Role.INSTRUCTOR)
def upload(name: str) -> Any:
    query = parse_query(UploadQuery)
    svc = services()
    _own_set(name)
    stored = problemsets.store_upload(svc.db, svc.celery, svc.settings, g.tenant_id, name,
                                      _package_bytes(), slug=query.slug,
                                      publish_when_ready=query.publish,
                                      uploaded_by=g.tenant_name)
    row, new, slug = stored.row, stored.new, stored.slug
    with svc.db.session() as s:
        package = s.get(Package, row.package_id)
        fresh = s.get(PackageVersion, row.id)
    assert package is not None and fresh is not None
    location = url_for("problemsets.get_version", name=name, slug=slug, version=row.version)
    return version_out(package, fresh).model_dump(mode="json"), 202 if new else 200, {
        "Location": location}


def _package(name: str, slug: str) -> Package:
    with services().db.session() as s:
        found = problemsets.find_package(s, g.tenant_id, f"{name}/{slug}")
    if found is None:
        raise ApiError(404, "Not found", f"no problem {name}/{slug} of yours")
    return found


@bp.get("/v1/problemsets/<name>/problems/<slug>/versions")
@operation("Every uploaded version of a problem, newest first", tag="problemsets",
           responses={200: VersionList})
@require(Role.INSTRUCTOR)
def list_versions(name: str, slug: str) -> Any:
    package = _package(name, slug)
    with services().db.session() as s:
        rows = problemsets.versions_of(s, package.id)
    return VersionList(problem=package.problem, live_version=package.live_version,
                       items=[version_out(package, r) for r in rows]).model_dump(mode="json")


@bp.get("/v1/problemsets/<name>/problems/<slug>/versions/<version>")
@operation("A version: its build's progress, every check with its result, and why it "
           "failed", tag="problemsets", responses={200: VersionOut})
@require(Role.INSTRUCTOR)
def get_version(name: str, slug: str, version: str) -> Any:
    with services().db.session() as s:
        found = problemsets.find_version(s, g.tenant_id, f"{name}/{slug}", version)
    if found is None:
        raise ApiError(404, "Not found", f"no version {version!r} of {name}/{slug}")
    return version_out(*found).model_dump(mode="json")


@bp.post("/v1/problemsets/<name>/problems/<slug>/versions/<version>/publish")
@operation("Make a ready version the live one (students are graded on it from now on)",
           tag="problemsets", body=PublishCreate, responses={200: PublishOut},
           description="With rejudge, every submission of the problem graded against "
           "another version is graded again against this one; GET /v1/rejudges/{id} "
           "reports which verdicts changed. Without it, submissions keep the version they "
           "were submitted to (queued ones included).")
@require(Role.INSTRUCTOR)
def publish(name: str, slug: str, version: str) -> Any:
    body = parse_json(PublishCreate) if request.content_length else PublishCreate()
    problem_id = f"{name}/{slug}"
    svc = services()
    package, rejudge_id, ids = problemsets.go_live(svc.db, svc.celery, svc.settings,
                                                   g.tenant_id, problem_id, version,
                                                   rejudge=body.rejudge, redis=svc.redis)
    rejudged = None if rejudge_id is None else RejudgeOut(rejudged=len(ids), ids=ids,
                                                          rejudge=rejudge_id)
    return PublishOut(problem=problem_id, live_version=package.live_version or version,
                      rejudge=rejudged).model_dump(mode="json")
