"""A test LMS: an LTI 1.3 platform served over HTTP on 127.0.0.1, built on
``lti1p3platform`` (registration, OIDC login initiation, launch messages signed with the
platform's keys, Deep Linking response verification) and ``jwcrypto`` (its JWKs).

It serves:

- ``GET /jwks``: its key set (every key it published; :meth:`TestPlatform.rotate` adds
  one and signs with it from then on); ``jwks_requests`` counts the fetches;
- ``GET|POST /auth``: the OIDC authorization endpoint. It checks ``client_id``,
  ``redirect_uri`` (the tool's registered launch URL), ``login_hint`` and
  ``lti_message_hint`` (both issued by :meth:`TestPlatform.login_url` for one pending
  launch), ``scope``, ``response_type``, ``response_mode``, ``nonce`` and ``state``; and
  answers the auto-posting form of the launch (``id_token`` + ``state``) to the tool;
- ``POST /deep_link_return``: verifies the tool's Deep Linking response JWT against the
  tool's JWKS (lti1p3platform: signature, RS256, kid) and its claims (iss, aud,
  deployment, message type, the ``data`` it sent) and records the content items;
- ``GET /.well-known/openid-configuration`` and ``POST /register``: LTI Dynamic
  Registration's platform side, recording the tool's registration request;
- the LTI Advantage services of :mod:`tests.lti.platform_services` (token endpoint, AGS,
  NRPS), installed on the same app.

For tests: :meth:`TestPlatform.launch` drives login, authorization and launch through a
``requests.Session``; :meth:`TestPlatform.begin` stops after the login (the state and
nonce the tool made) and :meth:`TestPlatform.id_token` forges tokens (other claims,
algorithm, key) to post with :meth:`TestPlatform.post_launch`. A :class:`LaunchSpec`'s
``claims`` go into its message as they are (``tool_platform``, ...);
:meth:`TestPlatform.lineitem_of` sets what a link's line item says (its ``endDateTime``),
and :attr:`TestPlatform.lineitem_reads` lists the GETs of a line item.
"""

from __future__ import annotations

import html
import re
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from flask import Flask, Response, abort, jsonify, request
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request, TRequest
from servers import free_port
from werkzeug.serving import BaseWSGIServer, make_server

LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
LTI = "https://purl.imsglobal.org/spec/lti/claim/"
DL = "https://purl.imsglobal.org/spec/lti-dl/claim/"
TOOL_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-tool-configuration"


@dataclass
class PlatformKey:
    private_pem: str
    public_pem: str

    @classmethod
    def new(cls) -> PlatformKey:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return cls(
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()).decode(),
            key.public_key().public_bytes(serialization.Encoding.PEM,
                                          serialization.PublicFormat.SubjectPublicKeyInfo)
            .decode())

    @property
    def jwk(self) -> dict[str, Any]:
        return Registration.get_jwk(self.public_pem)  # jwcrypto: kid is the thumbprint

    @property
    def kid(self) -> str:
        kid: str = self.jwk["kid"]
        return kid


@dataclass
class LaunchSpec:
    """What the platform puts in one launch."""

    user: str = "student-1"
    roles: list[str] = field(default_factory=lambda: [LEARNER])
    name: str = "Ada Student"
    email: str = "ada@example.edu"
    context: str = "course-1"
    context_title: str = "JAX 101"
    resource_link: str = "link-1"
    resource_title: str = "Exercise 1"
    custom: dict[str, Any] = field(default_factory=dict)
    message_type: str = "LtiResourceLinkRequest"
    deep_link_data: str = "opaque-data-123"
    ags: bool = True
    nrps: bool = True
    lineitem: str | None = None
    claims: dict[str, Any] = field(default_factory=dict)  # more claims, set last


@dataclass
class Pending:
    """A login the tool answered: where it sends the browser, and its state and nonce."""

    spec: LaunchSpec
    auth_url: str
    params: dict[str, str]

    @property
    def state(self) -> str:
        return self.params["state"]

    @property
    def nonce(self) -> str:
        return self.params["nonce"]


class _Req(Request):
    def build_metadata(self, req: Any) -> TRequest:
        return {"method": req.method, "form_data": dict(req.form), "get_data": dict(req.args),
                "headers": req.headers, "content_type": req.content_type, "path": req.path,
                "json": None}


class _Config(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs: Any) -> None:
        self.platform: TestPlatform = kwargs["platform"]
        self._jwt_verify_options = {"verify_aud": False, "require": ["exp", "iat"]}

    def get_registration_by_params(self, **kwargs: Any) -> Registration:
        p = self.platform
        return (Registration().set_iss(p.base).set_client_id(p.client_id)
                .set_deployment_id(p.deployment_id)
                .set_oidc_login_url(p.tool_base + "/lti/login")
                .set_launch_url(p.tool_base + "/lti/launch")
                .set_deeplink_launch_url(p.tool_base + "/lti/launch")
                .set_platform_private_key(p.key.private_pem)
                .set_platform_public_key(p.key.public_pem)
                .set_tool_key_set_url(p.tool_jwks_url))


class _Login(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs: Any) -> None:
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url: str) -> str:
        return url


class _Launch(LTIAdvantageMessageLaunchAbstract):
    def render_launch_form(self, launch_data: dict[str, Any], **kwargs: Any) -> str:
        return form_page(launch_data["launch_url"], {"id_token": launch_data["id_token"],
                                                     "state": launch_data["state"]})


def form_page(action: str, fields: dict[str, str]) -> str:
    inputs = "".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
                     for k, v in fields.items())
    return (f'<!doctype html><html><body><form id="f" method="post" '
            f'action="{html.escape(action)}">{inputs}<button type="submit">Go</button>'
            f'</form><script>document.getElementById("f").submit()</script></body></html>')


def parse_form(page: str) -> tuple[str, dict[str, str]]:
    """The action and the hidden fields of an auto-posting form page."""
    action = re.search(r'<form[^>]*action="([^"]*)"', page)
    assert action, page[:500]
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page))
    return html.unescape(action.group(1)), {k: html.unescape(v) for k, v in fields.items()}


