"""Deep Linking end to end: an instructor's deep-linking launch opens the picker, the
search narrows it, the choice goes back to the platform as a JWT signed with the tool's
key, which the test platform verifies against the tool's JWKS (lti1p3platform); its
content item then launches as the problem. Learners never reach the picker."""

from __future__ import annotations

import re

import jwt
import requests

from judge.catalog import Catalog
from lti import keys
from tests.lti.conftest import Tool
from tests.lti.platform import DL, INSTRUCTOR, LEARNER, LaunchSpec, TestPlatform, parse_form
from tests_support import FIXTURE_PROBLEMS

DEEP = dict(message_type="LtiDeepLinkingRequest", user="teacher-1", roles=[INSTRUCTOR])


def open_picker(tool: Tool, platform: TestPlatform) -> tuple[str, str]:
    r = platform.launch(spec=LaunchSpec(**DEEP))  # type: ignore[arg-type]
    assert r.status_code == 303, r.text
    picker = r.headers["Location"]
    assert re.match(r"^/app/[A-Za-z0-9_-]{43}/lti/pick$", picker)
    page = requests.get(tool.base + picker, timeout=10)
    assert page.status_code == 200
    return picker, page.text


def choose(tool: Tool, picker: str, page: str, problem: str) -> requests.Response:
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token
    return requests.post(tool.base + picker, data={"csrf_token": token.group(1),
                                                   "problem": problem}, timeout=10)


def test_deep_linking_end_to_end(tool: Tool, platform: TestPlatform) -> None:
    picker, page = open_picker(tool, platform)
    assert "demo/layout" in page and "demo/sharded" in page
    csp = requests.get(tool.base + picker, timeout=10).headers["Content-Security-Policy"]
    assert "script-src 'self' 'nonce-" in csp and "unsafe-inline" not in csp

    answer = choose(tool, picker, page, "demo/layout")
    assert answer.status_code == 200, answer.text
    action, fields = parse_form(answer.text)
    assert action == platform.base + "/deep_link_return"
    assert platform.base in answer.headers["Content-Security-Policy"]  # form-action
    assert re.search(r'<script nonce="[^"]+">', answer.text)
    # The browser's auto-post (and its button fallback): the platform verifies it.
    back = requests.post(action, data=fields, timeout=10)
    assert back.status_code == 200, (back.text, platform.deep_link_errors)
    [received] = platform.deep_links
    kid, _ = keys.signing_key(tool.db, tool.app.extensions["jaxjudge"].settings)
    assert received["kid"] == kid
    claims = received["claims"]
    assert claims[DL + "data"] == "opaque-data-123"
    assert claims["https://purl.imsglobal.org/spec/lti/claim/message_type"] == \
        "LtiDeepLinkingResponse"
    [item] = received["items"]
    assert item["type"] == "ltiResourceLink"
    assert item["custom"] == {"problem": "demo/layout"}
    assert item["lineItem"]["resourceId"] == "demo/layout"
    assert item["lineItem"]["scoreMaximum"] > 0
    assert item["lineItem"]["label"] == item["title"]

    # The platform makes a link of the item: its launch opens that problem.
    r = platform.launch(spec=LaunchSpec(custom=item["custom"], resource_link="dl-link"))
    assert r.status_code == 303 and "/assignments/" in r.headers["Location"]


def test_picker_searches_by_title_and_skill(tool: Tool, platform: TestPlatform) -> None:
    picker, page = open_picker(tool, platform)
    titles = re.findall(r'name="problem" value="([^"]+)"', page)
    fixtures = sorted(Catalog(FIXTURE_PROBLEMS).ids())  # demo/layout, demo/probed, demo/sharded
    assert sorted(titles) == fixtures and "demo/layout" in fixtures
    narrowed = requests.get(tool.base + picker, params={"q": "zzz-nothing"}, timeout=10)
    assert re.findall(r'name="problem" value="([^"]+)"', narrowed.text) == []
    assert "No problem matches" in narrowed.text
    by_skill = requests.get(tool.base + picker, params={"skill": "demo"}, timeout=10)
    assert len(re.findall(r'name="problem" value="([^"]+)"', by_skill.text)) == len(fixtures)
    other_skill = requests.get(tool.base + picker, params={"skill": "other"}, timeout=10)
    assert re.findall(r'name="problem" value="([^"]+)"', other_skill.text) == []


def test_learner_never_reaches_the_picker(tool: Tool, platform: TestPlatform) -> None:
    r = platform.launch(spec=LaunchSpec(message_type="LtiDeepLinkingRequest", roles=[LEARNER]))
    assert r.status_code == 403 and "only instructors" in r.text
    # A learner's own session (from a resource link launch) cannot open it either.
    r = platform.launch(custom={"problem": "demo/layout"})
    sid = r.headers["Location"].split("/")[2]
    page = requests.get(f"{tool.base}/app/{sid}/lti/pick", timeout=10)
    assert page.status_code == 403
    post = requests.post(f"{tool.base}/app/{sid}/lti/pick", data={"problem": "demo/layout"},
                         timeout=10)
    assert post.status_code == 403


def test_picker_refuses_a_stale_csrf_token(tool: Tool, platform: TestPlatform) -> None:
    picker, _page = open_picker(tool, platform)
    r = requests.post(tool.base + picker, data={"csrf_token": "forged",
                                                "problem": "demo/layout"}, timeout=10)
    assert r.status_code == 400 and "CSRF" in r.text
    assert platform.deep_links == []


def test_a_response_signed_by_another_key_is_refused_by_the_platform(
        tool: Tool, platform: TestPlatform) -> None:
    """The control of the platform's check: it does verify the signature."""
    picker, page = open_picker(tool, platform)
    _action, fields = parse_form(choose(tool, picker, page, "demo/layout").text)
    claims = jwt.decode(fields["JWT"], options={"verify_signature": False})
    header = jwt.get_unverified_header(fields["JWT"])
    from tests.lti.platform import PlatformKey

    forged = jwt.encode(claims, PlatformKey.new().private_pem, algorithm="RS256",
                        headers={"kid": header["kid"]})
    r = requests.post(platform.base + "/deep_link_return", data={"JWT": forged}, timeout=10)
    assert r.status_code == 400 and platform.deep_links == []
