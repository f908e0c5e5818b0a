"""The insight pages (issue 26) in Chromium against the live stack: an assignment's
analytics (four charts, each with its table), similarity (the note, the pairs, the
clusters) and two submissions side by side with their fragments highlighted alike, at
1280 px (signed in with a key) and inside the test LMS's frame at Moodle's 990 x 620
(an instructor's launch); the same pages read with JavaScript off.

The class (:mod:`tests.web.insight_class`) is written straight into the stack's
database: its numbers are known by construction and no worker has to grade it."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from sqlalchemy import select

from judge.similarity import NOTE
from service.models import Tenant
from tests.browser.conftest import (
    SHOTS,
    TENANT,
    Shoot,
    Stack,
    chromium_options,
    quit_with_shot,
    start_chromium,
    unique,
    wait,
)
from tests.browser.term_support import assignment_id, go, open_framed
from tests.browser.test_course_term import Course
from tests.browser.test_student_frame import MOODLE, OVERFLOW
from tests.lti.platform import INSTRUCTOR
from tests.web.insight_class import new_assignment, seed

pytestmark = [pytest.mark.browser, pytest.mark.service]

CHARTS = ["chart-histogram", "chart-tests", "chart-timeline", "chart-attempts"]
NO_SCRIPT = {"profile.managed_default_content_settings.javascript": 2}


@pytest.fixture
def framed(request: pytest.FixtureRequest) -> Iterator[WebDriver]:
    """Chromium with a 990 x 620 viewport (third-party cookies blocked)."""
    driver = start_chromium(chromium_options(size=MOODLE), size=MOODLE)
    yield driver
    quit_with_shot(driver, request, SHOTS)


@pytest.fixture
def scriptless(request: pytest.FixtureRequest) -> Iterator[WebDriver]:
    """Chromium at 1280 x 900 with JavaScript turned off."""
    options = chromium_options()
    options.experimental_options["prefs"].update(NO_SCRIPT)
    driver = start_chromium(options)
    yield driver
    quit_with_shot(driver, request, SHOTS)


def tenant_id(stack: Stack) -> int:
    with stack.db.session() as s:
        found = s.scalar(select(Tenant.id).where(Tenant.name == TENANT))
        assert found is not None
        return found


def text(driver: WebDriver, css: str) -> str:
    return " ".join(driver.find_element(By.CSS_SELECTOR, css).text.split())


def fits(driver: WebDriver, page: str) -> None:
    """Nothing on the page scrolls sideways (a wide table scrolls in its own box)."""
    extra, wide = driver.execute_script(OVERFLOW)
    assert extra <= 0, f"{page}: the page scrolls {extra} px sideways; too wide: {wide}"


def check_analytics(driver: WebDriver) -> None:
    """The class's numbers, each chart drawn and beside its table."""
    wait(driver, 30).until(lambda d: d.find_elements(By.ID, "analytics-title"))
    for chart in CHARTS:
        svg = driver.find_element(By.ID, chart)
        assert svg.is_displayed() and svg.size["width"] > 300, chart
        assert svg.get_attribute("role") == "img"
    bars = driver.find_elements(By.CSS_SELECTOR, "#chart-histogram rect.bar")
    assert [b.get_attribute("data-value") for b in bars] == \
        ["1", "0", "0", "0", "0", "3", "0", "0", "0", "0", "2"]
    assert text(driver, "[data-testid='stuck']") == "1"
    assert text(driver, "[data-testid='accepted']") == "2"
    assert text(driver, "#histogram-table [data-lower='50'] td") == "3"
    assert text(driver, "[data-test='sample-1'] [data-testid='pass-rate']") == "17%"
    first = driver.find_element(By.CSS_SELECTOR, "[data-testid='wrong-answer']")
    assert first.get_attribute("data-students") == "3"
    assert first.find_element(By.CSS_SELECTOR, "[data-testid='wrong-received']").text \
        == "P('model')"
    # Both charts and their tables side by side at this width, or one under the other,
    # never overlapping.
    chart = driver.find_element(By.ID, "chart-histogram").rect
    table = driver.find_element(By.ID, "histogram-table").rect
    assert chart["x"] + chart["width"] <= table["x"] + 1 or \
        chart["y"] + chart["height"] <= table["y"] + 1


