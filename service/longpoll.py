"""Long-polls (``?wait=N``) that hold no worker thread, and at most so many per API key.

The API runs under gunicorn's gevent worker (``make up``, compose.yaml and the tests'
``Gunicorn`` say ``--worker-class gevent``): each request is a greenlet, and a waiting
request costs a greenlet and its socket, not one of a few threads. The standard library is
patched by the worker before the app is loaded, so redis-py and kombu (Celery's publish)
wait on patched sockets, SQLAlchemy's pool on patched locks, and psycopg 3 (3.1.14 on)
cooperates with gevent by itself (8 concurrent ``pg_sleep(1)`` in greenlets take 1.0 s).
SQLite's calls do not yield: each blocks the process while it runs (with WAL, a read
never waits for a write; a write may wait for another), one more reason to deploy on
PostgreSQL. Under the Flask test client or a threaded server the same code runs with
real threads.

- :func:`announce_done`: a worker publishes a done notice (``jaxjudge:done:<id>``) once
  it has stored a submission's report.
- :class:`Notices`: in each process, one listener holds one Redis subscription to every
  done notice (``jaxjudge:done:*``) and wakes the requests waiting for that submission.
  A woken request re-reads the database, the truth; it also re-reads every RECHECK_SECONDS, in case a notice was lost, and every
  POLL_SECONDS while the subscription is down (Redis away: long-polls keep working).
- :class:`WaitSlots`: an API key holds at most ``long_poll_max_per_key`` long-polls at
  once over all API processes (a sorted set per key in Redis, whose entries expire with
  their wait, so a process that dies leaks nothing for long; a count in the process when
  Redis is away). Past it a request answers at once, as if it had asked for no wait, with
  ``Jaxjudge-Wait: skipped``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TypeVar

from redis import Redis
from redis.exceptions import RedisError

log = logging.getLogger(__name__)
DONE_CHANNEL = "jaxjudge:done:"
RECHECK_SECONDS = 10.0  # a waiter re-reads the database this often even without a notice
POLL_SECONDS = 0.5  # ... and this often while the subscription is down
IDLE_SECONDS = 30.0  # a listener without waiters for this long stops (the next wait restarts it)
WAITS_KEY = "jaxjudge:waits:"
R = TypeVar("R")


def announce_done(redis: Redis, submission_id: str) -> None:
    """Wake every long-poll waiting for ``submission_id`` (its report is stored)."""
    redis.publish(DONE_CHANNEL + submission_id, "done")


class Notices:
    """Wakes the long-polls of a process when their submission is done."""

    def __init__(self, redis_url: str) -> None:
        self.redis = Redis.from_url(redis_url, socket_connect_timeout=1, socket_timeout=5,
                                    health_check_interval=10)
        self.connected = False  # the subscription is live: notices arrive
        self._lock = threading.Lock()
        self._waiters: dict[str, set[threading.Event]] = {}
        self._listening = False

    @contextlib.contextmanager
    def watch(self, submission_id: str) -> Iterator[threading.Event]:
        """An event set whenever a notice for ``submission_id`` arrives (or notices may
        have been lost); the caller clears it and re-reads the database."""
        event = threading.Event()
        with self._lock:
            self._waiters.setdefault(submission_id, set()).add(event)
            if not self._listening:
                self._listening = True
                threading.Thread(target=self._listen, name="jaxjudge-notices",
                                 daemon=True).start()
        try:
            yield event
        finally:
            with self._lock:
                events = self._waiters.get(submission_id)
                if events is not None:
                    events.discard(event)
                    if not events:
                        del self._waiters[submission_id]

    def waiting(self) -> int:
        with self._lock:
            return sum(len(events) for events in self._waiters.values())

    def _wake(self, submission_id: str | None = None) -> None:
        with self._lock:
            if submission_id is None:
                events = [e for found in self._waiters.values() for e in found]
            else:
                events = list(self._waiters.get(submission_id, ()))
        for event in events:
            event.set()

    def _idle(self, since: float) -> float | None:
        """When the listener last had waiters; None when it has been idle long enough to
        stop (it then counts as stopped, under the lock that :meth:`watch` takes)."""
        with self._lock:
            if self._waiters:
                return time.monotonic()
            if time.monotonic() - since > IDLE_SECONDS:
                self._listening = self.connected = False
                return None
            return since

    def _listen(self) -> None:
        since: float | None = time.monotonic()
        while since is not None:
            pubsub = self.redis.pubsub()
            try:
                pubsub.psubscribe(DONE_CHANNEL + "*")
                while since is not None:
                    message = pubsub.get_message(timeout=1.0)
                    if message is None:
                        since = self._idle(since)
                    elif message["type"] == "psubscribe":
                        self.connected = True
                        self._wake()  # a notice sent before now was missed: re-read
                    elif message["type"] == "pmessage":
                        channel = message["channel"]
                        if isinstance(channel, bytes):
                            channel = channel.decode()
                        self._wake(channel[len(DONE_CHANNEL):])
            except (RedisError, OSError) as exc:
                if self.connected:
                    log.warning("done notices unavailable, long-polls re-read the database "
                                "every %.1f s: %s", POLL_SECONDS, exc)
                self.connected = False
                time.sleep(POLL_SECONDS)
                since = self._idle(since) if since is not None else None
            finally:
                with contextlib.suppress(RedisError, OSError):
                    pubsub.close()


def wait_until(notices: Notices, submission_id: str, seconds: float,
               read: Callable[[], R], done: Callable[[R], bool]) -> R:
    """``read()`` again whenever a notice for ``submission_id`` arrives (and every
    RECHECK_SECONDS, or POLL_SECONDS while notices are down) until ``done`` says so or
    ``seconds`` have passed; the last value read. The REST API's ``?wait=`` and the
    pages' live status both wait this way."""
    deadline = time.monotonic() + seconds
    with notices.watch(submission_id) as woken:
        while True:
            value = read()
            left = deadline - time.monotonic()
            if done(value) or left <= 0:
                return value
            woken.wait(min(left, RECHECK_SECONDS if notices.connected else POLL_SECONDS))
            woken.clear()


# Drop expired entries, then take a slot if fewer than the limit are held.
_TAKE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
"""


class WaitSlots:
    """At most ``limit`` long-polls per API key at once, over every API process."""

    def __init__(self, redis: Redis, limit: int, longest: float) -> None:
        self.redis, self.limit = redis, limit
        self.ttl = int(longest) + 60  # longer than any entry lives
        self._take = redis.register_script(_TAKE)
        self._lock = threading.Lock()
        self._local: Counter[int | str] = Counter()  # while Redis is away

    @contextlib.contextmanager
    def slot(self, key_id: int | str, seconds: float) -> Iterator[bool]:
        """Whether the key (an API key's id, or a page session's own name) may wait
        ``seconds`` now; the slot is held until the block ends."""
        name, token, now = f"{WAITS_KEY}{key_id}", uuid.uuid4().hex, time.time()
        shared = True
        try:
            granted = bool(self._take(keys=[name], args=[now, now + seconds + 5, token,
                                                         self.limit, self.ttl]))
        except RedisError:
            shared = False
            with self._lock:
                granted = self._local[key_id] < self.limit
                if granted:
                    self._local[key_id] += 1
        try:
            yield granted
        finally:
            if granted and shared:
                with contextlib.suppress(RedisError):
                    self.redis.zrem(name, token)
            elif granted:
                with self._lock:
                    self._local[key_id] -= 1
