"""LMS platforms registered with a tenant (``jaxjudge lti platforms add|list|remove``, or
LTI Dynamic Registration): issuer, the client id the platform gave the tool, the
deployments of the tool it made, and its OIDC login, token and key-set URLs.

One (issuer, client id) pair belongs to one platform row; an issuer may hold several
registrations (one per client id). Bad input is a :class:`~judge.errors.UsageError` of
one line (exit 2 in the CLI, a 4xx page on the web).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from judge.errors import UsageError
from service.db import utcnow
from service.keys import get_or_create_tenant
from service.models import LtiPlatform, Tenant


def check_url(name: str, url: str, *, allow_http: bool = True) -> str:
    """An absolute http(s) URL without credentials or fragment; UsageError otherwise.

    Plain http is accepted (a test platform, a platform on the same host); production
    platforms are https."""
    url = url.strip()
    parts = urlsplit(url)
    schemes = ("https", "http") if allow_http else ("https",)
    if parts.scheme not in schemes or not parts.hostname:
        raise UsageError(f"{name} must be an absolute {' or '.join(schemes)} URL, "
                         f"not {url[:200]!r}")
    if parts.username or parts.password:
        raise UsageError(f"{name} must not carry credentials")
    if parts.fragment:
        raise UsageError(f"{name} must not have a #fragment")
    if len(url) > 2048:
        raise UsageError(f"{name} is longer than 2048 characters")
    return url


def _deployments(values: Iterable[str]) -> list[str]:
    found: list[str] = []
    for value in values:
        value = value.strip()
        if not value or len(value) > 255:
            raise UsageError("a deployment id must have 1 to 255 characters")
        if value not in found:
            found.append(value)
    return found


def add(s: Session, tenant: str, *, issuer: str, client_id: str, deployment_ids: Iterable[str],
        login_url: str, token_url: str, jwks_url: str, name: str = "",
        require_deployment: bool = True) -> LtiPlatform:
    """Register a platform with ``tenant`` (made if new). An (issuer, client id) already
    registered is refused; several deployment ids may be given (none only where
    ``require_deployment`` is off: a dynamic registration whose platform makes the
    deployment later; add it with :func:`add_deployment`)."""
    issuer = check_url("issuer", issuer)
    client_id = client_id.strip()
    if not client_id or len(client_id) > 255:
        raise UsageError("client id must have 1 to 255 characters")
    deployments = _deployments(deployment_ids)
    if not deployments and require_deployment:
        raise UsageError("give at least one deployment id")
    urls = {key: check_url(key.replace("_", " "), value) for key, value in
            (("login_url", login_url), ("token_url", token_url), ("jwks_url", jwks_url))}
    if len(name) > 200:
        raise UsageError("name is longer than 200 characters")
    taken = s.scalar(select(LtiPlatform).where(LtiPlatform.issuer == issuer,
                                               LtiPlatform.client_id == client_id))
    if taken is not None:
        raise UsageError(f"issuer {issuer} with client id {client_id!r} is already "
                         f"registered (platform {taken.id})")
    row = LtiPlatform(tenant_id=get_or_create_tenant(s, tenant).id, name=name, issuer=issuer,
                      client_id=client_id, deployment_ids=deployments, created_at=utcnow(),
                      **urls)
    s.add(row)
    s.flush()
    return row


def add_deployment(s: Session, platform_id: int, deployment_id: str) -> LtiPlatform:
    """Add a deployment id to a platform (one made after its registration)."""
    row = s.get(LtiPlatform, platform_id)
    if row is None:
        raise UsageError(f"no platform {platform_id}")
    deployments = _deployments([*row.deployment_ids, deployment_id])
    if deployments != row.deployment_ids:
        row.deployment_ids = deployments
    return row


def listed(s: Session, tenant: str | None = None) -> list[tuple[LtiPlatform, str]]:
    """Platforms with their tenant's name, by tenant then id."""
    query = (select(LtiPlatform, Tenant.name).join(Tenant, Tenant.id == LtiPlatform.tenant_id)
             .order_by(Tenant.name, LtiPlatform.id))
    if tenant is not None:
        query = query.where(Tenant.name == tenant)
    return [(row, name) for row, name in s.execute(query).tuples()]


def remove(s: Session, platform_id: int) -> LtiPlatform:
    """Remove a platform (its courses and assignments go with it)."""
    row = s.get(LtiPlatform, platform_id)
    if row is None:
        raise UsageError(f"no platform {platform_id}")
    s.delete(row)
    s.flush()
    return row


def find(s: Session, issuer: str, client_id: str | None) -> LtiPlatform:
    """The platform an OIDC login names; UsageError if none, or if ``client_id`` is left
    out and the issuer has several registrations."""
    query = select(LtiPlatform).where(LtiPlatform.issuer == issuer)
    if client_id:
        query = query.where(LtiPlatform.client_id == client_id)
    rows = list(s.scalars(query.limit(2)))
    if not rows:
        raise UsageError("this platform is not registered with the tool"
                         + (" (unknown issuer or client id)" if client_id else ""))
    if len(rows) > 1:
        raise UsageError("the issuer has several registrations: the login must name its "
                         "client_id")
    return rows[0]
