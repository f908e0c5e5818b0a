"""Steps of the course-term browser tests (:mod:`tests.browser.test_course_term`): Chromium
in another time zone than the server's, the LMS frame pinned at Moodle's 990 x 620,
dates typed into ``datetime-local`` inputs as a person types them, a submission made and
its verdict awaited, the term set over the REST API, and the outbox settled (every
grading done, every score to the LMS answered) before scores at the LMS are counted."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import requests
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.expected_conditions import staleness_of
from servers import wait_for
from sqlalchemy import func, select

from service.models import Delivery, DeliveryStatus, Status, Submission
from tests.browser.conftest import CHROMEDRIVER, WAIT, Stack, chromium_options, wait
from tests.browser.steps import editor, type_code
from tests.browser.test_student_frame import MOODLE, OVERFLOW, PIN_FRAME
from tests.lti.platform import LaunchSpec

SHOTS = Path("/tmp/shots/term")
# The browser's own zone, not the server's (UTC): half an hour off, no summer time, so a
# date typed or shown in it is certainly converted (Chromium names it Asia/Calcutta).
BROWSER_ZONE = "Asia/Kolkata"


def start_in_zone(zone: str = BROWSER_ZONE) -> WebDriver:
    """Chromium with a 990 x 620 viewport (third-party cookies blocked) whose local time
    zone is ``zone`` (its process's ``TZ``)."""
    service = Service(str(CHROMEDRIVER), env={**os.environ, "TZ": zone})
    driver = webdriver.Chrome(service=service, options=chromium_options(size=MOODLE))
    driver.set_page_load_timeout(60)
    inner = driver.execute_script("return [window.innerWidth, window.innerHeight]")
    if tuple(inner) != MOODLE:
        driver.set_window_size(2 * MOODLE[0] - inner[0], 2 * MOODLE[1] - inner[1])
    return driver


def open_framed(driver: WebDriver, stack: Stack, spec: LaunchSpec, ready: str) -> None:
    """Launch ``spec`` from its LMS course page, the frame pinned at 990 x 620 over the
    viewport; the driver inside the frame once the element of id ``ready`` is there."""
    driver.switch_to.default_content()
    driver.get(stack.platform.lms.page(spec))
    frame = wait(driver, 30).until(lambda d: d.find_element(By.ID, "tool-frame"))
    driver.execute_script(PIN_FRAME, *MOODLE)
    driver.switch_to.frame(frame)
    wait(driver, 60).until(lambda d: d.find_elements(By.ID, ready))
    if ready == "submit-button":
        editor(driver)


def assignment_id(driver: WebDriver) -> str:
    """The assignment of the tool's page in the frame (from its address)."""
    path: str = driver.execute_script("return location.pathname")
    found = re.search(r"/assignments/([0-9a-f]+)", path)
    assert found, path
    return found.group(1)


def snap(driver: WebDriver, name: str, at: str | None = None) -> Path:
    """The frame as the person sees it (it covers the viewport), scrolled to the element
    of id ``at``, as ``/tmp/shots/term/<name>.png``; nothing on it scrolls sideways."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    if at:
        driver.execute_script(
            "document.getElementById(arguments[0]).scrollIntoView({block: 'start'})", at)
    extra, wide = driver.execute_script(OVERFLOW)
    assert extra <= 0, f"{name}: the page scrolls {extra} px sideways; too wide: {wide}"
    path = SHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def text_of(driver: WebDriver, element_id: str) -> str:
    """An element's words now, spaces folded ('' when it is not on the page)."""
    found = driver.find_elements(By.ID, element_id)
    return " ".join(found[0].text.split()) if found else ""


def browser_zone(driver: WebDriver) -> str:
    zone: str = driver.execute_script(
        "return Intl.DateTimeFormat().resolvedOptions().timeZone")
    return zone


def to_minute(at: datetime) -> datetime:
    return at.replace(second=0, microsecond=0)


def type_date(driver: WebDriver, field_id: str, local: datetime) -> None:
    """Type ``local`` (a wall-clock time) into a ``datetime-local`` input as a person
    does in an en-US Chromium: month, day, year, Tab, hour, minute, AM/PM."""
    field = driver.find_element(By.ID, field_id)
    driver.execute_script("arguments[0].focus()", field)  # its first part: the month
    field.send_keys(local.strftime("%m%d%Y"), Keys.TAB, local.strftime("%I%M%p"))
    want = local.strftime("%Y-%m-%dT%H:%M")
    wait(driver, 10).until(lambda d: field.get_attribute("value") == want,
                           f"{field_id} does not hold {want}")


def go(driver: WebDriver, button_id: str, landed: str) -> None:
    """Press a form's button (or follow a link); wait for the page it leads to (the old
    one gone) and the element of id ``landed`` on it."""
    old = driver.find_element(By.TAG_NAME, "html")
    driver.find_element(By.ID, button_id).click()
    wait(driver, 60).until(staleness_of(old))
    wait(driver, 60).until(lambda d: d.find_elements(By.ID, landed))


@dataclass
class Result:
    submission_id: str
    verdict: str
    visibility: list[str]  # of the rows of the result's test table, in order


def result(driver: WebDriver) -> Result:
    """The verdict shown in the result panel, once it is there."""
    verdict = wait(driver, WAIT).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#result #verdict")
        and d.find_element(By.CSS_SELECTOR, "#result #verdict"))
    status = driver.find_element(By.ID, "submission-status")
    rows = driver.find_elements(By.CSS_SELECTOR, "#tests-table [data-testid='test-row']")
    return Result(status.get_attribute("data-submission-id") or "",
                  verdict.get_attribute("data-verdict") or "",
                  [r.get_attribute("data-visibility") or "" for r in rows])


