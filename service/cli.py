"""Service commands, added to ``jaxjudge`` through the ``jaxjudge.commands`` entry points:

    jaxjudge db upgrade                       apply the migrations
    jaxjudge keys create --tenant T --role R  print a new API key (shown once)
    jaxjudge keys revoke PREFIX               revoke a key by its printed prefix
    jaxjudge tenants secret T [--rotate]      the tenant's webhook signing secret
    jaxjudge tenants quotas T [--set Q=N]     the tenant's quotas on problem sets
    jaxjudge deliveries retry --assignment ID | --failed
                                              send again grades and webhooks that failed
                                              for good or were refused

Settings: the environment, then what ``make up`` noted for its stack
(:mod:`service.stack`), so the commands reach the running stack's database and Redis.
"""

from __future__ import annotations

import click
from sqlalchemy import select, update

from judge.errors import UsageError
from service import deliveries, migrate, stack
from service.db import Database, changed, utcnow
from service.keys import create_key
from service.models import ApiKey, Assignment, Role, Tenant
from service.problemsets import QUOTA_NAMES, Quotas
from service.queue import make_celery
from service.webhooks import new_secret


def _database() -> Database:
    return Database(stack.settings().database_url)


@click.group()
def db() -> None:
    """The service database."""


@db.command("upgrade")
def db_upgrade() -> None:
    """Create or migrate the database to the latest schema."""
    url = stack.settings().database_url
    migrate.upgrade(url)
    click.echo(f"database at revision {migrate.current(url)}")


@click.group()
def keys() -> None:
    """API keys."""


@keys.command("create")
@click.option("--tenant", required=True, help="Tenant (course or platform); made if new.")
@click.option("--role", required=True, type=click.Choice([r.value for r in Role]))
@click.option("--name", default="", help="What the key is for.")
def keys_create(tenant: str, role: str, name: str) -> None:
    """Print a new API key. It is shown only this once."""
    database = _database()
    with database.session() as s:
        key = create_key(s, tenant, role, name)
    click.echo(key)


@keys.command("revoke")
@click.argument("prefix")
def keys_revoke(prefix: str) -> None:
    """Revoke the key whose first characters are PREFIX (as ``keys list`` shows)."""
    with _database().session() as s:
        done = changed(s, update(ApiKey).where(ApiKey.prefix == prefix,
                                               ApiKey.revoked_at.is_(None))
                       .values(revoked_at=utcnow()))
    if not done:
        raise UsageError(f"no live key with prefix {prefix!r}")
    click.echo(f"revoked {prefix}")


@keys.command("list")
@click.option("--tenant", default=None)
def keys_list(tenant: str | None) -> None:
    """List keys (prefix, tenant, role, name, state); never the keys themselves."""
    with _database().session() as s:
        query = select(ApiKey).join(Tenant).order_by(Tenant.name, ApiKey.id)
        if tenant:
            query = query.where(Tenant.name == tenant)
        for k in s.scalars(query):
            state = "revoked" if k.revoked_at else "live"
            click.echo(f"{k.prefix}\t{k.tenant.name}\t{k.role}\t{state}\t{k.name}")


@click.group()
def tenants() -> None:
    """Tenants."""


@tenants.command("secret")
@click.argument("name")
@click.option("--rotate", is_flag=True, help="Make a new secret first.")
def tenants_secret(name: str, rotate: bool) -> None:
    """Print the tenant's webhook signing secret (Standard Webhooks: ``whsec_<base64>``)."""
    with _database().session() as s:
        tenant = s.scalar(select(Tenant).where(Tenant.name == name))
        if tenant is None:
            raise UsageError(f"no tenant {name!r}")
        if rotate:
            tenant.webhook_secret = new_secret()
        click.echo(tenant.webhook_secret)


@tenants.command("quotas")
@click.argument("name")
@click.option("--set", "values", multiple=True, metavar="QUOTA=N",
              help="Give the tenant its own value of a quota (sets, problems, versions, "
              "package_bytes, build_seconds); repeatable.")
@click.option("--reset", "reset", multiple=True, metavar="QUOTA",
              help="Go back to the settings' value of a quota; repeatable.")
def tenants_quotas(name: str, values: tuple[str, ...], reset: tuple[str, ...]) -> None:
    """Show (and with --set or --reset, change) the tenant's quotas on problem sets."""
    settings = stack.settings()
    with _database().session() as s:
        tenant = s.scalar(select(Tenant).where(Tenant.name == name))
        if tenant is None:
            raise UsageError(f"no tenant {name!r}")
        own = dict(tenant.quotas or {})
        for item in values:
            key, sep, raw = item.partition("=")
            if not sep or key not in QUOTA_NAMES:
                raise UsageError(f"--set {item!r}: use QUOTA=N, QUOTA one of "
                                 f"{', '.join(QUOTA_NAMES)}")
            kind = type(getattr(settings, "quota_" + key))
            try:
                number = kind(raw)
            except ValueError:
                raise UsageError(f"--set {item!r}: {raw!r} is not a number") from None
            if number < 0:
                raise UsageError(f"--set {item!r}: a quota is not negative")
            own[key] = number
        for key in reset:
            if key not in QUOTA_NAMES:
                raise UsageError(f"--reset {key!r}: one of {', '.join(QUOTA_NAMES)}")
            own.pop(key, None)
        tenant.quotas = own or None
        quotas = Quotas.of(settings, tenant)
    for key in QUOTA_NAMES:
        mark = "" if key not in own else "  (the tenant's own)"
        click.echo(f"{key}\t{getattr(quotas, key):g}{mark}")


@click.group("deliveries")
def deliveries_group() -> None:
    """The outbox: webhooks and grades to LMSs."""


@deliveries_group.command("retry")
@click.option("--assignment", "assignment_id", default=None, metavar="ID",
              help="The grades of this LMS assignment that failed or were refused.")
@click.option("--failed", "every", is_flag=True,
              help="Every delivery that failed for good or was refused: grades and "
              "webhooks, of every tenant.")
def deliveries_retry(assignment_id: str | None, every: bool) -> None:
    """Send again what failed for good or was refused by the address policy: for a
    webhook, the report its submission holds now; for a grade, each student's newest
    (the policy's grade over every graded submission). The same delivery is sent again
    (its id and body kept), with a fresh round of tries; one that is being sent, or that
    was delivered, is left alone."""
    if (assignment_id is None) == (not every):
        raise UsageError("say what to send again: --assignment ID or --failed")
    settings = stack.settings()
    database = Database(settings.database_url)
    try:
        if assignment_id is not None:
            with database.session() as s:
                if s.get(Assignment, assignment_id) is None:
                    raise UsageError(f"no assignment {assignment_id!r}")
        started = deliveries.send_again(database, make_celery(settings),
                                        timeout=settings.publish_timeout_seconds,
                                        assignment_id=assignment_id)
    finally:
        database.dispose()
    click.echo(f"{started} deliveries sent again")
