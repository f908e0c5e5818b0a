"""The test platform's LTI Advantage services, mounted on its Flask app by :func:`install`:

- ``POST /token``: the OAuth2 token endpoint (client_credentials with a JWT client
  assertion, RFC 7523). The assertion is verified by lti1p3platform against the tool's key
  set, fetched from the tool's JWKS URL; on top of what the library checks (signature,
  RS256, ``kid``), ``iss`` = ``sub`` = the client id, ``aud`` = this token URL, ``exp`` in
  the future and ``jti`` used once. The token (signed by lti1p3platform with the
  services' own key) carries the granted scopes.
- AGS (lti1p3platform's ``AssignmentsGradesService``): ``GET|POST /ags/<ctx>/lineitems``,
  ``GET /ags/<ctx>/lineitems/<id>`` and ``POST /ags/<ctx>/lineitems/<id>/scores``. Every
  score body received is recorded (:attr:`PlatformServices.scores`); a score whose
  timestamp is not after the last one stored for its user is answered 409, as Moodle does.
- NRPS (``NamesRoleProvisioningService``): ``GET /nrps/<ctx>/memberships``, paged by
  ``limit`` with a ``Link: <...>; rel="next"`` header (and the body's ``next``).
- :attr:`PlatformServices.fail_with`: answer every service request with this status
  (503: the platform overloaded); the platform's server itself can be stopped to be down.
  :attr:`~PlatformServices.lose_answers`: take a score, then answer 502 (a proxy lost
  the answer); :attr:`~PlatformServices.hold_seconds`: take a score, answer it later.

What it reads from the platform, when a request comes (so they may be set after
:func:`install`): ``platform.app`` (Flask), ``platform.base`` (its base URL),
``platform.client_id`` (the tool's client id) and ``platform.tool_jwks_url`` (the tool's
key set; ``/lti/jwks.json`` on the tool).
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from flask import Flask, Response, jsonify, request
from lti1p3platform.exceptions import LineItemNotFoundException, LtiException
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.membership import Context
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request, TRequest
from lti1p3platform.response import generate_next_link
from lti1p3platform.score import UpdateScoreStatus
from lti1p3platform.service_connector import (
    AssignmentsGradesService,
    NamesRoleProvisioningService,
    TPage,
)

SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def _private_pem() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


@dataclass
class Score:
    """One score body as received, with the line item it was posted to and the answer."""

    lineitem: str
    body: dict[str, Any]
    status: int


@dataclass
class PlatformServices:
    platform: Any
    lineitems: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # ctx -> id
    scores: list[Score] = field(default_factory=list)
    members: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # ctx -> members
    contexts: dict[str, dict[str, str]] = field(default_factory=dict)  # ctx -> title, label
    tokens: list[dict[str, Any]] = field(default_factory=list)  # grants: scope, client id
    token_errors: list[str] = field(default_factory=list)
    fail_with: int | None = None
    lose_answers: int = 0  # scores taken, then answered 502 (the answer lost on the way)
    hold_seconds: float = 0.0  # scores taken, then answered this much later
    page_requests: int = 0
    jtis: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _keys: tuple[str, str] = field(default_factory=_private_pem)

    # -- URLs the tool is given (in launches, by hand in tests)

    @property
    def token_url(self) -> str:
        return f"{self.platform.base}/token"

    def lineitems_url(self, context: str) -> str:
        return f"{self.platform.base}/ags/{context}/lineitems"

    def lineitem_url(self, context: str, lineitem_id: str) -> str:
        return f"{self.lineitems_url(context)}/{lineitem_id}"

    def memberships_url(self, context: str) -> str:
        return f"{self.platform.base}/nrps/{context}/memberships"

    # -- test set-up and inspection

    def add_lineitem(self, context: str, label: str = "Exercise", score_maximum: float = 1,
                     resource_id: str = "", resource_link_id: str = "") -> str:
        """A line item in ``context``; its URL."""
        lineitem_id = uuid.uuid4().hex[:12]
        with self.lock:
            self.lineitems.setdefault(context, {})[lineitem_id] = {
                "id": self.lineitem_url(context, lineitem_id), "label": label,
                "scoreMaximum": score_maximum, "resourceId": resource_id,
                "resourceLinkId": resource_link_id}
        return self.lineitem_url(context, lineitem_id)

    def set_members(self, context: str, members: list[dict[str, Any]],
                    title: str = "Course") -> None:
        with self.lock:
            self.members[context] = members
            self.contexts[context] = {"title": title, "label": title[:20]}

    def scores_for(self, user_id: str, lineitem_url: str | None = None) -> list[dict[str, Any]]:
        """The score bodies received for ``user_id`` (that the platform took: 2xx)."""
        return [s.body for s in self.scores if s.body.get("userId") == user_id
                and s.status < 300 and (lineitem_url is None or s.lineitem == lineitem_url)]

    def scopes_of(self, authorization: str) -> list[str]:
        """The scopes a bearer token grants (none when it is not one of ours)."""
        try:
            claims = Registration.decode_and_verify(authorization.removeprefix("Bearer "),
                                                    self._keys[1])
        except Exception:
            return []
        return str(claims.get("scopes", "")).split()

    # -- lti1p3platform plumbing

    def config(self) -> _Config:
        return _Config(services=self)

    def access_token(self, form: dict[str, Any]) -> dict[str, Any]:
        """Check the client assertion beyond what lti1p3platform does, then let it grant."""
        assertion = form.get("client_assertion", "")
        if form.get("client_assertion_type") != ASSERTION_TYPE:
            raise LtiException("client_assertion_type is not jwt-bearer")
        config = self.config()
        claims = config.tool_validate_and_decode(assertion)  # signature by the tool's JWKS
        client_id = self.platform.client_id
        if claims.get("iss") != client_id or claims.get("sub") != client_id:
            raise LtiException("iss and sub must be the client id")
        aud = claims.get("aud")
        if self.token_url not in (aud if isinstance(aud, list) else [aud]):
            raise LtiException("aud is not the token URL")
        exp, iat = claims.get("exp"), claims.get("iat")
        if not isinstance(exp, int | float) or exp < time.time():
            raise LtiException("assertion expired or without exp")
        if not isinstance(iat, int | float) or iat > time.time() + 60:
            raise LtiException("assertion without iat, or issued in the future")
        jti = claims.get("jti")
        with self.lock:
            if not jti or jti in self.jtis:
                raise LtiException("jti missing or used before")
            self.jtis.add(jti)
        granted = dict(config.get_access_token(form))
        with self.lock:
            self.tokens.append({"scope": granted["scope"], "client_id": client_id})
        return granted


class _Config(LTI1P3PlatformConfAbstract):
    """lti1p3platform's platform configuration: a registration built from the platform's
    attributes now (they may be set after install)."""

    def init_platform_config(self, **kwargs: Any) -> None:
        self.services: PlatformServices = kwargs["services"]
        self._jwt_verify_options = {"verify_aud": False, "require": ["exp", "iat"]}

    def get_registration_by_params(self, **kwargs: Any) -> Registration:
        services = self.services
        private, public = services._keys
        return (Registration().set_iss(services.platform.base)
                .set_client_id(services.platform.client_id)
                .set_platform_private_key(private).set_platform_public_key(public)
                .set_tool_key_set_url(services.platform.tool_jwks_url))

    def get_tool_key_set(self) -> Any:
        self.get_registration()
        return super().get_tool_key_set()


class _FlaskRequest(Request):
    def build_metadata(self, req: Any) -> TRequest:
        get_data: dict[str, Any] = dict(req.args)
        for name in ("page", "limit"):
            if name in get_data:
                get_data[name] = int(get_data[name])
        return {"method": req.method, "form_data": dict(req.form), "get_data": get_data,
                "headers": req.headers, "content_type": req.content_type, "path": req.path,
                "json": req.get_json(silent=True, force=True) if req.data else None}


class _Grades(AssignmentsGradesService):
    def __init__(self, services: PlatformServices, context: str, lineitem_id: str | None):
        self.services, self.context = services, context
        config = services.config()
        config.get_registration()
        super().__init__(_FlaskRequest(request), config, services.lineitems_url(context),
                         services.lineitem_url(context, lineitem_id) if lineitem_id else None,
                         allow_creating_lineitems=True)

    def _items(self) -> dict[str, dict[str, Any]]:
        return self.services.lineitems.setdefault(self.context, {})

    def find_lineitems(self, page: int = 1, limit: int | None = None, line_item_id: str | None = None,
                       resource_link_id: str | None = None, resource_id: str | None = None,
                       tag: str | None = None) -> TPage:
        items = [i for i in self._items().values()
                 if (resource_link_id is None or i.get("resourceLinkId") == resource_link_id)
                 and (resource_id is None or i.get("resourceId") == resource_id)]
        return {"content": items, "has_next": False, "next": None}

    def find_lineitem(self, line_item_id: str) -> Any:
        try:
            return self._items()[line_item_id]
        except KeyError:
            raise LineItemNotFoundException(line_item_id) from None

    def create_lineitem(self, creation_data: Any) -> Any:
        url = self.services.add_lineitem(
            self.context, creation_data.get("label", ""), creation_data.get("scoreMaximum", 1),
            creation_data.get("resourceId", ""), creation_data.get("resourceLinkId", ""))
        return self._items()[url.rsplit("/", 1)[1]]

    def update_lineitem(self, update_data: Any) -> Any:
        item = self.find_lineitem(update_data["id"])
        item.update({k: v for k, v in update_data.items() if k != "id"})
        return item

    def delete_lineitem(self, line_item_id: str) -> None:
        self.find_lineitem(line_item_id)
        del self._items()[line_item_id]

    def update_score(self, line_item_id: str, score: Any) -> UpdateScoreStatus:
        """Moodle's rule: a timestamp not after the last one taken for the user is 409."""
        url = self.services.lineitem_url(self.context, line_item_id)
        self.find_lineitem(line_item_id)
        with self.services.lock:
            taken = [datetime.fromisoformat(s.body["timestamp"]) for s in self.services.scores
                     if s.lineitem == url and s.status < 300
                     and s.body.get("userId") == score.get("userId")]
            stamp = datetime.fromisoformat(score["timestamp"])
            status = (UpdateScoreStatus.OLD_TIMESTAMP if taken and stamp <= max(taken)
                      else UpdateScoreStatus.SUCCESS)
            self.services.scores.append(Score(url, score, 409 if taken and stamp <= max(taken)
                                              else 200))
        return status

    def get_results(self, line_item_id: str, page: int = 1, limit: int | None = None,
                    user_id: str | None = None) -> TPage:
        return {"content": [], "has_next": False, "next": None}


