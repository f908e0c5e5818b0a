"""Constants and helpers of the security suite (fixtures are in conftest.py)."""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from docker.api import APIClient

from judge.report import VerdictReport
from judge.sandbox.engine import OWNER_LABEL, SANDBOX_LABEL, ZYGOTE_LABEL, owner_id, pid_alive
from judge.settings import Settings
from judge.verdict import Verdict

SECURITY_PROBLEMS = Path(__file__).parent / "fixtures"
SANDBOX_UID = 10001
# security/vault's hidden answers (keys 2 and 3) are in its reference.py and data/hidden/
# only. Submissions never spell them out (they would find their own source or search
# string): they look for a 7-digit head and check the 3 digits after it, so the whole
# number is never in their memory.
VAULT_HEADS = {2: (b"7919104", b"729"), 3: (b"1047297", b"919")}
# security/echo's hidden inputs, split the same way: the attacks of test_trust.py look for
# them in the sandbox before each hidden test starts, and in everything a report shows.
INPUT_HEADS = {"alpha": (b"6021409", b"731"), "beta": (b"2718281", b"828"),
               "gamma": (b"1414213", b"562")}
# Prepended to vault and echo submissions (after VAULT_HEADS, which names what to look
# for). SEARCH(data): the secrets, by key, that a text or bytes holds. SCAN_FILES(top):
# every file below top searched, and the names of a problem package looked for.
# SCAN_OBJECTS(heap=True): every thread's stack, the heap and the modules searched
# (heap=False: the stacks only, quickly). SCAN_MEMORY(): every
# readable byte of the process searched. An attack that finds an answer returns it, and
# is accepted.
SEARCH_CODE = """
def SEARCH(data):
    if isinstance(data, str):
        data = data.encode("utf-8", "replace")
    found = {}
    for key, (head, tail) in VAULT_HEADS.items():
        at = data.find(head)
        while at >= 0:
            if data[at + 7:at + 10] == tail:
                found[key] = int(data[at:at + 10])
                break
            at = data.find(head, at + 1)
    return found


def SCAN_FILES(top):
    import os
    package = {"problem.yaml", "manifest.json", "statement.md", "01-alpha.json", "02-omega.json"}
    seen = {"files": 0, "bytes": 0, "names": [], "dirs": []}
    answers = {}
    for root, subdirs, entries in os.walk(top):
        if root == "/":
            subdirs[:] = [d for d in subdirs if d not in ("proc", "sys", "dev")]
        seen["dirs"] += [os.path.join(root, d) for d in subdirs
                         if d in ("problemsets", "vault", "hidden", "submissions")]
        for entry in entries:
            path = os.path.join(root, entry)
            if entry in package or entry == "reference.py" and (
                    {"data", "problem.yaml", "statement.md"} & set(entries + subdirs)):
                seen["names"].append(path)  # (reference.py: in a folder like a package's)
            try:
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                with open(path, "rb") as f:
                    carry = b""
                    while chunk := f.read(1 << 22):
                        found = SEARCH(carry + chunk)
                        if found:
                            answers.update(found)
                            seen["names"].append(path)
                        carry = chunk[-16:]
                        seen["bytes"] += len(chunk)
                seen["files"] += 1
            except OSError:
                pass
    return seen, answers


def SCAN_OBJECTS(heap=True):
    # Every frame of every thread's stack (the harness's locals and globals), every object
    # the garbage collector knows and every module's namespace, searched for the answers.
    import gc, sys
    found, seen = {}, {"objects": 0}

    def look(value, depth):
        if depth > 6:
            return
        kind = type(value)
        if kind in (str, bytes, bytearray):
            found.update(SEARCH(bytes(value) if kind is bytearray else value))
        elif kind in (int, float):
            found.update(SEARCH(repr(value)))
        elif kind in (list, tuple, set, frozenset):
            for item in list(value)[:100_000]:
                look(item, depth + 1)
        elif kind is dict:
            for key, item in list(value.items())[:100_000]:
                look(key, depth + 1)
                look(item, depth + 1)

    for frame in list(sys._current_frames().values()):  # every thread's stack
        while frame is not None:
            look(dict(frame.f_locals), 0)
            look(dict(frame.f_globals), 4)
            frame = frame.f_back
    for obj in gc.get_objects() if heap else ():
        seen["objects"] += 1
        if type(obj) in (list, tuple, dict, set, frozenset):
            look(obj, 5)
        elif type(getattr(obj, "__dict__", None)) is dict:
            look(obj.__dict__, 5)
    for module in list(sys.modules.values()) if heap else ():
        look(dict(getattr(module, "__dict__", {})), 5)
    return seen["objects"], found


def SCAN_MEMORY():
    total, answers = 0, {}
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
        for line in maps.read().splitlines():
            fields = line.split()
            if not fields[1].startswith("r") or line.endswith(("[vvar]", "[vsyscall]")):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            carry = b""
            while start < end:
                size = min(end - start, 1 << 24)
                try:
                    mem.seek(start)
                    chunk = mem.read(size)
                except (OSError, OverflowError, ValueError):
                    break
                answers.update(SEARCH(carry + chunk))
                carry = chunk[-16:]
                total += len(chunk)
                start += size
    return total, answers
"""
# A token per session, short enough for a process name (comm holds 15 bytes): processes
# that submissions leave behind carry it, so the host can be searched for them.
TOKEN = "jjs" + secrets.token_hex(4)

