"""Tenants' own problem sets: their quotas, creating a set, storing an upload as a
version (and dispatching its build), and choosing the live version. What the REST API,
the pages and the CLI share; the build's lifecycle is :mod:`service.builds`, the build
itself runs in a worker (:mod:`workers.building`).

A version becomes live only when it is ``ready``: by itself if it is the problem's first,
or if it was uploaded with ``publish``, or when the instructor publishes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

from celery import Celery
from redis import Redis
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, defer

from service import rejudges
from service.builds import dispatch_build, total_steps
from service.db import Database, utcnow
from service.models import (
    BuildStatus,
    Package,
    PackageVersion,
    ProblemSet,
    Rejudge,
    Submission,
    Tenant,
)
from service.packages import PackageCaps, Upload, check_package, pack, read_package_zip
from service.settings import ServiceSettings
from service.submissions import new_id
from service.submitting import Refused

SET_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,79}")


@dataclass(frozen=True)
class Quotas:
    """A tenant's quotas: the settings' ``quota_*`` values, each replaced by the
    tenant's own where it has one (``jaxjudge tenants quotas``)."""

    sets: int
    problems: int
    versions: int
    package_bytes: int
    build_seconds: float

    @classmethod
    def of(cls, settings: ServiceSettings, tenant: Tenant | None) -> Quotas:
        own = (tenant.quotas or {}) if tenant is not None else {}
        return cls(**{f.name: type(getattr(settings, "quota_" + f.name))(
            own.get(f.name, getattr(settings, "quota_" + f.name))) for f in fields(cls)})


QUOTA_NAMES = tuple(f.name for f in fields(Quotas))


def caps(settings: ServiceSettings, quotas: Quotas) -> PackageCaps:
    return PackageCaps(
        max_files=settings.package_max_files, max_bytes=quotas.package_bytes,
        max_tests=settings.package_max_tests,
        max_input_bytes=settings.package_max_input_mb << 20,
        max_memory_mb=settings.package_max_memory_mb,
        max_test_seconds=settings.package_max_test_seconds,
        max_total_seconds=settings.package_max_total_seconds)


def quotas_of(s: Session, settings: ServiceSettings, tenant_id: int) -> Quotas:
    return Quotas.of(settings, s.get(Tenant, tenant_id))


def _over(what: str, limit: float) -> Refused:
    return Refused(403, "Quota exceeded", f"the tenant's quota of {limit:g} {what} is used up; "
                   "ask the judge's operator for more")


# Sets.


def create_set(db: Database, settings: ServiceSettings, tenant_id: int, name: str,
               title: str, reserved: set[str]) -> ProblemSet:
    if not SET_NAME.fullmatch(name):
        raise Refused(422, "Invalid set name", f"{name[:100]!r} is not a set name (1 to 80 "
                      "lowercase letters, digits and -, starting with a letter or digit)")
    if name in reserved:
        raise Refused(409, "Set name taken", f"{name!r} is one of the judge's own sets")
    try:
        with db.session() as s:
            if s.scalar(select(ProblemSet).where(ProblemSet.name == name)) is not None:
                raise Refused(409, "Set name taken", f"the set name {name!r} is taken")
            quotas = quotas_of(s, settings, tenant_id)
            owned = s.scalar(select(func.count()).select_from(ProblemSet)
                             .where(ProblemSet.tenant_id == tenant_id)) or 0
            if owned >= quotas.sets:
                raise _over("problem sets", quotas.sets)
            row = ProblemSet(tenant_id=tenant_id, name=name, title=title)
            s.add(row)
    except IntegrityError:  # the same name, concurrently
        raise Refused(409, "Set name taken", f"the set name {name!r} is taken") from None
    return row


def sets_of(s: Session, tenant_id: int) -> list[ProblemSet]:
    return list(s.scalars(select(ProblemSet).where(ProblemSet.tenant_id == tenant_id)
                          .order_by(ProblemSet.name)))


