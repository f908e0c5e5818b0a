"""``jaxjudge problems ...`` reading what a judge answers (issue 20): JSON nested 50,000
deep, or not JSON, is a one-line error and exit 1, as any failure of the judge is; before,
requests' ``json()`` let a ``RecursionError`` (or a ``KeyError``) out as a traceback.
The judge here is an HTTP server that answers every request with the one body."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from nesting_support import answering, nested_list
from packages_support import scaffold_files, slim

JAXJUDGE = str(Path(sys.executable).parent / "jaxjudge")


def run(url: str, tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "JAXJUDGE_URL": url, "JAXJUDGE_API_KEY": "jj_test"}
    return subprocess.run([JAXJUDGE, "problems", *argv], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


def package(tmp_path: Path) -> Path:
    folder = tmp_path / "softmax"
    for name, data in slim(scaffold_files()).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


@pytest.mark.parametrize(("body", "says"), [
    (('{"items": ' + nested_list() + "}").encode(), "is JSON nested more than 200 levels deep"),
    (b"<html>a proxy's page</html>", "is not JSON (HTTP 200)"),
], ids=["deep", "not-json"])
@pytest.mark.parametrize("command", ["versions", "publish", "push"])
def test_an_answer_nested_too_deeply_or_not_json_is_one_line_and_exit_1(
        tmp_path: Path, body: bytes, says: str, command: str) -> None:
    argv = {"versions": ["versions", "ml/softmax"],
            "publish": ["publish", "ml/softmax", "0123456789abcdef"],
            "push": ["push", str(package(tmp_path)), "--set", "ml"]}[command]
    with answering(body) as url:
        done = run(url, tmp_path, *argv)
    assert done.returncode == 1, (done.returncode, done.stderr[-3000:])
    assert done.stderr.startswith("jaxjudge: error: the judge's answer to "), done.stderr
    assert says in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr
