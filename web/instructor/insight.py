"""Class insight (issue 26): an assignment's analytics (charts with their tables, the
stuck students, the most common wrong answers) and its CSV, a problem's analytics across
the tenant (signed in with a key), and similarity across the class: pairs ranked, the
clusters at a threshold, and two submissions side by side with their matching fragments.

The numbers are :mod:`service.analytics`'s and :mod:`service.similarity`'s (the REST
API serves the same objects as JSON); this module draws them (:mod:`web.charts`) and
says what they mean. Similarity is shown as a lead to check, never a verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flask import render_template, request
from flask.typing import ResponseReturnValue
from markupsafe import Markup
from sqlalchemy import exists, select
from sqlalchemy.orm import Session

from app.services import services
from judge.similarity import MAX_DOCUMENTS, NOTE
from service.analytics import analytics_csv, assignment_analytics, problem_analytics
from service.models import Assignment, Package, Submission
from service.pages import find_submission
from service.similarity import (
    Compared,
    assignment_code,
    batch_code,
    compare_pair,
    similarity,
)
from service.wire import PROBLEM_ID
from service.wire_analytics import Analytics, ScoreBin
from service.wire_similarity import DEFAULT_THRESHOLD, PairOut
from web.access import course_for, instructor, not_found, taught_assignment
from web.charts import Bucket, Marker, columns, rates, timeline
from web.instructor.batches import batch_of
from web.instructor.blueprint import bp, download, key_instructor

PAIRS_SHOWN = 100
FRAGMENT_COLOURS = 6  # .frag-0 ... .frag-5 in pages.css, then again


def bin_label(b: ScoreBin) -> str:
    return "100" if b.lower >= 100 else f"{b.lower:g}–{b.upper:g}"


def charts(a: Analytics) -> dict[str, Markup]:
    """The analytics' four charts, each with a desc that says its largest numbers."""
    graded = f"{a.submissions} graded submission(s) of {a.students} student(s)"
    top = max(a.histogram, key=lambda b: b.count, default=None)
    hist = columns(
        [(bin_label(b), b.count) for b in a.histogram], chart_id="chart-histogram",
        title="Score distribution", x_label="score (% of the maximum)", y_label="students",
        desc=f"Students per score band, {graded}." + (
            f" Most students ({top.count}) are in the band {bin_label(top)}%."
            if top and top.count else ""))
    worst = min(a.tests, key=lambda t: t.pass_rate, default=None)
    tests = rates(
        [(t.name, t.pass_rate) for t in a.tests], chart_id="chart-tests",
        title="Pass rate per test", x_label="graded submissions that pass the test",
        desc="The share of graded submissions that pass each test." + (
            f" The lowest: {worst.name}, {worst.pass_rate * 100:.0f}%." if worst else ""))
    t = a.timeline
    marks = [Marker(at, label, dashed) for at, label, dashed in (
        (t.due_at, "due", False), (t.late_until, "late until", True)) if at is not None]
    time = timeline(
        [Bucket(b.start, b.end, b.submissions, b.accepted) for b in t.buckets], marks,
        chart_id="chart-timeline", title="Submissions over time (UTC)",
        y_label="submissions",
        desc=f"Graded submissions per {t.bucket} (UTC), the accepted ones darker"
             + (f"; due {t.due_at:%Y-%m-%d %H:%M}" if t.due_at else "")
             + (f"; late until {t.late_until:%Y-%m-%d %H:%M}" if t.late_until else "") + ".")
    att = a.attempts_to_accept
    attempts = columns(
        [(b.attempts, b.students) for b in att.bins], chart_id="chart-attempts",
        title="Attempts before the first accepted", x_label="graded attempts",
        y_label="students", height=200,
        desc="Students by the graded attempts it took to be accepted, the accepted one "
             "counted" + (f"; median {att.median:g}." if att.median is not None else
                          "; no one is accepted yet."))
    return {"histogram": hist, "tests": tests, "timeline": time, "attempts": attempts}


