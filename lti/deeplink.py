"""LTI Deep Linking 2.0, the tool side: the response an instructor's choice sends back to
the platform's ``deep_link_return_url``: a JWT (``LtiDeepLinkingResponse``) signed with
the tool's current key (its ``kid`` in the header), carrying one ``ltiResourceLink``
content item:

- ``custom: {"problem": "<set>/<slug>"}``: every later launch of the link names the
  problem (:attr:`lti.launch.Launch.problem`);
- ``lineItem``: the gradebook column the platform makes for it: ``scoreMaximum`` the
  problem's maximum score, ``resourceId`` the problem id, ``label`` its title;
- the request's ``data``, echoed unchanged (the platform matches it to its request);
- the dates the instructor chose in the picker, if any (:func:`picked_dates`): in
  ``custom`` (``jaxjudge_opens_at``, ``jaxjudge_due_at``, ``jaxjudge_late_until``), so
  they come back with the link's launches (:mod:`lti.dates` takes them at its first),
  and as the item's ``submission`` (start: opens, end: due) and ``available`` (start:
  opens) for an LMS that makes its own dates of them (Canvas, Sakai). The availability
  gets no end: an LMS locks the link then (Canvas's ``lock_at`` hides it), which would
  keep students from their results after the deadline; the late window stays the tool's.

The catalog search of the picker is here too (by title or id, and by skill: the problem
set a problem belongs to), so the page only renders it.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jwt
from sqlalchemy.orm import Session

from judge.problem import Problem
from judge.testdata import load_tests
from lti import keys
from lti.dates import DEEP_LINK_KEYS
from lti.errors import LaunchError
from lti.launch import DEPLOYMENT_ID, MESSAGE_TYPE, VERSION
from service import term, terms
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


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def picked_dates(form: Mapping[str, str]) -> term.Dates:
    """The optional dates of the picker's form (:func:`service.terms.form_dates`), in
    order; raises :class:`LaunchError`."""
    try:
        dates = terms.form_dates(form)
        terms.check_dates(dates)
    except terms.TermRefused as exc:
        raise LaunchError(exc.detail, 422) from None
    return dates


def content_item(problem: Problem, target_link_uri: str,
                 dates: term.Dates | None = None) -> dict[str, Any]:
    title = problem.spec.title
    custom = {"problem": problem.id}
    item: dict[str, Any] = {
        "type": "ltiResourceLink",
        "title": title,
        "url": target_link_uri,
        "custom": custom,
        "lineItem": {"scoreMaximum": max_score(problem), "label": title,
                     "resourceId": problem.id},
    }
    if dates is None:
        return item
    for name, key in DEEP_LINK_KEYS.items():
        at = getattr(dates, name)
        if at is not None:
            custom[key] = _iso(at)
    submission = {k: _iso(at) for k, at in (("startDateTime", dates.opens_at),
                                             ("endDateTime", dates.due_at)) if at is not None}
    if submission:
        item["submission"] = submission
    if dates.opens_at is not None:
        item["available"] = {"startDateTime": _iso(dates.opens_at)}
    return item


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

