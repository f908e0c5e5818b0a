"""The course term in words, for the student page: the dates that apply to the student
(in UTC here; the page's script shows each again in the viewer's own time zone, named),
where they came from, the late policy, attempts and cooldown, when hidden results show,
what a submission made now would cost, and why one is refused."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from markupsafe import Markup

from service import term, terms
from service.models import Assignment
from service.terms import Standing, when
from service.wire import SubmissionOut

SOURCES = {
    "instructor": "set by your instructor",
    "lms:custom": "from your course (the LMS sent them with this launch)",
    "lms:lineitem": "from your course's gradebook (the LMS line item)",
    "lms:deeplink": "set when the activity was added to your course",
}


@dataclass(frozen=True)
class Moment:
    """A date for a ``<time>`` element: ISO for the script, words for everyone."""

    label: str
    at: datetime

    @property
    def iso(self) -> str:
        return self.at.isoformat()

    @property
    def words(self) -> str:
        return when(self.at)


@dataclass(frozen=True)
class TermView:
    dates: list[Moment] = field(default_factory=list)
    source: str = ""
    extended: bool = False
    lines: list[str] = field(default_factory=list)  # the rules, one sentence each
    now_line: str | Markup = ""  # what a submission now would be (late, its penalty), or why not
    due: Moment | None = None  # for the time-left countdown
    wait_until: Moment | None = None  # for the cooldown countdown
    open: bool = True  # a graded submission is let in now
    attempts_left: int | None = None


def _hours(seconds: float) -> str:
    if seconds % 86400 == 0 and seconds >= 86400:
        return f"{seconds / 86400:g} day(s)"
    if seconds % 3600 == 0 and seconds >= 3600:
        return f"{seconds / 3600:g} hour(s)"
    if seconds % 60 == 0 and seconds >= 60:
        return f"{seconds / 60:g} minute(s)"
    return f"{seconds:g} second(s)"


def term_words(found: Standing, assignment: Assignment) -> TermView:
    rules, dates, admission = found.rules, found.dates, found.admission
    moments = [Moment(label, at) for label, at in (
        ("Opens", dates.opens_at), ("Due", dates.due_at),
        ("Late work until", dates.late_until)) if at is not None]
    lines = []
    if rules.dates.due_at is not None and rules.dates.late_until is not None:
        if rules.late_penalty_percent_per_day > 0:
            floor = (f", never below {rules.late_score_floor_percent:g}% of the full score"
                     if rules.late_score_floor_percent > 0 else "")
            lines.append(f"Late work loses {rules.late_penalty_percent_per_day:g}% of the "
                         f"full score per day late, counted by the started hour{floor}.")
        else:
            lines.append("Late work is taken with no penalty.")
    elif dates.due_at is not None:
        lines.append("No work is taken after the due date.")
    if rules.max_attempts is not None:
        lines.append(f"Graded attempts: {found.attempts_used} of {rules.max_attempts} used"
                     f" ({found.attempts_left} left). Running the sample tests does not "
                     "count.")
    if rules.cooldown_seconds > 0:
        lines.append(f"Wait {_hours(rules.cooldown_seconds)} between graded attempts.")
    if rules.hidden_results is term.HiddenResults.AFTER_DUE:
        lines.append("Your verdict and score show at once; the result of each hidden test "
                     "shows after the due date" + (" (yours)." if found.extension else "."))
    elif rules.hidden_results is term.HiddenResults.SCORE_ONLY:
        lines.append("Your verdict and score show; the result of each hidden test does "
                     "not.")
    now_line: str | Markup = ""
    if admission.allowed:
        if admission.late:
            now_line = "A submission now is late"
            if admission.penalty_percent > 0:
                now_line += f": {admission.penalty_percent:g}% of the full score taken off."
            else:
                now_line += " (no penalty)."
    else:
        now_line = refusal_words(found)
    source = SOURCES.get(assignment.dates_source or "", "") if moments else ""
    return TermView(
        dates=moments, source=source, extended=found.extension is not None, lines=lines,
        now_line=now_line,
        due=Moment("Due", dates.due_at) if dates.due_at and found.now < dates.due_at else None,
        wait_until=Moment("Next attempt", admission.wait_until)
        if admission.wait_until is not None else None,
        open=admission.allowed, attempts_left=found.attempts_left)


def _time(at: datetime) -> Markup:
    """A date in a sentence: UTC words the script shows again in the viewer's zone."""
    return Markup('<time datetime="{}" data-local>{}</time>').format(at.isoformat(), when(at))


def refusal_words(found: Standing) -> Markup:
    """Why a graded submission is refused now (:func:`service.terms.refusal_words`, the
    API's words), its date in a ``<time>`` element."""
    said = terms.refusal_words(found)
    if said.at is None:
        return Markup("{}").format(said.before)
    return Markup("{}{}{}").format(said.before, _time(said.at), said.after)


def withhold_hidden(result: SubmissionOut, found: Standing) -> SubmissionOut:
    """The submission as the student may see it now: the hidden tests' own results taken
    out (their verdict and score stay in the submission's)."""
    if result.report is None:
        return result
    shown = [t for t in result.report.tests if t.visibility != "hidden"]
    report = result.report.model_copy(update={"tests": shown})
    return result.model_copy(update={"report": report})
