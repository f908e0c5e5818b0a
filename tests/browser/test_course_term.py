"""The course term (issue 24) as students and an instructor meet it in Chromium, inside the
test LMS's frame at the size Moodle gives a tool (990 x 620), with the LMS's gradebook
(the test platform's recorded scores) watched:

- late work: the instructor types the dates on the Dates and rules page (in the
  browser's own zone, not the server's); the student sees the penalty a submission now
  would lose, submits, and the LMS gets the penalised score with the comment saying why;
  the gradebook tags it late; a grade the instructor then sets by hand reaches the LMS
  and is audited;
- a closed assignment refuses in words (a sample run still works, sample tests only) and
  an extension lets one student in, the other still refused;
- attempts run out and the cooldown counts down (the page reloads itself when it ends);
  hidden tests' own results wait for the due date; a policy change re-sends only the
  grade it changes.

Dates are relative to the real now (no clock is faked). Screenshots go to
``/tmp/shots/term/``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.expected_conditions import staleness_of
from selenium.webdriver.support.ui import Select

from tests.browser.conftest import Stack, quit_with_shot, unique, wait
from tests.browser.steps import editor
from tests.browser.term_support import (
    SHOTS,
    Result,
    assignment_id,
    browser_zone,
    go,
    in_a_day,
    iso,
    lms_scores,
    now,
    open_framed,
    patch_term,
    result,
    settle,
    snap,
    start_in_zone,
    submit,
    text_of,
    to_minute,
    type_date,
)
from tests.browser.test_student_frame import grade_panel
from tests.lti.platform import INSTRUCTOR, LEARNER, LaunchSpec
from tests_support import LAYOUT_GOOD, LAYOUT_WRONG

pytestmark = [pytest.mark.browser, pytest.mark.service, pytest.mark.slow]

ALL_ROWS = ["sample", "sample", "hidden", "hidden", "hidden"]  # demo/layout's tests
SAMPLE_ROWS = ["sample", "sample"]


@pytest.fixture
def framed(request: pytest.FixtureRequest) -> Iterator[WebDriver]:
    """Chromium at 990 x 620 in the zone Asia/Kolkata (the server runs in UTC)."""
    driver = start_in_zone()
    yield driver
    quit_with_shot(driver, request, SHOTS)


class Course:
    """One course with one activity (a resource link of demo/layout) at the test LMS,
    its roster set there as people are added."""

    def __init__(self, stack: Stack, title: str) -> None:
        self.stack, self.title = stack, title
        self.context, self.link = unique("course"), unique("link")
        self.people: list[LaunchSpec] = []

    def person(self, prefix: str, name: str, role: str = LEARNER) -> LaunchSpec:
        spec = LaunchSpec(user=unique(prefix), name=name, roles=[role], context=self.context,
                          context_title="JAX 301", resource_link=self.link,
                          resource_title=self.title, custom={"problem": "demo/layout"})
        self.people.append(spec)
        self.stack.platform.services.set_members(self.context, [
            {"user_id": p.user, "roles": p.roles, "name": p.name} for p in self.people],
            title="JAX 301")
        return spec


def submit_enabled(driver: WebDriver) -> bool:
    return driver.find_element(By.ID, "submit-button").is_enabled()


def local_words(at: datetime, zone: ZoneInfo) -> str:
    """The hour and minute as the page's script writes a date in an en-US browser."""
    return at.astimezone(zone).strftime("%I:%M %p")


def check_shown_in_zone(driver: WebDriver, testid: str, at: datetime, zone: str) -> None:
    """The term panel's date ``testid`` is ``at``, shown in the browser's zone, named."""
    stamp = driver.find_element(By.CSS_SELECTOR, f"[data-testid='{testid}']")
    wait(driver, 10).until(lambda d: zone in stamp.text)
    assert local_words(at, ZoneInfo(zone)) in stamp.text, stamp.text
    assert datetime.fromisoformat(stamp.get_attribute("datetime") or "") == at


def check_closed(driver: WebDriver, due: datetime) -> None:
    """The refusal of a closed assignment, in words, with its date in the browser's zone
    (the sentence's <time> shown again by the script, named)."""
    said = wait(driver, 10).until(lambda d: "(Asia/" in (t := text_of(d, "term-now")) and t)
    assert said.startswith("This assignment closed on "), said
    assert said.endswith("; it takes no more graded submissions. You can still run the "
                         "sample tests."), said
    assert local_words(due, ZoneInfo("Asia/Kolkata")) in said, said
    stamp = driver.find_element(By.CSS_SELECTOR, "#term-now time")
    assert datetime.fromisoformat(stamp.get_attribute("datetime") or "") == due


