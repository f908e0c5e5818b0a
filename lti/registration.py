"""How an LMS learns about the tool: the URLs an administrator types in, the Canvas
developer-key JSON, and LTI Dynamic Registration 1.0.

Dynamic Registration: the LMS administrator pastes the tool's registration URL; the LMS
opens it with ``openid_configuration`` (the platform's OpenID configuration URL) and
``registration_token``; the tool fetches that configuration, checks that its issuer is on
the same host as the URL it came from (spec §3.5.1), POSTs its client registration to the
platform's ``registration_endpoint`` with the token as bearer, and stores the platform
with the client id (and deployment id) the answer gives.

Which tenant a registration goes to is never taken from the URL as such: the URL
carries an invitation made by ``jaxjudge lti register-url --tenant NAME``, 256 random
bits kept in Redis with an expiry, and used once. A bare ``/lti/register`` registers
nothing.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from redis import Redis
from sqlalchemy.orm import Session

from judge.errors import UsageError
from judge.nesting import TooDeep, load_json
from lti import platforms
from lti.dates import CUSTOM_PARAMETERS
from lti.launch import LaunchError
from service.models import LtiPlatform
from service.outbound import fetch

LOGIN = "/lti/login"
LAUNCH = "/lti/launch"
JWKS = "/lti/jwks.json"
REGISTER = "/lti/register"
CANVAS = "/lti/canvas.json"
TITLE = "JAX judge"
DESCRIPTION = "Programming exercises in JAX, graded automatically."
INVITE_PREFIX = "jaxjudge:lti:invite:"
TOOL_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-tool-configuration"
PLATFORM_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-platform-configuration"
SCOPES = [
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
    "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
    "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly",
]
HTTP_TIMEOUT = 15.0  # seconds, per request
MAX_BYTES = 256 * 1024


def tool_urls(base: str) -> dict[str, str]:
    """Every URL an LMS administrator needs, from the tool's public base URL."""
    base = base.rstrip("/")
    return {
        "login": base + LOGIN,
        "launch": base + LAUNCH,
        "redirect": base + LAUNCH,
        "deep_linking": base + LAUNCH,
        "jwks": base + JWKS,
        "registration": base + REGISTER,
        "canvas": base + CANVAS,
    }


def canvas_config(base: str) -> dict[str, Any]:
    """Canvas's "LTI 1.3 configuration JSON" of a developer key (Enter URL)."""
    urls = tool_urls(base)
    domain = urlsplit(base).netloc
    selection = {"message_type": "LtiDeepLinkingRequest", "target_link_uri": urls["launch"],
                 "text": TITLE, "selection_height": 700, "selection_width": 900}
    return {
        "title": TITLE,
        "description": DESCRIPTION,
        "oidc_initiation_url": urls["login"],
        "target_link_uri": urls["launch"],
        "public_jwk_url": urls["jwks"],
        "scopes": SCOPES,
        "extensions": [{
            "platform": "canvas.instructure.com",
            "privacy_level": "public",
            "domain": domain,
            "tool_id": "jaxjudge",
            "settings": {
                "text": TITLE,
                "placements": [
                    {"placement": "link_selection", **selection},
                    {"placement": "assignment_selection", **selection},
                ],
            },
        }],
        # No tool-wide "problem" custom field: each link carries its own, set by the
        # deep-linking response; a tool-wide one would shadow it. The dates' variables
        # (lti.dates) are substituted per link.
        "custom_fields": {"context_title": "$Context.title", **CUSTOM_PARAMETERS},
    }


# -- invitations


def invite(redis: Redis, tenant: str, seconds: int) -> str:
    """A one-time registration invitation for ``tenant``, valid ``seconds``."""
    if not tenant or len(tenant) > 100 or not tenant.isprintable():
        raise UsageError("a tenant name is 1 to 100 printable characters")
    if seconds <= 0:
        raise UsageError("the invitation must last a positive time")
    token = secrets.token_urlsafe(32)
    record = json.dumps({"tenant": tenant, "until": time.time() + seconds})
    redis.set(INVITE_PREFIX + token, record, ex=seconds, nx=True)
    return token


def registration_url(base: str, token: str) -> str:
    return f"{base.rstrip('/')}{REGISTER}?invite={token}"


def _take_invite(redis: Redis, token: str) -> dict[str, Any]:
    raw = redis.getdel(INVITE_PREFIX + token) if token and len(token) < 100 else None
    if raw is None:
        raise LaunchError("this registration link is unknown, used or expired: make a new "
                          "one with `jaxjudge lti register-url --tenant NAME`", 403)
    record: dict[str, Any] = json.loads(raw)
    return record


def _give_back(redis: Redis, token: str, record: dict[str, Any]) -> None:
    """A registration that failed leaves its invitation usable for what was left of it."""
    left = int(record["until"] - time.time())
    if left > 0:
        redis.set(INVITE_PREFIX + token, json.dumps(record), ex=left, nx=True)


# -- dynamic registration


