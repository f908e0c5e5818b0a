"""What every server-rendered page shares, whichever sibling serves it (the student and
instructor pages of :mod:`web`, the LTI endpoints and picker of :mod:`lti.views`): the
page session as Flask's session (:mod:`app.sessions`), the secret that signs what needs
signing, the CSP nonce of a response, and the security headers.

A sibling calls :func:`secure_headers` on its own responses; a view that must post
elsewhere (the LTI deep-linking return) sets its own Content-Security-Policy first.
"""

from __future__ import annotations

import secrets
from typing import Any

from flask import Flask, Response, g
from redis import Redis

from app.sessions import PageSessions, Sessions
from service.secret import secret_key
from service.settings import ServiceSettings


def install(app: Flask, settings: ServiceSettings, redis: Redis) -> None:
    """Page sessions as ``flask.session``, the app's secret, and ``csp_nonce()`` in every
    template."""
    app.session_interface = PageSessions(Sessions(redis, settings.web_session_seconds))
    app.secret_key = secret_key(settings)

    @app.context_processor
    def _nonce() -> dict[str, Any]:
        return {"csp_nonce": nonce}


def nonce() -> str:
    """This response's nonce for the styles the editor adds (CodeMirror's)."""
    if "csp_nonce" not in g:
        g.csp_nonce = secrets.token_urlsafe(16)
    found: str = g.csp_nonce
    return found


def content_security_policy(frame_ancestors: list[str]) -> str:
    return "; ".join((
        "default-src 'self'",
        "script-src 'self'",
        f"style-src 'self' 'nonce-{nonce()}'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors " + (" ".join(frame_ancestors) or "'none'"),
    ))


def secure_headers(response: Response, frame_ancestors: list[str]) -> Response:
    """The headers of every page response (HTML, the live status's JSON, downloads).
    A view that must post elsewhere (the LTI deep-linking return) sets its own CSP."""
    response.headers.setdefault("Content-Security-Policy",
                                content_security_policy(frame_ancestors))
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers.setdefault("Cache-Control", "no-store")
    return response
