"""The deployment's secret: what encrypts the LTI tool's private keys in the database and
signs launch links.

It is ``JAXJUDGE_SECRET_KEY`` when set. When empty, a random one is made once in
``<var>/secret_key`` (``JAXJUDGE_VAR``, ``./var`` by default, beside the embedded database),
created with mode 0600 from the start (``O_CREAT | O_EXCL`` with the mode, never
chmod-ed afterwards), and read from there by every later process. Two processes that race
to make it both end up reading the one that was written first. A deployment of several
machines must set ``JAXJUDGE_SECRET_KEY`` instead: each machine would make its own file.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

from judge.errors import UsageError
from service.settings import ServiceSettings

SECRET_FILE = "secret_key"


def secret_key(settings: ServiceSettings, path: Path | None = None) -> bytes:
    """The configured secret, or the one kept in ``<var>/secret_key`` (made if missing)."""
    if settings.secret_key:
        return settings.secret_key.encode()
    path = path or settings.var / SECRET_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(48))
    for _ in range(50):  # a racing process may be between its create and its write
        value = path.read_text().strip()
        if value:
            return value.encode()
        time.sleep(0.02)
    raise UsageError(f"{path} is empty: remove it or set JAXJUDGE_SECRET_KEY")
