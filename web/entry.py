"""Ways in without an LMS, and the pages' assets.

- ``/app/signin``: an instructor (or admin) pastes an API key; a page session for every
  course of the key's tenant starts, and the browser goes to ``/app/<sid>/courses``. The
  form has no CSRF token (there is no session yet to keep one in); it needs no token,
  since what it proves is the key, which a forging page does not have, and what it makes
  is a new session in a new URL, nothing of the visitor's.
- ``/launch/<token>``: a launch link (:mod:`service.launch_links`), single-use, opens the
  student page of one problem for one student.
- ``/assets/...``: the stylesheet, the pages' script, the bundled editor and Pygments'
  rules, all served from here (nothing is loaded from another host).
"""

from __future__ import annotations

from flask import Blueprint, Response, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from app.services import services
from app.sessions import Principal, Sessions
from service.keys import authenticate
from service.launch_links import LinkRefused, claim, open_link, read
from service.models import ROLE_RANK, Role
from service.secret import secret_key
from web.access import PageError, http_error
from web.markdown import stylesheet

bp = Blueprint("web", __name__, template_folder="templates", static_folder="static",
               static_url_path="/assets")


def sessions() -> Sessions:
    svc = services()
    return Sessions(svc.redis, svc.settings.web_session_seconds)


bp.register_error_handler(Exception, http_error)


@bp.get("/assets/highlight.css")
def highlight_css() -> ResponseReturnValue:
    return Response(stylesheet(), mimetype="text/css")


@bp.get("/app/signin")
def signin() -> str:
    return render_template("signin.html")


@bp.post("/app/signin")
def signin_key() -> ResponseReturnValue:
    key = request.form.get("api_key", "").strip()
    with services().db.session() as s:
        found = authenticate(s, key) if key else None
        if found is None:
            raise PageError(401, "Not signed in", "That API key is unknown or revoked.")
        if ROLE_RANK[Role(found.role)] < ROLE_RANK[Role.INSTRUCTOR]:
            raise PageError(403, "Not signed in", "Sign in with an instructor's or an "
                            "admin's key; this one is a client key.")
        who = Principal(tenant_id=found.tenant_id, role="instructor", via="key",
                        user_id=f"key:{found.id}", name=found.name or found.tenant.name)
    sid = sessions().start(who)
    return redirect(url_for("instructor.courses_page", sid=sid), 303)


@bp.get("/launch/<token>")
def launch(token: str) -> ResponseReturnValue:
    svc = services()
    try:
        link = read(secret_key(svc.settings), token)
        with svc.db.session() as s:
            assignment = open_link(s, link)
            who = Principal(tenant_id=link.tenant_id, role="learner", via="link",
                            user_id=link.student_id, name=link.name,
                            course_id=assignment.course_id, assignment_id=assignment.id)
        claim(svc.redis, link)
    except LinkRefused as exc:
        raise PageError(exc.status, "This link does not open", f"{exc} Ask for a new "
                        "link where you found this one.") from None
    sid = sessions().start(who)
    return redirect(url_for("student.assignment", sid=sid, assignment_id=who.assignment_id),
                    303)
