"""The zygote's seccomp profile: the engine's default plus exactly two rules."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from judge.errors import SandboxUnavailable
from judge.harness.isolation import UNSHARE_FLAGS
from judge.sandbox import seccomp

DEFAULT = {"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [
    {"names": ["read", "write"], "action": "SCMP_ACT_ALLOW", "args": []},
    {"names": ["unshare", "mount"], "action": "SCMP_ACT_ALLOW",
     "includes": {"caps": ["CAP_SYS_ADMIN"]}},
]}


def test_two_rules_are_added_and_nothing_else_changes() -> None:
    profile = seccomp.zygote_profile(DEFAULT)
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO"
    assert profile["syscalls"][:2] == DEFAULT["syscalls"]
    added = profile["syscalls"][2:]
    assert [r["names"] for r in added] == [["unshare"], ["mount"]]
    assert added[0]["args"] == [{"index": 0, "value": UNSHARE_FLAGS, "valueTwo": 0,
                                 "op": "SCMP_CMP_EQ"}]
    assert "includes" not in added[0] and "includes" not in added[1]
    assert seccomp.zygote_profile(profile) == profile  # idempotent


def test_a_file_that_is_not_a_profile_is_refused(tmp_path) -> None:
    with pytest.raises(ValueError):
        seccomp.zygote_profile({"syscalls": "nope"})
    plain = tmp_path / "default.json"
    plain.write_text(json.dumps(DEFAULT))
    with pytest.raises(SandboxUnavailable, match="not a zygote seccomp profile"):
        seccomp.load(plain)
    with pytest.raises(SandboxUnavailable, match="cannot be read"):
        seccomp.load(tmp_path / "missing.json")
    ours = tmp_path / "zygote.json"
    ours.write_text(json.dumps(seccomp.zygote_profile(DEFAULT)))
    assert json.loads(seccomp.load(ours)) == seccomp.zygote_profile(DEFAULT)


def test_the_command_line_writes_the_profile_or_exits_2(tmp_path) -> None:
    plain = tmp_path / "default.json"
    plain.write_text(json.dumps(DEFAULT))
    done = subprocess.run([sys.executable, "-m", "judge.sandbox.seccomp", str(plain)],
                          capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == seccomp.zygote_profile(DEFAULT)
    bad = subprocess.run([sys.executable, "-m", "judge.sandbox.seccomp", str(tmp_path / "x")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
