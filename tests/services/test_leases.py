"""The lease (service.leases) on both databases, over a table of its own: claim with a
fence, heartbeat, retry later, release, finish, and the sweeper's search for lost
holders. Gradings and builds use this one lease; their own tests
(test_submissions_state.py, test_builds.py) check what each records with it."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from sqlalchemy import Boolean, Integer, String, select, update
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from service.db import Database, UTCDateTime, utcnow
from service.leases import Lease
from service.liveness import worker_name

pytestmark = pytest.mark.service


class Base(DeclarativeBase):
    pass


class Job(Base):
    """The columns a leased table has, and one of the job's own (``note``)."""

    __tablename__ = "lease_test_jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    status: Mapped[str] = mapped_column(String(20), default="queued")
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    retry_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    enqueued: Mapped[bool] = mapped_column(Boolean, default=True)
    note: Mapped[str] = mapped_column(String(50), default="")


LEASE = Lease(Job, waiting="queued", held="held", over=("done", "failed"))


@pytest.fixture
def db(any_database_url: str) -> Iterator[Database]:
    database = Database(any_database_url)
    Base.metadata.create_all(database.engine)
    yield database
    database.dispose()


def add(db: Database, *ids: str, **values: object) -> None:
    with db.session() as s:
        s.add_all(Job(id=job_id, **values) for job_id in ids)


def job(db: Database, job_id: str = "j1") -> Job:
    with db.session() as s:
        found = s.get(Job, job_id)
        assert found is not None
        return found


def claim(db: Database, job_id: str = "j1", stale_after: float = 30, **values: object
          ) -> int | None:
    """The attempt taken, or None: what a kind's claim does with the lease."""
    now = utcnow()
    with db.session() as s:
        row = LEASE.claimable(s, job_id, stale_after=stale_after, now=now)
        if row is None:
            return None
        attempt = row.attempt + 1
        return attempt if LEASE.take(s, row, now=now, **values) else None


def age(db: Database, job_id: str = "j1", seconds: float = 60) -> None:
    """The holder of ``job_id`` stops beating ``seconds`` ago."""
    with db.session() as s:
        s.execute(update(Job).where(Job.id == job_id)
                  .values(heartbeat_at=utcnow() - timedelta(seconds=seconds)))


def gone_worker() -> str:
    """The name of a process of this host that has exited."""
    child = subprocess.Popen(["true"])
    child.wait()
    return f"{socket.gethostname()}:{child.pid}"


def test_a_claim_raises_the_attempt_and_holds_the_row(db: Database) -> None:
    add(db, "j1", retry_at=utcnow())
    before = utcnow()
    assert claim(db, note="taken") == 1
    held = job(db)
    assert (held.status, held.attempt, held.worker, held.note) == ("held", 1, worker_name(),
                                                                    "taken")
    assert held.retry_at is None
    assert held.heartbeat_at is not None and held.heartbeat_at >= before
    assert held.started_at == held.heartbeat_at
    assert claim(db) is None  # held by a live worker: not ours


def test_of_two_claimants_that_read_the_same_attempt_one_wins(db: Database) -> None:
    add(db, "j1")
    now = utcnow()
    with db.session() as first, db.session() as second:
        a = LEASE.claimable(first, "j1", stale_after=30, now=now)
        b = LEASE.claimable(second, "j1", stale_after=30, now=now)
        assert a is not None and b is not None
        assert LEASE.take(first, a, now=now)
        first.commit()
        assert not LEASE.take(second, b, now=now)
    assert job(db).attempt == 1


def test_missing_and_ended_rows_are_not_claimed(db: Database) -> None:
    add(db, "done", status="done")
    add(db, "failed", status="failed")
    assert [claim(db, job_id) for job_id in ("missing", "done", "failed")] == [None] * 3


def test_a_stale_holder_is_taken_over_and_fenced_out(db: Database) -> None:
    add(db, "j1")
    old = claim(db)
    assert old == 1
    age(db, seconds=20)
    assert claim(db) is None  # 20 s without a beat is not stale after 30 s
    age(db, seconds=60)
    new = claim(db)
    assert new == 2
    with db.session() as s:  # the old holder can do nothing any more
        assert not LEASE.beat(s, "j1", old, note="old")
        assert not LEASE.retry_later(s, "j1", old, delay=5, now=utcnow())
        assert not LEASE.release(s, "j1", old)
        assert not LEASE.finish(s, "j1", old, "done", now=utcnow())
    assert (job(db).status, job(db).attempt, job(db).note) == ("held", 2, "")


def test_a_holder_whose_process_is_gone_is_taken_over_at_once(db: Database) -> None:
    add(db, "j1", status="held", attempt=3, worker=gone_worker(), heartbeat_at=utcnow())
    assert claim(db) == 4
    add(db, "j2", status="held", attempt=3, worker="elsewhere:1", heartbeat_at=utcnow())
    assert claim(db, "j2") is None  # another host's process: only its heartbeat tells