def _url(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise LaunchError(f"the platform's configuration has no {name}", 502)
    try:
        url = platforms.check_url(name, value)
    except UsageError as exc:
        raise LaunchError(f"the platform's configuration: {exc}", 502) from None
    host = urlsplit(url).hostname or ""
    if urlsplit(url).scheme != "https" and host not in ("127.0.0.1", "localhost", "::1"):
        raise LaunchError(f"the platform's {name} must be https", 502)
    return url


def _request(method: str, url: str, what: str, allow: Sequence[str],
             headers: dict[str, str], body: bytes | None = None) -> dict[str, Any]:
    """One request to the platform through the judge's outgoing HTTP client (the SSRF
    policy of webhooks and LTI services: ``allow`` lifts it for an LMS on a private
    address), its JSON object answer."""
    out = fetch(method, url, headers=headers, allow=allow, timeout=HTTP_TIMEOUT, body=body,
                content_type="application/json" if body is not None else None,
                limit=MAX_BYTES)
    if out.status is None:
        raise LaunchError(f"{what} could not be reached ({out.error})", 502)
    if not 200 <= out.status < 300:
        raise LaunchError(f"{what} answered HTTP {out.status}", 502)
    if not out.complete:
        raise LaunchError(f"{what} is too large", 502)
    try:
        found = load_json(out.body)
    except TooDeep as exc:
        raise LaunchError(f"{what} is JSON {exc}", 502) from None
    except ValueError:
        raise LaunchError(f"{what} is not JSON", 502) from None
    if not isinstance(found, dict):
        raise LaunchError(f"{what} is not a JSON object", 502)
    return found


def platform_configuration(config_url: str, allow: Sequence[str]) -> dict[str, Any]:
    """The platform's OpenID configuration, fetched from the URL it gave (no redirect),
    its issuer on the same host as that URL."""
    config_url = _url("openid_configuration", config_url)
    config = _request("GET", config_url, "the platform's OpenID configuration", allow,
                      {"Accept": "application/json"})
    issuer = _url("issuer", config.get("issuer"))
    if urlsplit(issuer).hostname != urlsplit(config_url).hostname:
        raise LaunchError("the platform's issuer is not on the host of its configuration "
                          "URL", 502)
    return config


def client_registration(base: str, config: dict[str, Any]) -> dict[str, Any]:
    """The tool's client registration request (Dynamic Registration §3.4)."""
    urls = tool_urls(base)
    offered = config.get("scopes_supported")
    scopes = [s for s in SCOPES if not isinstance(offered, list) or s in offered]
    return {
        "application_type": "web",
        "response_types": ["id_token"],
        "grant_types": ["implicit", "client_credentials"],
        "initiate_login_uri": urls["login"],
        "redirect_uris": [urls["launch"]],
        "client_name": TITLE,
        "jwks_uri": urls["jwks"],
        "token_endpoint_auth_method": "private_key_jwt",
        "scope": " ".join(scopes),
        TOOL_CONFIGURATION: {
            "domain": urlsplit(base).netloc,
            "description": DESCRIPTION,
            "target_link_uri": urls["launch"],
            "claims": ["iss", "sub", "name", "given_name", "family_name", "email"],
            # The assignment's dates (lti.dates), where the platform substitutes them;
            # one that does not (Moodle 4.4) sends them as written, which reads as unset.
            "custom_parameters": dict(CUSTOM_PARAMETERS),
            "messages": [{"type": "LtiDeepLinkingRequest", "target_link_uri": urls["launch"],
                          "label": TITLE}],
        },
    }


@dataclass(frozen=True)
class Registered:
    platform_id: int
    issuer: str
    client_id: str
    deployment_id: str | None
    tenant: str


def register(s: Session, redis: Redis, base: str, invite_token: str, config_url: str,
             registration_token: str | None, allow: Sequence[str] = ()) -> Registered:
    """Register the tool with the platform that opened ``/lti/register``, for the tenant
    of the invitation (used up when this succeeds, usable again when it fails)."""
    record = _take_invite(redis, invite_token)
    try:
        return _register(s, base, record["tenant"], config_url, registration_token, allow)
    except BaseException:
        _give_back(redis, invite_token, record)
        raise


def _register(s: Session, base: str, tenant: str, config_url: str,
              registration_token: str | None, allow: Sequence[str]) -> Registered:
    config = platform_configuration(config_url, allow)
    issuer = _url("issuer", config.get("issuer"))
    endpoint = _url("registration_endpoint", config.get("registration_endpoint"))
    login_url = _url("authorization_endpoint", config.get("authorization_endpoint"))
    token_url = _url("token_endpoint", config.get("token_endpoint"))
    jwks_url = _url("jwks_uri", config.get("jwks_uri"))
    headers = {"Accept": "application/json"}
    if registration_token:
        headers["Authorization"] = f"Bearer {registration_token}"
    answer = _request("POST", endpoint, "the platform's registration endpoint", allow,
                      headers, json.dumps(client_registration(base, config)).encode())
    client_id = answer.get("client_id")
    if not isinstance(client_id, str) or not client_id:
        raise LaunchError("the platform's registration answer has no client_id", 502)
    tool = answer.get(TOOL_CONFIGURATION)
    deployment = tool.get("deployment_id") if isinstance(tool, dict) else None
    deployment = deployment if isinstance(deployment, str) and deployment else None
    product = config.get(PLATFORM_CONFIGURATION)
    name = str(product.get("product_family_code", "")) if isinstance(product, dict) else ""
    try:
        row: LtiPlatform = platforms.add(
            s, tenant, issuer=issuer, client_id=client_id,
            deployment_ids=[deployment] if deployment else [], login_url=login_url,
            token_url=token_url, jwks_url=jwks_url, name=name[:200],
            require_deployment=False)
    except UsageError as exc:
        raise LaunchError(str(exc), 409) from None
    return Registered(row.id, issuer, client_id, deployment, tenant)
