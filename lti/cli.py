"""``jaxjudge lti``: platforms, the tool's keys and the URLs an LMS administrator needs.

    jaxjudge lti platforms add --tenant T --issuer URL --client-id ID
                               --deployment-id D [--deployment-id D2 ...]
                               --login-url URL --token-url URL --jwks-url URL [--name N]
    jaxjudge lti platforms list [--tenant T]
    jaxjudge lti platforms remove ID
    jaxjudge lti platforms add-deployment ID DEPLOYMENT_ID
    jaxjudge lti keys rotate | list
    jaxjudge lti urls [--base-url URL]
    jaxjudge lti register-url --tenant T [--hours H] [--base-url URL]

Bad input: one line and exit 2 (judge.cli turns UsageError into that). Settings: the
environment, then what ``make up`` noted for its stack (:mod:`service.stack`): after
``make up``, the commands reach its Redis and database and print its public URL.
"""

from __future__ import annotations

import click
from redis import Redis, RedisError

from judge.errors import UsageError
from lti import keys as tool_keys
from lti import platforms as tool_platforms
from lti import registration
from service import stack
from service.db import Database
from service.settings import ServiceSettings


def _settings() -> ServiceSettings:
    return stack.settings()


def _database(settings: ServiceSettings) -> Database:
    return Database(settings.database_url)


def _base(settings: ServiceSettings, base_url: str | None) -> str:
    base = (base_url or settings.public_url).rstrip("/")
    if not base:
        raise UsageError("give --base-url (the tool's public URL, as an LMS reaches it) or "
                         "set JAXJUDGE_PUBLIC_URL")
    tool_platforms.check_url("base URL", base)
    return base


@click.group()
def lti() -> None:
    """LTI 1.3: platforms, the tool's keys, URLs for an LMS administrator."""


@lti.group()
def platforms() -> None:
    """LMS platforms registered with a tenant."""


@platforms.command("add")
@click.option("--tenant", required=True, help="Tenant the platform's courses belong to.")
@click.option("--issuer", required=True, help="The platform's issuer (iss).")
@click.option("--client-id", required=True, help="The client id the platform gave the tool.")
@click.option("--deployment-id", "deployment_ids", multiple=True, required=True,
              help="A deployment id of the tool on the platform (repeatable).")
@click.option("--login-url", required=True, help="The platform's OIDC authorization URL.")
@click.option("--token-url", required=True, help="The platform's OAuth2 token URL.")
@click.option("--jwks-url", required=True, help="The platform's key set URL.")
@click.option("--name", default="", help="A name for people (e.g. 'Moodle of X').")
def platforms_add(tenant: str, issuer: str, client_id: str, deployment_ids: tuple[str, ...],
                  login_url: str, token_url: str, jwks_url: str, name: str) -> None:
    """Register a platform by hand (what its LTI 1.3 registration page shows)."""
    with _database(_settings()).session() as s:
        row = tool_platforms.add(s, tenant, issuer=issuer, client_id=client_id,
                                 deployment_ids=deployment_ids, login_url=login_url,
                                 token_url=token_url, jwks_url=jwks_url, name=name)
        click.echo(f"platform {row.id} registered for tenant {tenant}")


@platforms.command("list")
@click.option("--tenant", default=None)
def platforms_list(tenant: str | None) -> None:
    """id, tenant, issuer, client id, deployments, name."""
    with _database(_settings()).session() as s:
        for row, tenant_name in tool_platforms.listed(s, tenant):
            click.echo(f"{row.id}\t{tenant_name}\t{row.issuer}\t{row.client_id}\t"
                       f"{','.join(row.deployment_ids) or '-'}\t{row.name}")


@platforms.command("remove")
@click.argument("platform_id", type=int)
def platforms_remove(platform_id: int) -> None:
    """Remove a platform, with its courses and assignments."""
    with _database(_settings()).session() as s:
        row = tool_platforms.remove(s, platform_id)
        click.echo(f"platform {platform_id} ({row.issuer}) removed")


@platforms.command("add-deployment")
@click.argument("platform_id", type=int)
@click.argument("deployment_id")
def platforms_add_deployment(platform_id: int, deployment_id: str) -> None:
    """Accept launches from another deployment of the tool on a platform."""
    with _database(_settings()).session() as s:
        row = tool_platforms.add_deployment(s, platform_id, deployment_id)
        click.echo(f"platform {platform_id} deployments: {', '.join(row.deployment_ids)}")


@lti.group()
def keys() -> None:
    """The tool's key pairs (the JWKS platforms verify the tool with)."""


@keys.command("rotate")
def keys_rotate() -> None:
    """Make a new current key; the old one stays in the JWKS for lti_key_overlap_days."""
    settings = _settings()
    with _database(settings).session() as s:
        row = tool_keys.rotate(s, settings)
        click.echo(f"current key {row.kid}; earlier keys leave the JWKS after "
                   f"{settings.lti_key_overlap_days:g} days")


@keys.command("list")
def keys_list() -> None:
    """kid, state (current, retired until ..., expired), created."""
    from service.db import utcnow

    with _database(_settings()).session() as s:
        now = utcnow()
        for row in tool_keys.listed(s):
            if row.retired_at is None:
                state = "current"
            elif row.expires_at is not None and row.expires_at <= now:
                state = "expired"
            else:
                until = row.expires_at.isoformat(timespec="seconds") if row.expires_at else "?"
                state = f"retired, in the JWKS until {until}"
            click.echo(f"{row.kid}\t{state}\t{row.created_at.isoformat(timespec='seconds')}")


@lti.command("urls")
@click.option("--base-url", default=None, help="The tool's public URL (default: "
              "JAXJUDGE_PUBLIC_URL).")
def urls(base_url: str | None) -> None:
    """Every URL an LMS administrator needs to register the tool."""
    found = registration.tool_urls(_base(_settings(), base_url))
    lines = [
        ("OIDC login initiation URL", found["login"]),
        ("Launch / redirect URI (target link URI)", found["launch"]),
        ("Deep linking (content selection) URL", found["deep_linking"]),
        ("Public key set (JWKS) URL", found["jwks"]),
        ("Canvas developer key JSON URL", found["canvas"]),
        ("Dynamic registration URL", found["registration"]
         + "?invite=...  (make one: jaxjudge lti register-url --tenant NAME)"),
    ]
    width = max(len(name) for name, _ in lines)
    for name, url in lines:
        click.echo(f"{name.ljust(width)}  {url}")


@lti.command("register-url")
@click.option("--tenant", required=True, help="Tenant the registered platform joins.")
@click.option("--hours", default=72.0, type=float, show_default=True,
              help="How long the link can be used (once).")
@click.option("--base-url", default=None, help="The tool's public URL (default: "
              "JAXJUDGE_PUBLIC_URL).")
def register_url(tenant: str, hours: float, base_url: str | None) -> None:
    """A one-time LTI Dynamic Registration link for TENANT (paste it in Moodle, Canvas,
    ...: the tool registers itself)."""
    settings = _settings()
    base = _base(settings, base_url)
    if not 0 < hours <= 24 * 30:
        raise UsageError("--hours must be more than 0 and at most 720")
    redis = Redis.from_url(settings.redis_url, socket_connect_timeout=2, socket_timeout=5)
    try:
        token = registration.invite(redis, tenant, int(hours * 3600))
    except RedisError as exc:
        raise click.ClickException(f"Redis at {settings.redis_url.split('@')[-1]} is not "
                                   f"answering: {exc}") from None
    click.echo(registration.registration_url(base, token))
