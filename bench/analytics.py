"""How long class analytics take on a class of 1,000 graded submissions (issue 26: the
analytics pages answer in under 200 ms).

Builds, in a temporary SQLite database (and with ``--postgres`` a private PostgreSQL
too), a course of ``--students`` learners with one assignment of
jax-sharding/tensor-parallel-mlp (2 sample and 12 hidden tests) and ``--submissions``
graded submissions among them (about 3.3 each; mixed verdicts, fixed hidden reasons, a
few kinds of sample output, full reports as workers store them) plus 100 sample runs;
then times, ``--runs`` times each: :func:`service.analytics.assignment_analytics` and
:func:`~service.analytics.problem_analytics` in a fresh session, the API's
``GET /v1/assignments/{id}/analytics`` (JSON and ``?format=csv``) and
``GET /v1/problems/{id}/analytics`` through the Flask test client, and the instructor's
analytics pages (``/app/<sid>/assignments/<id>/analytics``, its ``analytics.csv``,
``/app/<sid>/problems/<problem>/analytics``) where the app has them. Counts the SQL
statements of each request (``before_cursor_execute``). Prints a table and writes it
into docs/performance.md between the bench:analytics markers. Needs redis-server (the
pages keep their sessions in Redis).

    .venv/bin/python bench/analytics.py [--students 300] [--submissions 1000] [--runs 20]
                                        [--postgres] [--note TEXT]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from docsection import command_line, measured, replace_section
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from flask import Flask  # noqa: E402
from servers import PostgresServer, RedisServer  # noqa: E402
from sqlalchemy import event, select  # noqa: E402

from judge.checkers import reasons  # noqa: E402
from judge.report import TestResult, Timings, VerdictReport  # noqa: E402
from judge.settings import Settings  # noqa: E402
from judge.verdict import Verdict  # noqa: E402
from service import outcomes  # noqa: E402
from service.analytics import assignment_analytics, problem_analytics  # noqa: E402
from service.keys import create_key  # noqa: E402
from service.migrate import upgrade  # noqa: E402
from service.models import Assignment, Course, Member, Submission, Tenant  # noqa: E402
from service.settings import ServiceSettings  # noqa: E402

PROBLEM = "jax-sharding/tensor-parallel-mlp"
SAMPLES = ("sample-two-by-four", "sample-four-by-two")
HIDDEN = ("model-axis-of-one", "zero-output-bias", "two-by-four", "four-by-two",
          "two-by-two", "four-by-one", "two-by-one", "large-hidden-bias",
          "large-output-bias", "small-weights", "wider-block", "wider-block-four-by-two")
EXPECTED = "[[ 0.8112, -1.2031,  0.0447], ...] (8, 3) float32 P('data', None)"
RECEIVED = (  # what wrong submissions return on a sample test
    "[[ 0.8112, -1.2031,  0.0447], ...] (8, 3) float32 P('model')",
    "[[ 0.7905, -1.1876,  0.0312], ...] (8, 3) float32 P('data', None)",
    "[[ 3.2448, -4.8124,  0.1788], ...] (8, 3) float32 P('data', None)",
    "[[ 0.8112, -1.2031,  0.0447], ...] (8, 3) float32 P(None, 'model')",
)
HIDDEN_REASONS = (reasons.VALUES, reasons.PSPEC, "at [0]: " + reasons.SHAPE,
                  reasons.PLACEMENT.format(expected_device=3), reasons.NOT_NAMED)
PROBES = ("one-program",)
CODE = "import jax\nimport jax.numpy as jnp\n" + "# a student's solution\n" * 60
COLUMNS = ("what", "median ms", "p95 ms", "SQL statements")


def report_of(rng: random.Random, skill: float) -> VerdictReport:
    """A report as a worker stores it: each test passes with probability ``skill``."""
    tests = []
    for name in SAMPLES + HIDDEN:
        sample = name in SAMPLES
        ok = rng.random() < skill
        verdict = Verdict.ACCEPTED if ok else rng.choice(
            [Verdict.WRONG_ANSWER] * 6 + [Verdict.RUNTIME_ERROR, Verdict.TIME_LIMIT_EXCEEDED])
        probe = None
        message = ""
        if not ok and verdict == Verdict.WRONG_ANSWER:
            if not sample and rng.random() < 0.2:
                probe, message = rng.choice(PROBES), "all-reduce over model: 0, at least 1"
            else:
                message = rng.choice(HIDDEN_REASONS)
        elif not ok:
            message = ("the test ran out of time" if verdict == Verdict.TIME_LIMIT_EXCEEDED
                       else "the function raised an exception")
        tests.append(TestResult(
            name=name, visibility="sample" if sample else "hidden", verdict=verdict,
            score=0.0 if sample or not ok else 1.0, max_score=0.0 if sample else 1.0,
            time_ms=rng.uniform(20, 400), cpu_ms=rng.uniform(20, 400), message=message,
            probe=probe, input="x: (8, 4) float32, ..., mesh_shape: [2, 4]" if sample else None,
            expected=EXPECTED if sample else None,
            received=(EXPECTED if ok else rng.choice(RECEIVED)) if sample else None))
    score = sum(t.score for t in tests)
    verdict = (Verdict.ACCEPTED if score == len(HIDDEN) and all(
        t.verdict == Verdict.ACCEPTED for t in tests) else next(
        t.verdict for t in tests if t.verdict != Verdict.ACCEPTED))
    return VerdictReport(problem=PROBLEM, problem_version="0" * 16, verdict=verdict,
                         score=score, max_score=float(len(HIDDEN)),
                         time_ms=sum(t.time_ms for t in tests), tests=tests,
                         stdout="", stderr="", sandbox="docker", judge_version="bench",
                         timings=Timings(startup_ms=120, import_ms=900, total_ms=4000))


@dataclass(frozen=True)
class Built:
    assignment_id: str
    tenant_id: int
    key: str


def build(app: Flask, students: int, submissions: int, seed: int = 26) -> Built:
    """The class: a course, its roster, one assignment, the submissions."""
    rng = random.Random(seed)
    db = app.extensions["jaxjudge"].db
    start = datetime(2025, 3, 1, 8, tzinfo=UTC)
    due = start + timedelta(days=7)
    with db.session() as s:
        key = create_key(s, "bench", "instructor")
        tenant_id = s.scalar(select(Tenant.id).where(Tenant.name == "bench"))
        assert tenant_id is not None
        course = Course(tenant_id=tenant_id, context_id="bench-course", title="Bench")
        s.add(course)
        s.flush()
        aid = uuid.uuid4().hex
        s.add(Assignment(id=aid, tenant_id=tenant_id, course_id=course.id,
                         resource_link_id="bench", problem=PROBLEM, title="Tensor parallel",
                         due_at=due, late_until=due + timedelta(days=2),
                         late_penalty_percent_per_day=10.0))
        ids = [f"s{i:04d}" for i in range(students)]
        s.add_all(Member(course_id=course.id, user_id=u, name=f"Student {u}",
                         roles=["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"])
                  for u in ids)
        counts = [0] * students
        active = ids[: int(students * 0.9)]  # a tenth never start
        for _ in range(submissions):
            counts[rng.randrange(len(active))] += 1
        rows = []
        for i, student in enumerate(active):
            skill = rng.uniform(0.2, 0.8)
            at = start + timedelta(hours=rng.uniform(0, 24 * 8))
            for _ in range(counts[i]):
                report = report_of(rng, skill)
                rows.append(_row(tenant_id, aid, student, at, report, False))
                skill = min(1.0, skill + rng.uniform(0.0, 0.25))
                at += timedelta(minutes=rng.uniform(5, 600))
        for _ in range(100):
            student = rng.choice(active)
            rows.append(_row(tenant_id, aid, student, start, report_of(rng, 0.5), True))
        s.add_all(rows)
        outcomes.fill(s, rows)  # their tests' rows, as service.submissions.store writes them
    return Built(aid, tenant_id, key)


def _row(tenant_id: int, aid: str, student: str, at: datetime, report: VerdictReport,
         sample_run: bool) -> Submission:
    return Submission(
        id=uuid.uuid4().hex, tenant_id=tenant_id, problem=PROBLEM,
        problem_version=report.problem_version, student_id=student, code=CODE,
        code_sha256="0" * 64, queue="default", status="done", attempt=1,
        verdict=report.verdict.value, score=report.score, max_score=report.max_score,
        report=report.model_dump(mode="json"), received_at=at, finished_at=at,
        assignment_id=aid, sample_run=sample_run)


@contextmanager
def counting(app: Flask) -> Iterator[list[int]]:
    """A one-item list holding the SQL statements run since it was last zeroed."""
    seen = [0]

    def listener(*_args: Any) -> None:
        seen[0] += 1

    engine = app.extensions["jaxjudge"].db.engine
    event.listen(engine, "before_cursor_execute", listener)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", listener)


def timed(app: Flask, runs: int, call: Callable[[], None]) -> tuple[float, float, int]:
    """Median and p95 milliseconds of ``runs`` calls (after one to warm up), and the SQL
    statements of the last."""
    call()
    spent = []
    with counting(app) as seen:
        for _ in range(runs):
            seen[0] = 0
            begin = time.perf_counter()
            call()
            spent.append(1000 * (time.perf_counter() - begin))
    spent.sort()
    p95 = spent[min(len(spent) - 1, round(0.95 * (len(spent) - 1)))]
    return statistics.median(spent), p95, seen[0]


def has_route(app: Flask, rule: str) -> bool:
    return any(r.rule == rule for r in app.url_map.iter_rules())


def measure(database: str, url: str, redis_url: str, args: argparse.Namespace) -> list[list[str]]:
    from app import create_app

    upgrade(url)
    settings = ServiceSettings(database_url=url, redis_url=redis_url, rate_limit="",
                               submit_rate_limit="", auth_failure_limit="",
                               secret_key="bench-secret")
    app = create_app(settings, Settings(problems_dir=ROOT / "problemsets", sandbox="docker",
                                        pool_size=0))
    app.testing = True
    try:
        built = build(app, args.students, args.submissions)
        client = app.test_client()
        headers = {"Authorization": f"Bearer {built.key}"}
        db = app.extensions["jaxjudge"].db
        with db.session() as s:
            graded = len(list(s.scalars(select(Submission.id).where(
                Submission.assignment_id == built.assignment_id,
                Submission.sample_run.is_(False)))))

        def service_assignment() -> None:
            with db.session() as s:
                found = s.get(Assignment, built.assignment_id)
                assert found is not None
                assignment_analytics(s, found)

        def service_problem() -> None:
            with db.session() as s:
                problem_analytics(s, built.tenant_id, PROBLEM)

        def get(path: str, **kw: Any) -> Callable[[], None]:
            def call() -> None:
                r = client.get(path, **kw)
                assert r.status_code == 200, (path, r.status_code, r.data[:300])
            return call

        a_path = f"/v1/assignments/{built.assignment_id}/analytics"
        cases: list[tuple[str, Callable[[], None] | None]] = [
            ("service: assignment_analytics", service_assignment),
            ("service: problem_analytics", service_problem),
            (f"GET {a_path.replace(built.assignment_id, '{id}')}", get(a_path, headers=headers)),
            ("  ... ?format=csv", get(a_path + "?format=csv", headers=headers)),
            (f"GET /v1/problems/{PROBLEM}/analytics",
             get(f"/v1/problems/{PROBLEM}/analytics", headers=headers)),
        ]
        signed = client.post("/app/signin", data={"api_key": built.key})
        sid = signed.headers.get("Location", "").split("/app/", 1)[-1].split("/", 1)[0]
        pages = [
            ("/app/<sid>/assignments/<assignment_id>/analytics",
             f"/app/{sid}/assignments/{built.assignment_id}/analytics"),
            ("/app/<sid>/assignments/<assignment_id>/analytics.csv",
             f"/app/{sid}/assignments/{built.assignment_id}/analytics.csv"),
            ("/app/<sid>/problems/<path:problem>/analytics",
             f"/app/{sid}/problems/{PROBLEM}/analytics"),
        ]
        for rule, path in pages:
            shown = "page " + rule.replace("<sid>/", "").replace("<assignment_id>", "{id}")
            if not has_route(app, rule) or signed.status_code != 303:
                print(f"note: skipping {rule}: the app has no such page (yet)")
                cases.append((shown, None))
            else:
                cases.append((shown, get(path)))
        rows = []
        for name, call in cases:
            if call is None:
                rows.append([database, name, "n/a", "n/a", "n/a"])
                continue
            median, p95, statements = timed(app, args.runs, call)
            rows.append([database, name, f"{median:.1f}", f"{p95:.1f}", str(statements)])
        print(f"{database}: {graded} graded submissions, {args.students} students")
        return rows
    finally:
        app.extensions["jaxjudge"].db.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--postgres", action="store_true",
                        help="also on a private PostgreSQL (as the tests start it)")
    parser.add_argument("--note", default="",
                        help="a sentence for the doc, e.g. what else the machine ran")
    args = parser.parse_args()
    defaults = parser.parse_args([])
    load_before = os.getloadavg()[0]

    folder = Path(tempfile.mkdtemp(prefix="jaxjudge-bench-"))
    redis = RedisServer(folder / "redis")
    redis.start()
    postgres: PostgresServer | None = None
    rows: list[list[str]] = []
    try:
        rows += measure("SQLite", f"sqlite:///{folder / 'bench.db'}", redis.url, args)
        if args.postgres:
            postgres = PostgresServer()
            postgres.init()
            postgres.start()
            rows += measure("PostgreSQL", postgres.new_database(), redis.url, args)
    finally:
        redis.stop()
        if postgres is not None:
            postgres.stop()
            postgres.remove()
        shutil.rmtree(folder, ignore_errors=True)

    columns = ["database", *COLUMNS]
    shown = Table(title=f"analytics of {args.submissions} submissions ({os.cpu_count()} cores)")
    for i, name in enumerate(columns):
        shown.add_column(name, justify="left" if i < 2 else "right")
    for row in rows:
        shown.add_row(*row)
    Console().print(shown)

    command = command_line("bench/analytics.py", args, defaults,
                           ("students", "submissions", "runs"), ("postgres",))
    replace_section("analytics", [
        "## Class analytics (issue 26)",
        "",
        measured(command) + f": one course of {args.students} learners, one assignment of "
        f"{PROBLEM} with {args.submissions} graded submissions (2 sample and 12 hidden "
        "tests each, full reports and their `test_outcomes` rows) and 100 sample runs; the bench's Flask test client in "
        f"the same process; {args.runs} runs each after one to warm up. \"SQL statements\" "
        "counts what one request runs (`before_cursor_execute`), sign-in and session "
        "look-ups included for the pages. The target: under 200 ms per page. Load average "
        f"(1 min) {load_before:.2f} before, {os.getloadavg()[0]:.2f} after."
        + (f" {args.note}" if args.note else ""),
        "",
        "| " + " | ".join(columns) + " |",
        "|---|---|" + "---:|" * (len(columns) - 2),
        *["| " + " | ".join(row) + " |" for row in rows],
    ])


if __name__ == "__main__":
    main()
