"""An assignment's dates from the LMS (lti/dates.py), through launches of the test
platform: custom parameter substitution, Canvas's per-student dates, the AGS line item's
``endDateTime`` (and how often it is read), the dates of a Deep Linking item of ours;
the instructor's own change kept until the LMS changes its date; nothing malformed ever
failing a launch; a changed date re-sending the grades it moves, after the commit."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests
from servers import Worker
from sqlalchemy import select

from lti import dates, registration
from lti.dates import CUSTOM, DEEPLINK, LINEITEM, Offered, parse, resolve
from service import terms
from service.db import Database
from service.models import Assignment, Course, Delivery
from tests.lti.conftest import Tool
from tests.lti.platform import INSTRUCTOR, LTI, LaunchSpec, TestPlatform, parse_form
from tests.lti.services_support import Setup, graded, offline_setup, run_tries, wait_status
from workers.context import Context

LANDING = re.compile(r"^/app/[A-Za-z0-9_-]{43}/assignments/([0-9a-f]{32})(/gradebook)?$")
TEACHER = {"user": "teacher-1", "roles": [INSTRUCTOR]}
CANVAS = {LTI + "tool_platform": {"product_family_code": "canvas", "name": "Canvas"}}


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def launched(platform: TestPlatform, custom: dict[str, Any] | None = None,
             **fields: Any) -> str:
    """A launch of the link (problem demo/layout unless ``custom`` names another): the
    assignment it landed on."""
    r = platform.launch(custom={"problem": "demo/layout", **(custom or {})}, **fields)
    assert r.status_code == 303, r.text[:500]
    found = LANDING.match(r.headers["Location"])
    assert found, r.headers["Location"]
    return found.group(1)


def stored(db: Database, assignment_id: str) -> tuple[Any, ...]:
    with db.session() as s:
        a = s.get(Assignment, assignment_id)
        assert a is not None
        return a.opens_at, a.due_at, a.late_until, a.dates_source


def instructor_sets(db: Database, assignment_id: str, **changes: Any) -> None:
    with db.session() as s:
        a = s.get(Assignment, assignment_id)
        assert a is not None
        terms.set_rules(s, a, changes)


# -- what a launch says


def test_substituted_dates_become_the_assignments(tool: Tool, platform: TestPlatform) -> None:
    aid = launched(platform, {"submission_start": "2031-01-05T09:00:00Z",
                              "submission_end": "2031-01-12T23:59:00+01:00",
                              "available_end": "2031-01-14T23:59:00.000Z"})
    assert stored(tool.db, aid) == (at("2031-01-05T09:00:00Z"), at("2031-01-12T22:59:00Z"),
                                    at("2031-01-14T23:59:00Z"), CUSTOM)
    assert platform.lineitem_reads == []  # a due date came with the launch: no GET


def test_unsubstituted_empty_and_malformed_values_are_unset(
        tool: Tool, platform: TestPlatform) -> None:
    """A platform that does not know a variable sends it as written (Moodle); none of
    these is a date, and none fails the launch."""
    aid = launched(platform, {"submission_end": "$ResourceLink.submission.endDateTime",
                              "submission_start": "2031-01-05",  # no zone: unknowable
                              "available_start": "",
                              "available_end": "next friday",
                              "canvas_due_at": "2031-01-12T23:59:00Z" + " " * 100,
                              "jaxjudge_due_at": {"not": "a string"},
                              "jaxjudge_opens_at": 20310101},
                   **TEACHER)
    assert stored(tool.db, aid) == (None, None, None, None)


def test_a_failing_line_item_never_fails_a_launch(tool: Tool, platform: TestPlatform) -> None:
    platform.lineitem_of(endDateTime="tomorrow at noon")
    aid = launched(platform, **TEACHER)
    assert len(platform.lineitem_reads) == 1
    assert stored(tool.db, aid) == (None, None, None, None)
    platform.services.fail_with = 503  # the token endpoint and AGS down
    try:
        assert launched(platform, **TEACHER) == aid
    finally:
        platform.services.fail_with = None
    assert stored(tool.db, aid) == (None, None, None, None)


def test_the_instructors_date_stays_until_the_lms_changes_its_own(
        tool: Tool, platform: TestPlatform) -> None:
    lms = {"submission_end": "2031-02-01T12:00:00Z"}
    aid = launched(platform, lms)
    assert stored(tool.db, aid)[1:] == (at("2031-02-01T12:00:00Z"), None, CUSTOM)
    instructor_sets(tool.db, aid, due_at=at("2031-02-03T12:00:00Z"))
    assert launched(platform, lms, user="student-2") == aid  # the LMS sends the same date
    assert stored(tool.db, aid)[1:] == (at("2031-02-03T12:00:00Z"), None, "instructor")
    moved = {"submission_end": "2031-02-05T12:00:00Z"}  # changed in the LMS: it wins
    assert launched(platform, moved) == aid
    assert stored(tool.db, aid)[1:] == (at("2031-02-05T12:00:00Z"), None, CUSTOM)


def test_canvas_dates_are_taken_from_instructors_only(tool: Tool, platform: TestPlatform) -> None:
    """Canvas substitutes a student's own date (their override) on their launch: it
    never becomes the assignment's. An instructor's launch gives the assignment's; the
    ResourceLink variable goes before Canvas's own."""
    student = {"submission_end": "2031-03-09T12:00:00Z",
               "canvas_due_at": "2031-03-09T12:00:00Z"}
    aid = launched(platform, student, claims=CANVAS)
    assert stored(tool.db, aid) == (None, None, None, None)
    assert launched(platform, {"canvas_due_at": "2031-03-01T12:00:00Z"}, claims=CANVAS,
                    **TEACHER) == aid
    assert stored(tool.db, aid)[1:] == (at("2031-03-01T12:00:00Z"), None, CUSTOM)
    assert launched(platform, {"canvas_due_at": "2031-03-02T12:00:00Z",
                               "submission_end": "2031-03-03T12:00:00Z"},
                    claims=CANVAS, **TEACHER) == aid
    assert stored(tool.db, aid)[1] == at("2031-03-03T12:00:00Z")
    assert launched(platform, student, claims=CANVAS) == aid  # a student's: no change
    assert stored(tool.db, aid)[1] == at("2031-03-03T12:00:00Z")


