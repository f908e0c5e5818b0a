"""The settings of the stack that ``make up`` started, for the operators' commands.

``make up`` (``scripts/service.sh``) runs every process of its stack with ``JAXJUDGE_*``
variables: the ones it was given, and the ones it derives (``JAXJUDGE_VAR``, the Redis
URL from ``JAXJUDGE_REDIS_PORT``, the public URL from ``JAXJUDGE_PORT``, the database
under the var folder). It notes them all in ``<var>/stack.json`` (:func:`note`, mode
0600 from its creation: it may hold the secret key or a database password). The
``jaxjudge`` service commands (``db``, ``keys``, ``tenants``, ``lti``, ``deliveries``)
read their settings with :func:`settings`: the environment first, then that file, so a
command run from the checkout without any variable reaches the running stack's database
and Redis, and uses its secret key and public URL. The var folder is ``JAXJUDGE_VAR``,
else ``./var``: an operator who moved it says so once, with that one variable.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic_settings import BaseSettings, PydanticBaseSettingsSource
from pydantic_settings.sources import EnvSettingsSource
from pydantic_settings.sources.utils import parse_env_vars

from judge.errors import UsageError
from service.settings import ServiceSettings

STACK_FILE = "stack.json"
PREFIX = "JAXJUDGE_"


def var_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """The var folder of the stack a command talks to: ``JAXJUDGE_VAR``, else ``./var``."""
    return Path(environ.get(PREFIX + "VAR") or Path.cwd() / "var").absolute()


def note(path: Path, environ: Mapping[str, str]) -> None:
    """Write the ``JAXJUDGE_*`` variables of ``environ`` to ``path`` (a JSON object),
    readable by its owner only; replaces the file whole (write, then rename)."""
    values = {k: v for k, v in sorted(environ.items()) if k.startswith(PREFIX)}
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = path.with_name(path.name + ".new")
    fresh.unlink(missing_ok=True)
    fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(values, f, indent=1)
        f.write("\n")
    fresh.replace(path)


def noted(path: Path) -> dict[str, str]:
    """What :func:`note` wrote at ``path`` (nothing when there is no such file)."""
    try:
        found = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not the settings make up notes ({exc}); remove it or "
                         "run make up again") from None
    if not isinstance(found, dict) or not all(isinstance(v, str) for v in found.values()):
        raise UsageError(f"{path}: not the settings make up notes; remove it or run make "
                         "up again")
    return {k: v for k, v in found.items() if k.startswith(PREFIX)}


class _Noted(EnvSettingsSource):
    """The noted variables as a settings source, read as the environment is."""

    def __init__(self, settings_cls: type[BaseSettings], values: Mapping[str, str]) -> None:
        self._values = values
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(self._values, self.case_sensitive, self.env_ignore_empty,
                              self.env_parse_none_str)


class StackSettings(ServiceSettings):
    """Service settings from the environment, then from the stack's ``stack.json``."""

    @classmethod
    def settings_customise_sources(
            cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        stack = _Noted(settings_cls, noted(var_dir() / STACK_FILE))
        return init_settings, env_settings, stack, dotenv_settings, file_secret_settings


def settings(**overrides: Any) -> ServiceSettings:
    """The settings an operator's command uses: its environment, else the stack's."""
    return StackSettings(**overrides)


def main(argv: list[str] | None = None) -> None:
    """``python -m service.stack note``: what ``make up`` runs once its variables are set."""
    args = sys.argv[1:] if argv is None else argv
    if args != ["note"]:
        sys.stderr.write("usage: python -m service.stack note\n")
        raise SystemExit(2)
    path = var_dir() / STACK_FILE
    note(path, os.environ)
    print(f"settings noted in {path}")


if __name__ == "__main__":
    main()
