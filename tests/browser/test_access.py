"""Manners and boundaries in Chromium: the main controls are reached with the keyboard
alone and have labels, and a learner who types an instructor page's URL is refused."""

from __future__ import annotations

import re
from typing import Any

import pytest
import requests
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser.conftest import Shoot, Stack, unique, wait
from tests.browser.steps import EDITOR, editor, editor_text, submit_and_watch, type_code
from tests.lti.platform import LEARNER, LaunchSpec
from tests_support import LAYOUT_GOOD

pytestmark = [pytest.mark.browser, pytest.mark.service, pytest.mark.slow]

# What the focused element is: its id, or for the editor's content "editor".
FOCUSED = """
const e = document.activeElement;
if (!e || e === document.body) return "";
if (e.closest(arguments[0])) return "editor";
return e.id || e.getAttribute("href") || e.tagName.toLowerCase();
"""

# Every control a person fills in or picks, with the name a screen reader gives it
# (label[for], a wrapping label, aria-label, aria-labelledby); "" when it has none.
UNLABELLED = """
const named = (e) => {
  if (e.getAttribute("aria-label")) return true;
  if (e.getAttribute("aria-labelledby")) return true;
  if (e.id && document.querySelector(`label[for="${CSS.escape(e.id)}"]`)) return true;
  return !!e.closest("label");
};
return Array.from(document.querySelectorAll(
    "input:not([type=hidden]), select, textarea, [contenteditable=true]"))
  .filter(e => !e.hidden && e.getAttribute("aria-hidden") !== "true")
  .filter(e => !named(e)).map(e => e.outerHTML.slice(0, 120));
"""


def tab_through(driver: WebDriver, presses: int = 60) -> list[str]:
    """Focus from the top of the page, pressing Tab until the focus comes round again
    (at most ``presses`` times); what each press focused, in order (Escape before a Tab
    in the editor, which keeps Tab to indent)."""
    driver.execute_script("document.activeElement && document.activeElement.blur();"
                          "window.scrollTo(0, 0)")
    seen: list[str] = []
    for _ in range(presses):
        keys: list[Any] = [Keys.ESCAPE, Keys.TAB] if seen and seen[-1] == "editor" \
            else [Keys.TAB]
        ActionChains(driver).send_keys(*keys).perform()
        now = driver.execute_script(FOCUSED, EDITOR)
        if seen and now == seen[0]:
            break
        seen.append(now)
    return seen


def test_the_student_page_is_usable_with_the_keyboard_and_labelled(
        stack: Stack, browser: WebDriver, shoot: Shoot) -> None:
    browser.get(stack.launch_link(unique("keys-student"), name="Kim Keyboard"))
    editor(browser)
    assert browser.execute_script(UNLABELLED) == []
    assert browser.find_element(By.CSS_SELECTOR, f"{EDITOR} .cm-content").get_attribute(
        "aria-label") == "Code"
    order = tab_through(browser)
    for control in ("editor", "upload", "submit-button"):
        assert control in order, order
    assert order.index("editor") < order.index("upload") < order.index("submit-button")

    # In the editor Tab indents (the keyboard is not trapped: Escape, then Tab, leaves).
    content = browser.find_element(By.CSS_SELECTOR, f"{EDITOR} .cm-content")
    type_code(browser, "def f():\n    return 1")
    content.send_keys(Keys.CONTROL, Keys.END)
    content.send_keys(Keys.HOME, Keys.TAB)
    wait(browser, 10).until(lambda d: editor_text(d).endswith("\n        return 1"))
    ActionChains(browser).send_keys(Keys.ESCAPE, Keys.TAB).perform()
    assert browser.execute_script(FOCUSED, EDITOR) == "upload"

    # Submitting from the keyboard alone.
    type_code(browser, LAYOUT_GOOD)
    browser.find_element(By.ID, "submit-button").send_keys(Keys.SPACE)
    wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#result #verdict"))
    assert browser.find_element(By.ID, "verdict").get_attribute("data-verdict") == "accepted"
    assert browser.execute_script(UNLABELLED) == []


