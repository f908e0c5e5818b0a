"""OAuth2 access tokens for the LMS's services (AGS scores, NRPS roster).

The client credentials grant with a JWT client assertion (RFC 7523, as the IMS Security
Framework requires): the tool POSTs to the platform's token URL ::

    grant_type=client_credentials
    client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer
    client_assertion=<JWT: iss = sub = the client id, aud = the token URL, iat, exp
                      (5 minutes), jti (random, once); RS256 with the tool's current key,
                      its kid in the header>
    scope=<the scopes, space separated>

and gets ``{"access_token", "token_type": "Bearer", "expires_in"}``. Tokens are cached
per (platform, scopes) until 60 s before they expire: in Redis when the caller has it
(every worker process shares them), else in this process. A cached token that the
platform answers 401 to is dropped and one fresh token is asked for, once.

Every request goes through the SSRF-checked client of :mod:`service.outbound`
(``webhook_allow`` lifts its policy for a platform on a private network).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

import jwt
from redis import Redis
from redis.exceptions import RedisError

from judge.nesting import load_json
from lti.keys import ALGORITHM, signing_key
from service.db import Database
from service.outbound import Outcome, fetch
from service.settings import ServiceSettings

log = logging.getLogger(__name__)
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ASSERTION_SECONDS = 300
EARLY_SECONDS = 60  # a token is renewed this long before it expires
MAX_TOKEN_RESPONSE = 16 * 1024
_local: dict[str, tuple[str, float]] = {}  # without Redis: key -> (token, expires at)
_local_lock = threading.Lock()


@dataclass(frozen=True)
class Platform:
    """What a token request needs of a registered platform."""

    id: int
    client_id: str
    token_url: str


@dataclass(frozen=True)
class Tokens:
    """What getting a token needs: the database (the tool's key), the settings and,
    when there is one, Redis (the shared cache)."""

    db: Database
    settings: ServiceSettings
    redis: Redis | None = None


def assertion(tokens: Tokens, platform: Platform, now: float | None = None) -> str:
    """The signed client assertion for ``platform``'s token endpoint."""
    kid, key = signing_key(tokens.db, tokens.settings)
    now = int(time.time() if now is None else now)
    claims = {"iss": platform.client_id, "sub": platform.client_id,
              "aud": platform.token_url, "iat": now, "exp": now + ASSERTION_SECONDS,
              "jti": uuid.uuid4().hex}
    return jwt.encode(claims, key, algorithm=ALGORITHM, headers={"kid": kid})


def _key(platform: Platform, scopes: Sequence[str]) -> str:
    wanted = " ".join(sorted(set(scopes)))
    digest = hashlib.sha256(f"{platform.token_url}\n{platform.client_id}\n{wanted}".encode())
    return f"jaxjudge:lti:token:{platform.id}:{digest.hexdigest()[:32]}"


def _cached(tokens: Tokens, key: str) -> str | None:
    if tokens.redis is not None:
        try:
            found = tokens.redis.get(key)
            return found.decode() if isinstance(found, bytes) else found
        except RedisError as exc:
            log.warning("token cache unavailable: %s", exc)
            return None
    with _local_lock:
        token, until = _local.get(key, ("", 0.0))
    return token if until > time.time() else None


def _keep(tokens: Tokens, key: str, token: str, seconds: float) -> None:
    if seconds <= 0:
        return
    if tokens.redis is not None:
        try:
            tokens.redis.set(key, token, ex=max(1, int(seconds)))
        except RedisError as exc:
            log.warning("token not cached: %s", exc)
        return
    with _local_lock:
        _local[key] = (token, time.time() + seconds)


def forget(tokens: Tokens, platform: Platform, scopes: Sequence[str]) -> None:
    key = _key(platform, scopes)
    if tokens.redis is not None:
        with contextlib.suppress(RedisError):
            tokens.redis.delete(key)
        return
    with _local_lock:
        _local.pop(key, None)


class TokenRefused(Exception):
    """No token: ``outcome`` says why and whether a later try may get one."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.error)
        self.outcome = outcome


def request_token(tokens: Tokens, platform: Platform, scopes: Sequence[str]) -> tuple[str, float]:
    """A new token from the platform and how long it lives; raises :class:`TokenRefused`."""
    form = urlencode({"grant_type": "client_credentials",
                      "client_assertion_type": ASSERTION_TYPE,
                      "client_assertion": assertion(tokens, platform),
                      "scope": " ".join(scopes)}).encode()
    settings = tokens.settings
    got = fetch("POST", platform.token_url, body=form, headers={"Accept": "application/json"},
                content_type="application/x-www-form-urlencoded", allow=settings.webhook_allow,
                timeout=settings.lti_timeout_seconds, limit=MAX_TOKEN_RESPONSE)
    if not got.ok:
        reason = _oauth_error(got.body) if got.status else ""
        raise TokenRefused(Outcome(False, got.status, f"token endpoint: {got.error}{reason}",
                                   retry=got.retry, refused=got.refused))
    try:
        if not got.complete:
            raise ValueError("response too long")
        answer = load_json(got.body)
        token = answer["access_token"]
        life = float(answer.get("expires_in", 3600))
        if not isinstance(token, str) or not token:
            raise ValueError("empty access_token")
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise TokenRefused(Outcome(False, got.status, "token endpoint: not a token response "
                                   f"({type(exc).__name__})", retry=True)) from None
    return token, life


def _oauth_error(body: bytes) -> str:
    """The OAuth2 error code of a refusal (its fixed vocabulary only, RFC 6749 5.2)."""
    try:
        code = load_json(body).get("error")
    except (ValueError, AttributeError):
        return ""
    known = {"invalid_request", "invalid_client", "invalid_grant", "unauthorized_client",
             "unsupported_grant_type", "invalid_scope"}
    return f" ({code})" if code in known else ""


def access_token(tokens: Tokens, platform: Platform,
                 scopes: Sequence[str]) -> tuple[str, bool]:
    """A token for ``scopes`` and whether it came from the cache; raises
    :class:`TokenRefused`."""
    key = _key(platform, scopes)
    found = _cached(tokens, key)
    if found:
        return found, True
    token, life = request_token(tokens, platform, scopes)
    _keep(tokens, key, token, life - EARLY_SECONDS)
    return token, False


def authorized(tokens: Tokens, platform: Platform, scopes: Sequence[str],
               call: Callable[[str], Outcome]) -> Outcome:
    """``call(token)`` with a token for ``scopes``; a 401 to a cached token gets one more
    call with a fresh token. A refused token is the outcome (nothing was called)."""
    try:
        token, cached = access_token(tokens, platform, scopes)
        got = call(token)
        if got.status == 401 and cached:
            forget(tokens, platform, scopes)
            token, _ = access_token(tokens, platform, scopes)
            got = call(token)
    except TokenRefused as exc:
        return exc.outcome
    return got


def authorized_get(tokens: Tokens, platform: Platform, url: str, scope: str, *,
                   accept: str, limit: int) -> Outcome:
    """GET ``url`` (an LMS service: a line item, a roster page) with a token for
    ``scope`` (:func:`authorized`), through the outgoing client's policy, waiting at most
    ``lti_timeout_seconds`` and reading at most ``limit`` bytes."""
    settings = tokens.settings

    def get(token: str) -> Outcome:
        return fetch("GET", url, headers={"Authorization": f"Bearer {token}",
                                          "Accept": accept},
                     allow=settings.webhook_allow, timeout=settings.lti_timeout_seconds,
                     limit=limit)

    return authorized(tokens, platform, [scope], get)
