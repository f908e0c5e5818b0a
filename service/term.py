"""A course term's rules for one assignment, as pure functions of the rules, the dates
that apply to one student and the time: whether a submission is let in (and if not,
why and until when), how late it is and what that costs, and whether the per-test
results of hidden tests are shown yet.

Nothing here reads a clock, the database or a request: the caller passes ``now`` (a
setting's clock in tests, never a sleep), the assignment's :class:`Rules`, the student's
:class:`Extension` if any, and what the student has already used. The same answers then
serve every path that submits (pages, LTI, launch links, the REST API) and every page
that explains them.

- **Dates** (:class:`Dates`): ``opens_at``, ``due_at``, ``late_until``; any may be
  unset. A student's extension replaces the dates it names (:func:`dates_for`).
- **Late work**: after ``late_until`` (or after ``due_at`` when there is no
  ``late_until``) a submission is refused; between ``due_at`` and ``late_until`` it is
  let in, marked late, and its score loses ``late_penalty_percent_per_day`` for each day
  late, counted pro rata by the started hour, never below ``late_score_floor_percent``
  of the full score (:func:`late_penalty`, :func:`penalised`).
- **Attempts**: at most ``max_attempts`` graded attempts, ``cooldown_seconds`` apart.
  A sample run (the sample tests only) counts for neither.
- **Hidden results** (:class:`HiddenResults`): ``immediately``; ``after_due`` (the
  verdict and score now, the hidden tests' own verdicts once the student's due date has
  passed); ``score_only`` (never the hidden tests' own verdicts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum


class HiddenResults(StrEnum):
    IMMEDIATELY = "immediately"
    AFTER_DUE = "after_due"
    SCORE_ONLY = "score_only"


class Refusal(StrEnum):
    """Why a graded submission is not let in now."""

    NOT_OPEN = "not_open"  # before opens_at: wait until then
    CLOSED = "closed"  # after late_until (or due_at): for good
    NO_ATTEMPTS = "no_attempts"  # max_attempts used: for good
    COOLING_DOWN = "cooling_down"  # cooldown_seconds since the last attempt: wait


@dataclass(frozen=True)
class Dates:
    """When an assignment opens, is due, and stops taking late work (UTC, aware)."""

    opens_at: datetime | None = None
    due_at: datetime | None = None
    late_until: datetime | None = None

    def closes_at(self) -> datetime | None:
        """The last moment a submission is let in: ``late_until``, else ``due_at``."""
        return self.late_until if self.late_until is not None else self.due_at


@dataclass(frozen=True)
class Extension:
    """One student's own dates: each one set replaces the assignment's."""

    student_id: str
    opens_at: datetime | None = None
    due_at: datetime | None = None
    late_until: datetime | None = None


@dataclass(frozen=True)
class Rules:
    dates: Dates = Dates()
    late_penalty_percent_per_day: float = 0.0
    late_score_floor_percent: float = 0.0
    max_attempts: int | None = None
    cooldown_seconds: float = 0.0
    hidden_results: HiddenResults = HiddenResults.IMMEDIATELY


@dataclass(frozen=True)
class Admission:
    """The answer for one graded submission at ``now``: let in (``late``, and the
    ``penalty_percent`` its score would lose), or refused with ``refusal`` and, where
    waiting helps, ``wait_until``."""

    refusal: Refusal | None = None
    wait_until: datetime | None = None
    late: bool = False
    penalty_percent: float = 0.0
    attempts_left: int | None = None  # after this one, when attempts are limited

    @property
    def allowed(self) -> bool:
        return self.refusal is None


def dates_for(rules: Rules, extension: Extension | None) -> Dates:
    """The dates that apply to one student: the assignment's, with those their
    extension sets put in their place."""
    if extension is None:
        return rules.dates
    changes = {name: value for name in ("opens_at", "due_at", "late_until")
               if (value := getattr(extension, name)) is not None}
    return replace(rules.dates, **changes)


def late_penalty(rules: Rules, dates: Dates, at: datetime) -> float:
    """The percent of the full score a submission made ``at`` loses: none up to
    ``due_at``; then ``late_penalty_percent_per_day`` per day, by the started hour
    (one minute late is one hour's share), at most down to the floor."""
    if dates.due_at is None or at <= dates.due_at or rules.late_penalty_percent_per_day <= 0:
        return 0.0
    hours = math.ceil((at - dates.due_at) / timedelta(hours=1))
    penalty = rules.late_penalty_percent_per_day * hours / 24
    return min(penalty, max(0.0, 100.0 - rules.late_score_floor_percent))


def penalised(score: float, max_score: float, penalty_percent: float) -> float:
    """``score`` less ``penalty_percent`` of ``max_score``, never below zero."""
    return max(0.0, score - max_score * penalty_percent / 100.0)


def admit(rules: Rules, dates: Dates, now: datetime, *, attempts_used: int,
          last_attempt_at: datetime | None) -> Admission:
    """Whether a graded submission made ``now`` is let in, by the student whose
    ``dates`` apply (:func:`dates_for`) and who has made ``attempts_used`` graded
    attempts, the last one at ``last_attempt_at``. A closed assignment is reported
    before attempts, and attempts before the cooldown (the lasting reason first)."""
    if dates.opens_at is not None and now < dates.opens_at:
        return Admission(Refusal.NOT_OPEN, wait_until=dates.opens_at)
    closes = dates.closes_at()
    if closes is not None and now > closes:
        return Admission(Refusal.CLOSED)
    if rules.max_attempts is not None and attempts_used >= rules.max_attempts:
        return Admission(Refusal.NO_ATTEMPTS, attempts_left=0)
    if rules.cooldown_seconds > 0 and last_attempt_at is not None:
        ready = last_attempt_at + timedelta(seconds=rules.cooldown_seconds)
        if now < ready:
            return Admission(Refusal.COOLING_DOWN, wait_until=ready)
    late = dates.due_at is not None and now > dates.due_at
    left = None if rules.max_attempts is None else rules.max_attempts - attempts_used - 1
    return Admission(late=late, penalty_percent=late_penalty(rules, dates, now),
                     attempts_left=left)


def hidden_shown(rules: Rules, dates: Dates, now: datetime) -> bool:
    """Whether the hidden tests' own verdicts are shown to the student now (their
    verdict and score always are)."""
    if rules.hidden_results is HiddenResults.IMMEDIATELY:
        return True
    if rules.hidden_results is HiddenResults.SCORE_ONLY:
        return False
    return dates.due_at is None or now > dates.due_at
