"""A student in Chromium: launched from the test LMS inside its course page's frame
(third-party cookies blocked), or from a launch link without an LMS; writes code in the
editor, submits, watches the verdict arrive, finds it in the history and loads it back."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser.conftest import Shoot, Stack, unique, wait
from tests.browser.steps import (
    check_editor_features,
    editor,
    history_row,
    load_into_editor,
    one_full_score,
    submit_and_watch,
    textarea_code,
    type_code,
)
from tests.lti.platform import LEARNER, LaunchSpec
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
    shoot(browser, "student-page", docs=True)

    type_code(browser, LAYOUT_WRONG)
    check_editor_features(browser)
    assert textarea_code(browser) == LAYOUT_WRONG.rstrip("\n")
    wrong = submit_and_watch(browser, stack, shoot, "student-wrong", "wrong_answer")
    assert history_row(browser, wrong.submission_id).get_attribute(
        "data-verdict") == "wrong_answer"

    type_code(browser, LAYOUT_GOOD)
    good = submit_and_watch(browser, stack, shoot, "student", "accepted")
    shoot(browser, "student-verdict", at="result", docs=True)
    shoot(browser, "student-history", phone=False, at="history", docs=True)
    assert [r.get_attribute("data-verdict") for r in browser.find_elements(
        By.CSS_SELECTOR, "[data-testid='history-row']")] == ["accepted", "wrong_answer"]

    load_into_editor(browser, wrong.submission_id, LAYOUT_WRONG)
    shoot(browser, "student-loaded", phone=False)
    assert good.submission_id != wrong.submission_id

    # The link was single-use: opening it again is a clear refusal, not a page.
    browser.get(url)
    heading = wait(browser, 30).until(lambda d: d.find_element(By.TAG_NAME, "h1"))
    assert heading.text == "This link does not open"
    shoot(browser, "launch-link-used", phone=False, docs=True)


def test_a_student_launched_inside_the_lms_frame_is_graded_and_the_lms_gets_the_score(
        stack: Stack, browser: WebDriver, shoot: Shoot) -> None:
    platform = stack.platform
    spec = LaunchSpec(user=unique("student"), name="Ada Lovelace", roles=[LEARNER],
                      context=unique("course"), context_title="JAX 101",
                      resource_link=unique("link"), resource_title="Exercise 1: shard shape",
                      custom={"problem": "demo/layout"})
    browser.get(platform.lms.page(spec))
    frame = browser.find_element(By.ID, "tool-frame")
    assert browser.execute_script("return location.origin").startswith("http://localhost:")
    browser.switch_to.frame(frame)
    editor(browser)
    # The tool runs as a third-party frame whose cookies the browser refuses.
    assert browser.execute_script("return location.origin") == stack.base
    assert browser.execute_script(
        "document.cookie = 'probe=1; SameSite=None; Secure; Path=/'; "
        "return document.cookie") == ""
    assert browser.find_element(By.ID, "signed-in-as").text.startswith("Ada Lovelace")
    assert browser.find_element(By.ID, "lms-grade").get_attribute("data-state") == "not-sent"
    shoot(browser, "lms-student-page", phone=False, docs=True)

    type_code(browser, LAYOUT_GOOD)
    check_editor_features(browser)
    graded = submit_and_watch(browser, stack, shoot, "lms-student", "accepted")
    assert history_row(browser, graded.submission_id).get_attribute("data-verdict") == \
        "accepted"

    # The score reaches the LMS through the outbox; the page says so once it is sent.
    score = one_full_score(stack, spec.user, spec.context, spec.resource_link, 3.0)
    assert score["activityProgress"] in ("Completed", "Submitted")
    browser.refresh()  # the course page again: a new launch in the frame
    browser.switch_to.frame(browser.find_element(By.ID, "tool-frame"))
    grade = wait(browser).until(lambda d: d.find_element(By.ID, "lms-grade"))
    assert grade.get_attribute("data-state") == "delivered", grade.text
    assert "3.0 / 3.0" in grade.text
    history_row(browser, graded.submission_id)
    shoot(browser, "lms-student-graded", phone=False, at="lms-grade-section", docs=True)


def test_a_student_uploads_a_notebook(stack: Stack, browser: WebDriver, shoot: Shoot,
                                      tmp_path: Path) -> None:
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# My solution"),
        nbformat.v4.new_code_cell("%matplotlib inline\nimport math"),
        nbformat.v4.new_code_cell(LAYOUT_GOOD)])
    path = tmp_path / "solution.ipynb"
    path.write_text(nbformat.writes(notebook))
    browser.get(stack.launch_link(unique("nb-student")))
    editor(browser)
    browser.find_element(By.ID, "upload").send_keys(str(path))
    graded = submit_and_watch(browser, stack, shoot, "student-notebook", "accepted")
    result = browser.find_element(By.ID, "result").text
    # The report says what was removed to get the code.
    assert "cell 2: removed 1 IPython magic (line 1)" in result, result
    shoot(browser, "student-notebook-verdict", phone=False, at="result", docs=True)
    assert history_row(browser, graded.submission_id).get_attribute("data-verdict") == \
        "accepted"
