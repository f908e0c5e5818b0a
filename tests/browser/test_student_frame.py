"""The student page in an LMS frame the size Moodle gives a tool (about 990 x 620 px):
one column, nothing to scroll sideways, the editor's first line whole, the result
table's Expected and Received columns in sight; and the "Grade in your course" panel
following the score to the LMS until it is delivered (or failed), without a reload.

The course page of the test LMS is opened in a 990 x 620 viewport and its frame is
pinned over the whole viewport, so the frame is exactly 990 x 620 and each screenshot
(``var/screenshots/student_frame-*.png``) is what the student sees in it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser.conftest import (
    SHOTS,
    Shoot,
    Stack,
    chromium_options,
    quit_with_shot,
    start_chromium,
    unique,
    wait,
)
from tests.browser.steps import MARKER, editor, editor_text, submit_and_watch, type_code
from tests.lti.platform import LEARNER, LaunchSpec
from tests_support import LAYOUT_GOOD, LAYOUT_WRONG

pytestmark = [pytest.mark.browser, pytest.mark.service, pytest.mark.slow]

MOODLE = (990, 620)  # the frame Moodle 4.4 gives an embedded tool
LONG_FIRST_LINE = ("def layout(num_devices, kernel_in, kernel_out):  # "
                   + " ".join(["the shard shape of a column-parallel kernel"] * 4)
                   + "\n    return [kernel_in, kernel_out // num_devices]")

# The LMS page's frame over the whole viewport, at the frame size of Moodle.
PIN_FRAME = """
const frame = document.getElementById("tool-frame");
frame.style.cssText = "position:fixed;left:0;top:0;margin:0;border:0;z-index:10;" +
    `width:${arguments[0]}px;height:${arguments[1]}px`;
"""

# How far the document reaches past its width (0: nothing scrolls sideways), and the
# elements that stick out of the viewport on the right (to say which in a failure).
OVERFLOW = """
const root = document.documentElement;
const wide = Array.from(document.querySelectorAll("body *"))
  .filter(e => e.getBoundingClientRect().right > root.clientWidth + 0.5)
  .filter(e => !e.parentElement.closest(".cm-scroller, .scroll, pre"))
  .slice(0, 5).map(e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") +
                     (e.className && typeof e.className === "string" ? "." + e.className : ""));
return [root.scrollWidth - root.clientWidth, wide];
"""

# The first line of the editor: its text's box, the scroller's box and whether the
# scroller has anything to scroll sideways, with the viewport's size.
FIRST_LINE = """
const view = document.querySelector("[data-testid='code-editor']");
const line = view.querySelector(".cm-line");
const scroller = view.querySelector(".cm-scroller");
const content = view.querySelector(".cm-content");
const range = document.createRange();
range.selectNodeContents(line);
const rects = Array.from(range.getClientRects());
const box = (r) => ({left: r.left, right: r.right, top: r.top, bottom: r.bottom});
return {
  text: line.textContent,
  parts: rects.map(box),
  content: box(content.getBoundingClientRect()),
  scroller: box(scroller.getBoundingClientRect()),
  sideways: scroller.scrollWidth - scroller.clientWidth,
  viewport: [document.documentElement.clientWidth, window.innerHeight],
};
"""

# The report table's column headings by text, each with its box, and how far the
# table's wrapper would scroll sideways.
COLUMNS = """
const table = document.getElementById("tests-table");
const wrapper = table.parentElement;
const heads = {};
for (const th of table.querySelectorAll("thead th")) {
  const r = th.getBoundingClientRect();
  heads[th.textContent.trim()] = [r.left, r.right];
}
const cells = Array.from(table.querySelectorAll("tbody td"))
  .map(td => td.getBoundingClientRect().right);
return {heads: heads, cells: Math.max(...cells), wrapper: wrapper.scrollWidth -
        wrapper.clientWidth, width: document.documentElement.clientWidth};
