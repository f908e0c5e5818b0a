"""The pages: a student page per assignment and the instructor pages, server-rendered,
a blueprint beside the REST API over the same service layer (never calling the API over
HTTP). Page sessions live in Redis and travel in the URL (:mod:`web.session`).

:func:`register` installs them in the app: the page sessions as Flask's session, CSRF
protection on every page form (Flask-WTF; the token lives in the page session), the
security headers, and the blueprints ``web`` (sign-in, launch links, assets), ``student``
and ``instructor``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask, Response, g, request, url_for
from flask_wtf.csrf import CSRFError, CSRFProtect
from redis import Redis

from service.secret import secret_key
from service.settings import ServiceSettings
from web.access import PageError, error_page, nonce, secure_headers
from web.session import PageSessions, Sessions

PAGE_BLUEPRINTS = ("web", "student", "instructor", "lti")
EDITOR = Path(__file__).parent / "static" / "dist" / "editor.js"  # `make install` builds it
csrf = CSRFProtect()


def editor_js() -> str | None:
    """The bundled editor's URL, or None where it was not built (no npm): the page then
    keeps its plain textarea."""
    return url_for("web.static", filename="dist/editor.js") if EDITOR.is_file() else None


def register(app: Flask, settings: ServiceSettings, redis: Redis) -> None:
    from web import entry, instructor, student

    app.session_interface = PageSessions(Sessions(redis, settings.web_session_seconds))
    app.secret_key = secret_key(settings)
    # Only the page blueprints check tokens (the REST API authenticates with keys, and
    # an LMS's launch POST cannot carry one). The token lives as long as its session;
    # pages send no Referer (no-referrer), so Flask-WTF's HTTPS Referer check is off:
    # the token itself, kept in a session named by a 256-bit secret, is the proof.
    app.config.update(WTF_CSRF_CHECK_DEFAULT=False, WTF_CSRF_TIME_LIMIT=None,
                      WTF_CSRF_SSL_STRICT=False)
    csrf.init_app(app)
    for module in (entry, student, instructor):
        app.register_blueprint(module.bp)

    @app.url_value_preprocessor
    def _sid(endpoint: str | None, values: dict[str, Any] | None) -> None:
        # The pages' views take the session id from g (web.access.principal), and
        # url_for fills it in (below); other blueprints' views keep their argument.
        if values and "sid" in values and endpoint and \
                endpoint.split(".")[0] in ("student", "instructor"):
            g.sid = values.pop("sid")

    @app.url_defaults
    def _add_sid(endpoint: str, values: dict[str, Any]) -> None:
        if "sid" not in values and g.get("sid") and \
                app.url_map.is_endpoint_expecting(endpoint, "sid"):
            values["sid"] = g.sid

    @app.context_processor
    def _helpers() -> dict[str, Any]:
        return {"csp_nonce": nonce, "editor_js": editor_js}

    @app.before_request
    def _check_csrf() -> None:
        if request.method == "POST" and request.blueprint in ("student", "instructor"):
            csrf.protect()

    @app.after_request
    def _headers(response: Response) -> Response:
        if request.blueprint in PAGE_BLUEPRINTS:
            if request.endpoint == "web.static":
                response.headers.setdefault("Cache-Control", "public, max-age=300")
            secure_headers(response, settings.web_frame_ancestors)
        return response

    def _page_error(exc: PageError) -> Response:
        return error_page(exc)

    def _csrf_error(exc: CSRFError) -> Response:
        return error_page(PageError(400, "This form has expired", "The form was sent "
                                    "without its security token (or with a stale one). "
                                    "Go back, reload the page and send it again."))

    app.register_error_handler(PageError, _page_error)
    app.register_error_handler(CSRFError, _csrf_error)