def own_set(s: Session, tenant_id: int, name: str) -> ProblemSet | None:
    """The tenant's set ``name``; None for a set it does not have (another tenant's
    set included: the answer is the same)."""
    return s.scalar(select(ProblemSet).where(ProblemSet.name == name,
                                             ProblemSet.tenant_id == tenant_id))


def packages_of(s: Session, set_id: int) -> list[Package]:
    return list(s.scalars(select(Package).where(Package.set_id == set_id)
                          .order_by(Package.slug)))


def versions_of(s: Session, package_id: int) -> list[PackageVersion]:
    """Newest first, without their files and test data (loaded only if read)."""
    return list(s.scalars(select(PackageVersion).where(PackageVersion.package_id == package_id)
                          .options(defer(PackageVersion.files), defer(PackageVersion.data))
                          .order_by(PackageVersion.uploaded_at.desc(), PackageVersion.id)))


def find_package(s: Session, tenant_id: int, problem_id: str) -> Package | None:
    return s.scalar(select(Package).where(Package.problem == problem_id,
                                          Package.tenant_id == tenant_id))


def find_version(s: Session, tenant_id: int, problem_id: str, version: str
                 ) -> tuple[Package, PackageVersion] | None:
    package = find_package(s, tenant_id, problem_id)
    if package is None:
        return None
    row = s.scalar(select(PackageVersion).where(PackageVersion.package_id == package.id,
                                                PackageVersion.version == version))
    if row is None:
        return None
    # Read the package again after the version: a build that ended between the two reads
    # made the version ready and the package live in one commit, and a reader without a
    # snapshot (SQLite's driver begins no transaction for a SELECT) must not show one
    # half of it.
    s.refresh(package)
    return package, row


# Uploads.


def add_version(db: Database, settings: ServiceSettings, tenant_id: int, set_name: str,
                slug: str, upload: Upload, quotas: Quotas, *, publish_when_ready: bool = False,
                uploaded_by: str = "") -> tuple[PackageVersion, bool]:
    """Store ``upload`` as a version of ``<set_name>/<slug>`` (made if new) and leave
    it ``queued`` for a build; the row and whether it is new (the same files uploaded
    again are the same version). Refuses a package that breaks a rule (422,
    :class:`~service.packages.PackageRejected`), the tenant's ``quotas``, and a set the
    tenant does not have (404)."""
    problem_id = f"{set_name}/{slug}"
    if upload.size > quotas.package_bytes:
        raise Refused(413, "Content too large", f"the package is {upload.size} bytes; the "
                      f"limit is {quotas.package_bytes} bytes")
    check_package(upload, problem_id, caps(settings, quotas))
    try:
        with db.session() as s:
            problem_set = own_set(s, tenant_id, set_name)
            if problem_set is None:
                raise Refused(404, "Not found", f"no problem set {set_name!r}")
            package = find_package(s, tenant_id, problem_id)
            if package is None:
                problems = s.scalar(select(func.count()).select_from(Package)
                                    .where(Package.tenant_id == tenant_id)) or 0
                if problems >= quotas.problems:
                    raise _over("problems", quotas.problems)
                package = Package(set_id=problem_set.id, tenant_id=tenant_id,
                                  problem=problem_id, slug=slug)
                s.add(package)
                s.flush()
            else:
                found = s.scalar(select(PackageVersion).where(
                    PackageVersion.package_id == package.id,
                    PackageVersion.version == upload.version))
                if found is not None:
                    return found, False
            versions = s.scalar(select(func.count()).select_from(PackageVersion)
                                .where(PackageVersion.tenant_id == tenant_id)) or 0
            if versions >= quotas.versions:
                raise _over("package versions", quotas.versions)
            row = PackageVersion(
                id=new_id(), package_id=package.id, tenant_id=tenant_id,
                version=upload.version, files=pack(upload.files), size_bytes=upload.size,
                ignored=list(upload.ignored), publish=publish_when_ready,
                status=BuildStatus.QUEUED, steps=[], total=total_steps(upload),
                weaknesses=[], attempt=0, failures=0, enqueued=False, uploaded_by=uploaded_by)
            s.add(row)
    except IntegrityError:  # the same package or version, concurrently
        raise Refused(409, "Conflict", f"another upload of {problem_id} is being stored; "
                      "send it again") from None
    return row, True


