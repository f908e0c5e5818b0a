"""Launches from the test platform: a learner lands on the student page of the link's
assignment, an instructor on its gradebook; what the launch said is recorded (course,
assignment with its AGS endpoint, member, NRPS URL); the session lives in the URL."""

from __future__ import annotations

import re

import requests
from sqlalchemy import select

from app.sessions import Principal, Sessions
from service.models import Assignment, Course, Member
from tests.lti.conftest import Tool
from tests.lti.platform import INSTRUCTOR, LaunchSpec, TestPlatform

LANDING = re.compile(r"^/app/([A-Za-z0-9_-]{43})/assignments/([0-9a-f]{32})(/gradebook)?$")


def principal_of(tool: Tool, location: str) -> Principal:
    sid = location.split("/")[2]
    services = tool.app.extensions["jaxjudge"]
    data = Sessions(services.redis, 60).load(sid)
    assert data is not None
    return Principal.model_validate(data["principal"])


def test_learner_lands_on_the_student_page(tool: Tool, platform: TestPlatform) -> None:
    r = platform.launch(custom={"problem": "demo/layout"})
    assert r.status_code == 303, r.text
    found = LANDING.match(r.headers["Location"])
    assert found and found.group(3) is None, r.headers["Location"]
    who = principal_of(tool, r.headers["Location"])
    assert (who.role, who.via, who.user_id) == ("learner", "lti", "student-1")
    assert who.assignment_id == found.group(2)
    assert "Set-Cookie" not in r.headers  # the launch needs no cookie: the sid is the URL
    with tool.db.session() as s:
        assignment = s.get(Assignment, found.group(2))
        assert assignment is not None and assignment.problem == "demo/layout"
        assert assignment.lineitem_url == platform.lineitems[("course-1", "link-1")]
        assert assignment.lineitems_url == platform.services.lineitems_url("course-1")
        assert assignment.ags_scopes and any("score" in x for x in assignment.ags_scopes)
        course = s.get(Course, assignment.course_id)
        assert course is not None and course.context_id == "course-1"
        assert course.memberships_url == platform.services.memberships_url("course-1")
        assert course.tenant_id == who.tenant_id == who.tenant_id
        member = s.scalar(select(Member).where(Member.course_id == course.id))
        assert member is not None and member.user_id == "student-1"
        assert member.name == "Ada Student" and member.launched_at is not None


def test_instructor_lands_on_the_gradebook(tool: Tool, platform: TestPlatform) -> None:
    r = platform.launch(user="teacher-1", roles=[INSTRUCTOR],
                        custom={"problem": "demo/layout"})
    assert r.status_code == 303, r.text
    found = LANDING.match(r.headers["Location"])
    assert found and found.group(3) == "/gradebook", r.headers["Location"]
    assert principal_of(tool, r.headers["Location"]).role == "instructor"


def test_second_launch_reuses_the_assignment(tool: Tool, platform: TestPlatform) -> None:
    first = platform.launch(custom={"problem": "demo/layout"})
    second = platform.launch(user="student-2", custom={"problem": "demo/layout"})
    a1 = LANDING.match(first.headers["Location"])
    a2 = LANDING.match(second.headers["Location"])
    assert a1 and a2 and a1.group(2) == a2.group(2)
    assert a1.group(1) != a2.group(1)  # one session per launch


def test_login_by_post_works_too(tool: Tool, platform: TestPlatform) -> None:
    session = requests.Session()
    pending = platform.begin(session, LaunchSpec(custom={"problem": "demo/layout"}),
                             method="POST")
    action, form = platform.authorize(session, pending)
    r = platform.post_launch(session, form, action)
    assert r.status_code == 303 and LANDING.match(r.headers["Location"])


def test_link_without_problem(tool: Tool, platform: TestPlatform) -> None:
    """A learner gets a clear error page; an instructor the picker, and the problem chosen
    binds the link."""
    r = platform.launch(resource_link="bare-link")
    assert r.status_code == 404
    assert "text/html" in r.headers["Content-Type"]
    assert "names no problem yet" in r.text
    r = platform.launch(user="teacher-1", roles=[INSTRUCTOR], resource_link="bare-link")
    assert r.status_code == 303
    picker = r.headers["Location"]
    assert re.match(r"^/app/[A-Za-z0-9_-]{43}/lti/pick$", picker)
    page = requests.get(tool.base + picker, timeout=10)
    assert page.status_code == 200 and "demo/layout" in page.text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert token
    chosen = requests.post(tool.base + picker, data={"csrf_token": token.group(1),
                                                     "problem": "demo/layout"},
                           allow_redirects=False, timeout=10)
    assert chosen.status_code == 303, chosen.text
    assert chosen.headers["Location"].endswith("/gradebook")
    # The learner's next launch of that link lands on its student page.
    r = platform.launch(resource_link="bare-link")
    assert r.status_code == 303 and LANDING.match(r.headers["Location"])


def test_unknown_problem_is_a_clear_error(tool: Tool, platform: TestPlatform) -> None:
    r = platform.launch(custom={"problem": "demo/nope"})
    assert r.status_code == 404
    assert "demo/nope" in r.text and "Traceback" not in r.text


def test_pages_after_a_launch(tool: Tool, platform: TestPlatform) -> None:
    """The learner's landing page opens (no cookie sent: the session is the URL) and the
    instructor's gradebook of the same assignment does not, for the learner."""
    r = platform.launch(custom={"problem": "demo/layout"})
    location = r.headers["Location"]
    page = requests.get(tool.base + location, timeout=30)
    assert page.status_code == 200, page.text[:300]
    gradebook = requests.get(tool.base + location + "/gradebook", timeout=30)
    assert gradebook.status_code == 403
    teacher = platform.launch(user="teacher-1", roles=[INSTRUCTOR],
                              custom={"problem": "demo/layout"})
    assert requests.get(tool.base + teacher.headers["Location"], timeout=30).status_code == 200