class TestPlatform:
    """The platform; ``with TestPlatform(tool_base) as p:`` serves it until the block
    ends (or start() and stop())."""

    __test__ = False

    def __init__(self, tool_base: str, *, client_id: str = "jaxjudge-client",
                 deployment_id: str = "deployment-1", services: bool = True) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.tool_base = tool_base.rstrip("/")
        self.tool_jwks_url = self.tool_base + "/lti/jwks.json"
        self.client_id = client_id
        self.deployment_id = deployment_id
        self.keys = [PlatformKey.new()]
        self.jwks_requests = 0
        self.pending: dict[str, LaunchSpec] = {}  # by lti_message_hint
        self.auth_requests: list[dict[str, str]] = []
        self.deep_links: list[dict[str, Any]] = []  # verified responses: claims, items
        self.deep_link_errors: list[str] = []
        self.registration_token = secrets.token_urlsafe(16)
        self.registrations: list[dict[str, Any]] = []  # the tool's registration requests
        self.registered_client_id = "dr-" + uuid.uuid4().hex[:8]
        self.registered_deployment_id: str | None = "dr-deployment-1"
        self.lineitems: dict[tuple[str, str], str] = {}  # (context, resource link) -> URL
        self.lineitem_reads: list[str] = []  # the paths of GETs of one line item
        self.platform_id: int | None = None  # the tool's row, once registered there
        self.lock = threading.Lock()
        self.app = Flask("test_platform")
        self._routes()
        self.services: Any = None
        if services:
            from tests.lti.platform_services import install

            install(self)
        self._server: BaseWSGIServer | None = None

    # -- serving

    def start(self) -> TestPlatform:
        self._server = make_server("127.0.0.1", self.port, self.app, threaded=True)
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> TestPlatform:
        return self.start()

    def __exit__(self, *_: Any) -> None:
        self.stop()

    # -- keys

    @property
    def key(self) -> PlatformKey:
        return self.keys[-1]

    def rotate(self) -> PlatformKey:
        """A new signing key, published beside the old ones."""
        self.keys.append(PlatformKey.new())
        return self.key

    def config(self) -> _Config:
        config = _Config(platform=self)
        config.get_registration()
        return config

    @property
    def registration(self) -> dict[str, Any]:
        """Keyword arguments of :func:`lti.platforms.add` for this platform."""
        return {"issuer": self.base, "client_id": self.client_id,
                "deployment_ids": [self.deployment_id], "login_url": self.base + "/auth",
                "token_url": self.base + "/token", "jwks_url": self.base + "/jwks",
                "name": "Test LMS"}

    def lineitem_of(self, context: str = "course-1", resource_link: str = "link-1",
                    **fields: Any) -> str:
        """The line item of a resource link (made now if it has none), its URL; ``fields``
        are set on it as the platform serves it (e.g. ``endDateTime``, None to remove)."""
        with self.lock:
            url = self.lineitems.get((context, resource_link))
        if url is None:
            url = self.services.add_lineitem(context, resource_link_id=resource_link)
            with self.lock:
                self.lineitems[(context, resource_link)] = url
        with self.services.lock:
            item = self.services.lineitems[context][url.rsplit("/", 1)[1]]
            for name, value in fields.items():
                if value is None:
                    item.pop(name, None)
                else:
                    item[name] = value
        return url

    # -- launching

    def login_url(self, spec: LaunchSpec) -> str:
        """The tool's login initiation URL for a launch of ``spec`` (lti1p3platform)."""
        hint = secrets.token_urlsafe(12)
        with self.lock:
            self.pending[hint] = spec
        login = _Login(None, self.config())
        login.set_lti_message_hint(hint=hint)
        if spec.message_type == "LtiDeepLinkingRequest":
            login.set_deeplinking_launch_url()
        url: str = login.initiate_login(spec.user)
        return url

    def begin(self, session: requests.Session, spec: LaunchSpec | None = None,
              method: str = "GET") -> Pending:
        """The login initiation, answered by the tool: its redirect to /auth, parsed."""
        spec = spec or LaunchSpec()
        url = self.login_url(spec)
        if method == "POST":
            target, query = url.split("?", 1)
            r = session.post(target, data={k: v[0] for k, v in parse_qs(query).items()},
                             allow_redirects=False, timeout=10)
        else:
            r = session.get(url, allow_redirects=False, timeout=10)
        assert r.status_code == 302, (r.status_code, r.text[:500])
        location = r.headers["Location"]
        assert location.startswith(self.base + "/auth?"), location
        params = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
        return Pending(spec, location, params)

    def authorize(self, session: requests.Session, pending: Pending) -> tuple[str, dict[str, str]]:
        """The browser at /auth: the platform's auto-posting launch form, parsed."""
        r = session.get(pending.auth_url, timeout=10)
        assert r.status_code == 200, (r.status_code, r.text[:500])
        return parse_form(r.text)

    def post_launch(self, session: requests.Session, fields: dict[str, str],
                    action: str | None = None, cookies: dict[str, str] | None = None,
                    ) -> requests.Response:
        """POST a launch form to the tool; the tool's answer (redirects not followed)."""
        return session.post(action or self.tool_base + "/lti/launch", data=fields,
                            allow_redirects=False, cookies=cookies, timeout=30)

    def launch(self, session: requests.Session | None = None, spec: LaunchSpec | None = None,
               **fields: Any) -> requests.Response:
        """A whole launch: login initiation, authorization, the form post to the tool."""
        session = session or requests.Session()
        spec = spec or LaunchSpec(**fields)
        pending = self.begin(session, spec)
        action, form = self.authorize(session, pending)
        return self.post_launch(session, form, action)

    def message(self, spec: LaunchSpec, nonce: str) -> dict[str, Any]:
        """The launch message of ``spec`` (lti1p3platform), unsigned."""
        launch = _Launch(None, self.config())  # type: ignore[arg-type]
        return self._claims(launch, spec) | {"nonce": nonce}

    def _claims(self, launch: _Launch, spec: LaunchSpec) -> dict[str, Any]:
        launch._registration = launch._platform_config.get_registration()
        launch.set_user_data(spec.user, spec.roles, full_name=spec.name,
                             email_address=spec.email)
        launch.set_launch_context_claim(spec.context, context_title=spec.context_title,
                                        context_label=spec.context_title[:10])
        if spec.custom:
            launch.set_custom_parameters_claim(spec.custom)
        if spec.nrps and self.services is not None:
            launch.set_nrps(self.services.memberships_url(spec.context))
        if spec.ags and self.services is not None:
            lineitem = spec.lineitem
            if lineitem is None and spec.message_type == "LtiResourceLinkRequest":
                with self.lock:
                    lineitem = self.lineitems.get((spec.context, spec.resource_link))
                if lineitem is None:
                    lineitem = self.services.add_lineitem(
                        spec.context, spec.resource_title, resource_link_id=spec.resource_link)
                    with self.lock:
                        self.lineitems[(spec.context, spec.resource_link)] = lineitem
            launch.set_ags(self.services.lineitems_url(spec.context), lineitem)
        if spec.message_type == "LtiDeepLinkingRequest":
            launch.set_dl(self.base + "/deep_link_return", title="Add an exercise",
                          accept_types={"ltiResourceLink"},
                          extra_data=spec.deep_link_data)  # type: ignore[arg-type]
            launch.set_launch_url(self.tool_base + "/lti/launch")
            message = launch.get_launch_message()
            message[LTI + "message_type"] = "LtiDeepLinkingRequest"
            message.update(launch._deep_linking_launch_data or {})
            return message
        launch.set_resource_link_claim(spec.resource_link, title=spec.resource_title)
        return launch.get_launch_message() | spec.claims

    def id_token(self, nonce: str, spec: LaunchSpec | None = None, *, alg: str = "RS256",
                 key: Any = None, kid: str | None = None, drop: tuple[str, ...] = (),
                 headers: dict[str, Any] | None = None, lifetime: int = 300,
                 iat: int | None = None, **overrides: Any) -> str:
        """A launch id_token for ``nonce``, as the platform would sign it, with claims
        ``overrides`` (``None`` removes one), ``drop`` left out, another ``alg``/``key``."""
        claims = self.message(spec or LaunchSpec(), nonce)
        now = int(time.time()) if iat is None else iat
        claims.update({"iat": now, "exp": now + lifetime})
        for name, value in overrides.items():
            if value is None:
                claims.pop(name, None)
            else:
                claims[name] = value
        for name in drop:
            claims.pop(name, None)
        head = {"kid": self.key.kid if kid is None else kid, **(headers or {})}
        if alg == "none":
            return jwt.encode(claims, None, algorithm="none", headers=head)
        return jwt.encode(claims, key if key is not None else self.key.private_pem,
                          algorithm=alg, headers=head)

    # -- routes

    def _routes(self) -> None:
        app = self.app

        @app.before_request
        def _count_lineitem_reads() -> None:
            if request.method == "GET" and re.fullmatch(r"/ags/[^/]+/lineitems/[^/]+",
                                                        request.path):
                with self.lock:
                    self.lineitem_reads.append(request.path)

        @app.get("/jwks")
        def _jwks() -> Response:
            with self.lock:
                self.jwks_requests += 1
            return jsonify({"keys": [k.jwk | {"alg": "RS256", "use": "sig"}
                                     for k in self.keys]})

        @app.route("/auth", methods=["GET", "POST"])
        def _auth() -> Any:
            params = {k: v for k, v in request.values.items()}
            with self.lock:
                self.auth_requests.append(params)
                spec = self.pending.pop(params.get("lti_message_hint", ""), None)
            problems = []
            if spec is None:
                problems.append("unknown or used lti_message_hint")
            elif params.get("login_hint") != spec.user:
                problems.append("login_hint is not the user of this launch")
            expected = {"scope": "openid", "response_type": "id_token",
                        "response_mode": "form_post", "prompt": "none",
                        "client_id": self.client_id,
                        "redirect_uri": self.tool_base + "/lti/launch"}
            problems += [f"{k} is {params.get(k)!r}" for k, v in expected.items()
                         if params.get(k) != v]
            problems += [f"no {k}" for k in ("nonce", "state") if not params.get(k)]
            if problems:
                return Response("; ".join(problems), status=400)
            assert spec is not None
            launch = _Launch(_Req(request), self.config())
            launch._registration = launch._platform_config.get_registration()
            launch.validate_preflight_response(params)
            claims = self._claims(launch, spec) | {"nonce": params["nonce"]}
            id_token = launch._registration.platform_encode_and_sign(
                claims, expiration=launch.id_token_expiration)
            return Response(form_page(params["redirect_uri"],
                                      {"id_token": id_token, "state": params["state"]}),
                            mimetype="text/html")

        @app.post("/deep_link_return")
        def _deep_link_return() -> Any:
            token = request.form.get("JWT", "")
            config = self.config()
            try:
                items = config.validate_deeplinking_resp({"JWT": token})
                claims = config._jwt["body"]
                problems = []
                if claims.get("iss") != self.client_id:
                    problems.append("iss is not the client id")
                if claims.get("aud") != self.base:
                    problems.append("aud is not the platform")
                if claims.get(LTI + "deployment_id") != self.deployment_id:
                    problems.append("unknown deployment")
                if claims.get(LTI + "version") != "1.3.0":
                    problems.append("version")
                if not claims.get("nonce"):
                    problems.append("no nonce")
                if problems:
                    raise ValueError(", ".join(problems))
            except Exception as exc:
                with self.lock:
                    self.deep_link_errors.append(str(exc))
                return Response(f"refused: {exc}", status=400)
            with self.lock:
                self.deep_links.append({"claims": claims, "items": items,
                                        "kid": config._jwt["header"].get("kid")})
            return Response("<!doctype html><p>Content added.</p>", mimetype="text/html")

        @app.get("/.well-known/openid-configuration")
        def _openid_configuration() -> Response:
            return jsonify({
                "issuer": self.base,
                "authorization_endpoint": self.base + "/auth",
                "token_endpoint": self.base + "/token",
                "jwks_uri": self.base + "/jwks",
                "registration_endpoint": self.base + "/register",
                "scopes_supported": [
                    "openid",
                    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
                    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
                    "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly",
                ],
                "response_types_supported": ["id_token"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "https://purl.imsglobal.org/spec/lti-platform-configuration": {
                    "product_family_code": "jaxjudge-test-lms", "version": "1.0",
                    "messages_supported": [{"type": "LtiResourceLinkRequest"},
                                           {"type": "LtiDeepLinkingRequest"}]},
            })

        @app.post("/register")
        def _register() -> Any:
            if request.headers.get("Authorization") != f"Bearer {self.registration_token}":
                abort(401)
            body = request.get_json(force=True)
            with self.lock:
                self.registrations.append(body)
            tool = dict(body.get(TOOL_CONFIGURATION, {}))
            if self.registered_deployment_id:
                tool["deployment_id"] = self.registered_deployment_id
            return jsonify({**body, "client_id": self.registered_client_id,
                            TOOL_CONFIGURATION: tool})
