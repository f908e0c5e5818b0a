"""The OpenAPI document is generated from the code and holds: schemathesis sends
generated requests to every operation (authenticated, with a real database and Redis)
and checks that none answers 5xx and that every response matches the document (status
codes, content types, headers, schemas) and that requests breaking the schema are
refused. Not checked: that every schema-valid request is accepted, since some valid
shapes are refused on their meaning (an unknown problem, a cursor this API never gave
out, code with NUL bytes) with a documented 4xx."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error, positive_data_acceptance
from service_fixtures import auth

pytestmark = pytest.mark.service


def test_no_5xx_and_responses_match_the_document(app: Flask, keys: dict[str, str]) -> None:
    schema = schemathesis.openapi.from_wsgi("/v1/openapi.json", app)
    headers = auth(keys["admin"])
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @given(case=operation.as_strategy())
        @settings(max_examples=40, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        def run(case: Any) -> None:
            excluded = [positive_data_acceptance]
            if case.path == "/readyz":  # no worker runs here: its documented 503 is right
                excluded.append(not_a_server_error)
            case.call_and_validate(headers=headers, excluded_checks=excluded)

        try:
            run()
        except (Exception, BaseExceptionGroup) as exc:  # one entry per broken operation
            failures.append(f"{operation.label}: {str(exc).strip().splitlines()[0:6]}")
    assert operations >= 15
    assert failures == []


def test_the_document_is_served_and_browsable(client: FlaskClient) -> None:
    doc = client.get("/v1/openapi.json").get_json()
    assert doc["openapi"].startswith("3.1")
    post = doc["paths"]["/v1/submissions"]["post"]
    body = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body.endswith("/SubmissionCreate")
    assert {"202", "default"} <= set(post["responses"])
    assert "multipart/form-data" in doc["paths"]["/v1/batches"]["post"]["requestBody"]["content"]
    page = client.get("/v1/docs").get_data(as_text=True)
    assert "/v1/submissions" in page and "SubmissionCreate" in page
