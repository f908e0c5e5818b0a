"""Tenants and API keys. A key is shown once, when it is made; the database keeps its
SHA-256 (keys are 256-bit random, so a fast hash is enough) and a short prefix to name it.
"""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import select
from sqlalchemy.orm import Session

from judge.errors import UsageError
from service.models import ApiKey, Role, Tenant
from service.webhooks import new_secret

KEY_PREFIX = "jj_"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def get_or_create_tenant(session: Session, name: str) -> Tenant:
    if not name or len(name) > 100 or not name.isprintable():
        raise UsageError("a tenant name is 1 to 100 printable characters")
    tenant = session.scalar(select(Tenant).where(Tenant.name == name))
    if tenant is None:
        tenant = Tenant(name=name, webhook_secret=new_secret())
        session.add(tenant)
        session.flush()
    return tenant


def create_key(session: Session, tenant_name: str, role: str, name: str = "") -> str:
    """A new key for ``tenant_name`` (made if missing); returns the key itself."""
    try:
        role = Role(role)
    except ValueError:
        raise UsageError(
            f"unknown role {role!r}; known: {', '.join(r.value for r in Role)}"
        ) from None
    tenant = get_or_create_tenant(session, tenant_name)
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    session.add(ApiKey(tenant_id=tenant.id, role=role.value, prefix=key[:12],
                       key_hash=hash_key(key), name=name))
    session.flush()
    return key


def authenticate(session: Session, key: str) -> ApiKey | None:
    """The live key behind ``key``, or None."""
    if not key.startswith(KEY_PREFIX) or len(key) > 200:
        return None
    found = session.scalar(select(ApiKey).where(ApiKey.key_hash == hash_key(key)))
    if found is None or found.revoked_at is not None:
        return None
    return found
