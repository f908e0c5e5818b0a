"""Limits on requests: a body size per route, rate limits per API key, and failed
authentications per client address.

- **Bodies.** Each route reads at most its own number of bytes (Flask's per-request
  ``max_content_length``): submitting, the code limit escaped as JSON plus the metadata;
  batches, ``max_request_bytes``; everything else, 64 KiB. A larger ``Content-Length`` is
  answered 413 before the body is read.
- **Per key.** ``rate_limit`` counts per API key (a hash of the presented key), or per
  client address without one.
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
import re
import time

from flask import Flask, Response, request
from flask_limiter import ApplicationLimit, Limiter
from redis import Redis
from redis.exceptions import RedisError

from judge.settings import Settings
from service.settings import ServiceSettings

SMALL_BODY = 64 << 10
PAGE_PATH = re.compile(r"^/app/([A-Za-z0-9_-]{43})/")  # a page session's id (web.session)
KNOWN_KEY = "jaxjudge:known-key:"
KNOWN_SECONDS = 86400  # how long a key that authenticated stays known


def body_limits(settings: ServiceSettings, judge: Settings) -> dict[str, int]:
    """The largest body per endpoint; others take SMALL_BODY. JSON may escape each byte
    of the code or the metadata as ``\\u00XX`` (6 bytes), and the other fields are small;
    a notebook (a JSON object, or its text in a string) gets twice its own limit."""
    submit = (max(6 * judge.max_code_bytes, 2 * judge.max_notebook_bytes)
              + 6 * settings.max_metadata_bytes + SMALL_BODY)
    page_submit = max(submit, judge.max_notebook_bytes + SMALL_BODY)  # code or a notebook
    return {"submissions.create_submission": submit,
            "batches.create_batch": settings.max_request_bytes,
            "student.submit_code": page_submit,
            "instructor.upload_batch": settings.max_request_bytes,
            "problemsets.upload": settings.max_request_bytes,
            "instructor.upload_package": settings.max_request_bytes}


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
    page = PAGE_PATH.match(request.path)
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


def limit_bodies(app: Flask, limits: dict[str, int]) -> None:
    @app.before_request
    def _body_limit() -> None:
        request.max_content_length = limits.get(request.endpoint or "", SMALL_BODY)
