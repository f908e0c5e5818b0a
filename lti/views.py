"""The LTI endpoints (blueprint ``lti``): OIDC login initiation, the launch, the tool's
JWKS, Dynamic Registration, the Canvas developer-key JSON, and the problem picker of Deep
Linking.

A sibling of the REST API (:mod:`api`) and the pages (:mod:`web`), imported by neither
and importing neither: :func:`include` is what the application factory calls. It also
offers the gradebook the course's roster from the LMS (:attr:`Services.rosters`,
NRPS), which the pages read without knowing where it comes from.

A launch ends in a page session carried in the URL (``/app/<sid>/...``,
:mod:`app.sessions`), so nothing after it needs a cookie: it works inside the LMS's
iframe when the browser blocks third-party cookies. The only cookie is the login's state
cookie, checked when the browser sends it back (see :mod:`lti.launch`).

Every refusal is an HTML page with a 4xx status and one sentence of why; no token,
key or trace is ever in it.
"""

from __future__ import annotations

import hmac
import secrets
from datetime import datetime
from typing import Any

from flask import (
    Blueprint,
    Flask,
    Response,
    current_app,
    g,
    jsonify,
    redirect,
    render_template,
    request,
)
from sqlalchemy.orm import Session
from werkzeug.wrappers import Response as BaseResponse

from app.pages import nonce, secure_headers
from app.services import Services, services
from app.sessions import Principal, Sessions
from judge.errors import UsageError
from lti import dates, deeplink, keys, nrps, registration
from lti.keysets import KeySets
from lti.launch import (
    CUSTOM,
    DEEP_LINKING_REQUEST,
    STATE_COOKIE,
    Launch,
    LaunchError,
    begin_login,
    complete_launch,
    existing_assignment,
    record,
)
from lti.tokens import Tokens
from service import deliveries
from service.library import ProblemUnavailable
from service.models import LtiPlatform

bp = Blueprint("lti", __name__, template_folder="templates")
PICK = "lti_pick"  # the page session's record of what the picker is for


def include(app: Flask, svc: Services) -> None:
    """The endpoints, the platforms' key sets of this process, and the roster."""
    app.extensions.setdefault("jaxjudge.lti.keysets", KeySets())
    app.register_blueprint(bp)
    # The platform posts the login and the launch from its own origin: no CSRF token can
    # be in them (state and nonce are their protection). The picker checks its own token.
    csrf = app.extensions.get("csrf")
    if csrf is not None:
        csrf.exempt(bp)
    svc.rosters = lambda course_id: nrps.sync_course(svc.db, svc.settings, course_id,
                                                     svc.redis)


def keysets() -> KeySets:
    found: KeySets = current_app.extensions["jaxjudge.lti.keysets"]
    return found


def base_url() -> str:
    """The tool's public base URL: ``public_url``, else the request's (ProxyFix applied)."""
    return services().settings.public_url.rstrip("/") or request.url_root.rstrip("/")


def sessions() -> Sessions:
    conf = services().settings
    return Sessions(services().redis, conf.web_session_seconds)


# -- pages: CSP, errors


@bp.after_request
def _headers(response: Response) -> Response:
    if response.mimetype == "text/html" and "Content-Security-Policy" not in response.headers:
        once = nonce()
        form_action = " ".join(["'self'", *g.get("form_action", [])])
        ancestors = " ".join(services().settings.web_frame_ancestors) or "'none'"
        response.headers["Content-Security-Policy"] = (
            f"default-src 'none'; style-src 'self' 'nonce-{once}'; "
            f"script-src 'self' 'nonce-{once}'; img-src 'self' data:; connect-src 'self'; "
            f"object-src 'none'; form-action {form_action}; base-uri 'none'; "
            f"frame-ancestors {ancestors}")
    return secure_headers(response, services().settings.web_frame_ancestors)


def error_page(message: str, status: int) -> Response:
    response = Response(render_template("lti/error.html", message=message, status=status),
                        status=status, mimetype="text/html")
    return response


@bp.errorhandler(LaunchError)
def _launch_error(exc: LaunchError) -> Response:
    return error_page(str(exc), exc.status)


@bp.errorhandler(UsageError)
def _usage_error(exc: UsageError) -> Response:
    return error_page(str(exc), 400)


# -- login and launch


@bp.route("/lti/login", methods=["GET", "POST"])
def login() -> BaseResponse:
    """OIDC third-party login initiation: on to the platform's authorization endpoint."""
    params = {k: v for k, v in request.values.items() if isinstance(v, str)}
    settings = services().settings
    with services().db.session() as s:
        got = begin_login(s, services().redis, settings, params, base_url() + registration.LAUNCH,
                          request.cookies.get(STATE_COOKIE))
    response = redirect(got.redirect_url, 302)
    response.set_cookie(STATE_COOKIE, got.browser, max_age=settings.lti_state_seconds,
                        path="/lti/", secure=True, httponly=True, samesite="None")
    return response


