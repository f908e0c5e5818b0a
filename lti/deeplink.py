"""LTI Deep Linking 2.0, the tool side: the response an instructor's choice sends back to
the platform's ``deep_link_return_url``: a JWT (``LtiDeepLinkingResponse``) signed with
the tool's current key (its ``kid`` in the header), carrying one ``ltiResourceLink``
content item:

- ``custom: {"problem": "<set>/<slug>"}``: every later launch of the link names the
  problem (:attr:`lti.launch.Launch.problem`);
- ``lineItem``: the gradebook column the platform makes for it: ``scoreMaximum`` the
  problem's maximum score, ``resourceId`` the problem id, ``label`` its title;
- the request's ``data``, echoed unchanged (the platform matches it to its request).

The catalog search of the picker is here too (by title or id, and by skill: the problem
set a problem belongs to), so the page only renders it.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

import jwt
from sqlalchemy.orm import Session

from judge.problem import Problem
from judge.testdata import load_tests
from lti import keys
from lti.launch import DEPLOYMENT_ID, MESSAGE_TYPE, VERSION
from service.library import Library
from service.models import LtiPlatform
from service.settings import ServiceSettings

DL = "https://purl.imsglobal.org/spec/lti-dl/claim/"
RESPONSE_LIFETIME = 600


@dataclass(frozen=True)
class Choice:
    id: str
    title: str
    skill: str  # the problem set


def skill_of(problem_id: str) -> str:
    return problem_id.split("/", 1)[0]


def search(problems: list[Problem], query: str = "", skill: str = "") -> list[Choice]:
    """Problems whose title or id holds every word of ``query`` (any case), of ``skill``
    if given, by title."""
    words = query.lower().split()
    found = []
    for p in problems:
        text = f"{p.spec.title} {p.id}".lower()
        if skill and skill_of(p.id) != skill:
            continue
        if all(w in text for w in words):
            found.append(Choice(p.id, p.spec.title, skill_of(p.id)))
    return sorted(found, key=lambda c: (c.title.lower(), c.id))


def skills(problems: list[Problem]) -> list[str]:
    return sorted({skill_of(p.id) for p in problems})


def max_score(problem: Problem) -> float:
    return float(sum(t.points for t in load_tests(problem)))


def content_item(problem: Problem, target_link_uri: str) -> dict[str, Any]:
    title = problem.spec.title
    return {
        "type": "ltiResourceLink",
        "title": title,
        "url": target_link_uri,
        "custom": {"problem": problem.id},
        "lineItem": {"scoreMaximum": max_score(problem), "label": title,
                     "resourceId": problem.id},
    }


def response_jwt(s: Session, settings: ServiceSettings, platform: LtiPlatform,
                 deployment_id: str, dl_settings: dict[str, Any],
                 items: list[dict[str, Any]]) -> str:
    """The signed ``LtiDeepLinkingResponse`` for ``items``."""
    kid, private = keys.signing_key(s, settings)
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": platform.client_id,
        "aud": platform.issuer,
        "iat": now,
        "exp": now + RESPONSE_LIFETIME,
        "nonce": secrets.token_urlsafe(24),
        MESSAGE_TYPE: "LtiDeepLinkingResponse",
        VERSION: "1.3.0",
        DEPLOYMENT_ID: deployment_id,
        DL + "content_items": items,
    }
    if "data" in dl_settings:
        claims[DL + "data"] = dl_settings["data"]
    return jwt.encode(claims, private, algorithm="RS256", headers={"kid": kid})


def catalog_problems(library: Library, tenant_id: int) -> list[Problem]:
    """The problems the tenant sees that load (a broken package is left out of the
    picker): the global ones and the live version of each of its own."""
    good, _broken = library.scan(tenant_id)
    return good