def test_the_line_items_end_is_the_due_date_read_at_most_so_often(
        tool: Tool, platform: TestPlatform) -> None:
    """No due date in the launch: the line item's endDateTime is (lms:lineitem). A
    learner's launch reads it once per LINEITEM_MAX_AGE; an instructor's every time."""
    platform.lineitem_of(endDateTime="2031-04-01T10:00:00Z")
    aid = launched(platform)
    assert len(platform.lineitem_reads) == 1
    assert stored(tool.db, aid)[1:] == (at("2031-04-01T10:00:00Z"), None, LINEITEM)
    platform.lineitem_of(endDateTime="2031-04-02T10:00:00Z")
    assert launched(platform, user="student-2") == aid  # read a moment ago: not again
    assert len(platform.lineitem_reads) == 1
    assert stored(tool.db, aid)[1] == at("2031-04-01T10:00:00Z")
    assert launched(platform, **TEACHER) == aid
    assert len(platform.lineitem_reads) == 2
    assert stored(tool.db, aid)[1:] == (at("2031-04-02T10:00:00Z"), None, LINEITEM)
    # A due date substituted in the launch goes first, and the line item is not read.
    assert launched(platform, {"submission_end": "2031-04-03T10:00:00Z"}, **TEACHER) == aid
    assert len(platform.lineitem_reads) == 2
    assert stored(tool.db, aid)[1:] == (at("2031-04-03T10:00:00Z"), None, CUSTOM)


# -- Deep Linking


def pick(tool: Tool, platform: TestPlatform, **form: str) -> requests.Response:
    r = platform.launch(spec=LaunchSpec(message_type="LtiDeepLinkingRequest", **TEACHER))
    assert r.status_code == 303, r.text
    page = requests.get(tool.base + r.headers["Location"], timeout=10)
    assert page.status_code == 200 and 'id="pick-dates"' in page.text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert token
    return requests.post(tool.base + r.headers["Location"],
                         data={"csrf_token": token.group(1), "problem": "demo/layout", **form},
                         timeout=10)


