"""``create_app(settings)``: settings read once at the edge, services built once per
process and kept in ``app.extensions['jaxjudge']``."""

from __future__ import annotations

from dataclasses import dataclass

from celery import Celery
from flask import Flask, current_app
from flask_limiter import Limiter
from redis import Redis
from werkzeug.middleware.proxy_fix import ProxyFix

from api.limits import KnownKeys, body_limits, limit_bodies, make_limiter
from judge import __version__
from judge.catalog import Catalog
from judge.settings import Settings, load
from service.db import Database
from service.library import Library
from service.longpoll import Notices, WaitSlots
from service.queue import make_celery
from service.settings import ServiceSettings


@dataclass
class Services:
    settings: ServiceSettings
    judge: Settings
    db: Database
    library: Library  # the global catalog and the tenants' own sets
    celery: Celery
    redis: Redis
    limiter: Limiter
    known_keys: KnownKeys
    notices: Notices
    waits: WaitSlots


def services() -> Services:
    found: Services = current_app.extensions["jaxjudge"]
    return found


def create_app(settings: ServiceSettings | None = None,
               judge_settings: Settings | None = None) -> Flask:
    import web
    from api import (
        batches,
        docs,
        errors,
        health,
        launch_links,
        problems,
        problemsets,
        submissions,
    )

    # A bad JAXJUDGE_* value: one line, and status 3, gunicorn's "worker failed to boot",
    # on which its master stops instead of starting the worker again and again.
    settings = settings or load(ServiceSettings, exit_status=3)
    judge_settings = judge_settings or load(Settings, exit_status=3)
    app = Flask(__name__)
    if settings.trusted_proxy_hops:
        hops = settings.trusted_proxy_hops
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops)  # type: ignore[method-assign]
    app.json.sort_keys = False  # type: ignore[attr-defined]
    redis = Redis.from_url(settings.redis_url, socket_connect_timeout=1, socket_timeout=5)
    known_keys = KnownKeys(redis)
    limiter = make_limiter(app, settings, known_keys)
    db = Database(settings.database_url)
    app.extensions["jaxjudge"] = Services(
        settings=settings,
        judge=judge_settings,
        db=db,
        library=Library(Catalog(judge_settings.problems_dir), db, settings.packages_dir),
        celery=make_celery(settings),
        redis=redis,
        limiter=limiter,
        known_keys=known_keys,
        notices=Notices(settings.redis_url),
        waits=WaitSlots(redis, settings.long_poll_max_per_key, settings.long_poll_max_seconds),
    )
    limit_bodies(app, body_limits(settings, judge_settings))
    errors.register(app)
    for module in (problems, problemsets, submissions, batches, launch_links, health, docs):
        app.register_blueprint(module.bp)
    web.register(app, settings, redis)  # the pages (their own error pages and headers)
    from lti import views as lti_views  # LTI 1.3 endpoints (/lti/...) and the picker

    app.register_blueprint(lti_views.bp)
    if settings.submit_rate_limit:
        for name in ("submissions.create_submission", "batches.create_batch",
                     "student.submit_code", "instructor.upload_batch"):
            limited = limiter.limit(settings.submit_rate_limit)(app.view_functions[name])
            app.view_functions[name] = limited  # type: ignore[assignment]
    for name in ("health.healthz", "health.readyz", "health.metrics", "docs.openapi_json",
                 "docs.browse", "web.static", "web.highlight_css"):
        limiter.exempt(app.view_functions[name])
    app.config["JAXJUDGE_VERSION"] = __version__
    return app
