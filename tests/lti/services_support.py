"""What the grade and roster tests share: the test platform (tests/lti/platform.py, with
the services of tests/lti/platform_services.py) registered with the tool, a course of it
with a roster URL and an assignment with a line item; graded submissions made as a
worker makes them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from servers import wait_for
from sqlalchemy import select

from judge.report import TestResult, VerdictReport
from judge.verdict import Verdict
from service.courses import upsert_assignment, upsert_course
from service.db import Database
from service.keys import get_or_create_tenant
from service.models import Assignment, Delivery, LtiPlatform, Status, Submission
from service.scores import SCORE_SCOPE
from service.settings import ServiceSettings
from service.submissions import claim, new_id, store
from tests.lti.platform_services import PlatformServices
from workers.context import Context
from workers.deliveries import attempt

CONTEXT = "course-1"


@dataclass
class Setup:
    db: Database
    settings: ServiceSettings
    platform: Any
    tenant_id: int
    platform_id: int
    course_id: int
    assignment_id: str
    lineitem: str


def make_setup(db: Database, settings: ServiceSettings, platform: Any,
               policy: str = "best", scopes: list[str] | None = None,
               lineitem: str | None = None, roster_page: int = 2) -> Setup:
    """A course of ``platform`` (a TestPlatform; registered with tenant ``course-a`` here
    unless it was) whose roster comes ``roster_page`` members a page, and an assignment
    in it with a line item of 2 points."""
    services = platform.services
    lineitem = lineitem or services.add_lineitem(CONTEXT, "Exercise", 2)
    with db.session() as s:
        tenant = get_or_create_tenant(s, "course-a")
        row = s.get(LtiPlatform, platform.platform_id) if platform.platform_id else None
        if row is None:
            row = LtiPlatform(tenant_id=tenant.id, issuer=platform.base,
                              client_id=platform.client_id, deployment_ids=["d1"],
                              login_url=f"{platform.base}/auth", token_url=services.token_url,
                              jwks_url=f"{platform.base}/jwks")
            s.add(row)
            s.flush()
        course = upsert_course(s, tenant_id=tenant.id, platform_id=row.id, context_id=CONTEXT,
                               title="Course",
                               memberships_url=f"{services.memberships_url(CONTEXT)}"
                                               f"?limit={roster_page}")
        assignment = upsert_assignment(
            s, course, resource_link_id="rl-1", problem="demo/layout", lineitem_url=lineitem,
            lineitems_url=services.lineitems_url(CONTEXT),
            ags_scopes=[SCORE_SCOPE] if scopes is None else scopes)
        assignment.policy = policy
        s.flush()
        return Setup(db, settings, platform, tenant.id, row.id, course.id, assignment.id,
                     lineitem)


def offline_setup(db: Database) -> Setup:
    """A course and an assignment with a line item, of a platform nobody serves (for
    what happens in the database alone)."""
    stub: Any = type("Stub", (), {"base": "http://127.0.0.1:9", "client_id": "c",
                                  "platform_id": None})()
    stub.services = PlatformServices(stub)
    return make_setup(db, ServiceSettings(database_url=db.url, secret_key="x"), stub)


def report(score: float, verdict: Verdict = Verdict.ACCEPTED, tests: int = 2,
           message: str = "") -> VerdictReport:
    """A report of ``tests`` tests worth 1 each, ``score`` of them passed."""
    results = [TestResult(name=f"t{i}", visibility="hidden",
                          verdict=Verdict.ACCEPTED if i < score else Verdict.WRONG_ANSWER,
                          score=1.0 if i < score else 0.0, max_score=1.0, time_ms=1.0,
                          message=message)
               for i in range(tests)]
    return VerdictReport(problem="demo/layout", problem_version="v1", verdict=verdict,
                         score=score, max_score=float(tests), time_ms=1.0, tests=results,
                         message=message)


def graded(setup: Setup, student: str, score: float, **kwargs: Any) -> tuple[str, str | None]:
    """A submission of ``student`` to the assignment, graded (claimed and stored as a
    worker would): its id and the id of the score delivery opened with it."""
    sid = new_id()
    with setup.db.session() as s:
        s.add(Submission(id=sid, tenant_id=setup.tenant_id, problem="demo/layout",
                         problem_version="v1", student_id=student, code="x = 1\n",
                         code_sha256="0" * 64, queue="interactive", status=Status.QUEUED,
                         assignment_id=setup.assignment_id))
    taken = claim(setup.db, sid, stale_after=30)
    assert taken is not None
    stored = store(setup.db, sid, taken.attempt, report(score, **kwargs))
    assert stored is not None
    return sid, stored.score


def delivery(db: Database, delivery_id: str) -> Delivery:
    with db.session() as s:
        row = s.get(Delivery, delivery_id)
        assert row is not None
        return row


def assignment(db: Database, assignment_id: str) -> Assignment:
    with db.session() as s:
        found = s.scalar(select(Assignment).where(Assignment.id == assignment_id))
        assert found is not None
        return found


def wait_status(db: Database, delivery_id: str, status: str, timeout: float = 60) -> Delivery:
    return wait_for(lambda: (row := delivery(db, delivery_id)).status == status and row,
                    timeout, f"delivery {delivery_id} {status}")


def run_tries(ctx: Context, delivery_id: str, limit: int = 20) -> Delivery:
    """Make the delivery's tries in order in this process, as the task and its retries
    would (from the try it is at)."""
    for number in range(delivery(ctx.db, delivery_id).attempts, limit):
        if attempt(ctx, delivery_id, number) is None:
            break
    return delivery(ctx.db, delivery_id)
