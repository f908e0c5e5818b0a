"""A tenant's own problem, from the author's folder to a student's grade in the LMS: an
instructor scaffolds it with ``jaxjudge new`` and pushes it with ``jaxjudge problems
push`` (the real commands, against the stack); the judge builds and verifies it in the
sandbox and it goes live; the instructor deep-links it from the test LMS through the
picker, and a student launched there is graded accepted, the score passed back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from judge.scaffold import entry_name
from tests.browser.conftest import Shoot, Stack, unique, wait
from tests.browser.steps import (
    editor,
    frame_text,
    history_row,
    in_frame,
    one_full_score,
    search_picker,
    submit_and_watch,
    type_code,
)
from tests.lti.platform import INSTRUCTOR, LEARNER, LaunchSpec

pytestmark = [pytest.mark.browser, pytest.mark.service, pytest.mark.slow]
JAXJUDGE = str(Path(sys.executable).parent / "jaxjudge")
SLUG = "row-softmax"
TITLE = "Row softmax"  # the scaffold's title for the slug
# The scaffold's examples, each filed under the verdict it must get.
EXAMPLES = ["submissions/accepted/jax_nn_softmax.py",
            "submissions/compile_error/missing_colon.py",
            "submissions/memory_limit_exceeded/allocates_too_much.py",
            "submissions/output_limit_exceeded/prints_too_much.py",
            "submissions/runtime_error/axis_out_of_range.py",
            "submissions/time_limit_exceeded/loops_forever.py",
            "submissions/wrong_answer/columns_not_rows.py",
            "submissions/wrong_answer/no_max_shift.py",
            "submissions/wrong_answer/row_max_in_a_loop.py"]
SOLUTION = f"import jax\n\ndef {entry_name(SLUG)}(x):\n    return jax.nn.softmax(x, axis=-1)\n"


def jaxjudge(*argv: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed ``jaxjudge`` command, as the instructor types it."""
    return subprocess.run([JAXJUDGE, *argv], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=240)


def test_an_instructor_pushes_an_own_problem_deep_links_it_and_a_student_is_graded(
        stack: Stack, browser: WebDriver, shoot: Shoot, tmp_path: Path) -> None:
    problem_set = unique("own")
    problem = f"{problem_set}/{SLUG}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXJUDGE_")}
    env["JAXJUDGE_PROBLEMS_DIR"] = str(tmp_path / "problems")

    # The author's side: scaffold, push, follow the build to "live".
    made = jaxjudge("new", problem, "--no-build", env=env, cwd=tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    folder = tmp_path / "problems" / problem
    assert (folder / "problem.yaml").is_file()
    pushed = jaxjudge("problems", "push", str(folder), "--set", problem_set, "--create-set",
                      "--url", stack.base, "--key", stack.keys["instructor"], env=env,
                      cwd=tmp_path)
    out = pushed.stdout
    assert pushed.returncode == 0, out + pushed.stderr
    lines = out.splitlines()
    assert lines[0] == f"made the set {problem_set}", out
    assert lines[1].startswith(f"uploaded {problem} version "), out
    checks = {line[4:].lstrip().split(":")[0] for line in lines if line.startswith("ok  ")}
    assert checks == {"build", "data", "inputs", "reference.py", *EXAMPLES}, out
    assert "FAIL" not in out, out
    assert f"{problem} version " in lines[-1] and " is live, built in " in lines[-1], out

    # The instructor deep-links it from the LMS: the picker finds it among the problems.
    platform = stack.platform
    course = unique("own-course")
    teacher = LaunchSpec(user=unique("teacher"), name="Grace Hopper", roles=[INSTRUCTOR],
                         context=course, context_title="JAX 301",
                         message_type="LtiDeepLinkingRequest", deep_link_data=unique("dl"))
    choose, rows = search_picker(browser, platform.lms.page(teacher), problem_set, TITLE)
    assert len(rows) == 1 and problem in rows[0].text, [r.text for r in rows]
    shoot(browser, "lms-deep-link-own-problem", phone=False)
    choose.click()
    wait(browser, 30).until(lambda d: "Content added." in frame_text(d))
    added = [d for d in platform.deep_links
             if d["claims"].get("https://purl.imsglobal.org/spec/lti-dl/claim/data")
             == teacher.deep_link_data]
    assert len(added) == 1 and not platform.deep_link_errors
    [item] = added[0]["items"]
    assert item["custom"] == {"problem": problem}
    # A point per hidden test (seven); the two sample tests are worth nothing.
    assert item["lineItem"] == {"scoreMaximum": 7.0, "label": TITLE, "resourceId": problem}

    # A student launched at the new link writes JAX's softmax and is graded accepted.
    student = LaunchSpec(user=unique("student"), name="Ada Lovelace", roles=[LEARNER],
                         context=course, context_title="JAX 301",
                         resource_link=unique("link"), resource_title=TITLE,
                         custom=item["custom"])
    in_frame(browser, platform.lms.page(student))
    editor(browser)
    type_code(browser, SOLUTION)
    graded = submit_and_watch(browser, stack, shoot, "lms-own-student", "accepted")
    assert history_row(browser, graded.submission_id).get_attribute("data-verdict") == \
        "accepted"

    # The score reaches the LMS.
    one_full_score(stack, student.user, student.context, student.resource_link, 7.0)
