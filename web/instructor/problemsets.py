"""The tenant's own problem sets (signed in with a key): making a set, uploading a package
(a new version, built and verified by a worker), a version's checks as its build goes,
and making a ready version live (with a rejudge and its report)."""

from __future__ import annotations

from flask import jsonify, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from app.services import services
from app.sessions import Principal
from service import problemsets
from service.models import BuildStatus, Package, PackageVersion
from service.packages import PackageRejected
from service.rejudges import report
from service.submitting import (
    Refused,
)
from service.wire import RejudgeReport
from web.access import (
    not_found,
)
from web.instructor.blueprint import bp, key_instructor, refusal


def _problems(who: Principal, error_for: str | None = None, error: str = "") -> str:
    """The problems page; ``error`` shown at the form of set ``error_for`` ("": the
    form that makes a set)."""
    with services().db.session() as s:
        sets = [(found, [(package, problemsets.versions_of(s, package.id))
                         for package in problemsets.packages_of(s, found.id)])
                for found in problemsets.sets_of(s, who.tenant_id)]
    return render_template("instructor/problems.html", who=who, sets=sets,
                           error_for=error_for, error=error)


@bp.get("/app/<sid>/problemsets")
def problems_page() -> str:
    """The tenant's sets, their problems and every version of each."""
    return _problems(key_instructor())


@bp.post("/app/<sid>/problemsets")
def new_set() -> ResponseReturnValue:
    who = key_instructor()
    svc = services()
    name = request.form.get("name", "").strip()
    title = " ".join(request.form.get("title", "").split())[:200]
    try:
        problemsets.create_set(svc.db, svc.settings, who.tenant_id, name, title,
                               svc.library.global_sets())
    except Refused as exc:
        return _problems(who, "", exc.detail), exc.status
    return redirect(url_for("instructor.problems_page", _anchor=f"set-{name}"), 303)


@bp.post("/app/<sid>/problemsets/<name>/problems")
def upload_package(name: str) -> ResponseReturnValue:
    """A package (the folder, zipped) stored as a new version of one of the set's
    problems and built in the background; the same files again are the same version."""
    who = key_instructor()
    svc = services()
    with svc.db.session() as s:
        if problemsets.own_set(s, who.tenant_id, name) is None:
            not_found("problem set")
    upload = request.files.get("package")
    try:
        if upload is None or not upload.filename:
            raise Refused(422, "No file", "choose the package's folder, zipped")
        stored = problemsets.store_upload(
            svc.db, svc.celery, svc.settings, who.tenant_id, name,
            upload.read(svc.settings.max_request_bytes + 1),
            slug=request.form.get("slug", "").strip() or None,
            publish_when_ready=bool(request.form.get("publish")),
            uploaded_by=(who.name or who.user_id)[:100])
    except (Refused, PackageRejected) as exc:
        status, message = refusal(exc)
        return _problems(who, name, message), status
    return redirect(url_for("instructor.version_page", name=name, slug=stored.slug,
                            version=stored.row.version), 303)


def _own_version(who: Principal, name: str, slug: str, version: str
                 ) -> tuple[Package, PackageVersion]:
    with services().db.session() as s:
        found = problemsets.find_version(s, who.tenant_id, f"{name}/{slug}", version)
    if found is None:
        not_found("version")
    return found


def _rejudges(who: Principal, package: Package, version: str) -> list[RejudgeReport]:
    """The reports of the latest rejudges onto the version."""
    db = services().db
    with db.session() as s:
        ids = problemsets.rejudges_of(s, who.tenant_id, package.problem, version)
    return [found for found in (report(db, who.tenant_id, i) for i in ids)
            if found is not None]


def _watched(row: PackageVersion, reports: list[RejudgeReport]) -> bool:
    """Whether the version page still changes: the build or a rejudge is running."""
    return row.status in (BuildStatus.QUEUED, BuildStatus.BUILDING) or \
        any(not r.finished for r in reports)


def _version(name: str, slug: str, version: str, error: str = "") -> str:
    who = key_instructor()
    package, row = _own_version(who, name, slug, version)
    reports = _rejudges(who, package, version)
    return render_template("instructor/version.html", who=who, set_name=name,
                           package=package, row=row, steps=row.steps or [],
                           reports=reports, watching=_watched(row, reports), error=error)


@bp.get("/app/<sid>/problemsets/<name>/problems/<slug>/versions/<version>")
def version_page(name: str, slug: str, version: str) -> str:
    """A version's build: every check with its result, why it failed, what a ready one
    still lacks; refreshed while it builds (and while a rejudge onto it runs)."""
    return _version(name, slug, version)


@bp.get("/app/<sid>/problemsets/<name>/problems/<slug>/versions/<version>/progress")
def version_progress(name: str, slug: str, version: str) -> ResponseReturnValue:
    who = key_instructor()
    package, row = _own_version(who, name, slug, version)
    return jsonify({"status": row.status, "checked": len(row.steps or []),
                    "total": row.total,
                    "done": not _watched(row, _rejudges(who, package, version))})


@bp.post("/app/<sid>/problemsets/<name>/problems/<slug>/versions/<version>/publish")
def make_live(name: str, slug: str, version: str) -> ResponseReturnValue:
    """The version becomes the one students are graded on; with ``rejudge``, the
    submissions graded on other versions are graded again on it."""
    who = key_instructor()
    package, _ = _own_version(who, name, slug, version)
    svc = services()
    try:
        problemsets.go_live(svc.db, svc.celery, svc.settings, who.tenant_id,
                            package.problem, version,
                            rejudge=bool(request.form.get("rejudge")), redis=svc.redis)
    except Refused as exc:
        return _version(name, slug, version, exc.detail), exc.status
    return redirect(url_for("instructor.version_page", name=name, slug=slug,
                            version=version), 303)