def test_late_work_loses_its_penalty_at_the_lms_and_an_override_is_audited(
        stack: Stack, framed: WebDriver) -> None:
    course = Course(stack, "Exercise 3: late work")
    teacher = course.person("teacher", "Grace Hopper", INSTRUCTOR)
    lena = course.person("late", "Lena Late")

    # The instructor types the dates in her browser's zone on the Dates and rules page.
    open_framed(framed, stack, teacher, "gradebook-table")
    go(framed, "nav-term", "rules-form")
    zone_name = browser_zone(framed)
    assert zone_name in ("Asia/Kolkata", "Asia/Calcutta"), zone_name
    wait(framed, 10).until(
        lambda d: d.find_element(By.CSS_SELECTOR, ".tz-name").text == zone_name)
    zone = ZoneInfo(zone_name)
    # Due 4 h 30 min ago (5 started hours late: 5% at 24% a day), late work until tomorrow.
    due = to_minute(now()) - timedelta(hours=4, minutes=30)
    late_until = in_a_day()
    type_date(framed, "rules-due_at", due.astimezone(zone))
    type_date(framed, "rules-late_until", late_until.astimezone(zone))
    penalty = framed.find_element(By.ID, "late_penalty_percent_per_day")
    penalty.clear()
    penalty.send_keys("24")
    go(framed, "rules-save", "term-changed")
    aid = assignment_id(framed)
    stored = patch_term(stack, aid)  # an empty PATCH: the term as stored
    assert datetime.fromisoformat(stored["due_at"]) == due
    assert datetime.fromisoformat(stored["late_until"]) == late_until
    assert (stored["late_penalty_percent_per_day"], stored["dates_source"]) == (24, "instructor")
    assert text_of(framed, "term-changed") == "Saved. It changed no student's grade."
    # Shown again in her zone.
    wait(framed, 10).until(lambda d: d.find_element(By.ID, "rules-due_at").get_attribute(
        "value") == due.astimezone(zone).strftime("%Y-%m-%dT%H:%M"))
    snap(framed, "instructor-dates-and-rules")

    # The student sees the penalty a submission now would lose, then submits.
    open_framed(framed, stack, lena, "submit-button")
    wait(framed, 10).until(lambda d: text_of(d, "term-now") ==
                           "A submission now is late: 5% of the full score taken off.")
    check_shown_in_zone(framed, "term-due", due, zone_name)
    check_shown_in_zone(framed, "term-late-work-until", late_until, zone_name)
    assert "Late work loses 24% of the full score per day late, counted by the started " \
        "hour." in text_of(framed, "term")
    assert submit_enabled(framed)
    snap(framed, "student-late-penalty", at="term")
    submit(framed, LAYOUT_GOOD)
    assert result(framed).verdict == "accepted"
    state, words = wait(framed).until(
        lambda d: grade_panel(d)[0] not in ("pending", "not-sent") and grade_panel(d))
    assert state == "delivered" and "Your grade 2.85 / 3.0 is in your course" in words, words
    snap(framed, "student-grade-panel-late", at="lms-grade-section")
    [score] = lms_scores(stack, lena.user, 1)
    assert score["scoreGiven"] == pytest.approx(2.85) and score["scoreMaximum"] == 3.0
    assert score["comment"] == ("Verdict: accepted. Tests passed: 5 of 5. "
                                "Late by 5 h: 5% of the score taken off."), score

    # The gradebook tags the grade late.
    open_framed(framed, stack, teacher, "gradebook-table")
    row = framed.find_element(By.CSS_SELECTOR, f"[data-testid='gradebook-row']"
                                               f"[data-user-id='{lena.user}']")
    grade = row.find_element(By.CSS_SELECTOR, "[data-testid='grade']")
    assert grade.text.startswith("2.85 / 3.0"), grade.text
    assert grade.find_element(By.CSS_SELECTOR, "[data-testid='late']").text == "late −5.0%"
    snap(framed, "instructor-gradebook-late", at="gradebook")

    # A grade set by hand on the Dates and rules page, with a reason: it reaches the LMS
    # (the reason does not), and the audit says before, after, who and why.
    go(framed, "nav-term", "override-form")
    choose = Select(framed.find_element(By.ID, "override-student"))
    assert [o.get_attribute("value") for o in choose.options] == [lena.user]  # no teacher
    choose.select_by_value(lena.user)
    framed.find_element(By.ID, "score_given").send_keys("3")
    reason = "Doctor's note: the late days are excused"
    framed.find_element(By.ID, "reason").send_keys(reason)
    go(framed, "override-save", "override-audit")
    assert text_of(framed, "term-changed") == \
        "Saved. It changed 1 student grade(s); it is being sent to the LMS."
    [audit] = framed.find_elements(By.CSS_SELECTOR, "#override-audit tbody tr")
    cells = [c.text for c in audit.find_elements(By.TAG_NAME, "td")]
    assert cells[1:] == [f"Grace Hopper ({teacher.user})", "Lena Late", "2.85 / 3.0",
                         "3.0 / 3.0", reason], cells
    wait(framed, 10).until(lambda d: zone_name in d.find_element(
        By.CSS_SELECTOR, "#override-audit tbody td time").text)
    assert text_of(framed, "overrides-in-force").startswith("Lena Late: 3.0 / 3.0")
    snap(framed, "instructor-override-audit", at="overrides")
    scores = lms_scores(stack, lena.user, 2)
    assert (scores[-1]["scoreGiven"], scores[-1]["scoreMaximum"]) == (3.0, 3.0)
    assert scores[-1]["comment"] == "Grade set by the instructor."
    assert "Doctor" not in str(scores)

    # The student's panel says the grade the course now holds.
    open_framed(framed, stack, lena, "submit-button")
    state, words = wait(framed).until(
        lambda d: grade_panel(d)[0] == "delivered" and grade_panel(d))
    assert "Your grade 3.0 / 3.0 is in your course" in words, words


