"""A course term's rules (service/term.py): admission, lateness and its penalty,
extensions, attempts, cooldowns and when hidden results show, at injected times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from service.term import (
    Dates,
    Extension,
    HiddenResults,
    Refusal,
    Rules,
    admit,
    dates_for,
    hidden_shown,
    late_penalty,
    penalised,
)

T0 = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
H = timedelta(hours=1)
TERM = Dates(opens_at=T0 - 24 * H, due_at=T0, late_until=T0 + 72 * H)


def _admit(rules: Rules, now: datetime, used: int = 0,
           last: datetime | None = None) -> Refusal | None:
    return admit(rules, rules.dates, now, attempts_used=used, last_attempt_at=last).refusal


def test_before_opening_it_waits_until_the_opening() -> None:
    got = admit(Rules(dates=TERM), TERM, T0 - 30 * H, attempts_used=0, last_attempt_at=None)
    assert got.refusal is Refusal.NOT_OPEN and got.wait_until == TERM.opens_at


def test_on_time_late_and_closed() -> None:
    rules = Rules(dates=TERM, late_penalty_percent_per_day=10)
    on_time = admit(rules, TERM, T0, attempts_used=0, last_attempt_at=None)
    assert on_time.allowed and not on_time.late and on_time.penalty_percent == 0
    late = admit(rules, TERM, T0 + 25 * H, attempts_used=0, last_attempt_at=None)
    assert late.allowed and late.late and late.penalty_percent == 10 * 25 / 24
    assert _admit(rules, T0 + 72 * H) is None  # the last moment is still in
    assert _admit(rules, T0 + 72 * H + timedelta(seconds=1)) is Refusal.CLOSED


def test_without_late_until_the_due_date_closes_it() -> None:
    rules = Rules(dates=Dates(due_at=T0))
    assert _admit(rules, T0) is None
    assert _admit(rules, T0 + timedelta(seconds=1)) is Refusal.CLOSED


def test_a_started_hour_counts_whole_and_the_floor_holds() -> None:
    rules = Rules(dates=TERM, late_penalty_percent_per_day=24, late_score_floor_percent=40)
    assert late_penalty(rules, TERM, T0 + timedelta(minutes=1)) == 1.0
    assert late_penalty(rules, TERM, T0 + 2 * H) == 2.0
    assert late_penalty(rules, TERM, T0 + 70 * H) == 60.0  # 70 % would pass the floor
    assert penalised(13.0, 13.0, 60.0) == 13.0 * 0.4


@given(st.integers(0, 10_000), st.integers(0, 10_000), st.floats(0, 200),
       st.floats(0, 100))
def test_the_penalty_only_grows_and_stays_within_the_floor(a: int, b: int, per_day: float,
                                                         floor: float) -> None:
    rules = Rules(dates=TERM, late_penalty_percent_per_day=per_day,
                  late_score_floor_percent=floor)
    early, later = sorted((a, b))
    first = late_penalty(rules, TERM, T0 + timedelta(minutes=early))
    second = late_penalty(rules, TERM, T0 + timedelta(minutes=later))
    assert 0 <= first <= second <= 100 - floor + 1e-9


def test_an_extension_moves_only_its_student_s_dates() -> None:
    rules = Rules(dates=TERM)
    mine = dates_for(rules, Extension("ann", due_at=T0 + 48 * H, late_until=T0 + 96 * H))
    assert mine == Dates(opens_at=TERM.opens_at, due_at=T0 + 48 * H, late_until=T0 + 96 * H)
    assert dates_for(rules, None) == TERM
    now = T0 + 80 * H
    assert admit(rules, mine, now, attempts_used=0, last_attempt_at=None).allowed
    assert _admit(rules, now) is Refusal.CLOSED


def test_attempts_run_out_and_the_cooldown_says_until_when() -> None:
    rules = Rules(dates=TERM, max_attempts=3, cooldown_seconds=600)
    first = admit(rules, TERM, T0, attempts_used=0, last_attempt_at=None)
    assert first.allowed and first.attempts_left == 2
    cooling = admit(rules, TERM, T0, attempts_used=1, last_attempt_at=T0 - timedelta(minutes=4))
    assert cooling.refusal is Refusal.COOLING_DOWN
    assert cooling.wait_until == T0 + timedelta(minutes=6)
    assert _admit(rules, T0, used=1, last=T0 - timedelta(minutes=10)) is None
    # Out of attempts is said before a cooldown (waiting would not help).
    assert _admit(rules, T0, used=3, last=T0 - timedelta(minutes=1)) is Refusal.NO_ATTEMPTS


def test_hidden_results_show_as_the_rule_says() -> None:
    def shown(rule: HiddenResults, now: datetime, dates: Dates = TERM) -> bool:
        return hidden_shown(Rules(dates=dates, hidden_results=rule), dates, now)

    assert shown(HiddenResults.IMMEDIATELY, T0 - H)
    assert not shown(HiddenResults.AFTER_DUE, T0 - H)
    assert shown(HiddenResults.AFTER_DUE, T0 + H)
    extended = dates_for(Rules(dates=TERM), Extension("ann", due_at=T0 + 48 * H))
    assert not shown(HiddenResults.AFTER_DUE, T0 + H, extended)  # her due date counts
    assert not shown(HiddenResults.SCORE_ONLY, T0 + 1000 * H)
