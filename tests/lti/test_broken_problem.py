"""LTI launches and Deep Linking to a problem whose package cannot be loaded (issue 20,
item 3), against the real tool and platform: the student lands on a page that names the
problem and says it can be neither shown nor graded (503), the picker leaves it out and
refuses it when it is posted by id (503, naming it); never a 500."""

from __future__ import annotations

import re
from pathlib import Path

import requests
from broken_support import judge_settings, problems, smash

from tests.lti.conftest import Tool
from tests.lti.platform import INSTRUCTOR, LaunchSpec, TestPlatform

SPEC = LaunchSpec(custom={"problem": "demo/layout"})
__all__ = ["judge_settings", "problems"]  # the fixtures: the broken copy


def page_error(r: requests.Response, status: int, *words: str) -> None:
    assert r.status_code == status, (r.status_code, r.text[:500])
    assert r.headers["Content-Type"].startswith("text/html")
    text = r.text.replace("&#39;", "'")
    for word in words:
        assert word in text, text[-2000:]
    assert "Traceback" not in text


def test_a_launch_to_a_broken_problem_lands_on_a_page_that_says_so(
        tool: Tool, platform: TestPlatform, problems: Path) -> None:
    smash(problems)
    r = platform.launch(spec=SPEC)
    assert r.status_code == 303, r.text[:500]
    page_error(requests.get(tool.base + r.headers["Location"], timeout=30), 503,
               "Problem unavailable",
               "The problem of this assignment (demo/layout) cannot be loaded")


def test_the_picker_leaves_a_broken_problem_out_and_refuses_it_by_id(
        tool: Tool, platform: TestPlatform, problems: Path) -> None:
    smash(problems)
    r = platform.launch(spec=LaunchSpec(message_type="LtiDeepLinkingRequest",
                                        user="teacher-1", roles=[INSTRUCTOR]))
    assert r.status_code == 303, r.text[:500]
    picker = r.headers["Location"]
    page = requests.get(tool.base + picker, timeout=30).text
    assert "demo/sharded" in page and "demo/layout" not in page
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token
    r = requests.post(tool.base + picker, data={"csrf_token": token.group(1),
                                                "problem": "demo/layout"}, timeout=30)
    page_error(r, 503, "the problem demo/layout cannot be loaded", "choose another")
    assert platform.deep_links == []