def test_the_gradebook_is_usable_with_the_keyboard_and_labelled(
        stack: Stack, browser: WebDriver) -> None:
    course = unique("keys-course")
    browser.get(stack.launch_link(unique("keys-student"), course=course))
    editor(browser)
    browser.get(stack.url("/app/signin"))
    field = wait(browser, 30).until(lambda d: d.find_element(By.ID, "api-key"))
    assert browser.execute_script(UNLABELLED) == []
    order = tab_through(browser, 8)
    assert "api-key" in order and "signin-button" in order, order
    assert order.index("api-key") < order.index("signin-button")
    field.send_keys(stack.keys["instructor"], Keys.ENTER)
    wait(browser, 30).until(lambda d: d.find_element(By.LINK_TEXT, course)).click()
    wait(browser, 30).until(lambda d: d.find_element(By.PARTIAL_LINK_TEXT, "demo/layout"))
    browser.find_element(By.PARTIAL_LINK_TEXT, "demo/layout").click()
    wait(browser, 30).until(lambda d: d.find_element(By.ID, "gradebook-table"))
    assert browser.execute_script(UNLABELLED) == []
    order = tab_through(browser)
    wanted = ["filter-q", "filter-verdict", "filter-button", "policy", "policy-button",
              "export-csv", "rejudge-all"]
    assert [c for c in order if c in wanted][:len(wanted)] == wanted, order


def _refused(browser: WebDriver, stack: Stack, path: str) -> None:
    """``path`` typed into the address bar: a refusal page, and a 403 to any client."""
    browser.get(stack.url(path))
    heading = wait(browser, 30).until(lambda d: d.find_element(By.TAG_NAME, "h1"))
    assert heading.text == "For instructors", heading.text
    assert not browser.find_elements(By.ID, "gradebook-table")
    assert requests.get(stack.url(path), timeout=30).status_code == 403


def test_a_learner_cannot_reach_the_instructor_pages(
        stack: Stack, browser: WebDriver, shoot: Shoot) -> None:
    # A learner from the LMS, inside its frame...
    platform = stack.platform
    spec = LaunchSpec(user=unique("curious"), name="Cy Curious", roles=[LEARNER],
                      context=unique("course"), resource_link=unique("link"),
                      custom={"problem": "demo/layout"})
    browser.get(platform.lms.page(spec))
    browser.switch_to.frame(browser.find_element(By.ID, "tool-frame"))
    editor(browser)
    page = browser.execute_script("return location.pathname")
    match = re.fullmatch(r"/app/([^/]+)/assignments/([^/]+)", page)
    assert match, page
    sid, assignment = match.groups()
    type_code(browser, LAYOUT_GOOD)
    graded = submit_and_watch(browser, stack, shoot, "learner", "accepted")
    browser.switch_to.default_content()

    # ... types the instructor pages of their own assignment and course.
    for path in (f"/app/{sid}/assignments/{assignment}/gradebook",
                 f"/app/{sid}/assignments/{assignment}/export.csv",
                 f"/app/{sid}/assignments/{assignment}/student?user={spec.user}",
                 f"/app/{sid}/courses"):
        _refused(browser, stack, path)
    shoot(browser, "refused-learner", docs=True)
    r = requests.post(stack.url(f"/app/{sid}/submissions/{graded.submission_id}/rejudge"),
                      timeout=30)
    assert r.status_code in (400, 403)  # no CSRF token, and not an instructor either way
    body = requests.get(stack.url(f"/v1/submissions/{graded.submission_id}"),
                        headers=stack.auth("instructor"), timeout=30).json()
    assert body["attempt"] == 1, body

    # A launch-link student likewise.
    browser.get(stack.launch_link(unique("link-learner")))
    editor(browser)
    sid = browser.current_url.split("/app/", 1)[1].split("/", 1)[0]
    assignment = browser.current_url.split("/assignments/", 1)[1].split("?")[0].split("#")[0]
    _refused(browser, stack, f"/app/{sid}/assignments/{assignment}/gradebook")
