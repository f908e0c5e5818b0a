"""Limits on requests: a body size per route, rate limits per API key, and failed
authentications per client address.

- **Bodies.** Each route reads at most its own number of bytes (Flask's per-request
  ``max_content_length``), which the sibling that serves it declares (:func:`body_limit`):
  submitting, the code limit escaped as JSON plus the metadata; batches and packages,
  ``max_request_bytes``; everything else, 64 KiB. A larger ``Content-Length`` is
  answered 413 before the body is read.
- **Per key.** ``rate_limit`` counts per API key (a hash of the presented key), per page
  session (the id in the path, :data:`app.sessions.PATH`), or per client address.
- **Per address, failed authentications.** A request whose key does not authenticate
  (401) counts against its client address (``auth_failure_limit``). Past the limit, a
  request from that address is refused (429) before its key reaches the database, unless
  that key is known to have authenticated before (:class:`KnownKeys`), so that a flood of
  random keys costs no database lookups and does not lock out the real keys behind the
  same address.

The client address is the peer's, or with ``trusted_proxy_hops`` > 0 the one that many
proxies back in ``X-Forwarded-For`` (werkzeug's ``ProxyFix``, applied in ``create_app``).
"""

from __future__ import annotations

import hashlib
import time

from flask import Flask, Response, request
from flask_limiter import ApplicationLimit, Limiter
from redis import Redis
from redis.exceptions import RedisError

from app.sessions import PATH
from judge.settings import Settings
from service.settings import ServiceSettings

SMALL_BODY = 64 << 10
KNOWN_KEY = "jaxjudge:known-key:"
KNOWN_SECONDS = 86400  # how long a key that authenticated stays known
BODY_LIMITS = "jaxjudge.body_limits"


def submission_body(settings: ServiceSettings, judge: Settings) -> int:
    """The largest body of a submission over the REST API. JSON may escape each byte of
    the code or the metadata as ``\\u00XX`` (6 bytes), and the other fields are small; a
    notebook (a JSON object, or its text in a string) gets twice its own limit."""
    return (max(6 * judge.max_code_bytes, 2 * judge.max_notebook_bytes)
            + 6 * settings.max_metadata_bytes + SMALL_BODY)


def page_submission_body(settings: ServiceSettings, judge: Settings) -> int:
    """The largest body of a submission from a page's form: code or a notebook."""
    return max(submission_body(settings, judge), judge.max_notebook_bytes + SMALL_BODY)


def presented_key() -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, key = header.partition(" ")
    return key.strip() if scheme.lower() == "bearer" and key.strip() else None


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:24]


def client_address() -> str:
    return "addr:" + (request.remote_addr or "?")


def rate_key() -> str:
    """Per API key (a hash of it), per page session (a hash of its id: a class behind
    one address is many sessions), else per client address."""
    key = presented_key()
    if key is not None:
        return "key:" + key_hash(key)
    page = PATH.match(request.path)
    return "page:" + key_hash(page.group(1)) if page else client_address()


class KnownKeys:
    """Keys that authenticated at least once in the last KNOWN_SECONDS (a Redis key per
    key hash, remembered in the process too, so that a real key costs no Redis call)."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self.local: dict[str, float] = {}  # key hash -> until when it is known here

    def remember(self, key: str) -> None:
        digest, now = key_hash(key), time.monotonic()
        if self.local.get(digest, 0.0) > now:
            return
        try:
            self.redis.set(KNOWN_KEY + digest, 1, ex=KNOWN_SECONDS)
        except RedisError:
            return
        if len(self.local) > 100_000:
            self.local.clear()
        self.local[digest] = now + KNOWN_SECONDS / 2

    def known(self) -> bool:
        """Whether the request's key authenticated before."""
        key = presented_key()
        if key is None:
            return False
        digest = key_hash(key)
        if self.local.get(digest, 0.0) > time.monotonic():
            return True
        try:
            return bool(self.redis.exists(KNOWN_KEY + digest))
        except RedisError:
            return False


def _unauthorized(response: Response) -> bool:
    return response.status_code == 401


def make_limiter(app: Flask, settings: ServiceSettings, known: KnownKeys) -> Limiter:
    failures = []
    if settings.auth_failure_limit:
        failures.append(ApplicationLimit(
            settings.auth_failure_limit, key_function=client_address, scope="auth-failures",
            deduct_when=_unauthorized, exempt_when=known.known))
    return Limiter(
        key_func=rate_key,
        app=app,
        storage_uri=settings.redis_url,
        storage_options={"socket_connect_timeout": 1, "socket_timeout": 1},
        default_limits=[settings.rate_limit] if settings.rate_limit else [],
        application_limits=failures,  # type: ignore[arg-type]
        strategy="fixed-window",
        headers_enabled=True,
        swallow_errors=True,  # Redis away: serve without limits rather than fail
        key_prefix="jaxjudge:rate",
    )


def limit_bodies(app: Flask) -> None:
    """Each request may send at most its endpoint's :func:`body_limit`, else SMALL_BODY."""
    limits: dict[str, int] = app.extensions.setdefault(BODY_LIMITS, {})

    @app.before_request
    def _body_limit() -> None:
        request.max_content_length = limits.get(request.endpoint or "", SMALL_BODY)


def body_limit(app: Flask, endpoint: str, limit: int) -> None:
    """``endpoint`` may take a body of ``limit`` bytes (a sibling says so for its own)."""
    app.extensions.setdefault(BODY_LIMITS, {})[endpoint] = limit


def limit_submitting(app: Flask, limiter: Limiter, settings: ServiceSettings,
                     *endpoints: str) -> None:
    """The views that take a submission in also count against ``submit_rate_limit``."""
    if not settings.submit_rate_limit:
        return
    for name in endpoints:
        limited = limiter.limit(settings.submit_rate_limit)(app.view_functions[name])
        app.view_functions[name] = limited  # type: ignore[assignment]


def exempt(app: Flask, limiter: Limiter, *endpoints: str) -> None:
    """Views that no rate limit counts (probes, documentation, static files)."""
    for name in endpoints:
        limiter.exempt(app.view_functions[name])
