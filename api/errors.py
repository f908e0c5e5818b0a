"""Every error leaves the API as RFC 9457 problem details (``application/problem+json``).

Views raise :class:`ApiError` (or let a core :class:`~judge.errors.UsageError` through);
Werkzeug's HTTP errors, pydantic validation errors, an unreachable database (503 with
``Retry-After``) and anything unexpected (500, logged, no trace to the caller) are all
turned into the same shape here, as Flask's error-handling guide describes.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, g, json, request
from pydantic import ValidationError
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from werkzeug.exceptions import HTTPException

from judge.errors import ProblemNotFound, UsageError
from service.library import ProblemUnavailable
from service.models import ROLE_RANK, Role
from service.packages import PackageRejected
from service.submitting import Refused

log = logging.getLogger(__name__)
PROBLEM_JSON = "application/problem+json"


class ApiError(Exception):
    def __init__(self, status: int, title: str, detail: str = "",
                 headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(detail or title)
        self.status, self.title, self.detail = status, title, detail
        self.headers = headers or {}
        self.extra = extra


def problem(status: int, title: str, detail: str = "", headers: dict[str, str] | None = None,
            **extra: Any) -> Response:
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail,
            "instance": request.path if request else None, **extra}
    response = Response(json.dumps(body), status=status, mimetype=PROBLEM_JSON)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def validation_errors(exc: ValidationError) -> list[dict[str, Any]]:
    return [{"loc": [str(p) for p in e["loc"]], "msg": e["msg"], "type": e["type"]}
            for e in exc.errors(include_url=False, include_input=False)]


def register(app: Flask) -> None:
    @app.errorhandler(ApiError)
    def _api_error(exc: ApiError) -> Response:
        return problem(exc.status, exc.title, exc.detail, exc.headers, **exc.extra)

    @app.errorhandler(Refused)
    def _refused(exc: Refused) -> Response:
        return problem(exc.status, exc.title, exc.detail, exc.headers, **exc.extra)

    @app.errorhandler(ValidationError)
    def _invalid(exc: ValidationError) -> Response:
        errors = validation_errors(exc)
        first = errors[0] if errors else {"loc": [], "msg": "invalid"}
        where = ".".join(first["loc"]) or "body"
        return problem(422, "Invalid request", f"{where}: {first['msg']}", errors=errors)

    @app.errorhandler(ProblemNotFound)
    def _no_problem(exc: ProblemNotFound) -> Response:
        return problem(404, "Unknown problem", str(exc))

    @app.errorhandler(ProblemUnavailable)
    def _unavailable(exc: ProblemUnavailable) -> Response:
        """What needs a problem whose package cannot be loaded (its page, a launch link
        to it, a rejudge) is refused, naming it; the loader's message (files of the
        package) only for instructor and admin keys, as ``GET /v1/problems`` does."""
        log.error("problem %s cannot be loaded: %s", exc.problem_id, exc)
        role = g.get("role")
        why = f": {exc}" if role is not None and ROLE_RANK[role] >= ROLE_RANK[Role.INSTRUCTOR] \
            else " (GET /v1/problems lists it under broken)"
        return problem(503, "Problem unavailable", f"the problem {exc.problem_id} cannot be "
                       f"loaded: its package is broken and an operator must fix it{why}")

    @app.errorhandler(PackageRejected)
    def _package(exc: PackageRejected) -> Response:
        return problem(422, "Unprocessable package", str(exc))

    @app.errorhandler(UsageError)
    def _usage(exc: UsageError) -> Response:
        return problem(422, "Unprocessable submission", str(exc))

    @app.errorhandler(HTTPException)
    def _http(exc: HTTPException) -> Response:
        code = exc.code or 500
        headers = {k: v for k, v in exc.get_headers() if k.lower() != "content-type"}
        detail = exc.description or ""
        return problem(code, exc.name, detail, headers)

    @app.errorhandler(OperationalError)
    @app.errorhandler(InterfaceError)
    @app.errorhandler(PoolTimeout)
    def _database(exc: Exception) -> Response:
        log.warning("database unavailable: %s", str(exc).splitlines()[0])
        return problem(503, "Service unavailable", "the database is not answering; retry "
                       "shortly", {"Retry-After": "5"})

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return problem(500, "Internal server error", "the error was logged")
