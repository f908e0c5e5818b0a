"""Courses, assignments and members as launches and rosters tell them: each upsert finds
the row by its natural key (a platform's context, a course's resource link, a course's
user) and refreshes what the platform says now, so a second launch never makes a second
row, even when two launches race (the loser of the insert reads the winner's row).

Who may see what is decided by the caller from :func:`is_instructor`: the LTI context
roles Instructor, TeachingAssistant, ContentDeveloper and Administrator (and the
institution role Administrator) reach the instructor pages; everyone else is a learner.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.db import utcnow
from service.models import Assignment, Course, Member, Policy

T = TypeVar("T")

CONTEXT_ROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership#"
INSTITUTION_ROLE = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#"
TEACHING = ("Instructor", "TeachingAssistant", "ContentDeveloper", "Administrator")


def is_instructor(roles: Iterable[str]) -> bool:
    """Whether LTI roles (full URIs, or the short names NRPS may send) reach the
    instructor pages. Sub-roles (``membership/Instructor#TeachingAssistant``) count as
    their principal role."""
    for role in roles:
        name = role
        for prefix in (CONTEXT_ROLE, "http://purl.imsglobal.org/vocab/lis/v2/membership/"):
            if role.startswith(prefix):
                name = role[len(prefix):].split("#")[0]
                break
        else:
            if role == INSTITUTION_ROLE + "Administrator":
                return True
            if role.startswith("http"):
                continue
        if name in TEACHING:
            return True
    return False


def _upsert(s: Session, find: Callable[[], T | None], make: Callable[[], T],
            refresh: Callable[[T], None]) -> T:
    row = find()
    if row is None:
        try:
            with s.begin_nested():
                row = make()
                s.add(row)
                s.flush()
        except IntegrityError:  # a concurrent launch inserted it first
            row = find()
            assert row is not None
    refresh(row)
    return row


def upsert_course(s: Session, *, tenant_id: int, platform_id: int | None, context_id: str,
                  title: str = "", label: str = "",
                  memberships_url: str | None = None) -> Course:
    def find() -> Course | None:
        return s.scalars(select(Course).where(
            Course.tenant_id == tenant_id, Course.context_id == context_id,
            Course.platform_id.is_(None) if platform_id is None
            else Course.platform_id == platform_id)).first()

    def make() -> Course:
        now = utcnow()
        return Course(tenant_id=tenant_id, platform_id=platform_id, context_id=context_id,
                      title=title[:500], label=label[:200], memberships_url=memberships_url,
                      created_at=now, updated_at=now)

    def refresh(row: Course) -> None:
        _set(row, title=title[:500] or row.title, label=label[:200] or row.label,
             memberships_url=memberships_url or row.memberships_url)

    return _upsert(s, find, make, refresh)


def upsert_assignment(s: Session, course: Course, *, resource_link_id: str, problem: str,
                      title: str = "", lineitem_url: str | None = None,
                      lineitems_url: str | None = None,
                      ags_scopes: list[str] | None = None) -> Assignment:
    """The assignment of a resource link. Its problem is fixed when it is made (a later
    launch naming another problem does not move the grades already given)."""

    def find() -> Assignment | None:
        return s.scalars(select(Assignment).where(
            Assignment.course_id == course.id,
            Assignment.resource_link_id == resource_link_id)).first()

    def make() -> Assignment:
        now = utcnow()
        return Assignment(id=uuid.uuid4().hex, tenant_id=course.tenant_id, course_id=course.id,
                          resource_link_id=resource_link_id, problem=problem,
                          title=title[:500], policy=Policy.BEST, lineitem_url=lineitem_url,
                          lineitems_url=lineitems_url, ags_scopes=ags_scopes,
                          created_at=now, updated_at=now)

    def refresh(row: Assignment) -> None:
        _set(row, title=title[:500] or row.title,
             lineitem_url=lineitem_url or row.lineitem_url,
             lineitems_url=lineitems_url or row.lineitems_url,
             ags_scopes=ags_scopes if ags_scopes is not None else row.ags_scopes)

    return _upsert(s, find, make, refresh)


def upsert_member(s: Session, course_id: int, user_id: str, *, name: str = "",
                  email: str = "", roles: list[str] | None = None, launched: bool = False,
                  synced: bool = False, status: str = "Active") -> Member:
    def find() -> Member | None:
        return s.scalars(select(Member).where(Member.course_id == course_id,
                                              Member.user_id == user_id)).first()

    def make() -> Member:
        return Member(course_id=course_id, user_id=user_id, name=name[:300],
                      email=email[:300], roles=list(roles or []), status=status)

    def refresh(row: Member) -> None:
        now = utcnow()
        _set(row, name=name[:300] or row.name, email=email[:300] or row.email,
             roles=list(roles) if roles is not None else row.roles, status=status,
             launched_at=now if launched else row.launched_at,
             synced_at=now if synced else row.synced_at)

    return _upsert(s, find, make, refresh)


def _set(row: Any, **values: Any) -> None:
    """Assign only what changed, so an unchanged row is not written again."""
    changed: Mapping[str, Any] = {k: v for k, v in values.items() if getattr(row, k) != v}
    for name, value in changed.items():
        setattr(row, name, value)
    if changed and hasattr(row, "updated_at"):
        row.updated_at = utcnow()