def check_pair(driver: WebDriver) -> None:
    """The copy side by side: fragment 1 tinted alike on both sides."""
    wait(driver, 30).until(lambda d: d.find_elements(By.ID, "fragments"))
    assert "ana" in text(driver, "#pair-title") and "ben" in text(driver, "#pair-title")
    a = driver.find_element(By.CSS_SELECTOR, "#side-a tr[data-fragment='1']")
    b = driver.find_element(By.CSS_SELECTOR, "#side-b tr[data-fragment='1']")
    tint = a.value_of_css_property("background-color")
    assert tint == b.value_of_css_property("background-color")
    assert tint not in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)")
    items = driver.find_elements(By.CSS_SELECTOR, "[data-testid='fragment']")
    assert items and re.fullmatch(r"1 lines \d+–\d+ ↔ lines \d+–\d+", items[0].text)


def test_the_insight_pages_at_1280(stack: Stack, browser: WebDriver, shoot: Shoot,
                                   scriptless: WebDriver) -> None:
    _, aid = new_assignment(stack.db, tenant_id(stack), unique("Layouts"))
    seed(stack.db, tenant_id(stack), aid)
    browser.get(stack.url("/app/signin"))
    wait(browser, 30).until(lambda d: d.find_element(By.ID, "api-key")).send_keys(
        stack.keys["instructor"], Keys.ENTER)
    wait(browser, 30).until(lambda d: d.find_elements(By.ID, "nav-courses"))
    found = re.search(r"/app/([^/]+)/", browser.current_url)
    assert found
    analytics = stack.url(f"/app/{found.group(1)}/assignments/{aid}/analytics")
    browser.get(analytics)
    check_analytics(browser)
    shoot(browser, "instructor-analytics", docs=True)
    shoot(browser, "analytics-tests", at="tests", phone=False)
    shoot(browser, "analytics-timeline", at="timeline", phone=False)
    shoot(browser, "analytics-wrong", at="attempts", phone=False)

    go(browser, "nav-similarity", "similarity-note")
    assert text(browser, "#similarity-note").startswith(NOTE)
    first = browser.find_element(By.CSS_SELECTOR, "[data-testid='pair-row']")
    assert (first.get_attribute("data-a"), first.get_attribute("data-b")) == ("ana", "ben")
    assert browser.find_elements(By.CSS_SELECTOR, "[data-testid='cluster-row']")
    shoot(browser, "instructor-similarity", docs=True)
    pair_url = first.find_element(By.CSS_SELECTOR, "[data-testid='compare']").get_attribute(
        "href")
    first.find_element(By.CSS_SELECTOR, "[data-testid='compare']").click()
    check_pair(browser)
    shoot(browser, "instructor-similarity-pair", docs=True)

    # Without JavaScript the same pages read whole: charts, tables, the tinted fragments.
    scriptless.get(analytics)
    check_analytics(scriptless)
    scriptless.get(pair_url or "")
    check_pair(scriptless)


def test_the_insight_pages_inside_the_lms_frame(stack: Stack, framed: WebDriver,
                                                 shoot: Shoot) -> None:
    course = Course(stack, unique("Exercise"))
    teacher = course.person("teacher", "Grace Hopper", INSTRUCTOR)
    open_framed(framed, stack, teacher, "gradebook-table")
    seed(stack.db, tenant_id(stack), assignment_id(framed))

    go(framed, "nav-analytics", "analytics-title")
    assert framed.execute_script("return [innerWidth, innerHeight]") == list(MOODLE)
    check_analytics(framed)
    fits(framed, "analytics")
    shoot(framed, "lms-analytics", phone=False, docs=True)
    shoot(framed, "frame-analytics-tests", at="tests", phone=False)
    shoot(framed, "frame-analytics-wrong", at="wrong-answers", phone=False)

    go(framed, "nav-similarity", "similarity-note")
    fits(framed, "similarity")
    shoot(framed, "frame-similarity", phone=False)
    framed.find_element(By.CSS_SELECTOR, "[data-testid='compare']").click()
    check_pair(framed)
    fits(framed, "similarity-pair")
    shoot(framed, "frame-similarity-pair", phone=False)
