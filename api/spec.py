"""The OpenAPI 3.1 document, generated from the code: each view declares its operation
with :func:`operation` (summary, body and query models, responses as wire models), and
:func:`openapi` walks the app's URL map. Requests are parsed with the same models, so the
document and the validation cannot drift apart.

Hand-built (this module, on pydantic's ``models_json_schema``) rather than taken from
flask-smorest, APIFlask, flask-openapi3 or SpecTree: the wire types are pydantic models
declared once (:mod:`service.wire`) and shared with the pages and the CLI, so a library
built on marshmallow schemas (flask-smorest; APIFlask's default) would declare them a
second time; the pydantic ones replace Flask's app or blueprint classes
(flask-openapi3's ``OpenAPI``/``APIBlueprint``) or wrap each view in their own
validation, and answer a bad request in their own error shape, where every 4xx here is
problem+json (RFC 9457) with a bounded, depth-checked body (:func:`parse_json`). What
the document needs from a view is four facts, which :func:`operation` records.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from flask import Flask, request
from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from api.errors import PROBLEM_JSON, ApiError
from judge.nesting import MAX_DEPTH, TooDeep, load_json
from service.wire import ProblemDetails

M = TypeVar("M", bound=BaseModel)
F = TypeVar("F", bound=Callable[..., Any])
Media = type[BaseModel] | dict[str, Any] | None


@dataclass
class Operation:
    summary: str
    tag: str
    responses: dict[int, tuple[str, Media, str]]  # status -> (description, schema, media type)
    body: type[BaseModel] | None = None
    body_alternatives: dict[str, dict[str, Any]] = field(default_factory=dict)
    query: type[BaseModel] | None = None
    role: str | None = None  # what require() asks for; None: no key needed
    description: str = ""


def operation(summary: str, *, tag: str, responses: dict[int, Any],
              body: type[BaseModel] | None = None, query: type[BaseModel] | None = None,
              description: str = "",
              body_alternatives: dict[str, dict[str, Any]] | None = None) -> Callable[[F], F]:
    """Declare a view's operation (outside :func:`api.auth.require`, whose role it
    reads). ``responses`` maps a status to a wire model or to ``(description,
    schema-or-model, media type)``."""
    parsed: dict[int, tuple[str, Media, str]] = {}
    for status, spec in responses.items():
        if isinstance(spec, tuple):
            parsed[status] = spec
        else:
            parsed[status] = (spec.__name__ if spec else "No content", spec, "application/json")

    def decorate(view: F) -> F:
        view.__openapi__ = Operation(  # type: ignore[attr-defined]
            summary, tag, parsed, body, body_alternatives or {}, query,
            getattr(view, "required_role", None), description)
        return view

    return decorate


def parse_json(model: type[M]) -> M:
    """The request body as ``model``: 415 unless JSON, 400 unless UTF-8 JSON nested at
    most :data:`judge.nesting.MAX_DEPTH` levels, 422 when the fields are wrong
    (pydantic's errors, listed)."""
    if request.mimetype != "application/json":
        raise ApiError(415, "Unsupported media type", "send application/json")
    raw = request.get_data(cache=True)
    try:
        data = load_json(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ApiError(400, "Bad request", f"the body is not UTF-8 (byte {exc.start})") from None
    except TooDeep as exc:
        raise ApiError(400, "Bad request", f"the body is JSON {exc}; the limit is "
                       f"{MAX_DEPTH} levels of arrays and objects inside one another") from None
    except ValueError as exc:
        raise ApiError(400, "Bad request", f"the body is not JSON: {exc}") from None
    return model.model_validate(data)


def parse_query(model: type[M]) -> M:
    args: dict[str, Any] = {}
    for name in request.args:
        values = request.args.getlist(name)
        if len(values) > 1:
            raise ApiError(400, "Bad request", f"query parameter {name!r} given twice")
        args[name] = values[0]
    return model.model_validate(args)


_RULE_ARG = re.compile(r"<(?:[a-z]+:)?([a-z_]+)>")


def openapi(app: Flask, *, title: str, version: str) -> dict[str, Any]:
    models: dict[tuple[type[BaseModel], JsonSchemaMode], None] = {
        (ProblemDetails, "serialization"): None}
    ops: list[tuple[str, str, Operation, list[str]]] = []
    for rule in app.url_map.iter_rules():
        op: Operation | None = getattr(app.view_functions[rule.endpoint], "__openapi__", None)
        if op is None:
            continue
        path = _RULE_ARG.sub(r"{\1}", rule.rule)
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            ops.append((path, method.lower(), op, _RULE_ARG.findall(rule.rule)))
        if op.body:
            models[(op.body, "validation")] = None
        for _desc, schema, _media in op.responses.values():
            if isinstance(schema, type):
                models[(schema, "serialization")] = None
    refs, defs = models_json_schema(list(models), ref_template="#/components/schemas/{model}")

    def schema_of(media: Media, mode: str) -> dict[str, Any]:
        if media is None:
            return {}
        if isinstance(media, dict):
            return media
        return refs[(media, mode)]  # type: ignore[index]

    paths: dict[str, dict[str, Any]] = {}
    for path, method, op, path_args in ops:
        doc: dict[str, Any] = {"summary": op.summary, "tags": [op.tag],
                               "operationId": f"{method}_{_op_id(path)}"}
        if op.description:
            doc["description"] = op.description
        params = [{"name": a, "in": "path", "required": True, "schema": {"type": "string"}}
                  for a in path_args]
        if op.query:
            qschema = op.query.model_json_schema()
            for name, prop in qschema.get("properties", {}).items():
                params.append({"name": name, "in": "query",
                               "required": name in qschema.get("required", []),
                               "schema": _simple(prop)})
        if params:
            doc["parameters"] = params
        if op.body:
            content = {"application/json": {"schema": schema_of(op.body, "validation")}}
            content.update(op.body_alternatives)
            doc["requestBody"] = {"required": True, "content": content}
        responses: dict[str, Any] = {}
        for status, (desc, media, media_type) in op.responses.items():
            entry: dict[str, Any] = {"description": desc}
            if media is not None:
                entry["content"] = {media_type: {"schema": schema_of(media, "serialization")}}
            responses[str(status)] = entry
        responses["default"] = {
            "description": "An error, as problem details (RFC 9457).",
            "content": {PROBLEM_JSON: {"schema": refs[(ProblemDetails, "serialization")]}},
        }
        doc["responses"] = responses
        if op.role:
            doc["security"] = [{"bearer": []}]
        paths.setdefault(path, {})[method] = doc
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version,
                 "description": "The jaxjudge grading API. See docs/api.md."},
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": defs.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "An API key: jaxjudge keys create"}},
        },
    }


def _op_id(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", path.lower()).strip("_")


def _simple(prop: dict[str, Any]) -> dict[str, Any]:
    """A query parameter's schema without pydantic's title noise."""
    return {k: v for k, v in prop.items() if k not in ("title",)}
