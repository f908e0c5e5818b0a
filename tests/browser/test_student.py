"""A student in Chromium: launched from the test LMS inside its course page's frame
(third-party cookies blocked), or from a launch link without an LMS; writes code in the
editor, submits, watches the verdict arrive, finds it in the history and loads it back."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser.conftest import Shoot, Stack, unique, wait
from tests.browser.steps import (
    check_editor_features,
    editor,
    history_row,
    load_into_editor,
    submit_and_watch,
    textarea_code,
    type_code,
)
from tests_support import LAYOUT_GOOD, LAYOUT_WRONG

pytestmark = [pytest.mark.browser, pytest.mark.service, pytest.mark.slow]


def test_a_launch_link_opens_the_student_page_without_an_lms(
        stack: Stack, browser: WebDriver, shoot: Shoot) -> None:
    student = unique("link-student")
    url = stack.launch_link(student, name="Lin Kedin", course=unique("link-course"))
    browser.get(url)
    editor(browser)
    assert "/app/" in browser.current_url and "/assignments/" in browser.current_url
    assert browser.find_element(By.ID, "signed-in-as").text.startswith("Lin Kedin")
    assert browser.find_element(By.ID, "lms-grade").get_attribute("data-state") == "none"
    shoot(browser, "student-page")

    type_code(browser, LAYOUT_WRONG)
    check_editor_features(browser)
    assert textarea_code(browser) == LAYOUT_WRONG.rstrip("\n")
    wrong = submit_and_watch(browser, stack, shoot, "student-wrong", "wrong_answer")
    assert history_row(browser, wrong.submission_id).get_attribute(
        "data-verdict") == "wrong_answer"

    type_code(browser, LAYOUT_GOOD)
    good = submit_and_watch(browser, stack, shoot, "student", "accepted")
    shoot(browser, "student-verdict", at="result")
    shoot(browser, "student-history", phone=False, at="history")
    assert [r.get_attribute("data-verdict") for r in browser.find_elements(
        By.CSS_SELECTOR, "[data-testid='history-row']")] == ["accepted", "wrong_answer"]

    load_into_editor(browser, wrong.submission_id, LAYOUT_WRONG)
    shoot(browser, "student-loaded", phone=False)
    assert good.submission_id != wrong.submission_id

    # The link was single-use: opening it again is a clear refusal, not a page.
    browser.get(url)
    heading = wait(browser, 30).until(lambda d: d.find_element(By.TAG_NAME, "h1"))
    assert heading.text == "This link does not open"
    shoot(browser, "launch-link-used", phone=False)
