"""``/v1/openapi.json`` (generated from the code, api/spec.py) and ``/v1/docs``, a page
that renders it server-side: no JavaScript, nothing fetched from elsewhere."""

from __future__ import annotations

import json
from typing import Any

from flask import Blueprint, current_app, render_template

from api.spec import openapi, operation

bp = Blueprint("docs", __name__, template_folder="templates")


def document() -> dict[str, Any]:
    cached: dict[str, Any] | None = current_app.config.get("JAXJUDGE_OPENAPI")
    if cached is None:
        cached = openapi(current_app, title="jaxjudge",
                         version=current_app.config["JAXJUDGE_VERSION"])
        current_app.config["JAXJUDGE_OPENAPI"] = cached
    return cached


@bp.get("/v1/openapi.json")
@operation("This API's OpenAPI 3.1 document", tag="docs",
           responses={200: ("OpenAPI document", {"type": "object"}, "application/json")})
def openapi_json() -> Any:
    return document()


@bp.get("/v1/docs")
@operation("Browsable API reference", tag="docs",
           responses={200: ("HTML", {"type": "string"}, "text/html")})
def browse() -> str:
    doc = document()
    schemas = {name: json.dumps(schema, indent=2)
               for name, schema in doc["components"]["schemas"].items()}
    return render_template("docs.html", doc=doc, schemas=schemas, dumps=json.dumps)
