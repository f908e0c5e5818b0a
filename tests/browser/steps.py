"""What a person does on the pages, in Chromium: type into the code editor, submit and
watch the verdict arrive, find a submission in the history; enter the tool's frame of an
LMS page, search the Deep Linking picker, find a score at the LMS. Shared by the student
and instructor tests (through an LMS frame or a launch link)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.expected_conditions import staleness_of
from servers import wait_for

from tests.browser.conftest import WAIT, Shoot, Stack, wait

EDITOR = "[data-testid='code-editor']"
EDITOR_CONTENT = ".cm-content"
MARKER = "h5SamePage"  # a variable a reload would drop


@contextmanager
def worker_paused(stack: Stack) -> Iterator[None]:
    """The worker stopped (SIGSTOP, pool and all) for the block: a submission made
    meanwhile stays queued, so the page certainly shows it queued before the verdict."""
    os.killpg(stack.worker.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.killpg(stack.worker.pid, signal.SIGCONT)


def editor(driver: WebDriver) -> WebElement:
    """The CodeMirror editor, once the bundle has taken over the textarea."""
    found: WebElement = wait(driver, 30).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, EDITOR) and
        d.find_element(By.CSS_SELECTOR, EDITOR))
    return found


def editor_text(driver: WebDriver) -> str:
    """The editor's document, line by line as CodeMirror shows it."""
    lines = driver.find_elements(By.CSS_SELECTOR, f"{EDITOR} .cm-line")
    text: str = driver.execute_script(
        "return Array.from(arguments[0]).map(l => l.textContent).join('\\n')", lines)
    return text


def type_code(driver: WebDriver, code: str) -> None:
    """Replace the editor's text by typing ``code`` on the keyboard. CodeMirror indents
    a new line itself, so each line is typed without its leading spaces."""
    content = editor(driver).find_element(By.CSS_SELECTOR, EDITOR_CONTENT)
    content.click()
    content.send_keys(Keys.CONTROL, "a")
    content.send_keys(Keys.DELETE)
    lines = code.rstrip("\n").split("\n")
    for n, line in enumerate(lines):
        content.send_keys(line.lstrip(" "))
        if n < len(lines) - 1:
            content.send_keys(Keys.ENTER)
    wait(driver, 10).until(lambda d: editor_text(d) == code.rstrip("\n"))


def check_editor_features(driver: WebDriver) -> None:
    """Line numbers in a gutter, one per line, and Python highlighted: the keyword
    ``def`` drawn in another colour than the plain text around it."""
    lines = driver.find_elements(By.CSS_SELECTOR, f"{EDITOR} .cm-line")
    numbers = [e.text for e in driver.find_elements(
        By.CSS_SELECTOR, f"{EDITOR} .cm-lineNumbers .cm-gutterElement") if e.text]
    assert numbers == [str(n) for n in range(1, len(lines) + 1)], numbers
    colours = driver.execute_script("""
        const line = arguments[0];
        const def = Array.from(line.querySelectorAll('span'))
            .find(s => s.textContent === 'def');
        return def ? [getComputedStyle(def).color, getComputedStyle(line).color] : null;
    """, lines[0])
    assert colours is not None, "the keyword def is not a token of its own"
    assert colours[0] != colours[1], colours


def textarea_code(driver: WebDriver) -> str:
    """What the form sends: the hidden textarea the editor keeps up to date."""
    value: str = driver.execute_script("return document.getElementById('code').value")
    return value


@dataclass
class Graded:
    submission_id: str
    verdict: str


