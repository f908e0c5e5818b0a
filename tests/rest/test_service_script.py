"""`make up`'s script (scripts/service.sh): the admin key it writes is readable by its
owner only; and the operators' commands, run later from another folder with nothing but
``JAXJUDGE_VAR``, reach the stack it started (its database, Redis, public URL and secret
key), which it ran on a var folder, an API port and a Redis port of its own."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import redis
import requests
from servers import free_port

from judge.settings import REPO_ROOT
from lti.keys import signing_key
from service.db import Database
from service.keys import authenticate
from service.migrate import upgrade
from service.settings import ServiceSettings

JAXJUDGE = str(Path(sys.executable).parent / "jaxjudge")


def dev_key(var: Path, url: str) -> None:
    env = {**os.environ, "JAXJUDGE_VAR": str(var), "JAXJUDGE_DATABASE_URL": url}
    subprocess.run(["bash", "scripts/service.sh", "dev-key"], cwd=REPO_ROOT, env=env,
                   check=True, timeout=60, preexec_fn=lambda: os.umask(0o022))


def test_the_admin_key_is_private(tmp_path: Path) -> None:
    var, url = tmp_path / "var", f"sqlite:///{tmp_path / 'jaxjudge.db'}"
    upgrade(url)
    dev_key(var, url)  # under umask 022, which would make a new file world-readable
    path = var / "dev-key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    key = path.read_text().strip()
    db = Database(url)
    with db.session() as s:
        found = authenticate(s, key)
        assert found is not None and found.role == "admin"
    db.dispose()
    path.chmod(0o644)  # as an older make up left it
    dev_key(var, url)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().strip() == key  # kept, not replaced


@pytest.mark.service
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_commands_reach_the_stack_make_up_started(tmp_path: Path) -> None:
    var, elsewhere = tmp_path / "stack", tmp_path / "elsewhere"
    elsewhere.mkdir()
    port, redis_port = free_port(), free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("JAXJUDGE_")}
    up = {**clean, "JAXJUDGE_VAR": str(var), "JAXJUDGE_PORT": str(port),
          "JAXJUDGE_REDIS_PORT": str(redis_port), "JAXJUDGE_WORKER_CONCURRENCY": "1",
          # What is checked here is where the commands find the stack, not grading: the
          # worker grades in the process sandbox (light, and ready without the image).
          "JAXJUDGE_SANDBOX": "process", "JAXJUDGE_INSECURE_UNSANDBOXED_GRADING": "true"}

    def jaxjudge(*argv: str) -> str:
        """A command as an operator runs it later, from another folder."""
        done = subprocess.run([JAXJUDGE, *argv], cwd=elsewhere, capture_output=True,
                              text=True, timeout=120, env={**clean, "JAXJUDGE_VAR": str(var)})
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    try:
        started = subprocess.run(["bash", "scripts/service.sh", "up"], cwd=REPO_ROOT, env=up,
                                 capture_output=True, text=True, timeout=600)
        assert started.returncode == 0, started.stdout[-2000:] + started.stderr[-2000:]
        base = f"http://127.0.0.1:{port}"
        # A key made by the command is one the running API knows: the same database.
        key = jaxjudge("keys", "create", "--tenant", "ops", "--role", "admin")
        listed = requests.get(f"{base}/v1/problems", timeout=30,
                              headers={"Authorization": f"Bearer {key}"})
        assert listed.status_code == 200, listed.text
        # An invitation in the stack's Redis, at the URL the stack serves the tool at.
        invite = jaxjudge("lti", "register-url", "--tenant", "ops")
        assert invite.startswith(f"{base}/lti/register?invite="), invite
        token = invite.split("invite=", 1)[1]
        assert redis.Redis(port=redis_port).get("jaxjudge:lti:invite:" + token)
        assert f"{base}/lti/jwks.json" in jaxjudge("lti", "urls")
        # A key the command made is encrypted with the stack's secret (under its var).
        kid = jaxjudge("lti", "keys", "rotate").split()[2].rstrip(";")
        settings = ServiceSettings(var=var)
        db = Database(settings.database_url)
        try:
            assert signing_key(db, settings)[0] == kid
        finally:
            db.dispose()
        jwks = requests.get(f"{base}/lti/jwks.json", timeout=30).json()
        assert kid in [k["kid"] for k in jwks["keys"]]
        assert jaxjudge("deliveries", "retry", "--failed") == "0 deliveries sent again"
        assert not (elsewhere / "var").exists()  # nothing made where the command ran
        # What the commands read: make up's settings, readable by its user only.
        assert stat.S_IMODE((var / "stack.json").stat().st_mode) == 0o600
    finally:
        subprocess.run(["bash", "scripts/service.sh", "down"], cwd=REPO_ROOT, env=up,
                       capture_output=True, timeout=180)
