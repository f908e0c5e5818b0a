"""`make up`'s script (scripts/service.sh), in the parts that need no engine: the admin
key it writes is readable by its owner only."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from judge.settings import REPO_ROOT
from service.db import Database
from service.keys import authenticate
from service.migrate import upgrade


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