@bp.post("/lti/launch")
def launch() -> BaseResponse:
    """The platform's form post of ``id_token`` and ``state``: verified, then on to the
    student page, the gradebook, or the picker. A resource link's launch takes the
    assignment's dates from the LMS (:mod:`lti.dates`): the line item, when it is read,
    between two transactions (no transaction waits on the LMS), and the grades a changed
    date moves are queued once the launch's transaction is committed."""
    svc = services()
    with svc.db.session() as s:
        got = complete_launch(s, svc.redis, svc.settings, keysets(),
                              request.form.get("id_token", ""), request.form.get("state", ""),
                              request.cookies.get(STATE_COOKIE))
        if got.message_type == DEEP_LINKING_REQUEST:
            return _deep_linking(s, got)
        problem = got.problem
        if problem is None:
            found = existing_assignment(s, got)
            problem = found.problem if found is not None else None
    offer = dates.offered(got)
    end = None
    if problem is not None and not offer.due_given:
        end = dates.lineitem_end(got, Tokens(svc.db, svc.settings, svc.redis))
    with svc.db.session() as s:
        response, opened = _resource_link(s, got, problem, offer, end)
    deliveries.queue_opened(svc.celery, svc.settings, opened)
    return response


def _principal(got: Launch, course_id: int, assignment_id: str | None,
               instructor: bool) -> Principal:
    return Principal(tenant_id=got.platform.tenant_id,
                     role="instructor" if instructor else "learner", via="lti",
                     user_id=got.user_id, name=got.name[:300], course_id=course_id,
                     assignment_id=assignment_id, platform_id=got.platform.id)


def _start(principal: Principal, pick: dict[str, Any] | None = None) -> str:
    store = sessions()
    sid = store.start(principal)
    if pick is not None:
        store.save(sid, {"principal": principal.model_dump(), PICK: pick})
    return sid


def landing(sid: str, principal: Principal) -> str:
    """Where a session lands: the student page, or the assignment's gradebook."""
    if principal.role == "instructor":
        return f"/app/{sid}/assignments/{principal.assignment_id}/gradebook"
    return f"/app/{sid}/assignments/{principal.assignment_id}"


def _pick_record(got: Launch, mode: str) -> dict[str, Any]:
    return {"mode": mode, "platform_id": got.platform.id, "deployment_id": got.deployment_id,
            "settings": got.deep_linking, "claims": got.claims, "csrf":
            secrets.token_urlsafe(32)}


def _deep_linking(s: Session, got: Launch) -> BaseResponse:
    if not got.instructor:
        raise LaunchError("only instructors can choose a problem for the course", 403)
    recorded = record(s, got)
    sid = _start(_principal(got, recorded.course.id, None, True), _pick_record(got, "deep_link"))
    return redirect(f"/app/{sid}/lti/pick", 303)


def _resource_link(s: Session, got: Launch, problem: str | None, offer: dates.Offered,
                   lineitem_end: datetime | None) -> tuple[BaseResponse, list[str]]:
    """Where the launch of a resource link (naming ``problem``, or none yet) goes, and
    the scores its dates opened."""
    if problem is None:
        if not got.instructor:
            raise LaunchError("this link names no problem yet: ask your instructor to "
                              "choose one", 404)
        recorded = record(s, got)
        sid = _start(_principal(got, recorded.course.id, None, True),
                     _pick_record(got, "resource_link"))
        return redirect(f"/app/{sid}/lti/pick", 303), []
    if problem not in services().library.ids(got.platform.tenant_id):
        raise LaunchError(f"this link names the problem {problem!r}, which this judge does "
                          "not have", 404)
    recorded = record(s, got, problem)
    assert recorded.assignment is not None
    opened = dates.take(s, recorded.assignment, offer, lineitem_end, now=services().clock())
    principal = _principal(got, recorded.course.id, recorded.assignment.id, got.instructor)
    return redirect(landing(_start(principal), principal), 303), opened


# -- the picker (Deep Linking, or a resource link without a problem)


def _picking(sid: str) -> tuple[Sessions, dict[str, Any], Principal, dict[str, Any]]:
    store = sessions()
    data = store.load(sid)
    if data is None:
        raise LaunchError("this page has expired: open the tool again from the course", 403)
    principal = Principal.model_validate(data["principal"])
    pick = data.get(PICK)
    if principal.role != "instructor" or principal.via != "lti" or not pick:
        raise LaunchError("only an instructor who opened the tool to choose a problem can "
                          "reach this page", 403)
    return store, data, principal, pick


