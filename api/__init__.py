"""The REST API: a blueprint per resource, a thin adapter over the ``service`` layer and
a sibling of the pages (:mod:`web`) and the LTI endpoints (:mod:`lti.views`), none of
which it imports. It sends grading tasks by name and never imports ``workers``.

:func:`include` is what the application factory (:mod:`app.factory`) includes: the
problem+json error handlers, the blueprints, and the API's body and rate limits.
"""

from __future__ import annotations

from flask import Flask

from app.limits import body_limit, exempt, limit_submitting, submission_body
from app.services import Services


def include(app: Flask, svc: Services) -> None:
    from api import (
        analytics,
        assignments,
        batches,
        docs,
        errors,
        health,
        launch_links,
        problems,
        problemsets,
        similarity,
        submissions,
    )

    errors.register(app)
    for module in (analytics, problems, problemsets, submissions, batches, assignments,
                   similarity, launch_links, health, docs):
        app.register_blueprint(module.bp)
    settings = svc.settings
    body_limit(app, "submissions.create_submission", submission_body(settings, svc.judge))
    body_limit(app, "assignments.submit_to_assignment", submission_body(settings, svc.judge))
    body_limit(app, "assignments.patch_assignment", 1 << 20)  # up to 500 extensions
    body_limit(app, "batches.create_batch", settings.max_request_bytes)
    body_limit(app, "problemsets.upload", settings.max_request_bytes)
    limit_submitting(app, svc.limiter, settings, "submissions.create_submission",
                     "batches.create_batch", "assignments.submit_to_assignment")
    exempt(app, svc.limiter, "health.healthz", "health.readyz", "health.metrics",
           "docs.openapi_json", "docs.browse")
