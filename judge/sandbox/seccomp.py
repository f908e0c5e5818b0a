"""The zygote's seccomp profile: the engine's default, plus exactly what the zygote needs.

Docker's default profile refuses ``unshare`` and ``mount`` to a container without
``CAP_SYS_ADMIN`` (every sandbox drops all capabilities). The zygote needs both, once per
child: ``unshare`` to give the child fresh user, mount, PID, IPC, network and UTS
namespaces, and ``mount`` to lay fresh tmpfs over the places it may write. The profile
adds two rules to the default and nothing else:

- ``unshare`` only with exactly that set of flags (``judge.harness.isolation.UNSHARE_FLAGS``);
- ``mount``, which the kernel still refuses outside a user namespace the caller owns (the
  zygote itself runs as uid 10001 with no capabilities).

The child installs its own filter refusing both again before any submission code runs,
so a submission is held to the default profile and less.

The default profile is the engine's own, not a copy kept here: ``docker/build-image.sh``
takes it from the Debian package built from the same source as Debian's engine
(``golang-github-docker-docker-dev``: ``profiles/seccomp/default.json``), or from
``$DOCKER_DEFAULT_SECCOMP``, and writes the zygote's profile with this module::

    python -m judge.sandbox.seccomp DEFAULT.json > var/zygote-seccomp.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from judge.errors import SandboxUnavailable
from judge.harness.isolation import UNSHARE_FLAGS

MARK = "jaxjudge zygote"


def zygote_profile(default: dict[str, Any]) -> dict[str, Any]:
    """``default`` with the zygote's two rules added (idempotent)."""
    if not isinstance(default.get("syscalls"), list) or "defaultAction" not in default:
        raise ValueError("not a seccomp profile: no defaultAction or syscalls")
    rules = [r for r in default["syscalls"] if r.get("comment") != MARK]
    rules += [
        {"names": ["unshare"], "action": "SCMP_ACT_ALLOW", "comment": MARK,
         "args": [{"index": 0, "value": UNSHARE_FLAGS, "valueTwo": 0, "op": "SCMP_CMP_EQ"}]},
        {"names": ["mount"], "action": "SCMP_ACT_ALLOW", "comment": MARK, "args": []},
    ]
    return {**default, "syscalls": rules}


def load(path: Path) -> str:
    """The profile at ``path`` as the engine wants it (``seccomp=<json>``); refuses a file
    that is missing or is not a zygote profile: the zygote must not start without it."""
    try:
        profile = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SandboxUnavailable(
            f"the zygote's seccomp profile {path} cannot be read ({exc.__class__.__name__}); "
            "make it with `make sandbox-image`") from None
    if not any(r.get("comment") == MARK for r in profile.get("syscalls", [])):
        raise SandboxUnavailable(f"{path} is not a zygote seccomp profile; make it with "
                                 "`make sandbox-image`")
    return json.dumps(profile, separators=(",", ":"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m judge.sandbox.seccomp DEFAULT.json > zygote.json",
              file=sys.stderr)
        sys.exit(2)
    try:
        print(json.dumps(zygote_profile(json.loads(Path(sys.argv[1]).read_text())), indent=1))
    except (OSError, ValueError) as exc:
        print(f"seccomp: {sys.argv[1]}: {exc}", file=sys.stderr)
        sys.exit(2)