def counts(a: Analytics) -> dict[str, list[tuple[str, str, int]]]:
    """The rows of the two count tables beside their charts: (key, label, students)."""
    return {
        "histogram": [(f"{b.lower:g}", "100%" if b.lower >= 100 else f"{bin_label(b)}%",
                       b.count) for b in a.histogram],
        "attempts": [(b.attempts, b.attempts, b.students) for b in a.attempts_to_accept.bins]}


@bp.get("/app/<sid>/assignments/<assignment_id>/analytics")
def analytics_page(assignment_id: str) -> str:
    who = instructor()
    with services().db.session() as s:
        found = taught_assignment(s, who, assignment_id)
        course = course_for(s, who, found.course_id)
        a = assignment_analytics(s, found)
    return render_template("instructor/analytics.html", who=who, assignment=found,
                           course=course, a=a, charts=charts(a), counts=counts(a))


@bp.get("/app/<sid>/assignments/<assignment_id>/analytics.csv")
def analytics_export(assignment_id: str) -> ResponseReturnValue:
    """The assignment's analytics as one CSV (docs/analytics.md says its columns)."""
    who = instructor()
    with services().db.session() as s:
        found = taught_assignment(s, who, assignment_id)
        a = assignment_analytics(s, found)
    return download(iter([analytics_csv(a)]), "text/csv",
                    f"assignment-{found.id}-analytics.csv")


@bp.get("/app/<sid>/problems/<path:problem>/analytics")
def problem_analytics_page(problem: str) -> str:
    """A problem's analytics over every submission of the tenant to it: one of the
    tenant's own problems, or one its students submitted to."""
    who = key_instructor()
    if not re.fullmatch(PROBLEM_ID, problem):
        not_found("problem")
    with services().db.session() as s:
        known = s.scalar(select(
            exists().where(Package.tenant_id == who.tenant_id, Package.problem == problem)
            | exists().where(Submission.tenant_id == who.tenant_id,
                             Submission.problem == problem)))
        if not known:
            not_found("problem")
        a = problem_analytics(s, who.tenant_id, problem)
    return render_template("instructor/problem_analytics.html", who=who, a=a,
                           charts=charts(a), counts=counts(a), problem=problem)


# Similarity.


def threshold_of(raw: str | None) -> float:
    """The form's threshold, in percent, as a fraction clamped to [0, 1]; the default
    when it is missing or not a number."""
    try:
        value = float(raw) / 100 if raw else DEFAULT_THRESHOLD
    except ValueError:
        return DEFAULT_THRESHOLD
    if value != value:  # NaN
        return DEFAULT_THRESHOLD
    return min(max(value, 0.0), 1.0)


@bp.get("/app/<sid>/assignments/<assignment_id>/similarity")
def similarity_page(assignment_id: str) -> str:
    """The assignment's class compared: each student's submission the grade is on."""
    who = instructor()
    threshold = threshold_of(request.args.get("threshold"))
    with services().db.session() as s:
        found = taught_assignment(s, who, assignment_id)
        course = course_for(s, who, found.course_id)
        members = assignment_code(s, found)
    result = similarity(services().library, who.tenant_id, "assignment", found.id,
                        found.problem, members, threshold=threshold, limit=PAIRS_SHOWN)
    return render_template("instructor/similarity.html", who=who, assignment=found,
                           course=course, result=result, threshold=threshold, batch=None)


@bp.get("/app/<sid>/assignments/<assignment_id>/batches/<batch_id>/similarity")
def batch_similarity_page(assignment_id: str, batch_id: str) -> str:
    """A class upload compared: every submission of the batch."""
    who = instructor()
    threshold = threshold_of(request.args.get("threshold"))
    with services().db.session() as s:
        found = taught_assignment(s, who, assignment_id)
        course = course_for(s, who, found.course_id)
        members = batch_code(s, batch_of(s, who.tenant_id, found, batch_id))
    result = similarity(services().library, who.tenant_id, "batch", batch_id,
                        found.problem, members, threshold=threshold, limit=PAIRS_SHOWN)
    return render_template("instructor/similarity.html", who=who, assignment=found,
                           course=course, result=result, threshold=threshold,
                           batch=batch_id)


