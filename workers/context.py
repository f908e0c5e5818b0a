"""What a grading process holds: settings, the database, Redis, the library and a
sandbox with its warm pool. Built once per process (after the fork, in the prefork
pool's child), and announced to Redis every heartbeat so that ``/readyz`` and
``/metrics`` see live workers and their pools."""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from redis import Redis
from redis.exceptions import RedisError

from judge.catalog import Catalog
from judge.errors import ConfigError
from judge.sandbox import backend, get_sandbox
from judge.sandbox.base import Sandbox
from judge.settings import Settings
from service import metrics
from service.db import Database
from service.library import Library
from service.liveness import worker_name
from service.settings import ServiceSettings

log = logging.getLogger(__name__)


@dataclass
class Context:
    settings: ServiceSettings
    judge: Settings
    db: Database
    redis: Redis
    library: Library
    name: str
    _sandbox: Sandbox | None = None
    _stop: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def build(cls, sandbox: str | None = None) -> Context:
        """The context of this process; ``sandbox`` replaces the configured backend (the
        name the main process resolved, :func:`workers.isolation.grading_sandbox`)."""
        settings, judge = ServiceSettings(), Settings()
        if sandbox is not None:
            judge = judge.model_copy(update={"sandbox": sandbox})
        db = Database(settings.database_url)
        return cls(settings=settings, judge=judge, db=db,
                   redis=Redis.from_url(settings.redis_url, socket_connect_timeout=2,
                                        socket_timeout=10),
                   library=Library(Catalog(judge.problems_dir), db, settings.packages_dir),
                   name=worker_name())

    @property
    def sandbox(self) -> Sandbox:
        """The sandbox, made on first use; raises ``SandboxError`` (made again next time)
        when its infrastructure is away."""
        if self._sandbox is None:
            self._sandbox = get_sandbox(self.judge.sandbox, self.judge)
        return self._sandbox

    @property
    def isolated(self) -> bool:
        """Whether this process's sandbox backend isolates (known before it is made)."""
        try:
            return backend(self.judge.sandbox).isolated
        except ConfigError:  # "auto", not resolved: not a grading process
            return False

    def start_announcing(self) -> None:
        threading.Thread(target=self._announce, name="jaxjudge-announce", daemon=True).start()

    def state(self) -> dict[str, object]:
        sandbox = self._sandbox
        warm = sandbox.warm() if sandbox is not None else {}
        return {
            "sandbox": sandbox.name if sandbox else None,
            # Whether the backend isolates: /readyz wants a worker that says so.
            "isolated": self.isolated,
            "pool_size": warm.get("size", 0),
            "pool_ready": warm.get("ready", 0),
            # Ready once it has shown it works: a pool (of containers or zygotes) that made
            # one (an empty pool between two refills still grades), or no pool at all.
            "sandbox_ready": sandbox is not None and (not warm or warm["started"] > 0),
        }

    def _announce(self) -> None:
        every = self.settings.heartbeat_seconds
        while True:
            try:
                metrics.publish_worker(self.redis, self.name, self.state(), ttl=3 * every)
            except RedisError as exc:
                log.debug("cannot announce: %s", exc)
            if self._stop.wait(every):
                return

    @contextlib.contextmanager
    def beating(self, beat: Callable[[], object], what: str) -> Iterator[None]:
        """Call ``beat`` every ``heartbeat_seconds`` in a thread while the block runs (a
        failed beat is logged and tried again next time: the database away a moment)."""
        stop = threading.Event()

        def loop() -> None:
            while not stop.wait(self.settings.heartbeat_seconds):
                try:
                    beat()
                except Exception as exc:
                    log.warning("heartbeat of %s failed: %s", what, exc)

        # In a copy of this context: its lines name the submission being graded.
        threading.Thread(target=contextvars.copy_context().run, args=(loop,),
                         name="jaxjudge-beat", daemon=True).start()
        try:
            yield
        finally:
            stop.set()

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(RedisError):
            metrics.forget_worker(self.redis, self.name)
        if self._sandbox is not None:
            self._sandbox.close()
        self.db.dispose()
