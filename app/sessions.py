"""Page sessions: kept server-side in Redis and carried in the page's own URL
(``/app/<sid>/...``), never in a cookie.

A tool inside an LMS runs in the platform's iframe, where browsers that block
third-party cookies (Safari, Chrome's tracking protection) would drop a session cookie;
a session id in the path survives that, and it also keeps two courses open in two tabs
apart. The id is 256 random bits, pages send ``Referrer-Policy: no-referrer`` and load
nothing from another host, so it does not leak through a Referer; it ends after
``web_session_seconds`` unused.

:class:`PageSessions` is a Flask ``SessionInterface``: ``flask.session`` is the Redis
record of the id in the path, so Flask-WTF's CSRF protection (its token in the session)
works as it does with cookies. Outside ``/app/<sid>/`` (the REST API, LTI endpoints)
the session is a throwaway that is never stored.

A session holds one :class:`Principal`: who the person is and what they may reach.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any, Literal

from flask import Flask, Request, Response
from flask.sessions import SessionInterface, SessionMixin
from pydantic import BaseModel, ConfigDict
from redis import Redis
from werkzeug.datastructures import CallbackDict

PREFIX = "jaxjudge:web:session:"
PATH = re.compile(r"^/app/([A-Za-z0-9_-]{43})(?:/|$)")

# LTI roles that reach the instructor pages (context roles, short or full URIs).
INSTRUCTOR_ROLES = ("Instructor", "TeachingAssistant", "ContentDeveloper", "Administrator")


class Principal(BaseModel):
    """Who a page session is for. ``role`` is what the pages check: a ``learner`` reaches
    the student page of ``assignment_id`` only; an ``instructor`` the instructor pages of
    ``course_id`` (or, signed in with an API key, every course of ``tenant_id``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant_id: int
    role: Literal["learner", "instructor"]
    via: Literal["lti", "link", "key"]  # an LTI launch, a launch link, an API key
    user_id: str  # LTI sub, a launch link's student id, or "key:<api key id>"
    name: str = ""
    course_id: int | None = None
    assignment_id: str | None = None
    platform_id: int | None = None


class PageSession(CallbackDict[str, Any], SessionMixin):
    def __init__(self, sid: str | None, initial: dict[str, Any] | None = None) -> None:
        def on_update(_: Any) -> None:
            self.modified = True

        super().__init__(initial or {}, on_update)
        self.sid = sid
        self.modified = False

    @property
    def principal(self) -> Principal | None:
        raw = self.get("principal")
        return Principal.model_validate(raw) if raw else None


class Sessions:
    """The Redis records behind page sessions."""

    def __init__(self, redis: Redis, ttl: int) -> None:
        self.redis = redis
        self.ttl = ttl

    def start(self, principal: Principal) -> str:
        """A new session for ``principal``; its id, for ``/app/<sid>/``."""
        sid = secrets.token_urlsafe(32)
        data = {"principal": principal.model_dump()}
        self.redis.set(PREFIX + sid, json.dumps(data), ex=self.ttl)
        return sid

    def load(self, sid: str) -> dict[str, Any] | None:
        raw = self.redis.getex(PREFIX + sid, ex=self.ttl)
        if raw is None:
            return None
        data: dict[str, Any] = json.loads(raw)
        return data

    def save(self, sid: str, data: dict[str, Any]) -> None:
        self.redis.set(PREFIX + sid, json.dumps(data), ex=self.ttl, xx=True)

    def end(self, sid: str) -> None:
        self.redis.delete(PREFIX + sid)


class PageSessions(SessionInterface):
    """``flask.session`` from the session id in the path; nothing is ever set in a
    cookie. A path with an unknown or expired id gets an empty session with ``sid``
    None, which the pages answer with "session expired, launch again"."""

    def __init__(self, sessions: Sessions) -> None:
        self.sessions = sessions

    def open_session(self, app: Flask, request: Request) -> PageSession:
        found = PATH.match(request.path)
        if found is None:
            return PageSession(None)
        data = self.sessions.load(found.group(1))
        if data is None:
            return PageSession(None)
        return PageSession(found.group(1), data)

    def save_session(self, app: Flask, session: SessionMixin, response: Response) -> None:
        assert isinstance(session, PageSession)
        if session.sid is not None and session.modified:
            self.sessions.save(session.sid, dict(session))