"""

# A sample test's Expected value and its message, as long as ``arguments``.
LONG_VALUES = """
const row = document.querySelector("#tests-table [data-visibility='sample']");
row.querySelector("td[data-label='Expected'] pre").textContent = arguments[0];
const message = row.querySelector("td[data-label='Received'] p");
if (message) message.textContent = arguments[1];
"""


@pytest.fixture
def framed(request: pytest.FixtureRequest) -> Iterator[WebDriver]:
    """Chromium with a 990 x 620 viewport (third-party cookies blocked)."""
    driver = start_chromium(chromium_options(size=MOODLE), size=MOODLE)
    yield driver
    quit_with_shot(driver, request, SHOTS)


def open_in_moodle_frame(driver: WebDriver, stack: Stack, spec: LaunchSpec) -> None:
    """The course page of ``spec`` in the test LMS, its frame pinned at 990 x 620 over
    the viewport; the driver inside the frame, once the editor is there."""
    driver.get(stack.platform.lms.page(spec))
    frame = wait(driver, 30).until(lambda d: d.find_element(By.ID, "tool-frame"))
    driver.execute_script(PIN_FRAME, *MOODLE)
    driver.switch_to.frame(frame)
    editor(driver)
    wait(driver, 10).until(lambda d: d.execute_script(
        "return [window.innerWidth, window.innerHeight]") == list(MOODLE))


def learner(title: str) -> LaunchSpec:
    return LaunchSpec(user=unique("framed"), name="Fran Framed", roles=[LEARNER],
                      context=unique("course"), context_title="JAX 101",
                      resource_link=unique("link"), resource_title=title,
                      custom={"problem": "demo/layout"})


def no_sideways_scroll(driver: WebDriver) -> None:
    extra, wide = driver.execute_script(OVERFLOW)
    assert extra <= 0, f"the page scrolls {extra} px sideways; too wide: {wide}"


def scroll_to(driver: WebDriver, element_id: str) -> None:
    driver.execute_script(
        "document.getElementById(arguments[0]).scrollIntoView({block: 'start'})", element_id)


def check_first_line_whole(driver: WebDriver, rows: int = 1) -> None:
    """The editor's first line is drawn whole, on at least ``rows`` rows: inside the
    editor's content and its scroller (nothing of it to scroll to sideways) and inside
    the viewport."""
    scroll_to(driver, "submit-section")
    seen: dict[str, Any] = driver.execute_script(FIRST_LINE)
    assert seen["text"].startswith("def layout("), seen
    assert seen["sideways"] <= 0, f"the editor scrolls sideways: {seen}"
    assert len({round(part["top"]) for part in seen["parts"]}) >= rows, seen
    width, height = seen["viewport"]
    for part in seen["parts"]:
        assert part["left"] >= seen["content"]["left"] - 0.5, seen
        assert part["right"] <= min(seen["content"]["right"], seen["scroller"]["right"],
                                    width) + 0.5, seen
        assert part["top"] >= max(seen["scroller"]["top"], 0) - 0.5, seen
        assert part["bottom"] <= min(seen["scroller"]["bottom"], height) + 0.5, seen


def check_one_column(driver: WebDriver) -> None:
    """The statement's panel stands above the editor's, the same width."""
    statement = driver.find_element(By.ID, "statement").rect
    solution = driver.find_element(By.ID, "submit-section").rect
    assert abs(statement["x"] - solution["x"]) < 1, (statement, solution)
    assert abs(statement["width"] - solution["width"]) < 1, (statement, solution)
    assert solution["y"] > statement["y"]


def test_the_student_page_fits_moodles_frame(
        stack: Stack, framed: WebDriver, shoot: Shoot) -> None:
    open_in_moodle_frame(framed, stack, learner("Exercise 1: shard shape"))
    check_one_column(framed)
    no_sideways_scroll(framed)
    shoot(framed, "frame-page", phone=False)
    check_first_line_whole(framed)
    shoot(framed, "frame-editor", phone=False)
    # A first line longer than the editor is wide wraps (every part of it in sight).
    framed.execute_script("document.getElementById('code').jaxjudgeSetCode(arguments[0])",
                          LONG_FIRST_LINE)
    wait(framed, 10).until(lambda d: editor_text(d) == LONG_FIRST_LINE)
    check_first_line_whole(framed, rows=2)
    shoot(framed, "frame-editor-long-line", phone=False)

    type_code(framed, LAYOUT_WRONG)
    submit_and_watch(framed, stack, shoot, "frame", "wrong_answer")
    no_sideways_scroll(framed)
    scroll_to(framed, "tests-table")
    seen: dict[str, Any] = framed.execute_script(COLUMNS)
    assert seen["wrapper"] <= 0, f"the result table scrolls sideways: {seen}"
    assert seen["cells"] <= seen["width"] + 0.5, seen
    for heading in ("Expected", "Received / message"):
        left, right = seen["heads"][heading]
        assert left >= 0 and right <= seen["width"] + 0.5, (heading, seen)
    shoot(framed, "frame-verdict", phone=False, at="result")
    scroll_to(framed, "tests-table")
    shoot(framed, "frame-tests", phone=False)
    # Values far longer than their column, without a space: they break inside.
    framed.execute_script(LONG_VALUES, "[" + ",".join(["0.123456789"] * 40) + "]",
                          "expected_" + "x" * 200)
    no_sideways_scroll(framed)
    seen = framed.execute_script(COLUMNS)
    assert seen["wrapper"] <= 0 and seen["cells"] <= seen["width"] + 0.5, seen
    scroll_to(framed, "tests-table")
    shoot(framed, "frame-tests-long-values", phone=False)
    check_first_line_whole(framed)  # the page after a submission: the code sent, whole
    shoot(framed, "frame-history", phone=False, at="history")
    no_sideways_scroll(framed)


def grade_panel(driver: WebDriver) -> tuple[str, str]:
    """The panel's state and words now (the panel is replaced as it changes)."""
    found: list[str] = driver.execute_script(
        "const p = document.getElementById('lms-grade');"
        "return p ? [p.dataset.state, p.textContent.replace(/\\s+/g, ' ').trim()] : ['', '']")
    return found[0], found[1]