@dataclass(frozen=True)
class Stored:
    """An upload stored: its version's row, its problem's slug, and whether it is new."""

    row: PackageVersion
    slug: str
    new: bool


def store_upload(db: Database, celery: Celery, settings: ServiceSettings, tenant_id: int,
                 set_name: str, data: bytes, *, slug: str | None = None,
                 publish_when_ready: bool = False, uploaded_by: str = "") -> Stored:
    """An uploaded zip read under the tenant's caps, stored by :func:`add_version` as a
    version of ``<set_name>/<slug>`` (``slug``, or else the folder it was zipped in), and
    its build dispatched when it is new. Refuses as :func:`add_version` does, and a zip
    that names no slug (422)."""
    with db.session() as s:
        quotas = quotas_of(s, settings, tenant_id)
    package_caps = caps(settings, quotas)
    got = read_package_zip(data, max_files=package_caps.max_files,
                           max_bytes=package_caps.max_bytes)
    slug = slug or got.folder
    if slug is None or not SET_NAME.fullmatch(slug):
        raise Refused(422, "Unprocessable package", "name the problem: give its slug, or zip "
                      "the package's folder (its name, lowercase letters, digits and -, is "
                      "the slug)")
    row, new = add_version(db, settings, tenant_id, set_name, slug, got, quotas,
                           publish_when_ready=publish_when_ready, uploaded_by=uploaded_by)
    if new:
        dispatch_build(db, celery, row.id, timeout=settings.publish_timeout_seconds,
                       resend_after=settings.requeue_after_seconds)
    return Stored(row, slug, new)


def publish_version(db: Database, tenant_id: int, problem_id: str, version: str) -> Package:
    """Make a ready version the live one (what students are graded on from now)."""
    with db.session() as s:
        found = find_version(s, tenant_id, problem_id, version)
        if found is None:
            raise Refused(404, "Not found", f"no version {version!r} of {problem_id!r}")
        package, row = found
        if row.status != BuildStatus.READY:
            raise Refused(409, "Not ready", f"version {version} is {row.status}; only a "
                          "ready (built and verified) version can go live")
        package.live_version = row.version
        package.updated_at = utcnow()
    return package


def go_live(db: Database, celery: Celery, settings: ServiceSettings, tenant_id: int,
            problem_id: str, version: str, *, rejudge: bool = False, redis: Redis
            ) -> tuple[Package, str | None, list[str]]:
    """:func:`publish_version`; with ``rejudge``, every submission of the problem graded
    on another version is put back in the queue against this one, its verdict kept for
    the report (:func:`service.rejudges.report`). The package, the rejudge's id and the
    submissions rejudged."""
    package = publish_version(db, tenant_id, problem_id, version)
    if not rejudge:
        return package, None, []
    where = ((Submission.tenant_id == tenant_id) & (Submission.problem == problem_id)
             & (Submission.problem_version != version))
    rejudge_id, ids = rejudges.start_and_send(db, celery, settings, tenant_id, problem_id,
                                              where, version, redis=redis)
    return package, rejudge_id, ids


def rejudges_of(s: Session, tenant_id: int, problem_id: str, version: str,
                limit: int = 5) -> list[str]:
    """The ids of the latest rejudges of a problem against one of its versions."""
    return list(s.scalars(select(Rejudge.id).where(
        Rejudge.tenant_id == tenant_id, Rejudge.problem == problem_id,
        Rejudge.version == version).order_by(Rejudge.created_at.desc()).limit(limit)))