def test_a_deep_linked_items_dates_reach_the_assignment(
        tool: Tool, platform: TestPlatform) -> None:
    answer = pick(tool, platform, tz="Europe/Paris", opens_at="2031-03-01T09:00",
                  due_at="2031-03-10T18:00", late_until="")
    assert answer.status_code == 200, answer.text
    action, fields = parse_form(answer.text)
    back = requests.post(action, data=fields, timeout=10)
    assert back.status_code == 200, (back.text, platform.deep_link_errors)
    [item] = platform.deep_links[0]["items"]
    assert item["custom"] == {"problem": "demo/layout",
                              "jaxjudge_opens_at": "2031-03-01T08:00:00Z",
                              "jaxjudge_due_at": "2031-03-10T17:00:00Z"}
    assert item["submission"] == {"startDateTime": "2031-03-01T08:00:00Z",
                                  "endDateTime": "2031-03-10T17:00:00Z"}
    assert item["available"] == {"startDateTime": "2031-03-01T08:00:00Z"}

    # The platform's link of the item: its first launch takes the dates.
    aid = launched(platform, item["custom"], resource_link="dl-link")
    assert stored(tool.db, aid) == (at("2031-03-01T08:00:00Z"), at("2031-03-10T17:00:00Z"),
                                    None, DEEPLINK)
    # Later launches carry them still; the instructor's change stays.
    instructor_sets(tool.db, aid, due_at=at("2031-03-12T17:00:00Z"))
    assert launched(platform, item["custom"], resource_link="dl-link") == aid
    assert stored(tool.db, aid)[1:] == (at("2031-03-12T17:00:00Z"), None, "instructor")


def test_the_lms_dates_go_before_the_deep_linked_ones(tool: Tool, platform: TestPlatform) -> None:
    custom = {"jaxjudge_opens_at": "2031-05-01T08:00:00Z",
              "jaxjudge_due_at": "2031-05-10T17:00:00Z",
              "jaxjudge_late_until": "2031-05-11T17:00:00Z",
              "submission_end": "2031-05-20T17:00:00Z"}  # moved in the LMS: after late_until
    aid = launched(platform, custom, resource_link="dl-link-2")
    # The LMS's due date; the item's late_until, now before it, is left out.
    assert stored(tool.db, aid) == (at("2031-05-01T08:00:00Z"), at("2031-05-20T17:00:00Z"),
                                    None, CUSTOM)


def test_the_pickers_dates_are_optional_and_checked(tool: Tool, platform: TestPlatform) -> None:
    answer = pick(tool, platform)  # no dates at all: an item as before
    assert answer.status_code == 200
    _action, fields = parse_form(answer.text)
    requests.post(_action, data=fields, timeout=10)
    [item] = platform.deep_links[0]["items"]
    assert item["custom"] == {"problem": "demo/layout"} and "submission" not in item
    wrong = pick(tool, platform, tz="UTC", opens_at="2031-03-10T09:00",
                 due_at="2031-03-01T09:00")
    assert wrong.status_code == 422 and "opens_at" in wrong.text
    assert len(platform.deep_links) == 1
    assert pick(tool, platform, tz="Mars/Olympus", due_at="2031-03-01T09:00").status_code == 422


# -- grades


@pytest.mark.service
def test_a_due_date_changed_in_the_lms_sends_the_grades_it_changes(
        tool: Tool, platform: TestPlatform, ctx: Context,
        start_worker: Callable[..., Worker]) -> None:
    aid = launched(platform)
    instructor_sets(tool.db, aid, late_penalty_percent_per_day=24.0)  # 1 % an hour
    with tool.db.session() as s:
        a = s.get(Assignment, aid)
        assert a is not None
        course = s.get(Course, a.course_id)
        assert course is not None and a.lineitem_url
        setup = Setup(tool.db, ctx.settings, platform, a.tenant_id, course.platform_id or 0,
                      course.id, aid, a.lineitem_url)
    _, first = graded(setup, "student-1", 2.0)
    assert first is not None and run_tries(ctx, first).status == "delivered"
    assert platform.services.scores_for("student-1")[-1]["scoreGiven"] == 2.0
    start_worker("-Q", "webhooks", "--pool", "threads", webhook_allow=["127.0.0.1"],
                 lti_backoff_seconds=0.2, lti_timeout_seconds=3.0)

    due = datetime.now(UTC) - timedelta(hours=3)  # the submission is 3 hours late now
    launched(platform, {"submission_end": due.isoformat()}, **TEACHER)
    with tool.db.session() as s:
        [resent] = s.scalars(select(Delivery.id).where(Delivery.cause.like("lms-dates:%")))
    wait_status(tool.db, resent, "delivered")
    last = platform.services.scores_for("student-1")[-1]
    assert 1.9 <= last["scoreGiven"] < 2.0  # 3 or 4 started hours late, of 2 points


