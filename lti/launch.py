"""LTI 1.3 launches, the tool side: OIDC third-party login initiation, then the
``id_token`` checked claim by claim (IMS Security Framework 1.0 §5.1.3, LTI Core 1.3
§5.3 and §5.4), with PyJWT for the signature and our own checks for the rest.

Login (:func:`begin_login`): the platform names itself (``iss``, ``client_id``); the
tool makes a ``state`` and a ``nonce`` (256 random bits each), stores both in Redis with
``SET NX`` and an expiry of ``lti_state_seconds``, and sends the browser to the
platform's authorization endpoint.

Launch (:func:`complete_launch`), refused with :class:`LaunchError` unless all hold:

- the ``state`` is one this tool made and not yet used: it is taken with ``GETDEL``, so a
  replayed ``id_token`` + ``state`` finds nothing;
- the browser's state cookie, when the browser sends one, is the one the login set
  (third-party cookies blocked: no cookie, and the single-use state and nonce still
  hold; see docs/lti.md);
- the token is signed by the platform of that login with RS256 (``alg: none``, HS256
  with the public key as secret, any other algorithm: refused), with a key of the
  platform's key set, fetched and cached, and fetched again once when a ``kid`` is not in
  it (a key the platform rotated in);
- ``iss`` is that platform, ``aud`` its client id (several audiences: ``azp`` must be
  the client id), ``exp``, ``iat`` and ``nbf`` within ``lti_leeway_seconds``;
- the ``nonce`` is the one made for that state, and is taken (``GETDEL``) too: a token
  carried into a new login's state is refused;
- the deployment id is registered for the platform, the version ``1.3.0``, the message
  type a resource link or deep-linking request, with the claims that type requires.
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

import jwt
from redis import Redis
from sqlalchemy import select
from sqlalchemy.orm import Session

from judge.errors import UsageError
from judge.nesting import TooDeep, load_json
from lti import platforms
from lti.errors import LaunchError
from lti.keysets import KeySets
from service import courses
from service.models import Assignment, Course, LtiPlatform, Member
from service.settings import ServiceSettings

ALGORITHMS = ["RS256"]  # LTI 1.3 (Security Framework §6.1): RS256; nothing symmetric
STATE_PREFIX = "jaxjudge:lti:state:"
NONCE_PREFIX = "jaxjudge:lti:nonce:"
STATE_COOKIE = "jaxjudge-lti-state"

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
MESSAGE_TYPE = LTI + "message_type"
VERSION = LTI + "version"
DEPLOYMENT_ID = LTI + "deployment_id"
TARGET_LINK_URI = LTI + "target_link_uri"
RESOURCE_LINK = LTI + "resource_link"
ROLES = LTI + "roles"
CONTEXT = LTI + "context"
CUSTOM = LTI + "custom"
LAUNCH_PRESENTATION = LTI + "launch_presentation"
AGS_ENDPOINT = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
DL_SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
RESOURCE_LINK_REQUEST = "LtiResourceLinkRequest"
DEEP_LINKING_REQUEST = "LtiDeepLinkingRequest"


# -- login


@dataclass(frozen=True)
class Login:
    redirect_url: str  # the platform's authorization endpoint, with the request
    state: str
    browser: str  # the value of the state cookie


def begin_login(s: Session, redis: Redis, settings: ServiceSettings,
                params: Mapping[str, str], launch_url: str,
                browser: str | None = None) -> Login:
    """The answer to an OIDC third-party login initiation (``params``: its query or form).
    ``launch_url`` is the tool's redirect URI; ``browser`` the state cookie the browser
    sent, if any (kept, so that two launches in one browser do not undo each other)."""
    iss = (params.get("iss") or "").strip()
    login_hint = params.get("login_hint") or ""
    target = params.get("target_link_uri") or ""
    if not iss or not login_hint or not target:
        raise LaunchError("a login initiation needs iss, login_hint and target_link_uri")
    try:
        platform = platforms.find(s, iss, params.get("client_id") or None)
    except UsageError as exc:
        raise LaunchError(str(exc), 404) from None
    deployment = params.get("lti_deployment_id")
    if deployment and deployment not in platform.deployment_ids:
        raise LaunchError("this deployment of the tool is not registered for the platform",
                          403)
    if urlsplit(target).netloc != urlsplit(launch_url).netloc:
        raise LaunchError("target_link_uri is not a URL of this tool")
    state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    browser = browser if browser and len(browser) == 43 else secrets.token_urlsafe(32)
    record = json.dumps({"platform": platform.id, "nonce": nonce, "browser": browser})
    ttl = settings.lti_state_seconds
    made = (redis.set(STATE_PREFIX + state, record, nx=True, ex=ttl)
            and redis.set(NONCE_PREFIX + nonce, state, nx=True, ex=ttl))
    if not made:  # 256 random bits collided: never in practice
        raise LaunchError("could not start the login; try again", 503)
    query = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post",
             "prompt": "none", "client_id": platform.client_id, "redirect_uri": launch_url,
             "login_hint": login_hint, "state": state, "nonce": nonce}
    if params.get("lti_message_hint"):
        query["lti_message_hint"] = params["lti_message_hint"]
    joiner = "&" if urlsplit(platform.login_url).query else "?"
    return Login(platform.login_url + joiner + urlencode(query), state, browser)


# -- launch


@dataclass
class Launch:
    """A verified launch: the platform and the claims of its id_token."""

    platform: LtiPlatform
    claims: dict[str, Any]
    message_type: str
    deployment_id: str
    user_id: str
    roles: list[str]
    context: dict[str, Any]
    custom: dict[str, Any] = field(default_factory=dict)

    @property
    def instructor(self) -> bool:
        return courses.is_instructor(self.roles)

    @property
    def name(self) -> str:
        c = self.claims
        return str(c.get("name") or " ".join(p for p in (c.get("given_name"),
                                                         c.get("family_name")) if p) or "")

    @property
    def resource_link(self) -> dict[str, Any]:
        found: dict[str, Any] = self.claims.get(RESOURCE_LINK) or {}
        return found

    @property
    def deep_linking(self) -> dict[str, Any]:
        found: dict[str, Any] = self.claims.get(DL_SETTINGS) or {}
        return found

    @property
    def problem(self) -> str | None:
        value = self.custom.get("problem")
        # An unsubstituted variable ($Canvas...) or an empty value names no problem.
        if not isinstance(value, str) or not value.strip() or value.startswith("$"):
            return None
        return value.strip()


def _take(redis: Redis, key: str) -> bytes | None:
    value: bytes | None = redis.getdel(key)  # type: ignore[assignment]
    return value


def _check_nesting(id_token: str) -> None:
    """Refuse a token whose header or claims are JSON nested more than
    :data:`judge.nesting.MAX_DEPTH` levels, before PyJWT parses them with ``json`` (whose
    ``RecursionError`` it reports as a malformed token, and which lets through what is a
    little less deep, for the launch's own code to recurse into). What is not a JWT is
    left to PyJWT to say."""
    parts = id_token.split(".")
    if len(parts) != 3:
        return
    for what, part in (("header is", parts[0]), ("claims are", parts[1])):
        try:
            load_json(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
        except TooDeep as exc:
            raise LaunchError(f"the id_token's {what} JSON {exc}") from None
        except ValueError:
            return


def complete_launch(s: Session, redis: Redis, settings: ServiceSettings, keysets: KeySets,
                    id_token: str, state: str, browser: str | None) -> Launch:
    """The launch of ``id_token`` + ``state`` (the form the platform posted), verified;
    ``browser`` is the state cookie if the browser sent it."""
    if not id_token or not state:
        raise LaunchError("the launch carries no id_token or no state")
    if len(state) > 100 or len(id_token) > 64 * 1024:
        raise LaunchError("the launch's state or id_token is too long")
    raw = _take(redis, STATE_PREFIX + state)
    if raw is None:
        raise LaunchError("this launch was used already, has expired or was not started "
                          "here; launch again from the course", 403)
    record = json.loads(raw)
    if browser and browser != record["browser"]:
        raise LaunchError("this launch was started in another browser window", 403)
    platform = s.get(LtiPlatform, record["platform"])
    if platform is None:
        raise LaunchError("the platform of this launch is no longer registered", 403)

    _check_nesting(id_token)
    try:
        header = jwt.get_unverified_header(id_token)
    except jwt.PyJWTError:
        raise LaunchError("the id_token is not a JWT") from None
    if header.get("alg") not in ALGORITHMS:
        raise LaunchError(f"the id_token must be signed with {', '.join(ALGORITHMS)}")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise LaunchError("the id_token names no key (kid)")
    key = keysets.key(platform.jwks_url, kid)
    try:
        claims: dict[str, Any] = jwt.decode(
            id_token, key, algorithms=ALGORITHMS, audience=platform.client_id,
            issuer=platform.issuer, leeway=settings.lti_leeway_seconds,
            options={"require": ["exp", "iat", "iss", "aud", "nonce"]})
    except jwt.ExpiredSignatureError:
        raise LaunchError("the id_token has expired", 401) from None
    except jwt.ImmatureSignatureError:
        raise LaunchError("the id_token is not valid yet (iat or nbf in the future)",
                          401) from None
    except jwt.InvalidIssuerError:
        raise LaunchError("the id_token's issuer is not the platform of this login",
                          401) from None
    except jwt.InvalidAudienceError:
        raise LaunchError("the id_token is not for this tool (aud)", 401) from None
    except jwt.MissingRequiredClaimError as exc:
        raise LaunchError(f"the id_token has no {exc.claim} claim", 401) from None
    except jwt.InvalidSignatureError:
        raise LaunchError("the id_token's signature does not verify", 401) from None
    except jwt.PyJWTError:
        raise LaunchError("the id_token is not valid", 401) from None

    aud = claims["aud"]
    azp = claims.get("azp")
    if isinstance(aud, list) and len(aud) > 1 and azp is None:
        raise LaunchError("the id_token has several audiences and no azp", 401)
    if azp is not None and azp != platform.client_id:
        raise LaunchError("the id_token's azp is not this tool's client id", 401)
    nonce = claims["nonce"]
    if not isinstance(nonce, str) or nonce != record["nonce"]:
        raise LaunchError("the id_token's nonce is not the one of this login", 403)
    if _take(redis, NONCE_PREFIX + nonce) is None:
        raise LaunchError("the id_token's nonce was used already", 403)

    if claims.get(VERSION) != "1.3.0":
        raise LaunchError("only LTI 1.3.0 launches are accepted")
    deployment = claims.get(DEPLOYMENT_ID)
    if not isinstance(deployment, str) or deployment not in platform.deployment_ids:
        raise LaunchError("this deployment of the tool is not registered for the platform",
                          403)
    message_type = claims.get(MESSAGE_TYPE)
    if message_type not in (RESOURCE_LINK_REQUEST, DEEP_LINKING_REQUEST):
        raise LaunchError("the message type is not a resource link or deep linking "
                          "request")
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub or len(sub) > 255:
        raise LaunchError("the launch names no user (sub)")
    roles = claims.get(ROLES)
    if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
        raise LaunchError("the launch has no roles claim")
    context = claims.get(CONTEXT)
    if not isinstance(context, dict) or not isinstance(context.get("id"), str) \
            or not context["id"]:
        raise LaunchError("the launch has no course context")
    if not isinstance(claims.get(TARGET_LINK_URI), str):
        raise LaunchError("the launch has no target_link_uri")
    if message_type == RESOURCE_LINK_REQUEST:
        link = claims.get(RESOURCE_LINK)
        if not isinstance(link, dict) or not isinstance(link.get("id"), str) \
                or not link["id"]:
            raise LaunchError("the launch has no resource link id")
    else:
        settings_claim = claims.get(DL_SETTINGS)
        if not isinstance(settings_claim, dict) \
                or not isinstance(settings_claim.get("deep_link_return_url"), str):
            raise LaunchError("the deep linking request has no deep_link_return_url")
    custom = claims.get(CUSTOM)
    return Launch(platform=platform, claims=claims, message_type=message_type,
                  deployment_id=deployment, user_id=sub, roles=list(roles),
                  context=context, custom=custom if isinstance(custom, dict) else {})


@dataclass
class Recorded:
    course: Course
    member: Member
    assignment: Assignment | None


def record(s: Session, launch: Launch, problem: str | None = None) -> Recorded:
    """The course, the member and (a resource link naming a problem, ``problem`` being
    the checked name) the assignment of a launch, made or refreshed; the AGS endpoint
    goes on the assignment, the NRPS memberships URL on the course."""
    nrps = launch.claims.get(NRPS)
    memberships = nrps.get("context_memberships_url") if isinstance(nrps, dict) else None
    course = courses.upsert_course(
        s, tenant_id=launch.platform.tenant_id, platform_id=launch.platform.id,
        context_id=launch.context["id"], title=str(launch.context.get("title") or ""),
        label=str(launch.context.get("label") or ""),
        memberships_url=memberships if isinstance(memberships, str) else None)
    member = courses.upsert_member(
        s, course.id, launch.user_id, name=launch.name,
        email=str(launch.claims.get("email") or ""), roles=launch.roles, launched=True)
    assignment = None
    if launch.message_type == RESOURCE_LINK_REQUEST and problem is not None:
        ags = launch.claims.get(AGS_ENDPOINT)
        ags = ags if isinstance(ags, dict) else {}
        scopes = ags.get("scope")
        assignment = courses.upsert_assignment(
            s, course, resource_link_id=launch.resource_link["id"], problem=problem,
            title=str(launch.resource_link.get("title") or ""),
            lineitem_url=ags.get("lineitem") if isinstance(ags.get("lineitem"), str)
            else None,
            lineitems_url=ags.get("lineitems") if isinstance(ags.get("lineitems"), str)
            else None,
            ags_scopes=[x for x in scopes if isinstance(x, str)]
            if isinstance(scopes, list) else None)
    return Recorded(course, member, assignment)


def existing_assignment(s: Session, launch: Launch) -> Assignment | None:
    """The assignment a resource link already has (a launch without the custom
    parameter, of a link made before)."""
    return s.scalar(select(Assignment).join(Course, Course.id == Assignment.course_id).where(
        Course.platform_id == launch.platform.id, Course.tenant_id == launch.platform.tenant_id,
        Course.context_id == launch.context["id"],
        Assignment.resource_link_id == launch.resource_link.get("id", "")))
