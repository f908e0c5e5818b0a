"""The pages: a student page per assignment and the instructor pages, server-rendered,
a sibling of the REST API and the LTI endpoints over the same service layer (never
calling the API over HTTP, never importing it). Page sessions live in Redis and travel
in the URL (:mod:`app.sessions`, installed by the factory).

:func:`include` is what the factory includes: CSRF protection on every page form
(Flask-WTF; the token lives in the page session), the security headers, the pages'
body and rate limits, and the blueprints ``web`` (sign-in, launch links, assets),
``student`` and ``instructor``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask, Response, g, request, url_for
from flask_wtf.csrf import CSRFError, CSRFProtect

from app.limits import body_limit, exempt, limit_submitting, page_submission_body
from app.pages import secure_headers
from app.services import Services
from web.access import PageError, error_page

PAGE_BLUEPRINTS = ("web", "student", "instructor")
EDITOR = Path(__file__).parent / "static" / "dist" / "editor.js"  # `make install` builds it
csrf = CSRFProtect()


def editor_js() -> str | None:
    """The bundled editor's URL, or None where it was not built (no npm): the page then
    keeps its plain textarea."""
    return url_for("web.static", filename="dist/editor.js") if EDITOR.is_file() else None


def include(app: Flask, svc: Services) -> None:
    from web import entry, instructor, student

    settings = svc.settings
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
        return {"editor_js": editor_js}

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
    body_limit(app, "student.submit_code", page_submission_body(settings, svc.judge))
    body_limit(app, "instructor.upload_batch", settings.max_request_bytes)
    body_limit(app, "instructor.upload_package", settings.max_request_bytes)
    limit_submitting(app, svc.limiter, settings, "student.submit_code",
                     "instructor.upload_batch")
    exempt(app, svc.limiter, "web.static", "web.highlight_css")
