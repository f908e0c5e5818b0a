"""Launch links: how an integrator without an LMS (its own platform, a script) sends one
student to the student page of one problem (``POST /v1/launch-links``).

A link is ``/launch/<token>``: the token is signed with the deployment's secret
(itsdangerous, HMAC-SHA256 over a salt of its own, so no other signed value of the tool
can pass for one) and names the tenant, the problem, the student, the course and when it
expires. Opening it makes (or finds) the course (no platform; context ``default`` unless
the link names one), an assignment of the problem in it and the member, starts a
learner's page session, and redirects to the student page.

A link is **single-use**: its id is claimed in Redis (``SET NX``, kept until the link
expires) the first time it is opened, so a link found later in a browser history, a proxy
log or a forwarded mail opens nothing. The page it opened stays usable (its session is
in the page's URL). Mint a link for each visit, right before sending the student to it.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

from itsdangerous import BadSignature, URLSafeSerializer
from redis import Redis
from sqlalchemy.orm import Session

from service.courses import upsert_assignment, upsert_course, upsert_member
from service.models import Assignment, Course

SALT = "jaxjudge.launch-link"
USED = "jaxjudge:launch-link:used:"
DEFAULT_CONTEXT = "default"
PROBLEM_LINK = "problem:"  # resource_link_id of a course page's assignment of a problem


class LinkRefused(Exception):
    """A link that opens nothing: tampered with (400), expired or used before (410)."""

    def __init__(self, message: str, status: int = 410) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class LaunchLink:
    tenant_id: int
    problem: str
    student_id: str
    name: str
    course: str
    expires_at: int  # unix seconds
    link_id: str


def _serializer(secret: bytes) -> URLSafeSerializer:
    return URLSafeSerializer(secret, salt=SALT)


def mint(secret: bytes, *, tenant_id: int, problem: str, student_id: str, name: str = "",
         course: str | None = None, seconds: int) -> tuple[str, int]:
    """A signed token for one student and one problem; the token and when it expires
    (unix seconds)."""
    expires = int(time.time()) + seconds
    body = {"t": tenant_id, "p": problem, "s": student_id, "n": name,
            "c": course or DEFAULT_CONTEXT, "e": expires, "i": secrets.token_urlsafe(12)}
    return _serializer(secret).dumps(body), expires


def read(secret: bytes, token: str) -> LaunchLink:
    """The link a token carries, if its signature holds and it has not expired."""
    try:
        body: dict[str, Any] = _serializer(secret).loads(token)
        link = LaunchLink(tenant_id=int(body["t"]), problem=str(body["p"]),
                          student_id=str(body["s"]), name=str(body["n"]),
                          course=str(body["c"]), expires_at=int(body["e"]),
                          link_id=str(body["i"]))
    except (BadSignature, KeyError, TypeError, ValueError):
        raise LinkRefused("This link is not one the judge made (or it was cut short).",
                          400) from None
    if link.expires_at <= time.time():
        raise LinkRefused("This link has expired.")
    return link


def claim(redis: Redis, link: LaunchLink) -> None:
    """Use the link up; :class:`LinkRefused` when it was used before."""
    ttl = max(1, link.expires_at - int(time.time()) + 1)
    if not redis.set(USED + link.link_id, 1, nx=True, ex=ttl):
        raise LinkRefused("This link was used before; each link opens the page once.")


def course_page_assignment(s: Session, tenant_id: int, context: str,
                           problem: str, title: str = "") -> tuple[Course, Assignment]:
    """The course without a platform named ``context`` and its assignment of
    ``problem``, made if missing (launch links, and instructors signed in with a key)."""
    course = upsert_course(s, tenant_id=tenant_id, platform_id=None, context_id=context,
                           title=title or context)
    assignment = upsert_assignment(s, course, resource_link_id=PROBLEM_LINK + problem,
                                   problem=problem, title=problem)
    return course, assignment


def open_link(s: Session, link: LaunchLink) -> Assignment:
    """The assignment a link opens, with its course and the student as a member."""
    course, assignment = course_page_assignment(s, link.tenant_id, link.course, link.problem)
    upsert_member(s, course.id, link.student_id, name=link.name, roles=["Learner"],
                  launched=True)
    return assignment
