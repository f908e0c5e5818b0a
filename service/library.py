"""Which problems a tenant sees, and the package of each: the server's own sets (the
core's :class:`~judge.catalog.Catalog`, on disk, global and read-only) and the tenant's
own sets (uploaded versions, kept in the database).

Every lookup is on behalf of a tenant: a set of another tenant is answered exactly as a
problem that does not exist (the same :class:`~judge.errors.ProblemNotFound`, whose close
matches are drawn only from what the tenant sees). An uploaded version is unpacked once
per process into ``packages_dir/<set>/<slug>/<version>`` (files and built test data, the
folder renamed into place when complete) and loaded from there; versions never change,
so what is unpacked stays right.
"""

from __future__ import annotations

import difflib
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select

from judge.catalog import Catalog
from judge.errors import ProblemError, ProblemNotFound
from judge.problem import Problem
from judge.testdata import check_hash
from service.db import Database
from service.models import BuildStatus, Package, PackageVersion
from service.packages import unpack

SCAN_SECONDS = 10.0  # how stale the list of good and broken global packages may be
Scan = tuple[list[Problem], dict[str, str]]  # the good problems, and why each broken one is


class ProblemUnavailable(ProblemError):
    """A problem the tenant has, whose package cannot be loaded: a global one broken on
    disk (a malformed ``problem.yaml``, missing test data), or an uploaded version that
    does not unpack or load. ``version`` is what a submission to it records (the
    uploaded version; empty for a global package, as the ``internal_error`` report that
    ends such a submission says); the message is the loader's (it names files of the
    package: for operators and instructors)."""

    def __init__(self, problem_id: str, version: str, reason: str) -> None:
        super().__init__(" ".join(reason.split()))  # one line (YAML's errors take three)
        self.problem_id, self.version = problem_id, version


def _loaded(problem_id: str, version: str, load: Callable[[], Problem]) -> Problem:
    """``load()``, its version read (so that callers can record it), or
    :class:`ProblemUnavailable` saying why not."""
    try:
        problem = load()
        _ = problem.version
    except ProblemError as exc:
        raise ProblemUnavailable(problem_id, version, str(exc)) from None
    return problem


@dataclass
class Library:
    catalog: Catalog
    db: Database
    packages_dir: Path
    _scanned: tuple[float, Scan] | None = field(default=None, init=False, repr=False)

    def global_sets(self) -> set[str]:
        """The names of the server's own sets (folders of the problems folder)."""
        root = self.catalog.root
        return {p.name for p in root.iterdir() if p.is_dir()} if root.is_dir() else set()

    def is_global(self, problem_id: str) -> bool:
        return problem_id.split("/", 1)[0] in self.global_sets()

    def ids(self, tenant_id: int) -> list[str]:
        """Every problem id the tenant may grade on: global ones and its live ones."""
        with self.db.session() as s:
            own = list(s.scalars(select(Package.problem).where(
                Package.tenant_id == tenant_id, Package.live_version.is_not(None))))
        return sorted(self.catalog.ids() + own)

    def get(self, tenant_id: int, problem_id: str, version: str | None = None) -> Problem:
        """The problem as the tenant sees it: a global one as on disk; one of the
        tenant's own at ``version`` (any built one), or at its live version.
        :class:`ProblemNotFound` when the tenant has no such problem,
        :class:`ProblemUnavailable` when it has one whose package cannot be loaded."""
        if self.is_global(problem_id):
            return _loaded(problem_id, "", lambda: self.catalog.get(problem_id))
        with self.db.session() as s:
            package = s.scalar(select(Package).where(Package.problem == problem_id,
                                                     Package.tenant_id == tenant_id))
            wanted = version if version is not None else (
                package.live_version if package is not None else None)
            row = None if package is None or wanted is None else s.scalar(
                select(PackageVersion).where(PackageVersion.package_id == package.id,
                                             PackageVersion.version == wanted,
                                             PackageVersion.status == BuildStatus.READY))
            if row is None:
                raise self._not_found(tenant_id, problem_id)
            pinned = row.version
            try:
                path = self.unpacked(problem_id, row)
            except (OSError, ProblemError) as exc:
                raise ProblemUnavailable(problem_id, pinned,
                                         f"{problem_id}: cannot unpack: {exc}") from None
        return _loaded(problem_id, pinned,
                       lambda: Problem.load(problem_id, path, version=pinned))

    def global_scan(self) -> Scan:
        """:meth:`Catalog.scan` of the judge's own packages (which hashes every package's
        test data, tens of ms for 20 problems), at most once per SCAN_SECONDS in this
        process (two threads that find it stale at once both scan: harmless)."""
        now, kept = time.monotonic(), self._scanned
        if kept is None or now - kept[0] > SCAN_SECONDS:
            kept = self._scanned = (now, self.catalog.scan())
        return kept[1]

    def scan(self, tenant_id: int, global_scan: Scan | None = None) -> Scan:
        """Like :meth:`Catalog.scan`, for the tenant: the global packages (``global_scan``
        when the caller keeps one) and the live version of each of the tenant's own."""
        good, broken = global_scan if global_scan is not None else self.catalog.scan()
        good, broken = list(good), dict(broken)
        with self.db.session() as s:
            live = list(s.execute(
                select(Package.problem, PackageVersion)
                .join(PackageVersion, (PackageVersion.package_id == Package.id)
                      & (PackageVersion.version == Package.live_version))
                .where(Package.tenant_id == tenant_id).order_by(Package.problem)))
            paths = []
            for problem_id, row in live:
                try:
                    paths.append((problem_id, row.version, self.unpacked(problem_id, row)))
                except (OSError, ProblemError) as exc:
                    broken[problem_id] = f"{problem_id}: cannot unpack: {exc}"
        for problem_id, version, path in paths:
            try:
                problem = Problem.load(problem_id, path, version=version)
                check_hash(problem)
            except ProblemError as exc:
                broken[problem_id] = str(exc)
            else:
                good.append(problem)
        good.sort(key=lambda p: p.id)
        return good, broken

    def unpacked(self, problem_id: str, row: PackageVersion) -> Path:
        """The folder of a built version, unpacked if this process has not yet."""
        target = self.packages_dir / problem_id / row.version
        if target.is_dir():
            return target
        if row.data is None:
            raise ProblemError(f"{problem_id}: version {row.version} has no test data")
        staging = target.with_name(f".{row.version}.{uuid.uuid4().hex[:8]}")
        try:
            unpack(row.files, staging)
            unpack(row.data, staging / "data")
            os.makedirs(target.parent, exist_ok=True)
            try:
                staging.rename(target)
            except OSError:  # another process unpacked it first: the same bytes
                if not target.is_dir():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return target

    def _not_found(self, tenant_id: int, problem_id: str) -> ProblemNotFound:
        known = self.ids(tenant_id)
        close = difflib.get_close_matches(problem_id, known, n=3, cutoff=0.5)
        return ProblemNotFound(problem_id, close)