class _Roster(NamesRoleProvisioningService):
    def __init__(self, services: PlatformServices, context: str):
        self.services, self.context = services, context
        config = services.config()
        config.get_registration()
        super().__init__(_FlaskRequest(request), config, services.memberships_url(context))

    def get_member_data_page(self, page: int = 1, limit: int | None = None,
                             role: str | None = None, since: str | None = None) -> TPage:
        members = self.services.members.get(self.context, [])
        self.services.page_requests += 1
        if limit is None:
            return {"content": members, "has_next": False, "next": None}
        start = (page - 1) * limit
        return {"content": members[start:start + limit],
                "has_next": start + limit < len(members), "next": None}

    def get_context_by_id(self) -> Context:
        found = self.services.contexts.get(self.context, {"title": "", "label": ""})
        return Context(id=self.context, label=found["label"], title=found["title"])


def _answer(resp: Any) -> Response:
    out = jsonify(resp.result) if resp.result is not None else Response(resp.message)
    out.status_code = resp.code
    if resp.result is not None:
        out.content_type = resp.media_type
    return out


def install(platform: Any) -> PlatformServices:
    """Mount the services on ``platform.app``; they are ``platform.services`` too."""
    services = PlatformServices(platform)
    platform.services = services
    app: Flask = platform.app

    @app.before_request
    def _failing() -> Response | None:
        path = request.path
        if services.fail_with and path.startswith(("/token", "/ags/", "/nrps/")):
            return Response("unavailable", status=services.fail_with)
        return None

    @app.post("/token")
    def _token() -> Response:
        try:
            granted = services.access_token(dict(request.form))
        except Exception as exc:  # any refusal: the OAuth2 error of RFC 6749
            services.token_errors.append(str(exc))
            out = jsonify({"error": "invalid_client", "error_description": str(exc)})
            out.status_code = 401 if "scope" not in str(exc) else 400
            return out
        return jsonify(granted)

    @app.route("/ags/<context>/lineitems", methods=["GET", "POST"])
    def _lineitems(context: str) -> Response:
        service = _Grades(services, context, None)
        if request.method == "POST":
            return _answer(service.handle_resp(service.handle_create_lineitem))
        return _answer(service.handle_resp(service.handle_get_lineitems))

    @app.get("/ags/<context>/lineitems/<lineitem_id>")
    def _lineitem(context: str, lineitem_id: str) -> Response:
        service = _Grades(services, context, lineitem_id)
        return _answer(service.handle_resp(service.handle_get_lineitem, line_item_id=lineitem_id))

    @app.post("/ags/<context>/lineitems/<lineitem_id>/scores")
    def _scores(context: str, lineitem_id: str) -> Response:
        if request.mimetype != SCORE_TYPE:
            return Response(f"Content-Type must be {SCORE_TYPE}", status=415)
        if SCORE_SCOPE not in services.scopes_of(request.headers.get("Authorization", "")):
            return Response("the token does not grant the score scope", status=401)
        service = _Grades(services, context, lineitem_id)
        answer = _answer(service.handle_resp(service.handle_update_score,
                                             line_item_id=lineitem_id))
        if services.hold_seconds:
            time.sleep(services.hold_seconds)
        with services.lock:
            lost = services.lose_answers > 0
            services.lose_answers -= lost
        return Response("bad gateway", status=502) if lost else answer

    @app.get("/nrps/<context>/memberships")
    def _memberships(context: str) -> Response:
        service = _Roster(services, context)
        answer = service.handle_resp(service.handle_get_members)
        out = _answer(answer)
        if answer.code == 200 and answer.result.get("next"):
            out.headers["Link"] = generate_next_link(answer.result["next"])
        return out

    return services
