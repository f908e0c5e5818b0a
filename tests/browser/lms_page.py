"""The test LMS as a person sees it: a course page that embeds the tool in an iframe, as
Moodle or Canvas do, mounted on the test platform (:mod:`tests.lti.platform`).

The platform is served as ``http://localhost:<port>`` (its issuer, its pages) and the
tool as ``http://127.0.0.1:<port>``: two sites, so the frame is third-party and its
cookies are blocked by the tests' browser. ``GET /course/<page>`` renders the course
page of a launch registered with :meth:`Lms.page`; each load makes a fresh login
initiation URL (one pending launch of the platform) for the frame's ``src``.
"""

from __future__ import annotations

import html
import secrets
from dataclasses import dataclass, field
from typing import Any

from flask import Response, abort

from lti import platforms
from tests.browser.conftest import TENANT, Stack
from tests.lti.platform import LaunchSpec, TestPlatform

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{course} · Test LMS</title>
<style>
body {{ margin: 0; font: 15px/1.4 system-ui, sans-serif; background: #e9edf2; }}
header {{ background: #f98012; color: #fff; padding: 10px 20px; font-weight: 600; }}
nav {{ background: #fff; padding: 8px 20px; border-bottom: 1px solid #ccd; color: #456; }}
main {{ padding: 12px 20px; }}
h1 {{ font-size: 20px; margin: 4px 0 10px; }}
iframe {{ width: 100%; height: 720px; border: 1px solid #bbc; background: #fff; }}
</style></head>
<body>
<header>Test LMS</header>
<nav>{course} › {activity} <span style="float:right">{user} ({role})</span></nav>
<main><h1 id="activity">{activity}</h1>
<iframe id="tool-frame" title="{activity}" src="{src}"
  allow="clipboard-write" referrerpolicy="origin"></iframe></main>
</body></html>
"""


@dataclass
class Lms:
    platform: TestPlatform
    pages: dict[str, LaunchSpec] = field(default_factory=dict)

    def page(self, spec: LaunchSpec) -> str:
        """The URL of a course page that launches ``spec`` in its frame."""
        token = secrets.token_urlsafe(8)
        self.pages[token] = spec
        return f"{self.platform.base}/course/{token}"

    def render(self, token: str) -> Response:
        spec = self.pages.get(token)
        if spec is None:
            abort(404)
        role = "Instructor" if any(r.endswith("#Instructor") for r in spec.roles) \
            else "Learner"
        activity = ("Add an activity" if spec.message_type == "LtiDeepLinkingRequest"
                    else spec.resource_title)
        body = PAGE.format(course=html.escape(spec.context_title),
                           activity=html.escape(activity), user=html.escape(spec.name),
                           role=role, src=html.escape(self.platform.login_url(spec)))
        return Response(body, mimetype="text/html")


def start_platform(stack: Stack, started: list[Any]) -> TestPlatform:
    """The test platform on ``localhost``, with its course pages, started and registered
    with the tenant of the browser tests."""
    platform = TestPlatform(stack.base)
    platform.base = f"http://localhost:{platform.port}"  # another site than the tool
    lms = Lms(platform)
    platform.lms = lms  # type: ignore[attr-defined]
    platform.app.add_url_rule("/course/<token>", "course_page", lms.render)
    platform.start()
    started.append(platform)
    with stack.db.session() as s:
        platform.platform_id = platforms.add(s, TENANT, **platform.registration).id
    return platform
