"""The allow-list contract type (tools/importlint.py) that states what the sandbox harness
may import: run by the real lint-imports over a small package made here."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).parent / "lint-imports"

CONFIG = """
[importlinter]
root_packages =
    pkg
include_external_packages = True
contract_types =
    allowlist: tools.importlint.AllowListContract

[importlinter:contract:inside]
name = The inside imports only itself, the version, the stdlib and json5
type = allowlist
source_modules =
    pkg.inside
allowed_modules =
    pkg
allowed_packages =
    json5
"""


def _package(tmp: Path, inside_imports: str) -> Path:
    (tmp / "pkg" / "inside").mkdir(parents=True)
    (tmp / "pkg" / "__init__.py").write_text('VERSION = "1"\n')
    (tmp / "pkg" / "trusted.py").write_text("SECRET = 1\n")
    (tmp / "pkg" / "inside" / "__init__.py").write_text("")
    (tmp / "pkg" / "inside" / "helper.py").write_text("X = 1\n")
    (tmp / "pkg" / "inside" / "run.py").write_text(textwrap.dedent(inside_imports))
    (tmp / ".importlinter").write_text(CONFIG)
    return tmp


def _lint(tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{tmp}{os.pathsep}{ROOT}"}
    return subprocess.run([str(LINT), "--no-cache"], cwd=tmp, env=env, text=True,
                          capture_output=True, timeout=120)


def test_an_allowed_import_keeps_the_contract(tmp_path: Path) -> None:
    _package(tmp_path, """
        import json
        import os.path
        from pkg import VERSION
        from pkg.inside import helper
    """)
    done = _lint(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 kept, 0 broken" in done.stdout


def test_what_is_not_on_the_list_breaks_it_naming_the_line(tmp_path: Path) -> None:
    _package(tmp_path, """
        import json
        from pkg import VERSION
        from pkg.trusted import SECRET
        import pygments
    """)
    done = _lint(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pkg.inside.run -> pkg.trusted (l.4)" in done.stdout
    assert "pkg.inside.run -> pygments (l.5)" in done.stdout
    assert "-> json" not in done.stdout  # the standard library is allowed
    assert "0 kept, 1 broken" in done.stdout