def submit(driver: WebDriver, code: str, button: str = "submit-button") -> WebElement:
    """Type ``code`` and press ``button`` (Submit, or Run the sample tests); the page it
    leads to (the submission queued, or done) is there once this returns: its ``html``."""
    type_code(driver, code)
    old = driver.find_element(By.TAG_NAME, "html")
    driver.find_element(By.ID, button).click()
    wait(driver, 60).until(staleness_of(old))
    wait(driver, 60).until(lambda d: d.find_elements(By.ID, "submission-status"))
    html: WebElement = driver.find_element(By.TAG_NAME, "html")
    return html


def patch_term(stack: Stack, assignment: str, **body: Any) -> dict[str, Any]:
    """``PATCH /v1/assignments/{id}`` with the instructor's API key."""
    r = requests.patch(stack.url(f"/v1/assignments/{assignment}"),
                       headers=stack.auth("instructor"), json=body, timeout=30)
    assert r.status_code == 200, r.text
    found: dict[str, Any] = r.json()
    return found


def iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat()


def now() -> datetime:
    return datetime.now(UTC)


def settle(stack: Stack, assignment: str) -> None:
    """Wait until every submission to the assignment is graded and every score to the
    LMS it opened is answered (delivered or failed): what the LMS holds stops moving."""
    def settled() -> bool:
        with stack.db.session() as s:
            grading = s.scalar(select(func.count()).select_from(Submission).where(
                Submission.assignment_id == assignment, Submission.status != Status.DONE))
            sending = s.scalar(select(func.count()).select_from(Delivery).join(
                Submission, Delivery.submission_id == Submission.id).where(
                Submission.assignment_id == assignment, Delivery.kind == "lti-score",
                Delivery.status == DeliveryStatus.PENDING))
        return grading == 0 and sending == 0

    wait_for(settled, WAIT, f"assignment {assignment} settled")


def lms_scores(stack: Stack, user: str, count: int) -> list[dict[str, Any]]:
    """The scores the LMS took for ``user``, once there are ``count`` of them."""
    services = stack.platform.services

    def arrived() -> list[dict[str, Any]] | None:
        got: list[dict[str, Any]] = services.scores_for(user)
        return got if len(got) >= count else None

    found: list[dict[str, Any]] = wait_for(arrived, WAIT, f"{count} score(s) of {user}")
    assert len(found) == count, found
    return found


def in_a_day() -> datetime:
    return to_minute(now() + timedelta(days=1))
