"""``jaxjudge lti ...`` run as the installed command (its entry point plugged into
``jaxjudge``): platforms add/list/remove, keys rotate/list, urls, register-url; bad input
is one line on stderr and exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from servers import RedisServer

from service.stack import note

JAXJUDGE = str(Path(sys.executable).parent / "jaxjudge")
PLATFORM = ["--issuer", "https://lms.example.edu", "--client-id", "client-1",
            "--deployment-id", "d1", "--deployment-id", "d2",
            "--login-url", "https://lms.example.edu/auth",
            "--token-url", "https://lms.example.edu/token",
            "--jwks-url", "https://lms.example.edu/jwks"]


@pytest.fixture
def run(database_url: str, redis_server: RedisServer, tmp_path: Path):  # type: ignore[no-untyped-def]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("JAXJUDGE_")},
           "JAXJUDGE_DATABASE_URL": database_url, "JAXJUDGE_REDIS_URL": redis_server.url,
           "JAXJUDGE_SECRET_KEY": "cli-test-secret"}

    def call(*argv: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([JAXJUDGE, "lti", *argv], env={**env, **extra}, cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)

    return call


def one_line_usage_error(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    assert "Traceback" not in result.stderr


def test_platforms_add_list_remove(run) -> None:  # type: ignore[no-untyped-def]
    added = run("platforms", "add", "--tenant", "course-a", "--name", "Moodle", *PLATFORM)
    assert added.returncode == 0, added.stderr
    platform_id = added.stdout.split()[1]
    listed = run("platforms", "list").stdout.strip().split("\t")
    assert listed == [platform_id, "course-a", "https://lms.example.edu", "client-1", "d1,d2",
                      "Moodle"]
    assert run("platforms", "list", "--tenant", "other").stdout == ""
    more = run("platforms", "add-deployment", platform_id, "d3")
    assert more.returncode == 0 and "d1, d2, d3" in more.stdout
    again = run("platforms", "add", "--tenant", "course-a", *PLATFORM)
    one_line_usage_error(again, "already registered")
    removed = run("platforms", "remove", platform_id)
    assert removed.returncode == 0, removed.stderr
    assert run("platforms", "list").stdout == ""
    one_line_usage_error(run("platforms", "remove", platform_id), "no platform")


@pytest.mark.parametrize(("change", "words"), [
    (("--issuer", "lms.example.edu"), ("issuer", "URL")),
    (("--login-url", "ftp://lms.example.edu/auth"), ("login url",)),
    (("--jwks-url", "https://user:pw@lms.example.edu/jwks"), ("credentials",)),
    (("--deployment-id", " "), ("deployment id",)),
    (("--client-id", ""), ("client id",)),
])
def test_platforms_add_bad_input(run, change: tuple[str, str],  # type: ignore[no-untyped-def]
                                 words: tuple[str, ...]) -> None:
    argv = list(PLATFORM)
    at = argv.index(change[0])
    argv[at + 1] = change[1]
    if change[0] == "--deployment-id":
        argv = argv[:argv.index("--deployment-id", at + 1)] + argv[argv.index("--login-url"):]
    one_line_usage_error(run("platforms", "add", "--tenant", "course-a", *argv), *words)


def test_platforms_add_without_a_required_option(run) -> None:  # type: ignore[no-untyped-def]
    one_line_usage_error(run("platforms", "add", "--tenant", "t", "--issuer",
                             "https://x.example"), "--client-id")


def test_keys_rotate_and_list(run) -> None:  # type: ignore[no-untyped-def]
    first = run("keys", "rotate")
    assert first.returncode == 0, first.stderr
    second = run("keys", "rotate")
    assert second.returncode == 0
    rows = [line.split("\t") for line in run("keys", "list").stdout.splitlines()]
    assert len(rows) == 2
    assert rows[0][1] == "current" and rows[1][1].startswith("retired, in the JWKS until")
    assert rows[0][0] in second.stdout and rows[1][0] in first.stdout


def test_urls(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = run("urls", "--base-url", "https://judge.example.edu/")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for url in ("https://judge.example.edu/lti/login", "https://judge.example.edu/lti/launch",
                "https://judge.example.edu/lti/jwks.json",
                "https://judge.example.edu/lti/canvas.json",
                "https://judge.example.edu/lti/register?invite="):
        assert url in out, out
    assert "Deep linking" in out
    from_setting = run("urls", JAXJUDGE_PUBLIC_URL="https://tool.example.org")
    assert "https://tool.example.org/lti/login" in from_setting.stdout
    one_line_usage_error(run("urls"), "--base-url")
    # After `make up`: the URL it serves the tool at, from the settings it noted in
    # ./var/stack.json.
    note(tmp_path / "var" / "stack.json", {"JAXJUDGE_PUBLIC_URL": "http://127.0.0.1:8000"})
    after_up = run("urls")
    assert after_up.returncode == 0, after_up.stderr
    assert "http://127.0.0.1:8000/lti/login" in after_up.stdout
    one_line_usage_error(run("urls", "--base-url", "judge.example.edu"), "base URL")


def test_register_url(run, redis_server: RedisServer) -> None:  # type: ignore[no-untyped-def]
    result = run("register-url", "--tenant", "course-a", "--base-url",
                 "https://judge.example.edu")
    assert result.returncode == 0, result.stderr
    url = result.stdout.strip()
    assert url.startswith("https://judge.example.edu/lti/register?invite=")
    token = url.split("invite=")[1]
    assert len(token) == 43
    client = redis_server.client()
    assert b"course-a" in client.get("jaxjudge:lti:invite:" + token)
    assert 0 < client.ttl("jaxjudge:lti:invite:" + token) <= 72 * 3600
    one_line_usage_error(run("register-url", "--tenant", "course-a", "--hours", "0",
                             "--base-url", "https://judge.example.edu"), "--hours")
