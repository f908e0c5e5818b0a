"""Exponential backoff with jitter, for everything the service tries again later: a
webhook try that failed, a grading whose sandbox was unavailable."""

from __future__ import annotations

import random


def backoff(attempt: int, base: float, cap: float = 3600.0) -> float:
    """Delay before retry ``attempt`` (1-based): ``base * 2**(attempt-1)``, ±20% jitter, capped."""
    if attempt < 1:
        raise ValueError("attempt counts from 1")
    delay = base * 2.0 ** min(attempt - 1, 64)
    return min(cap, delay * random.uniform(0.8, 1.2))
