"""``create_app(settings)``: settings read once at the edge, services built once per
process and kept in ``app.extensions['jaxjudge']``, then each sibling included by its
dotted name (as warehouse's ``config.include``): the factory knows where the siblings
are, not what is in them, and none of them imports another or this module.
"""

from __future__ import annotations

import importlib

from flask import Flask
from redis import Redis
from werkzeug.middleware.proxy_fix import ProxyFix

from app import pages
from app.limits import KnownKeys, limit_bodies, make_limiter
from app.services import Services
from judge import __version__
from judge.catalog import Catalog
from judge.settings import Settings, load
from service import logcontext
from service.db import Database
from service.library import Library
from service.longpoll import Notices, WaitSlots
from service.queue import make_celery
from service.settings import ServiceSettings

# Each has ``include(app, services)``; the order is the order of their routes.
SIBLINGS = ("api", "web", "lti.views")


def create_app(settings: ServiceSettings | None = None,
               judge_settings: Settings | None = None) -> Flask:
    # A bad JAXJUDGE_* value: one line, and status 3, gunicorn's "worker failed to boot",
    # on which its master stops instead of starting the worker again and again.
    settings = settings or load(ServiceSettings, exit_status=3)
    judge_settings = judge_settings or load(Settings, exit_status=3)
    logcontext.configure_api()  # lines name the submission being received
    app = Flask(__name__)
    if settings.trusted_proxy_hops:
        hops = settings.trusted_proxy_hops
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops)  # type: ignore[method-assign]
    app.json.sort_keys = False  # type: ignore[attr-defined]
    redis = Redis.from_url(settings.redis_url, socket_connect_timeout=1, socket_timeout=5)
    known_keys = KnownKeys(redis)
    db = Database(settings.database_url)
    svc = Services(
        settings=settings,
        judge=judge_settings,
        db=db,
        library=Library(Catalog(judge_settings.problems_dir), db, settings.packages_dir),
        celery=make_celery(settings),
        redis=redis,
        limiter=make_limiter(app, settings, known_keys),
        known_keys=known_keys,
        notices=Notices(settings.redis_url),
        waits=WaitSlots(redis, settings.long_poll_max_per_key, settings.long_poll_max_seconds),
    )
    app.extensions["jaxjudge"] = svc
    limit_bodies(app)
    pages.install(app, settings, redis)
    for name in SIBLINGS:
        importlib.import_module(name).include(app, svc)
    app.config["JAXJUDGE_VERSION"] = __version__
    return app
