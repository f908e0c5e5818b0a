"""Class analytics of an assignment or of a problem: the numbers behind the instructor's
charts and ``GET /v1/{assignments,problems}/{id}/analytics`` (docs/analytics.md says what
each chart is for).

Who and what counts:

* A *student* of an assignment is a learner of its course's roster
  (:class:`service.models.Member` without an instructor's role) or anyone who submitted
  to it (a sample run too); of a problem, anyone of the tenant who submitted to it.
* A *graded* submission is done, scored and not a sample run
  (:data:`service.grades.GRADED`); only those count as attempts, in the charts and in
  ``submissions``. Submissions without a student id count in the tests and the timeline,
  not in the per-student charts.
* The histogram of an assignment is the grade the gradebook shows
  (:func:`service.grades.grades`: policy, late penalty, overrides), as a percent of its
  maximum; of a problem, each student's best raw score. Bins of 10% and one of 100%.
* *Attempts to the first accepted*: the graded submissions up to and including the first
  accepted one, in the order received.
* *Stuck*: at least :data:`STUCK_ATTEMPTS` graded attempts, none accepted, and the best
  percent of the last :data:`STUCK_WINDOW` no higher than the best before them.
* *Wrong answers*: each student's latest graded submission, for each sample test it
  fails with a ``received`` text; grouped by (test, received). Only sample tests show
  what a submission returned, to students as to instructors; hidden tests give their
  fixed reasons (:mod:`judge.checkers.reasons`) and nothing else, here as anywhere.

How it is read, and why so: at most one query per chart, whatever the class size: the
roster, who submitted, the graded submissions' columns, the gradebook's grades
(:func:`service.grades.grades` without its LMS comments, so it reads no report; the
histogram matches the gradebook to the cent), and two over ``test_outcomes``
(:mod:`service.outcomes`: each current report's tests, one row each, written in the
transaction that stores the report): the tests chart's counts grouped by the database
(test, visibility, verdict, message, probe), and the failed sample tests with a
``received`` text for the wrong answers (each student's latest picked here).

The table is there for speed. Reading the tests out of the stored report JSON instead
(SQLite's ``json_each``, PostgreSQL's ``json_array_elements``) took 164 ms of 248 ms on
a class of 1,000 submissions of a 14-test problem (4.5 KB reports), and the grades'
comments another reading of the reports; parsing the reports in Python was slower
still. Measured on this 2-core machine, shared (load average 2.5 to 2.8), SQLite, the
class of bench/analytics.py: :func:`assignment_analytics` took 216 ms median (186 ms
at best) before, 61 ms (56 ms) with the table; :func:`problem_analytics` 172 ms before,
37 ms after. The two queries over the table take about 17 ms and 7 ms of that (SQLite;
15 and 9 ms on PostgreSQL), joined to ``submissions`` by its primary key: no copy of the
submission's assignment or problem is kept in the table. Its price: every report store
writes its rows (one DELETE and one executemany INSERT, in the same transaction), a
rejudge deletes them, and a row keeps a message up to 500 characters and a sample
test's output up to 2,000, so wrong answers group on those first 2,000 characters.
"""

from __future__ import annotations

import csv
import io
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from judge.verdict import Verdict
from service.courses import is_instructor
from service.db import utcnow
from service.exports import cell, num
from service.grades import GRADED, grades
from service.models import Assignment, Member, Submission, TestOutcome
from service.wire_analytics import (
    Analytics,
    AttemptBin,
    AttemptsToAccept,
    Progress,
    ReasonCount,
    ScoreBin,
    StuckStudent,
    TestStat,
    TimeBucket,
    Timeline,
    WrongAnswerGroup,
)

