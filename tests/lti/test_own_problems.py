"""A tenant's own problems through LTI: a live problem of tenant A's own set is offered in
the Deep Linking picker of A's platform and launches there; to a platform registered with
tenant B it does not exist: not offered, refused when its id is posted to B's picker,
refused when a resource link of B names it, and no launch link of B's is made for it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from flask import Flask
from flask.testing import FlaskClient
from packages_support import scaffold_files, slim, zip_package
from service_fixtures import auth

from lti import platforms
from service.settings import ServiceSettings
from tests.lti.conftest import Tool
from tests.lti.platform import INSTRUCTOR, LEARNER, LaunchSpec, TestPlatform, parse_form
from tests.lti.test_deep_linking import choose, open_picker
from tests.rest.test_problemsets import built_here

pytestmark = [pytest.mark.service, pytest.mark.slow]

OWN = "ml-course/softmax"  # the set and slug built_here builds
CHOICES = r'name="problem" value="([^"]+)"'


@pytest.fixture
def service_settings(service_settings: ServiceSettings, tmp_path: Path) -> ServiceSettings:
    """The LTI tests' settings, unpacking uploaded packages under the test's folder."""
    return service_settings.model_copy(update={"packages_dir": tmp_path / "packages"})


@pytest.fixture
def own_problem(app: Flask, client: FlaskClient, keys: dict[str, str],
                tmp_path: Path) -> str:
    """``ml-course/softmax``: tenant A's (``course-a``) own problem, ready and live."""
    made = client.post("/v1/problemsets", json={"name": "ml-course", "title": "ML"},
                       headers=auth(keys["instructor"]))
    assert made.status_code == 201, made.get_json()
    r = client.post("/v1/problemsets/ml-course/problems",
                    data=zip_package(slim(scaffold_files())),
                    content_type="application/zip", headers=auth(keys["instructor"]))
    assert r.status_code == 202, r.get_json()
    built_here(app, r.get_json()["version"], tmp_path)
    return OWN


@pytest.fixture
def platform_b(tool: Tool) -> Iterator[TestPlatform]:
    """Another LMS, registered with tenant B (``course-b``)."""
    with TestPlatform(tool.base, client_id="jaxjudge-client-b") as found:
        with tool.db.session() as s:
            found.platform_id = platforms.add(s, "course-b", **found.registration).id
        yield found


def test_a_tenants_own_problem_is_offered_to_its_lms_only(
        tool: Tool, platform: TestPlatform, platform_b: TestPlatform,
        client: FlaskClient, keys: dict[str, str], own_problem: str) -> None:
    # Tenant A: offered beside the global problems, found by a search, and chosen.
    picker, page = open_picker(tool, platform)
    assert own_problem in re.findall(CHOICES, page) and "demo/layout" in page
    found = requests.get(tool.base + picker, params={"q": "softmax"}, timeout=10)
    assert re.findall(CHOICES, found.text) == [own_problem]
    answer = choose(tool, picker, page, own_problem)
    assert answer.status_code == 200, answer.text
    action, fields = parse_form(answer.text)
    back = requests.post(action, data=fields, timeout=10)  # the browser's auto-post
    assert back.status_code == 200, (back.text, platform.deep_link_errors)
    [item] = platform.deep_links[0]["items"]
    assert item["custom"] == {"problem": own_problem}
    assert item["lineItem"]["resourceId"] == own_problem
    r = platform.launch(spec=LaunchSpec(custom=item["custom"], resource_link="own-link"))
    assert r.status_code == 303 and "/assignments/" in r.headers["Location"], r.text

    # Tenant B: not offered, not even to a search; its id posted anyway is refused.
    picker_b, page_b = open_picker(tool, platform_b)
    choices_b = re.findall(CHOICES, page_b)
    assert own_problem not in choices_b and "demo/layout" in choices_b
    assert "ml-course" not in page_b
    searched = requests.get(tool.base + picker_b, params={"q": "softmax"}, timeout=10)
    assert re.findall(CHOICES, searched.text) == []
    refused = choose(tool, picker_b, page_b, own_problem)
    assert refused.status_code == 404 and "no such problem" in refused.text
    assert platform_b.deep_links == []

    # A resource link of B's naming A's problem: the judge does not have it.
    for roles in ([INSTRUCTOR], [LEARNER]):
        r = platform_b.launch(spec=LaunchSpec(roles=roles, custom={"problem": own_problem},
                                              resource_link="stolen-link"))
        assert r.status_code == 404, (r.status_code, r.text[:300])
        assert "which this judge does not have" in r.text

    # A launch link of B's for it: 404, as for a problem that does not exist (A's: 201).
    body = {"problem": own_problem, "student_id": "s1"}
    link = client.post("/v1/launch-links", json=body, headers=auth(keys["other"]))
    assert link.status_code == 404, link.get_json()
    link = client.post("/v1/launch-links", json=body, headers=auth(keys["instructor"]))
    assert link.status_code == 201, link.get_json()