def test_a_closed_assignment_refuses_runs_the_samples_and_an_extension_lets_one_in(
        stack: Stack, framed: WebDriver) -> None:
    course = Course(stack, "Exercise 4: closed")
    teacher = course.person("teacher", "Grace Hopper", INSTRUCTOR)
    bea = course.person("closed", "Bea Closed")
    cy = course.person("extended", "Cy Extended")
    open_framed(framed, stack, bea, "submit-button")  # the activity's first launch
    aid = assignment_id(framed)
    due = to_minute(now()) - timedelta(hours=2)
    patch_term(stack, aid, due_at=iso(due))

    open_framed(framed, stack, bea, "submit-button")
    check_closed(framed, due)
    submit_button = framed.find_element(By.ID, "submit-button")
    assert not submit_button.is_enabled()
    assert submit_button.get_attribute("aria-describedby") == "term-now"
    assert "No work is taken after the due date." in text_of(framed, "term")
    snap(framed, "student-closed", at="term")
    # The sample tests still run: only their results, marked as a sample run.
    submit(framed, LAYOUT_GOOD, button="sample-button")
    sample: Result = result(framed)
    assert (sample.verdict, sample.visibility) == ("accepted", SAMPLE_ROWS)
    assert framed.find_element(By.CSS_SELECTOR, "[data-testid='sample-run-badge']").text == \
        "sample run: sample tests only, not graded"
    assert not submit_enabled(framed)
    check_closed(framed, due)
    snap(framed, "student-sample-run", at="result")

    open_framed(framed, stack, cy, "submit-button")
    assert not submit_enabled(framed)

    # The instructor gives Cy two more days, typed in her zone.
    open_framed(framed, stack, teacher, "gradebook-table")
    go(framed, "nav-term", "extension-form")
    zone = ZoneInfo(browser_zone(framed))
    choose = Select(framed.find_element(By.ID, "extension-student"))
    assert [o.text for o in choose.options] == [f"Bea Closed ({bea.user})",
                                                f"Cy Extended ({cy.user})"]
    choose.select_by_value(cy.user)
    own_due = to_minute(now() + timedelta(days=2))
    type_date(framed, "extension-due_at", own_due.astimezone(zone))
    go(framed, "extension-save", "extensions-table")
    [granted] = framed.find_elements(By.CSS_SELECTOR, "#extensions-table tbody tr")
    assert granted.get_attribute("data-user-id") == cy.user
    assert granted.find_elements(By.TAG_NAME, "td")[0].text == "Cy Extended"
    snap(framed, "instructor-extension", at="extensions")

    # Cy is let in, on his own dates; Bea is still refused.
    open_framed(framed, stack, cy, "submit-button")
    assert submit_enabled(framed)
    assert framed.find_elements(By.CSS_SELECTOR, "[data-testid='term-extension']")
    assert not framed.find_elements(By.ID, "term-now")
    check_shown_in_zone(framed, "term-due", own_due, browser_zone(framed))
    snap(framed, "student-extension", at="term")
    submit(framed, LAYOUT_GOOD)
    graded = result(framed)
    assert (graded.verdict, graded.visibility) == ("accepted", ALL_ROWS)
    [score] = lms_scores(stack, cy.user, 1)
    assert score["scoreGiven"] == 3.0 and "Late" not in score["comment"]

    open_framed(framed, stack, bea, "submit-button")
    assert not submit_enabled(framed)
    check_closed(framed, due)
    settle(stack, aid)
    assert stack.platform.services.scores_for(bea.user) == []