STUCK_ATTEMPTS = 5
STUCK_WINDOW = 3
MAX_STUCK = 50
MAX_REASONS = 5
MAX_REASON_CHARS = 300
MAX_WRONG = 10
MAX_WRONG_IDS = 5
MAX_RECEIVED_CHARS = 500
HOURLY_SPAN = timedelta(hours=72)  # a longer timeline is drawn by the day
MARKER_REACH = timedelta(days=60)  # a due date further from the data stays off the chart
ACCEPTED = Verdict.ACCEPTED.value


@dataclass
class _Graded:
    """One graded submission as the charts read it."""

    id: str
    student: str | None
    received_at: datetime
    accepted: bool
    percent: float


@dataclass(frozen=True)
class _TestCount:
    """How many graded submissions ran a test with one verdict, message and probe."""

    name: str
    visibility: str
    verdict: str
    message: str
    probe: str | None
    position: int  # the test's first place in a report
    count: int


@dataclass(frozen=True)
class _Wrong:
    """A failed sample test of a graded submission, with what it received."""

    submission: str
    name: str
    received: str
    expected: str | None


@dataclass
class _Class:
    """What every chart is drawn from."""

    graded: list[_Graded]
    tests: list[_TestCount]
    wrong: list[_Wrong]
    students: set[str]
    names: dict[str, str] = field(default_factory=dict)
    best: dict[str, float] = field(default_factory=dict)  # the histogram's percent


def percent(score: float | None, max_score: float | None, verdict: str | None) -> float:
    """A score as a percent of its maximum (a problem worth nothing: 100 or 0)."""
    maximum = float(max_score or 0)
    if maximum <= 0:
        return 100.0 if verdict == ACCEPTED else 0.0
    return max(0.0, min(100.0, 100.0 * float(score or 0) / maximum))


def _graded(s: Session, where: Sequence[Any]) -> list[_Graded]:
    rows = s.execute(select(Submission.id, Submission.student_id, Submission.received_at,
                            Submission.verdict, Submission.score, Submission.max_score)
                     .where(*where, *GRADED)
                     .order_by(Submission.received_at, Submission.id))
    return [_Graded(r.id, r.student_id, r.received_at, r.verdict == ACCEPTED,
                    percent(r.score, r.max_score, r.verdict)) for r in rows]


def _joined(where: Sequence[Any]) -> tuple[Any, ...]:
    """The outcome rows of the scope's graded submissions (of the report they hold)."""
    return (TestOutcome.submission_id == Submission.id, TestOutcome.attempt == Submission.attempt,
            *where, *GRADED)


def _tests(s: Session, where: Sequence[Any]) -> list[_TestCount]:
    """The tests of the graded submissions, counted by the database per test, verdict,
    message and probe: one query over ``test_outcomes``."""
    o = TestOutcome
    rows = s.execute(select(o.name, o.visibility, o.verdict, o.message, o.probe,
                            func.min(o.position), func.count())
                     .where(*_joined(where))
                     .group_by(o.name, o.visibility, o.verdict, o.message, o.probe))
    return [_TestCount(r[0], r[1], r[2], r[3], r[4], int(r[5]), int(r[6])) for r in rows]


def _wrong(s: Session, where: Sequence[Any]) -> list[_Wrong]:
    """The failed sample tests with a ``received`` text of the graded submissions of a
    student: one query (the latest of each student is picked in :func:`wrong_answers`)."""
    o = TestOutcome
    rows = s.execute(select(o.submission_id, o.name, o.received, o.expected)
                     .where(*_joined(where), Submission.student_id.is_not(None),
                            o.visibility == "sample", o.passed.is_(False),
                            o.received.is_not(None)))
    return [_Wrong(r[0], r[1], r[2] or "", r[3]) for r in rows]


def _submitters(s: Session, where: Sequence[Any]) -> set[str]:
    return set(s.scalars(select(Submission.student_id).distinct()
                         .where(*where, Submission.student_id.is_not(None))))


# The charts.