@dataclass(frozen=True)
class Line:
    number: int
    text: str
    fragment: int | None  # the index of the first fragment covering it


def lines_of(code: str, ranges: list[tuple[int, int]]) -> list[Line]:
    """Each line of ``code`` with the first fragment (of ``ranges``, 1-based inclusive)
    that covers it."""
    marks: dict[int, int] = {}
    for i, (first, last) in enumerate(ranges):
        for n in range(first, last + 1):
            marks.setdefault(n, i)
    return [Line(n, text, marks.get(n)) for n, text in
            enumerate(code.splitlines() or [""], start=1)]


def _submission_of(s: Session, tenant_id: int, assignment: Assignment,
                   submission_id: str) -> Compared:
    """A submission to ``assignment`` (404 for any other), as compared."""
    row = find_submission(s, tenant_id, submission_id)
    if row is None or row.assignment_id != assignment.id:
        not_found("submission")
    return Compared(row.student_id or row.id, row.id, row.code)


@bp.get("/app/<sid>/assignments/<assignment_id>/similarity/<a_submission>/<b_submission>")
def similarity_pair(assignment_id: str, a_submission: str, b_submission: str) -> str:
    """Two submissions of the assignment side by side, compared within the class (so
    what many students wrote, and the code they were given, does not count)."""
    who = instructor()
    threshold = threshold_of(request.args.get("threshold"))
    batch = request.args.get("batch") or None  # compared within that class upload
    with services().db.session() as s:
        found = taught_assignment(s, who, assignment_id)
        course = course_for(s, who, found.course_id)
        a = _submission_of(s, who.tenant_id, found, a_submission)
        b = _submission_of(s, who.tenant_id, found, b_submission)
        members = (assignment_code(s, found) if batch is None
                   else batch_code(s, batch_of(s, who.tenant_id, found, batch)))
    if a.submission == b.submission:
        not_found("pair of submissions")
    users = (a.student, b.student)  # whose pages the headings link to
    if batch is not None:  # the batch's own names (one student twice is told apart)
        named = {m.submission: m for m in members}
        if a.submission not in named or b.submission not in named:
            not_found("submission")
        a, b = named[a.submission], named[b.submission]
    else:
        if b.student == a.student:  # two submissions of one student: told apart
            b = Compared(f"{b.student} ({b.submission[:8]})", b.submission, b.code)
        others = [m for m in members if m.student not in (a.student, b.student)]
        members = others[:MAX_DOCUMENTS - 2] + [a, b]  # the class as listed, at the cap
    pair = compare_pair(services().library, who.tenant_id, found.problem, members,
                        a.student, b.student)
    if pair is not None and pair.a_submission != a.submission:  # shown in the URL's order
        pair = PairOut(a=pair.b, b=pair.a, a_submission=pair.b_submission,
                       b_submission=pair.a_submission, similarity=pair.similarity,
                       shared=pair.shared, fragments=[
                           f.model_copy(update={"a_lines": f.b_lines, "b_lines": f.a_lines})
                           for f in pair.fragments])
    fragments = pair.fragments if pair is not None else []
    return render_template(
        "instructor/similarity_pair.html", who=who, assignment=found, course=course,
        a=a, b=b, users=users, pair=pair, threshold=threshold, colours=FRAGMENT_COLOURS,
        note=NOTE, batch=batch,
        a_lines=lines_of(a.code, [f.a_lines for f in fragments]),
        b_lines=lines_of(b.code, [f.b_lines for f in fragments]))
