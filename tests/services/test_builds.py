"""A build's lifecycle (service.builds) on both databases, without a worker: what a build
records under its lease (the lease itself is tested in test_leases.py): its claim, its
steps, a postponement for the sandbox, a lost worker, its end and the live version, and
what the sweeper publishes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import update

from service.builds import (
    build_heartbeat,
    builds_to_send,
    claim_build,
    finish_build,
    postpone_build,
    record_steps,
)
from service.db import Database, utcnow
from service.keys import create_key
from service.models import BuildStatus, Package, PackageVersion, ProblemSet

pytestmark = pytest.mark.service


@pytest.fixture
def db(any_database_url: str) -> Iterator[Database]:
    database = Database(any_database_url)
    with database.session() as s:
        create_key(s, "course-a", "instructor")
        s.add(ProblemSet(id=1, tenant_id=1, name="ml-course"))
        s.flush()
        s.add(Package(id=1, set_id=1, tenant_id=1, problem="ml-course/softmax",
                      slug="softmax"))
    yield database
    database.dispose()


def add(db: Database, version_id: str = "v1", **values: object) -> str:
    with db.session() as s:
        s.add(PackageVersion(**{
            "id": version_id, "package_id": 1, "tenant_id": 1, "version": f"{version_id}-hash",
            "files": b"zip", "size_bytes": 3, "ignored": [], "status": BuildStatus.QUEUED,
            "steps": [], "total": 5, "weaknesses": [], "attempt": 0, "failures": 0,
            "enqueued": False, **values}))
    return version_id


def row(db: Database, version_id: str = "v1") -> PackageVersion:
    with db.session() as s:
        found = s.get(PackageVersion, version_id)
        assert found is not None
        return found


def live(db: Database) -> str | None:
    with db.session() as s:
        package = s.get(Package, 1)
        assert package is not None
        return package.live_version


def test_a_build_is_claimed_once_records_its_steps_and_goes_live(db: Database) -> None:
    add(db, error="an earlier try's error", steps=[{"subject": "old"}])
    taken = claim_build(db, "v1", stale_after=30)
    assert taken is not None
    assert (taken.attempt, taken.problem, taken.version, taken.files, taken.tenant_id) == (
        1, "ml-course/softmax", "v1-hash", b"zip", 1)
    assert claim_build(db, "v1", stale_after=30) is None  # a duplicate message
    building = row(db)
    assert (building.status, building.steps, building.error) == ("building", [], None)
    assert build_heartbeat(db, "v1", taken.attempt)
    assert record_steps(db, "v1", taken.attempt, [{"subject": "build", "ok": True}])
    assert row(db).steps == [{"subject": "build", "ok": True}]
    assert finish_build(db, "v1", taken.attempt, data=b"data", error=None,
                        weaknesses=["weak"], seconds=1.23456)
    assert not finish_build(db, "v1", taken.attempt, data=None, error="again",
                            weaknesses=[], seconds=1)  # never twice
    ready = row(db)
    assert (ready.status, ready.data, ready.weaknesses, ready.build_seconds,
            ready.enqueued, ready.heartbeat_at) == ("ready", b"data", ["weak"], 1.235, False,
                                                    None)
    assert live(db) == "v1-hash"  # the problem's first version goes live by itself
    assert claim_build(db, "v1", stale_after=30) is None  # over


def test_a_failed_build_says_why_and_a_second_ready_version_waits_to_be_published(
        db: Database) -> None:
    add(db, "v1")
    add(db, "v2")
    first = claim_build(db, "v1", stale_after=30)
    assert first is not None and finish_build(db, "v1", first.attempt, data=b"d", error=None,
                                              weaknesses=[], seconds=1)
    second = claim_build(db, "v2", stale_after=30)
    assert second is not None and finish_build(db, "v2", second.attempt, data=b"d",
                                               error=None, weaknesses=[], seconds=1)
    assert live(db) == "v1-hash"  # not uploaded with publish: the first stays live
    add(db, "v3")
    third = claim_build(db, "v3", stale_after=30)
    assert third is not None and finish_build(db, "v3", third.attempt, data=b"d",
                                              error="x" * 5000, weaknesses=["w"], seconds=1)
    failed = row(db, "v3")
    assert (failed.status, failed.data, len(failed.error or "")) == ("failed", None, 4000)


def test_a_build_whose_sandbox_was_unavailable_is_sent_again_when_due(db: Database) -> None:
    add(db)
    taken = claim_build(db, "v1", stale_after=30)
    assert taken is not None
    assert postpone_build(db, "v1", taken.attempt, delay=60, error="waiting for the sandbox")
    assert not postpone_build(db, "v1", taken.attempt, delay=60, error="again")  # once
    back = row(db)
    assert (back.status, back.enqueued, back.failures, back.error) == (
        "queued", False, 1, "waiting for the sandbox")
    assert not record_steps(db, "v1", taken.attempt, [])  # the holder is fenced out
    assert builds_to_send(db, stale_after=30) == []  # not before it is due
    with db.session() as s:
        s.execute(update(PackageVersion).values(retry_at=utcnow() - timedelta(seconds=1)))
    assert builds_to_send(db, stale_after=30) == ["v1"]
    again = claim_build(db, "v1", stale_after=30)
    assert again is not None and (again.attempt, again.failures) == (2, 1)


def test_the_sweeper_sends_lost_unpublished_and_unstarted_builds(db: Database) -> None:
    now, old = utcnow(), utcnow() - timedelta(minutes=5)
    add(db, "lost", status=BuildStatus.BUILDING, attempt=1, heartbeat_at=old,
        worker="elsewhere:1")
    add(db, "alive", status=BuildStatus.BUILDING, attempt=1, heartbeat_at=now,
        worker="elsewhere:1")
    add(db, "unsent")
    add(db, "inbroker", enqueued=True)  # published, not yet due to be sent again
    add(db, "unstarted", enqueued=True, retry_at=now - timedelta(seconds=1))
    assert sorted(builds_to_send(db, stale_after=30)) == ["lost", "unsent", "unstarted"]
    lost = row(db, "lost")
    assert (lost.status, lost.enqueued, lost.heartbeat_at) == ("queued", False, None)
    assert row(db, "alive").status == "building"
    stale = claim_build(db, "lost", stale_after=30)
    assert stale is not None and stale.attempt == 2
