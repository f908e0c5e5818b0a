"""LTI seen from the LMS in Chromium: a launch form sent a second time (replay) ends on
the tool's error page inside the frame, and an administrator's dynamic registration
registers the tool and tells the LMS to close its dialog."""

from __future__ import annotations

from urllib.parse import quote

import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from sqlalchemy import select

from lti import registration
from service.models import LtiPlatform
from tests.browser.conftest import TENANT, Shoot, Stack, unique, wait
from tests.browser.steps import editor
from tests.lti.platform import LEARNER, LaunchSpec

pytestmark = [pytest.mark.browser, pytest.mark.service, pytest.mark.slow]


def test_a_launch_sent_again_is_refused_in_the_frame(
        stack: Stack, browser: WebDriver, shoot: Shoot) -> None:
    platform = stack.platform
    spec = LaunchSpec(user=unique("replayer"), roles=[LEARNER], context=unique("course"),
                      resource_link=unique("link"), custom={"problem": "demo/layout"})
    pending = platform.begin(requests.Session(), spec)  # the login, as the LMS starts it
    action, fields = platform.authorize(requests.Session(), pending)
    page = platform.lms.frame("Exercise 1", platform.lms.form(action, fields),
                              course="JAX 101")

    browser.get(page)  # the launch: the student page in the frame
    browser.switch_to.frame(browser.find_element(By.ID, "tool-frame"))
    editor(browser)
    browser.get(page)  # the same id_token and state again
    browser.switch_to.frame(browser.find_element(By.ID, "tool-frame"))
    heading = wait(browser, 30).until(lambda d: d.find_element(By.TAG_NAME, "h1"))
    text = browser.find_element(By.TAG_NAME, "main").text
    assert not browser.find_elements(By.CSS_SELECTOR, "[data-testid='code-editor']")
    assert heading.text == "The exercise cannot be opened"
    assert "this launch was used already" in text, text
    assert fields["id_token"] not in browser.page_source
    browser.switch_to.default_content()
    shoot(browser, "lti-error-replay", phone=False, docs=True)


def test_an_administrator_registers_the_tool_dynamically(
        stack: Stack, browser: WebDriver, shoot: Shoot) -> None:
    platform = stack.platform
    token = registration.invite(stack.redis.client(), TENANT, 600)
    url = (registration.registration_url(stack.base, token) + "&openid_configuration="
           + quote(f"{platform.base}/.well-known/openid-configuration", safe="")
           + "&registration_token=" + quote(platform.registration_token, safe=""))
    before = len(platform.registrations)
    browser.get(platform.lms.frame("Tool registration", url))
    browser.switch_to.frame(browser.find_element(By.ID, "tool-frame"))
    heading = wait(browser, 30).until(lambda d: d.find_element(By.TAG_NAME, "h1"))
    assert heading.text == "JAX judge is registered"
    assert platform.registered_client_id in browser.find_element(By.TAG_NAME, "main").text
    browser.switch_to.default_content()
    wait(browser, 30).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute(
        "data-tool-message") == "org.imsglobal.lti.close")
    shoot(browser, "lti-registered", phone=False, docs=True)
    assert len(platform.registrations) == before + 1
    with stack.db.session() as s:
        row = s.scalar(select(LtiPlatform).where(
            LtiPlatform.client_id == platform.registered_client_id))
        assert row is not None and row.issuer == platform.base
        assert row.deployment_ids == [platform.registered_deployment_id]
