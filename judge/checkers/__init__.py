"""Checkers, chosen by name in ``problem.yaml`` (``checker: {name: ..., params: {...}}``).

=============  =======================================================================
``exact``      every value equal (:mod:`judge.checkers.exact`)
``allclose``   values within ``rtol``/``atol`` (:mod:`judge.checkers.allclose`)
``sharding``   values within tolerance and the same sharding: normalised specs, mesh,
               per-device shard shapes (:mod:`judge.checkers.sharding`)
=============  =======================================================================
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from judge.checkers.allclose import AllcloseChecker
from judge.checkers.base import Checker, CheckResult
from judge.checkers.exact import ExactChecker
from judge.checkers.sharding import ShardingChecker
from judge.errors import ConfigError

CHECKERS: dict[str, type[Checker]] = {
    c.name: c for c in (ExactChecker, AllcloseChecker, ShardingChecker)
}


def get_checker(name: str, params: dict[str, Any] | None = None) -> Checker:
    try:
        cls = CHECKERS[name]
    except KeyError:
        raise ConfigError(
            f"unknown checker {name!r}; known: {', '.join(sorted(CHECKERS))}"
        ) from None
    try:
        return cls.from_config(params or {})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"checker {name!r}: {where}: {first['msg']}") from None


__all__ = ["CHECKERS", "CheckResult", "Checker", "get_checker"]
