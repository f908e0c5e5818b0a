"""``Authorization: Bearer <key>``. A key belongs to one tenant and has a role; a view
asks for the least role it needs with :func:`require`. Another tenant's objects are
looked up with the caller's tenant in the query, so they answer 404, never 403. A key
that authenticates is remembered as known (app/limits.py: the failure limit of its
address does not apply to it); one that does not is a 401, counted against the address."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from flask import g

from api.errors import ApiError
from app.limits import presented_key
from app.services import services
from service.keys import authenticate
from service.models import ROLE_RANK, Role

F = TypeVar("F", bound=Callable[..., Any])
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="jaxjudge"'}


def require(role: Role) -> Callable[[F], F]:
    def decorate(view: F) -> F:
        @wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            key = presented_key()
            if key is None:
                raise ApiError(401, "Unauthorized", "send Authorization: Bearer <API key>",
                               CHALLENGE)
            with services().db.session() as s:
                found = authenticate(s, key)
                if found is None:
                    raise ApiError(401, "Unauthorized", "unknown or revoked API key", CHALLENGE)
                g.key_id, g.tenant_id, g.tenant_name = found.id, found.tenant_id, found.tenant.name
                g.role = Role(found.role)
            services().known_keys.remember(key)
            if ROLE_RANK[g.role] < ROLE_RANK[role]:
                raise ApiError(403, "Forbidden", f"this needs a key with role {role.value} "
                               f"or above; yours is {g.role.value}")
            return view(*args, **kwargs)

        wrapper.required_role = role  # type: ignore[attr-defined]  # read by api.spec
        return wrapper  # type: ignore[return-value]

    return decorate
