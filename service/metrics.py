"""Metrics and liveness that workers write to Redis and the API reads: one place for the
key names, so several worker hosts and API processes see the same numbers.

- ``jaxjudge:worker:<host:pid>``: JSON state of a grading process (its warm pool), with a
  TTL of three heartbeats: a key that is there is a live worker.
- ``jaxjudge:phase:<phase>``: a histogram of grading phase durations (a hash of bucket
  counters, ``sum`` and ``count``), fed by workers as they store reports.
- ``jaxjudge:received``: submissions stored by the API (batch members included), a
  counter the API raises; ``jaxjudge:verdicts``: a hash of verdict -> reports stored, raised
  by workers. Both only grow (Prometheus counters), so ``/metrics`` reads two keys instead
  of counting rows in the database on every scrape.
- ``jaxjudge:deliveries_failed``: a hash of delivery kind -> deliveries given up (failed
  after their tries, or refused by the address policy), raised by the delivery worker;
  ``jaxjudge:sandbox_unavailable``: gradings and builds the sandbox could not run
  (postponed, or given up), raised by the grading workers. Counters too.
- ``jaxjudge:waiting:<queue>``: the submissions published on a grading queue and not yet
  claimed, a sorted set scored by when each was first published (:func:`await_grading`
  at dispatch, :func:`claimed` when a worker takes one); ``/metrics`` reports the age of
  the lowest score. The sweeper mends it against the database every round
  (:func:`service.sweeper.mend_waiting`), so a write lost while Redis blinked is wrong
  for one round at most.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from typing import Any

from redis import Redis

from service.queue import GRADING_QUEUES

WORKER_KEY = "jaxjudge:worker:"
PHASE_KEY = "jaxjudge:phase:"
RECEIVED_KEY = "jaxjudge:received"
VERDICTS_KEY = "jaxjudge:verdicts"
DELIVERIES_FAILED_KEY = "jaxjudge:deliveries_failed"
SANDBOX_UNAVAILABLE_KEY = "jaxjudge:sandbox_unavailable"
WAITING_KEY = "jaxjudge:waiting:"
BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 900.0)
PHASES = ("queue", "startup", "tests", "grading", "total")


def publish_worker(redis: Redis, name: str, state: dict[str, Any], ttl: float) -> None:
    redis.set(WORKER_KEY + name, json.dumps(state), px=int(ttl * 1000))


def forget_worker(redis: Redis, name: str) -> None:
    redis.delete(WORKER_KEY + name)


def workers(redis: Redis) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for key in redis.scan_iter(match=WORKER_KEY + "*", count=100):
        raw = redis.get(key)
        if raw is not None:
            name = (key.decode() if isinstance(key, bytes) else key)[len(WORKER_KEY):]
            found[name] = json.loads(raw)
    return found


def observe(redis: Redis, durations: dict[str, float]) -> None:
    pipe = redis.pipeline(transaction=False)
    for phase, seconds in durations.items():
        key = PHASE_KEY + phase
        for bound in BUCKETS:
            if seconds <= bound:
                pipe.hincrby(key, f"le:{bound}", 1)
        pipe.hincrby(key, "count", 1)
        pipe.hincrbyfloat(key, "sum", seconds)
    pipe.execute()


def histogram(redis: Redis, phase: str) -> tuple[list[tuple[str, float]], float]:
    """Cumulative (le, count) buckets ending with +Inf, and the sum."""
    raw = {(k.decode() if isinstance(k, bytes) else k): float(v)
           for k, v in redis.hgetall(PHASE_KEY + phase).items()}
    buckets = [(str(b), raw.get(f"le:{b}", 0.0)) for b in BUCKETS]
    buckets.append(("+Inf", raw.get("count", 0.0)))
    return buckets, raw.get("sum", 0.0)


def count_received(redis: Redis, n: int = 1) -> None:
    """``n`` submissions were stored (the API calls it after the commit)."""
    redis.incrby(RECEIVED_KEY, n)


def count_verdict(redis: Redis, verdict: str) -> None:
    """A report with ``verdict`` was stored (a worker calls it after the commit)."""
    redis.hincrby(VERDICTS_KEY, verdict, 1)


def counts(redis: Redis) -> tuple[float, dict[str, float]]:
    """Submissions received, and reports stored by verdict, since Redis was created."""
    pipe = redis.pipeline(transaction=False)
    pipe.get(RECEIVED_KEY)
    pipe.hgetall(VERDICTS_KEY)
    received, verdicts = pipe.execute()
    return float(received or 0), {
        (k.decode() if isinstance(k, bytes) else k): float(v) for k, v in verdicts.items()}


def count_delivery_failed(redis: Redis, kind: str) -> None:
    """A delivery of ``kind`` ended without being delivered (failed or refused)."""
    redis.hincrby(DELIVERIES_FAILED_KEY, kind, 1)


def count_sandbox_unavailable(redis: Redis) -> None:
    """The sandbox could not run a grading or a build."""
    redis.incr(SANDBOX_UNAVAILABLE_KEY)


def failures(redis: Redis) -> tuple[dict[str, float], float]:
    """Deliveries given up by kind, and jobs the sandbox could not run."""
    pipe = redis.pipeline(transaction=False)
    pipe.hgetall(DELIVERIES_FAILED_KEY)
    pipe.get(SANDBOX_UNAVAILABLE_KEY)
    failed, unavailable = pipe.execute()
    return ({(k.decode() if isinstance(k, bytes) else k): float(v)
             for k, v in failed.items()}, float(unavailable or 0))


def await_grading(redis: Redis, items: Sequence[tuple[str, str]],
                  now: float | None = None) -> list[str]:
    """The (id, queue) pairs are about to be published: each waits from ``now`` unless it
    waits already (``ZADD NX``: publishing again does not make it younger). The ids that
    were not waiting before, for :func:`claimed` to take back should publishing fail."""
    if not items:
        return []
    at = time.time() if now is None else now
    pipe = redis.pipeline(transaction=False)
    for sid, queue in items:
        pipe.zadd(WAITING_KEY + queue, {sid: at}, nx=True)
    return [sid for (sid, _), added in zip(items, pipe.execute(), strict=True) if added]


def wait_since(redis: Redis, queue: str, since: dict[str, float]) -> int:
    """Add each submission of ``since`` (id -> when it was published) to ``queue``'s set
    unless it is there already; how many were added."""
    if not since:
        return 0
    added: int = redis.zadd(WAITING_KEY + queue, since, nx=True)  # type: ignore[assignment]
    return added


def claimed(redis: Redis, ids: Iterable[str]) -> None:
    """The submissions wait no longer (claimed by a worker, or not published after
    all): out of every grading queue's set (a rejudge publishes on ``batch`` whatever
    queue the submission came in on)."""
    ids = list(ids)
    if not ids:
        return
    pipe = redis.pipeline(transaction=False)
    for queue in GRADING_QUEUES:
        pipe.zrem(WAITING_KEY + queue, *ids)
    pipe.execute()


def oldest_waiting(redis: Redis, now: float | None = None) -> dict[str, float]:
    """Per grading queue, the seconds the longest-waiting submission has waited (0 when
    none waits)."""
    pipe = redis.pipeline(transaction=False)
    for queue in GRADING_QUEUES:
        pipe.zrange(WAITING_KEY + queue, 0, 0, withscores=True)
    at = time.time() if now is None else now
    return {queue: max(0.0, at - found[0][1]) if found else 0.0
            for queue, found in zip(GRADING_QUEUES, pipe.execute(), strict=True)}


def waiting_page(redis: Redis, queue: str, start: int, count: int) -> list[tuple[str, float]]:
    """(id, score) of the ``count`` longest-waiting from ``start`` on ``queue``."""
    found: list[tuple[bytes | str, float]] = redis.zrange(  # type: ignore[assignment]
        WAITING_KEY + queue, start, start + count - 1, withscores=True)
    return [(k.decode() if isinstance(k, bytes) else k, score) for k, score in found]


def waiting_anywhere(redis: Redis, ids: Sequence[str]) -> set[str]:
    """Those of ``ids`` that wait on some grading queue."""
    pipe = redis.pipeline(transaction=False)
    for queue in GRADING_QUEUES:
        pipe.zmscore(WAITING_KEY + queue, list(ids))
    found: set[str] = set()
    for scores in pipe.execute():
        found |= {sid for sid, score in zip(ids, scores, strict=True) if score is not None}
    return found