def submit_and_watch(driver: WebDriver, stack: Stack, shoot: Shoot, page: str,
                     expected_verdict: str) -> Graded:
    """Submit the editor's code with the worker held, see the page show the submission
    waiting, mark the page, let the worker go, and see the verdict arrive on the same
    page (the mark survives: no reload, no navigation)."""
    with worker_paused(stack):
        driver.find_element(By.ID, "submit-button").click()
        status = wait(driver, 30).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, "#submission-status[data-status-url]")
            and d.find_element(By.ID, "submission-status"))
        assert status.get_attribute("data-status") in ("queued", "running")
        driver.execute_script(f"window.{MARKER} = true")
        shoot(driver, f"{page}-waiting", phone=False, docs=page == "student")
        submission_id = status.get_attribute("data-submission-id")
        assert submission_id
    verdict = wait(driver).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#result #verdict")
        and d.find_element(By.CSS_SELECTOR, "#result #verdict"))
    assert driver.execute_script(f"return window.{MARKER} === true"), "the page reloaded"
    assert driver.find_element(By.ID, "submission-status").get_attribute(
        "data-status") == "done"
    got = verdict.get_attribute("data-verdict") or ""
    assert got == expected_verdict, got
    rows = driver.find_elements(By.CSS_SELECTOR, "#tests-table [data-testid='test-row']")
    assert {r.get_attribute("data-visibility") for r in rows} == {"sample", "hidden"}
    return Graded(submission_id, got)


def history_row(driver: WebDriver, submission_id: str) -> WebElement:
    """The history's row of ``submission_id`` (present on the page now)."""
    rows = [r for r in driver.find_elements(By.CSS_SELECTOR, "[data-testid='history-row']")
            if r.get_attribute("data-submission-id") == submission_id]
    assert len(rows) == 1, [r.get_attribute("data-submission-id") for r in
                            driver.find_elements(By.CSS_SELECTOR,
                                                 "[data-testid='history-row']")]
    return rows[0]


def load_into_editor(driver: WebDriver, submission_id: str, code: str) -> None:
    """The history's "Load into the editor" of ``submission_id``: the editor then holds
    exactly its code."""
    history_row(driver, submission_id).find_element(By.ID, f"load-{submission_id}").click()
    wait(driver, 30).until(lambda d: f"load={submission_id}" in d.current_url)
    editor(driver)
    wait(driver, 10).until(lambda d: editor_text(d) == code.rstrip("\n"))


def in_frame(browser: WebDriver, url: str) -> None:
    """Open an LMS course page and enter the tool's frame."""
    browser.switch_to.default_content()
    browser.get(url)
    browser.switch_to.frame(wait(browser, 30).until(
        lambda d: d.find_element(By.ID, "tool-frame")))


def frame_text(browser: WebDriver) -> str:
    """The text of the tool's frame now (entered afresh: a frame that went to another
    site is another document to the driver)."""
    browser.switch_to.default_content()
    browser.switch_to.frame(browser.find_element(By.ID, "tool-frame"))
    text: str = browser.find_element(By.TAG_NAME, "body").text
    return text


def search_picker(browser: WebDriver, url: str, query: str, title: str
                  ) -> tuple[WebElement, list[WebElement]]:
    """Open an LMS page that launches the Deep Linking picker, search it for ``query``;
    the button that chooses the problem titled ``title``, and the rows found."""
    in_frame(browser, url)
    search = wait(browser, 30).until(lambda d: d.find_element(By.ID, "q"))
    search.send_keys(query, Keys.ENTER)
    # The unfiltered picker may list the problem too: wait for the search's own page
    # (the old one's elements go stale when it replaces them), then for the button.
    wait(browser, 30).until(staleness_of(search))
    choose = wait(browser, 30).until(lambda d: d.find_element(
        By.CSS_SELECTOR, f"button[aria-label='Choose {title}']"))
    return choose, browser.find_elements(By.CSS_SELECTOR, "table tbody tr")


def one_full_score(stack: Stack, user: str, context: str, resource_link: str,
                   points: float) -> dict[str, Any]:
    """Wait for the score of ``user`` at the LMS line item of the link; it is the only
    one, full marks of ``points``, fully graded."""
    platform = stack.platform
    lineitem = platform.lineitems[(context, resource_link)]
    scores = wait_for(lambda: platform.services.scores_for(user, lineitem), WAIT,
                      "the score at the LMS")
    assert len(scores) == 1
    assert scores[0]["scoreGiven"] == scores[0]["scoreMaximum"] == points
    assert scores[0]["gradingProgress"] == "FullyGraded"
    score: dict[str, Any] = scores[0]
    return score
