"""The database: one engine per process, sessions from a factory, SQLite tuned for a
service (WAL, a busy timeout, foreign keys) and PostgreSQL checked before each use so
that a restarted server is reconnected to by itself."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import CursorResult, DateTime, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.types import TypeDecorator

T = TypeVar("T")

# The most ids one statement binds (an IN list): well under every backend's limit on
# bound parameters, and a statement of bounded size however many rows an operation has.
MAX_BIND = 500


def utcnow() -> datetime:
    return datetime.now(UTC)


def chunked(items: Sequence[T], size: int = MAX_BIND) -> Iterator[Sequence[T]]:
    """``items`` in slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start:start + size]


def changed(s: Session, statement: Any) -> int:
    """Run an UPDATE; how many rows it changed."""
    result: CursorResult[Any] = s.execute(statement)  # type: ignore[assignment]
    return result.rowcount


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in Python, on every backend (SQLite keeps no zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def make_engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        return engine
    return create_engine(
        url, pool_pre_ping=True, pool_size=10, max_overflow=20, pool_timeout=10,
        connect_args={"connect_timeout": 5},
    )


class Database:
    """An engine and its session factory; ``session()`` commits or rolls back."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        with self.sessions() as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def dispose(self) -> None:
        self.engine.dispose()
