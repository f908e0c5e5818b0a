"""Names and Role Provisioning Services: a course's roster from its LMS.

:func:`sync_course` reads the course's memberships (the ``context_memberships_url`` a
launch gave, ``Accept: application/vnd.ims.lti-nrps.v2.membershipcontainer+json``, a
token with the ``contextmembership.readonly`` scope), following ``Link: <...>;
rel="next"`` from page to page (at most ``MAX_PAGES`` pages of at most ``MAX_PAGE_BYTES``
each), and upserts every member listed (:func:`service.courses.upsert_member`, with the
status the platform gives, ``Active`` by default). Members of the course that the whole
roster no longer lists become ``Inactive`` (never deleted: their submissions stay in the
gradebook). A roster that could not be read to its end changes no one's status.

Errors (the platform down, a refused token, a page that is not a membership container)
are the result's ``error``, never an exception: the gradebook shows the roster it has.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import urljoin

from redis import Redis
from sqlalchemy import func, select, update

from judge.nesting import load_json
from lti.tokens import Platform, Tokens, authorized_get
from service.courses import upsert_member
from service.db import Database, changed, utcnow
from service.models import Course, LtiPlatform, Member
from service.outbound import Outcome
from service.settings import ServiceSettings

SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
MEDIA_TYPE = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
MAX_PAGES = 100
MAX_PAGE_BYTES = 4 << 20
STATUSES = {"Active", "Inactive", "Deleted"}
_NEXT = re.compile(r'<([^>]*)>\s*;[^,]*\brel\s*=\s*"?next"?', re.IGNORECASE)


@dataclass(frozen=True)
class SyncResult:
    """What a roster sync did: ``ok`` when the whole roster was read and stored."""

    ok: bool
    members: int = 0  # listed by the platform
    inactive: int = 0  # members of the course no longer listed, now Inactive
    pages: int = 0
    error: str = ""
    synced_at: Any = field(default=None)


def next_link(header: str) -> str | None:
    """The ``rel="next"`` target of a Link header."""
    found = _NEXT.search(header or "")
    return found.group(1) if found else None


def _page(tokens: Tokens, platform: Platform, url: str) -> Outcome:
    return authorized_get(tokens, platform, url, SCOPE, accept=MEDIA_TYPE,
                          limit=MAX_PAGE_BYTES)


def read_roster(tokens: Tokens, platform: Platform, url: str) -> tuple[list[dict[str, Any]], int]:
    """Every member of the roster at ``url`` and the pages read; raises ``RosterError``."""
    members: list[dict[str, Any]] = []
    seen: set[str] = set()
    pages = 0
    next_url: str | None = url
    while next_url is not None:
        if pages >= MAX_PAGES:
            raise RosterError(f"the roster has more than {MAX_PAGES} pages")
        if next_url in seen:
            raise RosterError("the roster's pages link in a loop")
        seen.add(next_url)
        got = _page(tokens, platform, next_url)
        pages += 1
        if not got.ok:
            raise RosterError(f"page {pages}: {got.error}")
        if not got.complete:
            raise RosterError(f"page {pages} is larger than {MAX_PAGE_BYTES} bytes")
        try:
            listed = load_json(got.body)["members"]
            if not isinstance(listed, list):
                raise TypeError("members is not a list")
        except (ValueError, TypeError, KeyError) as exc:
            raise RosterError(f"page {pages} is not a membership container "
                              f"({type(exc).__name__})") from None
        members += [m for m in listed if isinstance(m, dict)]
        link = next_link(got.headers.get("link", ""))
        next_url = urljoin(next_url, link) if link else None
    return members, pages


class RosterError(Exception):
    """The roster could not be read to its end (one line)."""


def _text(member: dict[str, Any], name: str) -> str:
    value = member.get(name)
    return value if isinstance(value, str) else ""


def sync_course(db: Database, settings: ServiceSettings, course_id: int,
                redis: Redis | None = None) -> SyncResult:
    """Read the course's roster from its platform and store it (see the module)."""
    with db.session() as s:
        found = s.execute(select(Course.memberships_url, LtiPlatform.id, LtiPlatform.client_id,
                                 LtiPlatform.token_url)
                          .join(LtiPlatform, LtiPlatform.id == Course.platform_id)
                          .where(Course.id == course_id)).first()
    if found is None or not found[0]:
        return SyncResult(False, error="the course has no roster service (no NRPS "
                          "memberships URL from its platform)")
    url, platform = found[0], Platform(found[1], found[2], found[3])
    try:
        members, pages = read_roster(Tokens(db, settings, redis), platform, url)
    except RosterError as exc:
        return SyncResult(False, error=f"roster not read: {exc}")
    now = utcnow()
    listed: set[str] = set()
    with db.session() as s:
        for member in members:
            user_id = _text(member, "user_id")
            if not user_id or len(user_id) > 255 or user_id in listed:
                continue
            listed.add(user_id)
            roles = [r for r in member.get("roles", []) if isinstance(r, str)] \
                if isinstance(member.get("roles"), list) else []
            status = _text(member, "status") or "Active"
            upsert_member(s, course_id, user_id, name=_text(member, "name"),
                          email=_text(member, "email"), roles=roles, synced=True,
                          status=status if status in STATUSES else "Active")
        gone = [uid for uid in s.scalars(select(Member.user_id).where(
            Member.course_id == course_id, Member.status == "Active")) if uid not in listed]
        inactive = 0
        for part in range(0, len(gone), 500):
            inactive += changed(s, update(Member).where(
                Member.course_id == course_id, Member.user_id.in_(gone[part:part + 500]))
                .values(status="Inactive", synced_at=now))
    return SyncResult(True, len(listed), inactive, pages, synced_at=now)


def roster_age(db: Database, course_id: int) -> timedelta | None:
    """How long ago the course's roster was last synced (None: never)."""
    with db.session() as s:
        last = s.scalar(select(func.max(Member.synced_at)).where(Member.course_id == course_id))
    return utcnow() - last if last is not None else None


def sync_if_stale(db: Database, settings: ServiceSettings, course_id: int,
                  redis: Redis | None = None) -> SyncResult | None:
    """Sync the roster when it is older than ``lti_roster_max_age_seconds`` (or never
    synced); None when it is fresh enough. What the gradebook calls."""
    age = roster_age(db, course_id)
    if age is not None and age.total_seconds() < settings.lti_roster_max_age_seconds:
        return None
    return sync_course(db, settings, course_id, redis)
