"""An instructor in Chromium, inside the test LMS's frame: deep-links a problem into
the course, opens its gradebook (the roster's student who never submitted is there),
rejudges a submission and downloads the CSV; and without an LMS, signs in with an API
key to the course view."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import nbformat
import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.expected_conditions import staleness_of
from servers import wait_for

from tests.browser.conftest import Shoot, Stack, unique, wait
from tests.browser.steps import (
    editor,
    frame_text,
    in_frame,
    search_picker,
    submit_and_watch,
    type_code,
    worker_paused,
)
from tests.lti.platform import INSTRUCTOR, LEARNER, LaunchSpec
from tests_support import LAYOUT_GOOD, LAYOUT_WRONG

pytestmark = [pytest.mark.browser, pytest.mark.service, pytest.mark.slow]
TITLE = "Shard shape (test fixture)"


def reload_frame(browser: WebDriver) -> None:
    """Reload the document of the frame the driver is in (``refresh`` would reload the
    LMS page around it, which launches again)."""
    old = browser.find_element(By.TAG_NAME, "html")
    browser.execute_script("location.reload()")
    wait(browser, 30).until(staleness_of(old))
    wait(browser, 30).until(lambda d: d.execute_script(
        "return document.readyState") == "complete")


def gradebook_rows(browser: WebDriver) -> dict[str, WebElement]:
    return {r.get_attribute("data-user-id") or "": r for r in
            browser.find_elements(By.CSS_SELECTOR, "[data-testid='gradebook-row']")}


def downloaded(folder: Path, suffix: str) -> Path:
    """The one finished download ending in ``suffix``."""
    def done() -> Path | None:
        found = [p for p in folder.iterdir() if p.name.endswith(suffix)]
        partial = [p for p in folder.iterdir() if p.name.endswith(".crdownload")]
        return found[0] if len(found) == 1 and not partial else None

    path: Path = wait_for(done, 60, f"a downloaded {suffix}")
    return path


def test_an_instructor_deep_links_a_problem_grades_rejudges_and_exports(
        stack: Stack, browser: WebDriver, shoot: Shoot, downloads: Path) -> None:
    platform = stack.platform
    course = unique("course")
    teacher = LaunchSpec(user=unique("teacher"), name="Grace Hopper", roles=[INSTRUCTOR],
                         context=course, context_title="JAX 201",
                         message_type="LtiDeepLinkingRequest", deep_link_data=unique("dl"))

    # Deep linking: search the catalog in the picker, choose, the LMS verifies the item.
    choose, rows = search_picker(browser, platform.lms.page(teacher), "shard shape", TITLE)
    assert len(rows) == 1 and "demo/layout" in rows[0].text  # not "Shard a batch"
    shoot(browser, "lms-deep-link-picker", phone=False, docs=True)
    choose.click()
    wait(browser, 30).until(lambda d: "Content added." in frame_text(d))
    added = [d for d in platform.deep_links
             if d["claims"].get("https://purl.imsglobal.org/spec/lti-dl/claim/data")
             == teacher.deep_link_data]
    assert len(added) == 1 and not platform.deep_link_errors
    [item] = added[0]["items"]
    assert item["type"] == "ltiResourceLink" and item["custom"] == {"problem": "demo/layout"}
    assert item["lineItem"] == {"scoreMaximum": 3.0, "label": TITLE,
                                "resourceId": "demo/layout"}

    # The LMS now has the link, and a roster: one student who submits, one who never does.
    link = unique("link")
    ann = LaunchSpec(user=unique("ann"), name="Ann Submitter", roles=[LEARNER], context=course,
                     context_title="JAX 201", resource_link=link, resource_title=TITLE,
                     custom=item["custom"])
    bob = {"user_id": unique("bob"), "roles": [LEARNER], "name": "Bob Neversubmits"}
    platform.services.set_members(course, [
        {"user_id": teacher.user, "roles": [INSTRUCTOR], "name": teacher.name},
        {"user_id": ann.user, "roles": [LEARNER], "name": ann.name}, bob], title="JAX 201")
    in_frame(browser, platform.lms.page(ann))
    editor(browser)
    type_code(browser, LAYOUT_WRONG)
    graded = submit_and_watch(browser, stack, shoot, "lms-ann", "wrong_answer")

    # The gradebook: both students, Bob with nothing.
    teacher_at_link = LaunchSpec(**{**teacher.__dict__, "message_type":
                                    "LtiResourceLinkRequest", "resource_link": link,
                                    "resource_title": TITLE, "custom": item["custom"]})
    in_frame(browser, platform.lms.page(teacher_at_link))
    wait(browser, 30).until(lambda d: d.find_element(By.ID, "gradebook-table"))
    rows_by_user = gradebook_rows(browser)
    assert set(rows_by_user) == {ann.user, bob["user_id"]}, list(rows_by_user)
    assert rows_by_user[ann.user].get_attribute("data-verdict") == "wrong_answer"
    bob_cells = rows_by_user[bob["user_id"]].find_elements(By.TAG_NAME, "td")
    assert bob["name"] in bob_cells[0].text and bob_cells[1].text == "none"
    assert bob_cells[3].text == "0"
    assert not browser.find_elements(By.ID, "roster-error")
    browser.switch_to.default_content()
    shoot(browser, "lms-gradebook", phone=False, docs=True)
    browser.switch_to.frame(browser.find_element(By.ID, "tool-frame"))
    shoot(browser, "gradebook", phone=False, at="gradebook", docs=True)

    # Rejudge Ann's submission from her page: queued again, then graded a second time.
    rows_by_user[ann.user].find_element(By.TAG_NAME, "a").click()
    rejudge = wait(browser, 30).until(
        lambda d: d.find_element(By.ID, f"rejudge-{graded.submission_id}"))
    with worker_paused(stack):
        rejudge.click()
        section = wait(browser, 30).until(lambda d: d.find_element(
            By.CSS_SELECTOR, f"#submission-{graded.submission_id}[data-status='queued']"))
        assert section.get_attribute("data-verdict") == ""
        shoot(browser, "instructor-student-rejudging", phone=False)

    def regraded(d: WebDriver) -> bool:
        reload_frame(d)  # this page does not update by itself
        return bool(d.find_elements(
            By.CSS_SELECTOR, f"#submission-{graded.submission_id}[data-status='done']"))

    wait(browser).until(regraded)
    section = browser.find_element(By.ID, f"submission-{graded.submission_id}")
    assert section.get_attribute("data-verdict") == "wrong_answer"
    assert section.find_element(By.CSS_SELECTOR, "pre.code").text == LAYOUT_WRONG.rstrip("\n")
    shoot(browser, "instructor-student", phone=False, docs=True)
    body = requests.get(stack.url(f"/v1/submissions/{graded.submission_id}"),
                        headers=stack.auth("instructor"), timeout=30).json()
    assert body["attempt"] == 2 and body["verdict"] == "wrong_answer", body

    # The CSV, downloaded by the browser.
    browser.find_element(By.ID, "nav-gradebook").click()
    wait(browser, 30).until(lambda d: d.find_element(By.ID, "export-csv")).click()
    path = downloaded(downloads, ".csv")
    table = list(csv.DictReader(io.StringIO(path.read_text())))
    assert [row["student_id"] for row in table] == [ann.user], table
    assert table[0]["verdict"] == "wrong_answer" and table[0]["submission_id"] == \
        graded.submission_id, table[0]
    assert float(table[0]["score"]) == 1.0 and float(table[0]["max_score"]) == 3.0


def test_an_instructor_signs_in_with_an_api_key_and_sees_the_course(
        stack: Stack, browser: WebDriver, shoot: Shoot) -> None:
    course = unique("key-course")
    student = unique("key-student")
    browser.get(stack.launch_link(student, name="Kay Student", course=course))
    editor(browser)
    type_code(browser, LAYOUT_WRONG)
    submit_and_watch(browser, stack, shoot, "key-student", "wrong_answer")

    browser.get(stack.url("/app/signin"))
    field = wait(browser, 30).until(lambda d: d.find_element(By.ID, "api-key"))
    shoot(browser, "signin", docs=True)
    field.send_keys(stack.keys["instructor"], Keys.ENTER)
    link = wait(browser, 30).until(lambda d: d.find_element(By.LINK_TEXT, course))
    shoot(browser, "instructor-courses", docs=True)
    link.click()
    wait(browser, 30).until(lambda d: d.find_elements(By.PARTIAL_LINK_TEXT, TITLE)
                            or d.find_elements(By.PARTIAL_LINK_TEXT, "demo/layout"))
    shoot(browser, "instructor-course", docs=True)
    found = browser.find_elements(By.PARTIAL_LINK_TEXT, TITLE) or \
        browser.find_elements(By.PARTIAL_LINK_TEXT, "demo/layout")
    found[0].click()
    wait(browser, 30).until(lambda d: d.find_element(By.ID, "gradebook-table"))
    rows = gradebook_rows(browser)
    assert list(rows) == [student] and rows[student].get_attribute(
        "data-verdict") == "wrong_answer"
    shoot(browser, "instructor-gradebook-by-key")


def test_an_instructor_uploads_a_class_zip_and_watches_it_graded(
        stack: Stack, browser: WebDriver, shoot: Shoot, tmp_path: Path) -> None:
    course = unique("batch-course")
    first = unique("batch-first")
    browser.get(stack.launch_link(first, course=course))  # the course and assignment
    editor(browser)
    ada, nb = unique("ada"), unique("nb")
    archive = tmp_path / "class.zip"
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("My solution"),
        nbformat.v4.new_code_cell("%matplotlib inline\n" + LAYOUT_GOOD)])
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr(f"class/{ada}.py", LAYOUT_WRONG)
        z.writestr(f"class/{nb}.ipynb", nbformat.writes(notebook))

    browser.get(stack.url("/app/signin"))
    wait(browser, 30).until(lambda d: d.find_element(By.ID, "api-key")).send_keys(
        stack.keys["instructor"], Keys.ENTER)
    wait(browser, 30).until(lambda d: d.find_element(By.LINK_TEXT, course)).click()
    wait(browser, 30).until(lambda d: d.find_element(By.PARTIAL_LINK_TEXT, "demo/layout")
                            ).click()
    wait(browser, 30).until(lambda d: d.find_element(By.ID, "upload-batch")).click()
    wait(browser, 30).until(lambda d: d.find_element(By.ID, "batch-name")).send_keys(
        "Week 1")
    browser.find_element(By.ID, "batch-archive").send_keys(str(archive))
    shoot(browser, "instructor-batch-upload", docs=True)
    with worker_paused(stack):
        browser.find_element(By.ID, "batch-submit").click()
        progress = wait(browser, 30).until(lambda d: d.find_element(By.ID, "batch-progress"))
        assert progress.get_attribute("data-done") == "false"
        assert browser.find_element(By.ID, "batch-graded").text == "0"
        assert {r.get_attribute("data-student-id") for r in browser.find_elements(
            By.CSS_SELECTOR, "[data-testid='batch-row']")} == {ada, nb}
        shoot(browser, "instructor-batch-progress", phone=False, docs=True)
    wait(browser).until(lambda d: d.find_element(By.ID, "batch-progress").get_attribute(
        "data-done") == "true")
    verdicts = {r.get_attribute("data-student-id"): r.find_elements(By.TAG_NAME, "td")[2].text
                for r in browser.find_elements(By.CSS_SELECTOR, "[data-testid='batch-row']")}
    assert verdicts == {ada: "wrong answer", nb: "accepted"}, verdicts
    shoot(browser, "instructor-batch-done", docs=True)
    browser.find_element(By.ID, "nav-gradebook").click()
    rows = wait(browser, 30).until(lambda d: gradebook_rows(d))
    assert {u: r.get_attribute("data-verdict") for u, r in rows.items()} == {
        first: "", ada: "wrong_answer", nb: "accepted"}