def test_concurrent_launches_bringing_a_new_date_resend_once(any_database_url: str) -> None:
    """Six launches bring the same new due date at once, on SQLite and PostgreSQL: the
    date changes once, and the one grade it moves is re-sent once."""
    db = Database(any_database_url)
    setup = offline_setup(db)
    graded(setup, "ana", 2.0)
    instructor_sets(db, setup.assignment_id, late_penalty_percent_per_day=24.0)
    due = datetime.now(UTC) - timedelta(hours=3)
    opened: list[list[str]] = []
    gate = threading.Barrier(6)

    def launch() -> None:
        gate.wait()
        with db.session() as s:
            a = s.get(Assignment, setup.assignment_id)
            assert a is not None
            opened.append(dates.take(s, a, Offered(submission_end=due), None,
                                     now=datetime.now(UTC)))

    threads = [threading.Thread(target=launch) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with db.session() as s:
        resent = s.scalars(select(Delivery.id).where(Delivery.cause.like("lms-dates:%"))).all()
    now_stored = stored(db, setup.assignment_id)
    db.dispose()
    assert sorted(len(o) for o in opened) == [0, 0, 0, 0, 0, 1]
    assert list(resent) == [o for found in opened for o in found]
    assert now_stored[1:] == (due, None, CUSTOM)


# -- the rules alone


def test_parse_bounds_what_it_reads() -> None:
    assert parse("2031-01-05T09:00:00.123Z") == datetime(2031, 1, 5, 9, 0, 0, 123000, UTC)
    assert parse(" 2031-01-05T10:00+01:00 ") == datetime(2031, 1, 5, 9, tzinfo=UTC)
    for bad in ("$ResourceLink.submission.endDateTime", "", "2031-01-05", "2031-01-05T09:00",
                "0001-01-01T00:00:00Z", "9999-12-31T23:59:59-23:59", "x" * 10_000,
                "2031-01-05T09:00:00Z" + "0" * 60, None, 5, ["2031-01-05T09:00:00Z"]):
        assert parse(bad) is None, bad


def test_resolve_orders_the_sources() -> None:
    d = [datetime(2031, 6, day, tzinfo=UTC) for day in range(1, 11)]
    deep = {"opens_at": d[0], "due_at": d[3], "late_until": d[4]}
    # ResourceLink before Canvas before the line item before the Deep Linking item.
    assert resolve(Offered(submission_end=d[5], canvas_due=d[6], deep=deep), d[7],
                   first=True)["due_at"] == (d[5], CUSTOM)
    assert resolve(Offered(canvas_due=d[6], deep=deep), d[7])["due_at"] == (d[6], CUSTOM)
    assert resolve(Offered(deep=deep), d[7], first=True)["due_at"] == (d[7], LINEITEM)
    assert resolve(Offered(deep=deep), first=True) == {
        "opens_at": (d[0], DEEPLINK), "due_at": (d[3], DEEPLINK),
        "late_until": (d[4], DEEPLINK)}
    assert resolve(Offered(deep=deep), first=False) == {}  # only at the first launch
    # submission.startDateTime before available.startDateTime.
    assert resolve(Offered(submission_start=d[1], available_start=d[0]))["opens_at"] == \
        (d[1], CUSTOM)
    # The end of availability: late work until then after a due date, else the due date.
    assert resolve(Offered(submission_end=d[3], available_end=d[5])) == {
        "due_at": (d[3], CUSTOM), "late_until": (d[5], CUSTOM)}
    assert resolve(Offered(available_end=d[5])) == {"due_at": (d[5], CUSTOM)}
    assert resolve(Offered(), d[2]) == {"due_at": (d[2], LINEITEM)}
    assert resolve(Offered(available_end=d[5]), d[2]) == {
        "due_at": (d[2], LINEITEM), "late_until": (d[5], CUSTOM)}
    # A late_until with no due date anywhere is left out (it would be refused).
    assert resolve(Offered(deep={"late_until": d[4]}), first=True) == {}
    assert resolve(Offered(deep={"late_until": d[4]}), first=True, has_due=True) == {
        "late_until": (d[4], DEEPLINK)}
    # The LMS contradicting itself: the due date is kept.
    assert resolve(Offered(submission_start=d[6], submission_end=d[5])) == {
        "due_at": (d[5], CUSTOM)}


def test_the_tool_asks_for_the_substitutions_in_its_registration() -> None:
    sent = registration.client_registration("https://judge.example", {})
    assert sent[registration.TOOL_CONFIGURATION]["custom_parameters"] == \
        dates.CUSTOM_PARAMETERS
    assert dates.CUSTOM_PARAMETERS["submission_end"] == "$ResourceLink.submission.endDateTime"
    assert dates.CUSTOM_PARAMETERS["canvas_due_at"] == "$Canvas.assignment.dueAt.iso8601"
    fields = registration.canvas_config("https://judge.example")["custom_fields"]
    assert fields["context_title"] == "$Context.title"
    assert {k: fields[k] for k in dates.CUSTOM_PARAMETERS} == dates.CUSTOM_PARAMETERS