@bp.get("/app/<sid>/lti/pick")
def pick(sid: str) -> Response:
    _store, _data, principal, choice = _picking(sid)
    query = request.args.get("q", "")[:200]
    skill = request.args.get("skill", "")[:200]
    problems = deeplink.catalog_problems(services().library, principal.tenant_id)
    found = deeplink.search(problems, query, skill)
    return Response(render_template(
        "lti/picker.html", sid=sid, choices=found, query=query, skill=skill,
        skills=deeplink.skills(problems), csrf=choice["csrf"], name=principal.name,
        mode=choice["mode"]), mimetype="text/html")


@bp.post("/app/<sid>/lti/pick")
def picked(sid: str) -> BaseResponse:
    store, data, principal, choice = _picking(sid)
    token = request.form.get("csrf_token", "")
    if not hmac.compare_digest(token.encode(), str(choice["csrf"]).encode()):
        raise LaunchError("the form is stale (CSRF token): reload the page", 400)
    problem_id = request.form.get("problem", "")
    if problem_id not in services().library.ids(principal.tenant_id):
        raise LaunchError("no such problem", 404)
    try:
        problem = services().library.get(principal.tenant_id, problem_id)
    except ProblemUnavailable as exc:  # listed by id, but its package does not load
        raise LaunchError(f"the problem {problem_id} cannot be loaded ({exc}); choose "
                          "another, or fix its package and choose it again", 503) from None
    settings = services().settings
    with services().db.session() as s:
        platform = s.get(LtiPlatform, choice["platform_id"])
        if platform is None or platform.tenant_id != principal.tenant_id:
            raise LaunchError("the platform of this course is no longer registered", 403)
        if choice["mode"] == "deep_link":
            chosen = deeplink.picked_dates({k: v for k, v in request.form.items()
                                            if isinstance(v, str)})
            item = deeplink.content_item(problem, base_url() + registration.LAUNCH, chosen)
            token = deeplink.response_jwt(s, settings, platform, choice["deployment_id"],
                                          choice["settings"], [item])
            return_url = choice["settings"]["deep_link_return_url"]
            g.form_action = [return_url]
            del data[PICK]
            store.save(sid, data)
            return Response(render_template("lti/autopost.html", action=return_url,
                                            jwt=token, title=problem.spec.title),
                            mimetype="text/html")
        claims = choice["claims"]
        got = Launch(platform=platform, claims=claims, message_type=claims[
            "https://purl.imsglobal.org/spec/lti/claim/message_type"],
            deployment_id=choice["deployment_id"], user_id=principal.user_id,
            roles=list(claims.get("https://purl.imsglobal.org/spec/lti/claim/roles", [])),
            context=claims["https://purl.imsglobal.org/spec/lti/claim/context"],
            custom=custom if isinstance(custom := claims.get(CUSTOM), dict) else {})
        recorded = record(s, got, problem_id)
        assert recorded.assignment is not None
        opened = dates.take(s, recorded.assignment, dates.offered(got), None,
                            now=services().clock())
    deliveries.queue_opened(services().celery, settings, opened)
    principal = principal.model_copy(update={"assignment_id": recorded.assignment.id})
    store.save(sid, {"principal": principal.model_dump()})
    return redirect(landing(sid, principal), 303)


# -- keys, configuration, registration


@bp.get("/lti/jwks.json")
def jwks() -> Response:
    """The tool's public keys; the first key is made here if the tool has none yet (a
    platform may fetch the set before the tool ever signed anything)."""
    keys.ensure_key(services().db, services().settings)
    response = jsonify(keys.jwks(services().db))
    response.headers["Cache-Control"] = "public, max-age=300"
    return response


@bp.get("/lti/canvas.json")
def canvas() -> Response:
    response = jsonify(registration.canvas_config(base_url()))
    response.headers["Cache-Control"] = "no-cache"
    return response


@bp.get("/lti/register")
def register() -> Response:
    """LTI Dynamic Registration, opened by the LMS with ``openid_configuration`` and
    ``registration_token`` on the URL ``jaxjudge lti register-url`` printed."""
    config_url = request.args.get("openid_configuration", "")
    if not config_url:
        raise LaunchError("open this link from the LMS's tool registration page (it adds "
                          "openid_configuration)", 400)
    with services().db.session() as s:
        done = registration.register(s, services().redis, base_url(),
                                     request.args.get("invite", ""), config_url,
                                     request.args.get("registration_token") or None,
                                     services().settings.webhook_allow)
    return Response(render_template("lti/registered.html", done=done), mimetype="text/html")