def test_the_grade_panel_follows_the_score_to_the_lms_without_a_reload(
        stack: Stack, framed: WebDriver, shoot: Shoot) -> None:
    services = stack.platform.services
    open_in_moodle_frame(framed, stack, learner("Exercise 2: the grade"))
    assert grade_panel(framed)[0] == "not-sent"
    type_code(framed, LAYOUT_GOOD)
    try:
        services.fail_with = 503  # the LMS is down: the score waits, tried again
        submit_and_watch(framed, stack, shoot, "frame-grade", "accepted")
        state, words = wait(framed).until(
            lambda d: grade_panel(d)[0] == "pending" and "try" in grade_panel(d)[1]
            and grade_panel(d))
        assert "being sent" in words.lower(), words
        shoot(framed, "frame-grade-pending", phone=False, at="lms-grade-section")
        services.fail_with = None  # the LMS is back: the next try delivers
        state, words = wait(framed).until(
            lambda d: grade_panel(d)[0] != "pending" and grade_panel(d))
        assert state == "delivered", words
        assert "3.0 / 3.0" in words and "is in your course" in words, words
        assert framed.execute_script(f"return window.{MARKER} === true"), "it reloaded"
        shoot(framed, "frame-grade-delivered", phone=False, at="lms-grade-section")

        # A later grade that the LMS refuses for good: the panel says so, and that the
        # earlier one is still what the course holds.
        services.fail_with = 400
        type_code(framed, LAYOUT_WRONG)
        submit_and_watch(framed, stack, shoot, "frame-grade-later", "wrong_answer")
        state, words = wait(framed).until(
            lambda d: grade_panel(d)[0] not in ("pending", "delivered") and grade_panel(d))
        assert state == "failed", words
        assert "3.0 / 3.0 is in your course" in words, words
        assert "; a later grade of 3.0 / 3.0 could not be sent. Your instructor sees why" \
            in words, words
        shoot(framed, "frame-grade-later-failed", phone=False, at="lms-grade-section")
    finally:
        services.fail_with = None