def test_attempts_run_out_the_cooldown_counts_down_hidden_results_wait_for_the_due_date_and_a_policy_change_resends_one_grade(  # noqa: E501
        stack: Stack, framed: WebDriver) -> None:
    course = Course(stack, "Exercise 5: attempts")
    teacher = course.person("teacher", "Grace Hopper", INSTRUCTOR)
    dee = course.person("twice", "Dee Twice")
    eve = course.person("once", "Eve Once")
    open_framed(framed, stack, eve, "submit-button")
    aid = assignment_id(framed)
    patch_term(stack, aid, due_at=iso(in_a_day()), max_attempts=2, cooldown_seconds=15,
               hidden_results="after_due")

    # Eve: one attempt, full marks (her grade is the same under either policy).
    open_framed(framed, stack, eve, "submit-button")
    submit(framed, LAYOUT_GOOD)
    assert result(framed).verdict == "accepted"

    # Dee's first attempt: the verdict and score now, hidden tests' own results later;
    # the next attempt only after the cooldown, counted down.
    open_framed(framed, stack, dee, "submit-button")
    assert "Graded attempts: 0 of 2 used (2 left)." in text_of(framed, "term")
    page = submit(framed, LAYOUT_GOOD)
    assert not submit_enabled(framed)
    cooling = text_of(framed, "term-now")
    assert cooling.startswith("Your next graded attempt can be made on ") and \
        " You can run the sample tests meanwhile. Time to wait: " in cooling, cooling

    def seconds_left(d: WebDriver) -> tuple[int, str] | None:
        found = d.find_elements(By.CSS_SELECTOR, "[data-testid='cooldown'][data-seconds-left]")
        if not found:
            return None
        return int(found[0].get_attribute("data-seconds-left") or "0"), found[0].text

    first, first_text = wait(framed, 10).until(seconds_left)
    assert 0 < first <= 15, first
    later, later_text = wait(framed, 10).until(
        lambda d: (s := seconds_left(d)) is not None and s[0] != first and s)
    assert later < first and later_text != first_text, (first_text, later_text)
    assert later_text.endswith(" s") and "until" not in later_text, later_text
    snap(framed, "student-cooldown", at="term")
    shown = result(framed)
    assert (shown.verdict, shown.visibility) == ("accepted", SAMPLE_ROWS)
    assert text_of(framed, "hidden-withheld").startswith(
        "The results of the 3 hidden test(s) show after the due date, ")
    # Its date too is in the browser's zone (the panel came with the verdict, live).
    due_shown = framed.find_element(By.CSS_SELECTOR, "#hidden-withheld time")
    wait(framed, 10).until(lambda d: browser_zone(d) in due_shown.text)
    snap(framed, "student-hidden-withheld", at="result")

    # The countdown ends: the page reloads itself, and Submit is there again.
    wait(framed, 60).until(staleness_of(page))
    wait(framed, 30).until(lambda d: d.find_elements(By.ID, "submit-button") and
                           submit_enabled(d))
    editor(framed)
    assert "Graded attempts: 1 of 2 used (1 left)." in text_of(framed, "term")
    submit(framed, LAYOUT_WRONG)
    assert text_of(framed, "term-now") == \
        "You have used all 2 graded attempts. You can still run the sample tests."
    assert not submit_enabled(framed)
    last = result(framed)
    assert (last.verdict, last.visibility) == ("wrong_answer", SAMPLE_ROWS)
    snap(framed, "student-attempts-used", at="term")

    # The due date moves into the past: the hidden tests' own results show.
    patch_term(stack, aid, due_at=iso(to_minute(now()) - timedelta(minutes=1)))
    open_framed(framed, stack, dee, "submit-button")
    shown = result(framed)
    assert (shown.submission_id, shown.visibility) == (last.submission_id, ALL_ROWS)
    assert not framed.find_elements(By.ID, "hidden-withheld")
    snap(framed, "student-hidden-shown", at="result")

    # best -> latest in the gradebook: Dee's grade moves (3.0 -> 1.0), Eve's does not;
    # only Dee's is sent again.
    settle(stack, aid)
    assert [s["scoreGiven"] for s in lms_scores(stack, dee.user, 2)] == [3.0, 3.0]
    assert [s["scoreGiven"] for s in lms_scores(stack, eve.user, 1)] == [3.0]
    open_framed(framed, stack, teacher, "gradebook-table")
    Select(framed.find_element(By.ID, "policy")).select_by_value("latest")
    go(framed, "policy-button", "policy-sent")
    assert text_of(framed, "policy-sent") == \
        "The grade is now the latest score; 1 grade(s) it changed are being sent to the LMS."
    snap(framed, "instructor-gradebook-policy")
    assert lms_scores(stack, dee.user, 3)[-1]["scoreGiven"] == 1.0
    settle(stack, aid)
    assert len(stack.platform.services.scores_for(eve.user)) == 1
    assert len(stack.platform.services.scores_for(dee.user)) == 3