def test_a_heartbeat_is_the_holders_alone(db: Database) -> None:
    add(db, "j1")
    taken = claim(db)
    assert taken is not None
    age(db)
    with db.session() as s:
        assert LEASE.beat(s, "j1", taken, note="step 1")
        assert not LEASE.beat(s, "j1", taken + 1)
    beat = job(db).heartbeat_at
    assert beat is not None and beat > utcnow() - timedelta(seconds=5)
    assert job(db).note == "step 1"
    assert claim(db) is None  # alive again


def test_retry_later_gives_the_row_back_due_after_the_delay(db: Database) -> None:
    add(db, "j1")
    taken = claim(db)
    assert taken is not None
    now = utcnow()
    with db.session() as s:
        assert LEASE.retry_later(s, "j1", taken, delay=60, now=now, note="engine down")
        assert not LEASE.retry_later(s, "j1", taken, delay=60, now=now)  # once
    back = job(db)
    assert (back.status, back.enqueued, back.worker, back.heartbeat_at, back.failures,
            back.note) == ("queued", False, None, None, 1, "engine down")
    assert back.retry_at == now + timedelta(seconds=60)
    assert due(db, now) == []  # the backoff lives in the database
    assert due(db, now + timedelta(seconds=61)) == ["j1"]
    assert claim(db) == 2 and job(db).retry_at is None and job(db).failures == 1


def due(db: Database, now: datetime) -> list[str]:
    with db.session() as s:
        return list(s.scalars(select(Job.id).where(LEASE.due(now)).order_by(Job.id)))


def test_release_puts_the_row_back_due_at_once(db: Database) -> None:
    add(db, "j1")
    taken = claim(db)
    assert taken is not None
    with db.session() as s:
        assert LEASE.release(s, "j1", taken)
    back = job(db)
    assert (back.status, back.enqueued, back.worker, back.retry_at, back.failures) == (
        "queued", False, None, None, 0)
    assert due(db, utcnow()) == ["j1"]


def test_finish_ends_the_row_once(db: Database) -> None:
    add(db, "j1")
    taken = claim(db)
    assert taken is not None
    now = utcnow()
    with db.session() as s:
        assert LEASE.finish(s, "j1", taken, "done", now=now, note="result")
        assert not LEASE.finish(s, "j1", taken, "failed", now=now)  # never twice
        with pytest.raises(AssertionError):
            LEASE.finish(s, "j1", taken, "queued", now=now)  # not an ending
    ended = job(db)
    assert (ended.status, ended.finished_at, ended.heartbeat_at, ended.note) == (
        "done", now, None, "result")
    assert claim(db) is None  # done stays done


def test_the_sweep_releases_every_lost_holder_once_past_a_page(db: Database) -> None:
    now, old = utcnow(), utcnow() - timedelta(minutes=5)
    add(db, *(f"alive{i}" for i in range(3)), status="held", attempt=1, heartbeat_at=now,
        worker="elsewhere:1")
    add(db, *(f"lost{i}" for i in range(4)), status="held", attempt=1, heartbeat_at=old,
        worker="elsewhere:1")
    add(db, "silent", status="held", attempt=1, heartbeat_at=None)
    add(db, "gone", status="held", attempt=1, heartbeat_at=now, worker=gone_worker())
    add(db, "waiting", heartbeat_at=old)
    lost = LEASE.requeue_lost(db, stale_after=30, page=2)
    assert sorted(lost) == ["gone", "lost0", "lost1", "lost2", "lost3", "silent"]
    assert {job(db, job_id).status for job_id in lost} == {"queued"}
    assert {job(db, f"alive{i}").status for i in range(3)} == {"held"}
    assert LEASE.requeue_lost(db, stale_after=30, page=2) == []  # a second sweeper: nothing


def test_the_sweep_releases_through_the_kinds_own_requeue(db: Database) -> None:
    add(db, "j1", status="held", attempt=2, heartbeat_at=None)
    add(db, "j2", status="held", attempt=1, heartbeat_at=None)
    seen: list[tuple[str, int]] = []

    def requeue(s: Session, job_id: str, attempt: int, now: datetime) -> bool:
        seen.append((job_id, attempt))
        return job_id == "j1" and LEASE.release(s, job_id, attempt, note="lost")

    assert LEASE.requeue_lost(db, stale_after=30, requeue=requeue) == ["j1"]
    assert sorted(seen) == [("j1", 2), ("j2", 1)]
    assert (job(db, "j1").status, job(db, "j1").note) == ("queued", "lost")
    assert job(db, "j2").status == "held"
