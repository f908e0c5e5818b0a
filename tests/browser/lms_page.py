"""The test LMS as a person sees it: a course page that embeds the tool in an iframe, as
Moodle or Canvas do, mounted on the test platform (:mod:`tests.lti.platform`).

The platform is served as ``http://localhost:<port>`` (its issuer, its pages) and the
tool as ``http://127.0.0.1:<port>``: two sites, so the frame is third-party and its
cookies are blocked by the tests' browser. ``GET /course/<page>`` renders the course
page of a launch registered with :meth:`Lms.page`; each load makes a fresh login
initiation URL (one pending launch of the platform) for the frame's ``src``.
``/frame/<page>`` frames any URL (:meth:`Lms.frame`), ``/post/<page>`` posts a form as it
loads (:meth:`Lms.form`). The pages record what the tool posts to them
(``body[data-tool-message]``).
"""

from __future__ import annotations

import html
import secrets
from dataclasses import dataclass, field
from typing import Any

from flask import Response, abort

from lti import platforms
from tests.browser.conftest import TENANT, Stack
from tests.lti.platform import LaunchSpec, TestPlatform, form_page

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
<script>
// What the tool tells the LMS (LTI's postMessage, e.g. org.imsglobal.lti.close).
window.addEventListener("message", (e) => {{
  document.body.dataset.toolMessage = (e.data && e.data.subject) || "";
}});
</script>
</body></html>
"""


@dataclass
class Lms:
    platform: TestPlatform
    pages: dict[str, LaunchSpec] = field(default_factory=dict)
    frames: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # course, title, src
    forms: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)

    def frame(self, title: str, src: str, course: str = "Site administration") -> str:
        """The URL of an LMS page that frames ``src`` (an administrator's tool
        registration, say)."""
        token = secrets.token_urlsafe(8)
        self.frames[token] = (course, title, src)
        return f"{self.platform.base}/frame/{token}"

    def form(self, action: str, fields: dict[str, str]) -> str:
        """The URL of a platform page that posts ``fields`` to ``action`` as it loads
        (each time it is opened: a launch form sent again)."""
        token = secrets.token_urlsafe(8)
        self.forms[token] = (action, fields)
        return f"{self.platform.base}/post/{token}"

    def render_frame(self, token: str) -> Response:
        if token not in self.frames:
            abort(404)
        course, title, src = self.frames[token]
        return Response(PAGE.format(course=html.escape(course), activity=html.escape(title),
                                    user="Admin", role="Administrator", src=html.escape(src)),
                        mimetype="text/html")

    def render_form(self, token: str) -> Response:
        if token not in self.forms:
            abort(404)
        return Response(form_page(*self.forms[token]), mimetype="text/html")

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
    platform.app.add_url_rule("/frame/<token>", "frame_page", lms.render_frame)
    platform.app.add_url_rule("/post/<token>", "form_page", lms.render_form)
    platform.start()
    started.append(platform)
    with stack.db.session() as s:
        platform.platform_id = platforms.add(s, TENANT, **platform.registration).id
    return platform