def histogram(percents: Iterable[float]) -> list[ScoreBin]:
    counts = [0] * 11
    for p in percents:
        counts[10 if p >= 100 else max(0, int(p // 10))] += 1
    bins = [ScoreBin(lower=10.0 * i, upper=10.0 * (i + 1), count=counts[i]) for i in range(10)]
    return bins + [ScoreBin(lower=100.0, upper=100.0, count=counts[10])]


def per_test(counts: Iterable[_TestCount]) -> list[TestStat]:
    """Runs, passes and the most frequent reasons of failure per test, in the order the
    reports list the tests."""
    runs: Counter[str] = Counter()
    passed: Counter[str] = Counter()
    visibility: dict[str, str] = {}
    position: dict[str, int] = {}
    reasons: dict[str, Counter[tuple[str, str, str | None]]] = {}
    for t in counts:
        name = t.name
        visibility.setdefault(name, t.visibility)
        position[name] = min(position.get(name, t.position), t.position)
        runs[name] += t.count
        if t.verdict == ACCEPTED:
            passed[name] += t.count
            continue
        why = t.message[:MAX_REASON_CHARS]
        reasons.setdefault(name, Counter())[(t.verdict, why, t.probe)] += t.count
    found = []
    for name in sorted(visibility, key=lambda n: (position[n], n)):
        top = sorted((reasons.get(name) or Counter()).items(),
                     key=lambda kv: (-kv[1], kv[0][0], kv[0][1], kv[0][2] or ""))
        found.append(TestStat(
            name=name, visibility="sample" if visibility[name] == "sample" else "hidden",
            runs=runs[name], passed=passed[name],
            pass_rate=passed[name] / runs[name] if runs[name] else 0.0,
            reasons=[ReasonCount(verdict=v, reason=r, probe=p, count=n)
                     for (v, r, p), n in top[:MAX_REASONS]]))
    return found


def _floor(at: datetime, hourly: bool) -> datetime:
    at = at.replace(minute=0, second=0, microsecond=0)
    return at if hourly else at.replace(hour=0)


def timeline(graded: Sequence[_Graded], due_at: datetime | None,
             late_until: datetime | None) -> Timeline:
    """Graded submissions per hour (a span up to three days) or per day, from the first
    to the last, stretched to the due date when it is within reach of the data."""
    if not graded:
        return Timeline(bucket="day", buckets=[], due_at=due_at, late_until=late_until)
    lo, hi = graded[0].received_at, graded[-1].received_at
    for marker in (due_at, late_until):
        if marker is not None and lo - MARKER_REACH <= marker <= hi + MARKER_REACH:
            lo, hi = min(lo, marker), max(hi, marker)
    hourly = hi - lo <= HOURLY_SPAN
    step = timedelta(hours=1) if hourly else timedelta(days=1)
    start = _floor(lo, hourly)
    count = int((hi - start) / step) + 1
    submissions, accepted = [0] * count, [0] * count
    for sub in graded:
        i = int((sub.received_at - start) / step)
        submissions[i] += 1
        accepted[i] += sub.accepted
    return Timeline(
        bucket="hour" if hourly else "day", due_at=due_at, late_until=late_until,
        buckets=[TimeBucket(start=start + i * step, end=start + (i + 1) * step,
                            submissions=submissions[i], accepted=accepted[i])
                 for i in range(count)])


def _by_student(graded: Iterable[_Graded]) -> dict[str, list[_Graded]]:
    found: dict[str, list[_Graded]] = {}
    for sub in graded:
        if sub.student is not None:
            found.setdefault(sub.student, []).append(sub)
    return found


def attempts_to_accept(by_student: dict[str, list[_Graded]]) -> AttemptsToAccept:
    counts = []
    for subs in by_student.values():
        first = next((i for i, sub in enumerate(subs) if sub.accepted), None)
        if first is not None:
            counts.append(first + 1)
    tally = Counter(min(n, 10) for n in counts)
    return AttemptsToAccept(
        bins=[AttemptBin(attempts=str(n) if n < 10 else "10+", students=tally[n])
              for n in range(1, 11)],
        median=float(statistics.median(counts)) if counts else None)


def is_stuck(subs: Sequence[_Graded]) -> bool:
    """At least STUCK_ATTEMPTS graded attempts, none accepted, and the last STUCK_WINDOW
    no better than the best before them."""
    if len(subs) < STUCK_ATTEMPTS or any(sub.accepted for sub in subs):
        return False
    before = max(sub.percent for sub in subs[:-STUCK_WINDOW])
    return max(sub.percent for sub in subs[-STUCK_WINDOW:]) <= before


def progress(students: set[str], by_student: dict[str, list[_Graded]],
             names: dict[str, str]) -> Progress:
    accepted = stuck = started = 0
    stuck_students = []
    for student, subs in by_student.items():
        if any(sub.accepted for sub in subs):
            accepted += 1
        elif is_stuck(subs):
            stuck += 1
            stuck_students.append(StuckStudent(
                student_id=student, name=names.get(student, ""), attempts=len(subs),
                best_percent=round(max(sub.percent for sub in subs), 3),
                last_at=subs[-1].received_at))
        else:
            started += 1
    stuck_students.sort(key=lambda x: (-x.attempts, x.student_id))
    return Progress(never_started=len(students - set(by_student)), started=started,
                    stuck=stuck, accepted=accepted, stuck_students=stuck_students[:MAX_STUCK])


def wrong_answers(by_student: dict[str, list[_Graded]],
                  wrong: Iterable[_Wrong]) -> list[WrongAnswerGroup]:
    """The outputs of failed sample tests in each student's latest graded submission."""
    latest = {subs[-1].id: student for student, subs in by_student.items()}
    groups: dict[tuple[str, str], list[str]] = {}
    expected: dict[tuple[str, str], str] = {}
    for t in wrong:
        student = latest.get(t.submission)
        if student is None:
            continue
        key = (t.name, t.received)
        groups.setdefault(key, []).append(student)
        expected.setdefault(key, t.expected or "")
    top = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:MAX_WRONG]
    return [WrongAnswerGroup(test=test, received=received[:MAX_RECEIVED_CHARS],
                             expected=expected[(test, received)][:MAX_RECEIVED_CHARS],
                             students=len(ids), student_ids=sorted(ids)[:MAX_WRONG_IDS])
            for (test, received), ids in top]


def _analytics(base: dict[str, Any], found: _Class, due_at: datetime | None,
               late_until: datetime | None) -> Analytics:
    by_student = _by_student(found.graded)
    students = found.students | set(by_student)
    return Analytics(
        **base, due_at=due_at, students=len(students), submissions=len(found.graded),
        histogram=histogram(found.best.values()), tests=per_test(found.tests),
        timeline=timeline(found.graded, due_at, late_until),
        attempts_to_accept=attempts_to_accept(by_student),
        progress=progress(students, by_student, found.names),
        wrong_answers=wrong_answers(by_student, found.wrong))


def assignment_analytics(s: Session, assignment: Assignment,
                         now: datetime | None = None) -> Analytics:
    """The analytics of an assignment: its roster's learners and everyone who submitted
    to it; the histogram is the gradebook's grades."""
    where = (Submission.assignment_id == assignment.id,)
    names: dict[str, str] = {}
    roster: set[str] = set()
    for user_id, name, roles in s.execute(select(Member.user_id, Member.name, Member.roles)
                                          .where(Member.course_id == assignment.course_id)):
        names[user_id] = name or ""
        if not is_instructor(roles or []):
            roster.add(user_id)
    best = {student: (100.0 * g.given / g.maximum if g.maximum > 0 else 0.0)
            for student, g in grades(s, assignment, with_comments=False).items()}
    found = _Class(graded=_graded(s, where), tests=_tests(s, where), wrong=_wrong(s, where),
                   students=roster | _submitters(s, where),
                   names=names, best=best)
    base = {"scope": "assignment", "id": assignment.id, "problem": assignment.problem,
            "title": assignment.title or assignment.problem,
            "generated_at": now or utcnow()}
    return _analytics(base, found, assignment.due_at, assignment.late_until)


def problem_analytics(s: Session, tenant_id: int, problem: str, title: str = "",
                      now: datetime | None = None) -> Analytics:
    """The analytics of a problem over every submission of the tenant to it, in any
    assignment or none; the histogram is each student's best raw score."""
    where = (Submission.tenant_id == tenant_id, Submission.problem == problem)
    graded = _graded(s, where)
    best: dict[str, float] = {}
    for sub in graded:
        if sub.student is not None:
            best[sub.student] = max(best.get(sub.student, 0.0), sub.percent)
    found = _Class(graded=graded, tests=_tests(s, where), wrong=_wrong(s, where),
                   students=_submitters(s, where), best=best)
    base = {"scope": "problem", "id": problem, "problem": problem, "title": title or problem,
            "generated_at": now or utcnow()}
    return _analytics(base, found, None, None)


# The CSV export.

CSV_HEADER = ("chart", "key", "detail", "expected", "count", "total", "percent", "at")


def _iso(at: datetime | None) -> str:
    return at.isoformat() if at is not None else ""


def _rows(a: Analytics) -> Iterable[tuple[Any, ...]]:
    yield ("summary", "scope", a.scope, "", "", "", "", _iso(a.generated_at))
    yield ("summary", "id", a.id, "", "", "", "", "")
    yield ("summary", "problem", a.problem, "", "", "", "", "")
    yield ("summary", "students", "", "", a.students, "", "", "")
    yield ("summary", "submissions", "", "", a.submissions, "", "", "")
    yield ("summary", "due_at", "", "", "", "", "", _iso(a.timeline.due_at))
    yield ("summary", "late_until", "", "", "", "", "", _iso(a.timeline.late_until))
    for b in a.histogram:
        key = "100" if b.lower == 100 else f"{num(b.lower)}-{num(b.upper)}"
        yield ("histogram", key, "", "", b.count, "", "", "")
    for t in a.tests:
        yield ("test", t.name, t.visibility, "", t.passed, t.runs, num(100 * t.pass_rate), "")
        for r in t.reasons:
            detail = f"{r.verdict}: {r.reason}" + (f" (probe {r.probe})" if r.probe else "")
            yield ("failure_reason", t.name, detail, "", r.count, t.runs, "", "")
    for bucket in a.timeline.buckets:
        rate = num(100 * bucket.accepted / bucket.submissions) if bucket.submissions else ""
        yield ("timeline", _iso(bucket.start), a.timeline.bucket, "", bucket.accepted,
               bucket.submissions, rate, _iso(bucket.end))
    for n in a.attempts_to_accept.bins:
        yield ("attempts_to_accept", n.attempts, "", "", n.students, "", "", "")
    median = a.attempts_to_accept.median
    yield ("attempts_to_accept", "median", "", "", num(median) if median is not None else "",
           "", "", "")
    p = a.progress
    for key, value in (("never_started", p.never_started), ("started", p.started),
                       ("stuck", p.stuck), ("accepted", p.accepted)):
        yield ("progress", key, "", "", value, a.students, "", "")
    for st in p.stuck_students:
        yield ("stuck_student", st.student_id, st.name, "", st.attempts, "",
               num(st.best_percent), _iso(st.last_at))
    for w in a.wrong_answers:
        yield ("wrong_answer", w.test, w.received, w.expected, w.students, "", "",
               "")


def analytics_csv(a: Analytics) -> str:
    """The analytics as one CSV (RFC 4180, CRLF line ends) under ``CSV_HEADER``, a
    ``chart`` column naming what each row belongs to; every cell guarded against
    spreadsheet formulas (:func:`service.exports.cell`)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_HEADER)
    for row in _rows(a):
        writer.writerow([cell(str(c)) for c in row])
    return out.getvalue()