CORRECT_LAYOUT = """
def layout(num_devices, kernel_in, kernel_out):
    return [int(kernel_in), int(kernel_out) // int(num_devices)]
"""

Judge = Callable[..., VerdictReport]


def facts(report: VerdictReport) -> dict[str, Any]:
    """What the submission reported: every ``@@ {json}`` line of stdout, merged in order
    (load time first, then the sample tests; hidden tests' output never shows)."""
    found: dict[str, Any] = {}
    for line in report.stdout.splitlines():
        if line.startswith("@@ "):
            found.update(json.loads(line[3:]))
    if os.environ.get("JAXJUDGE_SECURITY_VERBOSE"):  # pytest -s: see what every attack saw
        print(f"\n[{report.problem}] {report.verdict.value}: {json.dumps(found)[:4000]}")
    return found


def verdicts(report: VerdictReport) -> list[Verdict]:
    return [t.verdict for t in report.tests]


def describe(report: VerdictReport) -> str:
    """The report in a few lines, for assertion messages."""
    if os.environ.get("JAXJUDGE_SECURITY_VERBOSE"):
        print(f"\n[{report.problem}] {report.verdict.value}: "
              f"{[t.verdict.value for t in report.tests]} {report.message[:200]!r}")
    tests = "; ".join(f"{t.name}: {t.verdict.value} {t.message[:120]!r}" for t in report.tests)
    return (f"verdict {report.verdict.value} {report.message[:300]!r}\n  tests: {tests}\n"
            f"  stdout: {report.stdout[:1500]!r}\n  stderr: {report.stderr[:500]!r}")


def header(**consts: Any) -> str:
    """Module constants a submission starts with (the test's port, token, ...)."""
    return "".join(f"{name} = {value!r}\n" for name, value in consts.items())


def api_client(settings: Settings) -> APIClient:
    return APIClient(base_url=settings.docker_host, timeout=settings.docker_timeout)


def our_containers(api: APIClient, zygotes: bool = True) -> list[dict[str, Any]]:
    """Sandbox containers made by this process (the owner label is host:pid); with
    ``zygotes=False``, not the zygotes' long-lived ones."""
    found = api.containers(all=True, filters={"label": f"{OWNER_LABEL}={owner_id()}"})
    return [c for c in found if zygotes or ZYGOTE_LABEL not in (c.get("Labels") or {})]


def stray_containers(api: APIClient) -> list[dict[str, Any]]:
    """Sandbox containers that should not exist once the suite is done: ours, orphans
    (their owner, a process on this host, is gone) and unowned ones. Those of another live
    judge (a concurrent test run or benchmark on the same engine) are not ours to judge."""
    me = owner_id()
    stray = []
    for info in api.containers(all=True, filters={"label": SANDBOX_LABEL}):
        owner = (info.get("Labels") or {}).get(OWNER_LABEL, "")
        host, _, pid = owner.rpartition(":")
        here = host == me.rpartition(":")[0]
        orphan = here and not (pid.isdigit() and pid_alive(int(pid)))
        if owner == me or orphan or not owner:
            stray.append(info)
    return stray


def host_processes(needle: str) -> list[str]:
    """Host processes whose name or command line holds ``needle`` (zombies excluded)."""
    hits = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X") and (needle in comm or needle in cmdline):
            hits.append(f"{entry.name} {comm!r} {cmdline[:200]!r}")
    return hits


def sandbox_uid_processes() -> list[str]:
    """Host processes running as the sandbox's uid (10001): a submission's, surely."""
    hits = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        uid_line = next((ln for ln in status.splitlines() if ln.startswith("Uid:")), "")
        state = next((ln for ln in status.splitlines() if ln.startswith("State:")), "State: ?")
        if uid_line.split()[1:2] == [str(SANDBOX_UID)] and state.split()[1] not in ("Z", "X"):
            hits.append(f"{entry.name} {status.splitlines()[0]} {state}")
    return hits


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


