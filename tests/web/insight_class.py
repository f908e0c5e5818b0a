"""A small class built straight into the database for the insight pages' tests (page and
browser): graded submissions of ``demo/layout`` with reports whose numbers are known by
construction, and code in which one pair is a disguised copy.

======== ==================== ===================================================
student  graded attempts      what the pages must show
======== ==================== ===================================================
ana      model, ok            accepted after 2 attempts (her code: ORIGINAL)
ben      ok                   accepted after 1 (COPY: ana's renamed and reordered)
cy       none x 5             stuck (5 attempts, no progress)
dee      model                started; returns P('model')
eve      none, model          started; returns P('model')
HOSTILE  model                started; returns P('model'); hostile id and code
neville  (roster only)        never started
======== ==================== ===================================================

So: histogram 0–10: 1, 50–60: 3, 100: 2; sample-1 passes 2 of 12 graded submissions;
three students return P('model') on sample-1, one P(); attempts to the first accepted
1: 1, 2: 1.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from service import outcomes
from service.db import Database
from service.models import Assignment, Course, Member, Submission

PROBLEM = "demo/layout"
EXPECTED = "P(None, 'model')"
HOSTILE = "<img src=x onerror=alert(1)>"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
START = datetime(2025, 3, 1, 9, tzinfo=UTC)
DUE = START + timedelta(hours=30)

ORIGINAL = '''import numpy as np


def shard_width(total, devices):
    """Columns each device keeps."""
    if total % devices:
        raise ValueError("the kernel does not split evenly")
    return total // devices


def rows_kept(kernel_in, devices, replicated=True):
    return kernel_in if replicated else kernel_in // devices


def layout(num_devices, kernel_in, kernel_out):
    width = shard_width(kernel_out, num_devices)
    rows = rows_kept(kernel_in, num_devices)
    shape = [rows, width]
    assert shape[1] * num_devices == kernel_out
    return shape
'''

COPY = '''import numpy as np


def kept_rows(fan_in, n, replicate=True):
    return fan_in if replicate else fan_in // n


def per_device(cols, n):
    # how wide each shard is
    if cols % n:
        raise ValueError("uneven split")
    return cols // n


def unused_helper(q):
    return q * 2


def layout(num_devices, kernel_in, kernel_out):
    w = per_device(kernel_out, num_devices)
    r = kept_rows(kernel_in, num_devices)
    out = [r, w]
    assert out[1] * num_devices == kernel_out
    return out
'''

OTHERS = {
    "cy": "def layout(num_devices, kernel_in, kernel_out):\n    return [kernel_in]\n",
    "dee": ("def layout(num_devices, kernel_in, kernel_out):\n"
            "    parts = {'in': kernel_in, 'out': kernel_out}\n"
            "    return sorted(parts.values())\n"),
    "eve": ("def layout(num_devices, kernel_in, kernel_out):\n"
            "    return list(map(int, (kernel_out, kernel_in)))\n"),
    HOSTILE: ("def layout(num_devices, kernel_in, kernel_out):\n"
              "    return '</code></pre><script>alert(1)</script>'\n"),
}
CODE = {"ana": ORIGINAL, "ben": COPY, **OTHERS}
ATTEMPTS = {"ana": ["model", "ok"], "ben": ["ok"], "cy": ["none"] * 5, "dee": ["model"],
            "eve": ["none", "model"], HOSTILE: ["model"]}
ROSTER = ["neville", *ATTEMPTS]


def _test(name: str, visibility: str, ok: bool, received: str | None = None,
          message: str = "some values are wrong") -> dict[str, Any]:
    found: dict[str, Any] = {
        "name": name, "visibility": visibility,
        "verdict": "accepted" if ok else "wrong_answer", "score": 0.0,
        "max_score": 0.0 if visibility == "sample" else 5.0, "time_ms": 1.0,
        "message": "" if ok else message}
    if visibility == "sample":
        found |= {"input": "(2, 8, 8)", "expected": EXPECTED,
                  "received": EXPECTED if ok else received}
    return found


KINDS: dict[str, tuple[float, list[dict[str, Any]]]] = {
    "ok": (100.0, [_test("sample-1", "sample", True), _test("hidden-1", "hidden", True),
                   _test("hidden-2", "hidden", True)]),
    "model": (50.0, [_test("sample-1", "sample", False, "P('model')"),
                     _test("hidden-1", "hidden", False), _test("hidden-2", "hidden", True)]),
    "none": (0.0, [_test("sample-1", "sample", False, "P()"),
                   _test("hidden-1", "hidden", False),
                   _test("hidden-2", "hidden", False, message="a shape is wrong")]),
}


def submission(tenant_id: int, assignment_id: str, student: str, kind: str, at: datetime,
               code: str) -> Submission:
    """A graded submission as a worker leaves it."""
    percent, tests = KINDS[kind]
    verdict = "accepted" if kind == "ok" else "wrong_answer"
    report = {"problem": PROBLEM, "problem_version": "v", "verdict": verdict,
              "score": percent / 10, "max_score": 10.0, "time_ms": 3.0, "tests": tests}
    return Submission(id=uuid.uuid4().hex, tenant_id=tenant_id, problem=PROBLEM,
                      problem_version="v", student_id=student, code=code,
                      code_sha256="0" * 64, queue="default", attempt=1, status="done",
                      verdict=verdict, score=percent / 10, max_score=10.0, report=report,
                      received_at=at, finished_at=at, assignment_id=assignment_id)


def seed(db: Database, tenant_id: int, assignment_id: str) -> None:
    """The class above into an existing assignment (its roster, its submissions)."""
    with db.session() as s:
        found = s.get(Assignment, assignment_id)
        assert found is not None
        found.due_at, found.late_until = DUE, DUE + timedelta(hours=6)
        s.add_all(Member(course_id=found.course_id, user_id=u, name="", roles=[LEARNER])
                  for u in ROSTER)
        rows = [submission(tenant_id, assignment_id, student, kind,
                           START + timedelta(hours=4 * k + n, minutes=7), CODE[student])
                for n, (student, kinds) in enumerate(ATTEMPTS.items())
                for k, kind in enumerate(kinds)]
        s.add_all(rows)
        outcomes.fill(s, rows)  # their tests' rows, as storing a report writes them


def new_assignment(db: Database, tenant_id: int, title: str = "Layouts") -> tuple[int, str]:
    """A course page of demo/layout made without an LMS: (course id, assignment id)."""
    with db.session() as s:
        course = Course(tenant_id=tenant_id, context_id=uuid.uuid4().hex, title="Sharding")
        s.add(course)
        s.flush()
        aid = uuid.uuid4().hex
        s.add(Assignment(id=aid, tenant_id=tenant_id, course_id=course.id,
                         resource_link_id=uuid.uuid4().hex, problem=PROBLEM, title=title))
        return course.id, aid
