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
"""

from __future__ import annotations

import json
from typing import Any

from redis import Redis

WORKER_KEY = "jaxjudge:worker:"
PHASE_KEY = "jaxjudge:phase:"
RECEIVED_KEY = "jaxjudge:received"
VERDICTS_KEY = "jaxjudge:verdicts"
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
