"""The roster from the LMS (LTI NRPS): read page by page from the test platform over
HTTP with an access token, stored as the course's members; members no longer listed
become Inactive; a platform that is down is an error in the result, not an exception."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from lti.nrps import next_link, sync_course, sync_if_stale
from service.courses import upsert_member
from service.db import Database
from service.models import Course, Member
from service.settings import ServiceSettings
from tests.lti.conftest import Tool
from tests.lti.platform import INSTRUCTOR, LEARNER, TestPlatform
from tests.lti.services_support import CONTEXT, Setup, make_setup

pytestmark = [pytest.mark.service]


@pytest.fixture
def lti_settings(service_settings: ServiceSettings) -> ServiceSettings:
    return service_settings.model_copy(update={
        "secret_key": "tests-secret", "webhook_allow": ["127.0.0.1"],
        "lti_timeout_seconds": 3.0})


@pytest.fixture
def setup(tool: Tool, lti_settings: ServiceSettings, platform: TestPlatform) -> Setup:
    people = [{"user_id": f"s{i}", "roles": [LEARNER], "name": f"Student {i}",
               "email": f"s{i}@example.edu"} for i in range(4)]
    people.append({"user_id": "t1", "roles": [INSTRUCTOR], "name": "Teacher"})
    platform.services.set_members(CONTEXT, people)
    return make_setup(tool.db, lti_settings, platform, roster_page=2)


def members(db: Database, course_id: int) -> dict[str, tuple[str, str, list[str]]]:
    with db.session() as s:
        return {m.user_id: (m.name, m.status, m.roles) for m in s.scalars(
            select(Member).where(Member.course_id == course_id))}


def test_the_roster_is_read_page_by_page_and_stored(
        setup: Setup, lti_settings: ServiceSettings, platform: TestPlatform) -> None:
    result = sync_course(setup.db, lti_settings, setup.course_id)
    assert (result.ok, result.members, result.pages, result.error) == (True, 5, 3, "")
    assert platform.services.page_requests == 3
    found = members(setup.db, setup.course_id)
    assert set(found) == {"s0", "s1", "s2", "s3", "t1"}
    assert found["s2"] == ("Student 2", "Active", [LEARNER])
    assert found["t1"][2] == [INSTRUCTOR]
    assert [g["scope"] for g in platform.services.tokens] == [
        "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"]


def test_members_no_longer_listed_become_inactive(
        setup: Setup, lti_settings: ServiceSettings, platform: TestPlatform) -> None:
    with setup.db.session() as s:  # a student who launched but the platform no longer lists
        upsert_member(s, setup.course_id, "launched-only", name="Gone", launched=True)
    assert sync_course(setup.db, lti_settings, setup.course_id).ok
    platform.services.members[CONTEXT] = [m for m in platform.services.members[CONTEXT]
                                          if m["user_id"] != "s1"]
    result = sync_course(setup.db, lti_settings, setup.course_id)
    assert (result.ok, result.members, result.inactive) == (True, 4, 1)  # s1
    found = members(setup.db, setup.course_id)
    assert found["s1"][1] == "Inactive" and found["launched-only"][1] == "Inactive"
    assert found["s0"][1] == "Active"


def test_a_platform_that_is_down_is_reported_and_changes_nothing(
        setup: Setup, lti_settings: ServiceSettings, platform: TestPlatform) -> None:
    assert sync_course(setup.db, lti_settings, setup.course_id).ok
    before = members(setup.db, setup.course_id)
    platform.stop()
    try:
        result = sync_course(setup.db, lti_settings, setup.course_id)
    finally:
        platform.start()
    assert not result.ok and result.error.startswith("roster not read: ")
    assert "cannot connect" in result.error
    platform.services.fail_with = 503
    result = sync_course(setup.db, lti_settings, setup.course_id)
    assert not result.ok and "HTTP 503" in result.error
    assert members(setup.db, setup.course_id) == before


def test_a_fresh_roster_is_not_fetched_again(
        setup: Setup, lti_settings: ServiceSettings, platform: TestPlatform) -> None:
    first = sync_if_stale(setup.db, lti_settings, setup.course_id)
    assert first is not None and first.ok
    assert sync_if_stale(setup.db, lti_settings, setup.course_id) is None
    assert platform.services.page_requests == 3
    stale = lti_settings.model_copy(update={"lti_roster_max_age_seconds": 0})
    again = sync_if_stale(setup.db, stale, setup.course_id)
    assert again is not None and again.ok and platform.services.page_requests == 6


def test_a_course_without_a_roster_service_says_so(
        setup: Setup, lti_settings: ServiceSettings) -> None:
    with setup.db.session() as s:
        course = s.get(Course, setup.course_id)
        assert course is not None
        course.memberships_url = None
    result = sync_course(setup.db, lti_settings, setup.course_id)
    assert not result.ok and "no roster service" in result.error


def test_the_next_link_is_found_among_others() -> None:
    header = '<https://lms/m?p=1>; rel="first", <https://lms/m?p=3>; rel="next"'
    assert next_link(header) == "https://lms/m?p=3"
    assert next_link('<https://lms/m?p=1>; rel="prev"') is None
