"""``create_app(settings)``: settings read once at the edge, services built once per
process and kept in ``app.extensions['jaxjudge']``."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from celery import Celery
from flask import Flask, current_app, request
from flask_limiter import Limiter
from redis import Redis

from judge import __version__
from judge.catalog import Catalog
from judge.settings import Settings
from service.db import Database
from service.queue import make_celery
from service.settings import ServiceSettings


@dataclass
class Services:
    settings: ServiceSettings
    judge: Settings
    db: Database
    catalog: Catalog
    celery: Celery
    redis: Redis
    limiter: Limiter


def services() -> Services:
    found: Services = current_app.extensions["jaxjudge"]
    return found


def rate_key() -> str:
    """Rate limits count per API key (a hash of it), else per client address."""
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        return "key:" + hashlib.sha256(header[7:].strip().encode()).hexdigest()[:24]
    return "addr:" + (request.remote_addr or "?")


def create_app(settings: ServiceSettings | None = None,
               judge_settings: Settings | None = None) -> Flask:
    from api import batches, docs, errors, health, problems, submissions

    settings = settings or ServiceSettings()
    judge_settings = judge_settings or Settings()
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = settings.max_request_bytes
    app.json.sort_keys = False  # type: ignore[attr-defined]
    limiter = Limiter(
        key_func=rate_key,
        app=app,
        storage_uri=settings.redis_url,
        storage_options={"socket_connect_timeout": 1, "socket_timeout": 1},
        default_limits=[settings.rate_limit] if settings.rate_limit else [],
        strategy="fixed-window",
        headers_enabled=True,
        swallow_errors=True,  # Redis away: serve without limits rather than fail
        key_prefix="jaxjudge:rate",
    )
    app.extensions["jaxjudge"] = Services(
        settings=settings,
        judge=judge_settings,
        db=Database(settings.database_url),
        catalog=Catalog(judge_settings.problems_dir),
        celery=make_celery(settings),
        redis=Redis.from_url(settings.redis_url, socket_connect_timeout=1, socket_timeout=5),
        limiter=limiter,
    )
    errors.register(app)
    for module in (problems, submissions, batches, health, docs):
        app.register_blueprint(module.bp)
    if settings.submit_rate_limit:
        for name in ("submissions.create_submission", "batches.create_batch"):
            limited = limiter.limit(settings.submit_rate_limit)(app.view_functions[name])
            app.view_functions[name] = limited  # type: ignore[assignment]
    for name in ("health.healthz", "health.readyz", "health.metrics", "docs.openapi_json",
                 "docs.browse"):
        limiter.exempt(app.view_functions[name])
    app.config["JAXJUDGE_VERSION"] = __version__
    return app
