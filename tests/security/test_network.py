"""Network attacks: a sandbox runs with ``--network none``, so it has a loopback of its
own and nothing else. Every attack runs twice, while the module loads and inside the call
(Judge0's CVE-2024-29021 reached the network from code run at a moment the sandbox did not
cover), answers right only if every attempt failed, and prints what happened in the
sample tests. Traffic is only ever aimed at 127.0.0.1 and the cloud metadata addresses;
with no interface but the sandbox's own loopback, nothing can leave anyway."""

from __future__ import annotations

import select
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.verdict import Verdict

from .support import TOKEN, Judge, describe, facts

pytestmark = pytest.mark.slow

# Runs an attack (ATTACK(): {name: outcome}) at import and in every call; answers right
# only when no outcome is "connected" / "answered". An outcome is what the attempt
# returned, or the errno name of the error it ended with (a URLError's: of its reason;
# "timed out" when it waited for an answer that never came).
TWICE = """
import errno, json, socket, urllib.error

def attempt(fn, *args):
    try:
        return fn(*args)
    except Exception as exc:
        if isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, Exception):
            exc = exc.reason
        if isinstance(exc, TimeoutError) or getattr(exc, "errno", None) == errno.ETIMEDOUT:
            return "timed out"
        if isinstance(exc, OSError) and exc.errno:
            return errno.errorcode.get(exc.errno, type(exc).__name__)
        return type(exc).__name__

AT_IMPORT = ATTACK()
print("@@", json.dumps({"import": AT_IMPORT}))

def layout(num_devices, kernel_in, kernel_out):
    at_call = ATTACK()
    print("@@", json.dumps({"call": at_call}))
    outcomes = list(AT_IMPORT.values()) + list(at_call.values())
    if any(o in ("connected", "answered", "sent") for o in outcomes):
        return [0, 0]
    return [int(kernel_in), int(kernel_out) // int(num_devices)]
"""


def run_twice(judge_layout: Judge, attack: str, **consts: object) -> dict[str, dict]:
    """Grade ATTACK + TWICE; returns {"import": {...}, "call": {...}} after asserting that
    every attempt failed (so the submission is accepted) and failed at once: refused with
    an error, never left waiting for an answer."""
    report = judge_layout(attack + TWICE, **consts)
    assert report.verdict is Verdict.ACCEPTED, describe(report)
    seen = facts(report)
    assert set(seen) == {"import", "call"}, describe(report)
    for phase in ("import", "call"):
        for name, outcome in seen[phase].items():
            assert outcome not in ("connected", "answered", "sent"), (phase, name, outcome)
            assert outcome != "timed out", f"{phase} {name}: timed out (should fail at once)"
    return seen


@pytest.fixture
def host_listener() -> Iterator[socket.socket]:
    """A TCP listener on the host's 127.0.0.1 at a free port, non-blocking."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.setblocking(False)
    yield server
    server.close()


def assert_never_connected(server: socket.socket) -> None:
    readable, _, _ = select.select([server], [], [], 0.2)
    assert not readable, "a connection arrived at the host's listener"
    with pytest.raises(BlockingIOError):
        server.accept()


def test_host_loopback_listener_and_services_are_unreachable(
    judge_layout: Judge, host_listener: socket.socket
) -> None:
    # The container's 127.0.0.1 is its own: nothing listens there, whatever the host runs
    # (the test's listener; Redis, PostgreSQL and the API on 6379, 5432 and 8000).
    attack = """
def tcp(host, port):
    with socket.create_connection((host, port), timeout=5) as s:
        s.sendall(("PING " + TOKEN + "\\r\\n").encode())
    return "connected"

def ATTACK():
    targets = [("127.0.0.1", PORT), ("127.0.0.1", 6379), ("127.0.0.1", 5432),
               ("127.0.0.1", 8000), ("localhost", PORT), ("::1", PORT)]
    return {f"{h}:{p}": attempt(tcp, h, p) for h, p in targets}
"""
    port = host_listener.getsockname()[1]
    seen = run_twice(judge_layout, attack, PORT=port)
    for phase in ("import", "call"):
        assert seen[phase][f"127.0.0.1:{port}"] == "ECONNREFUSED"
        assert seen[phase]["127.0.0.1:6379"] == "ECONNREFUSED"
        assert seen[phase]["127.0.0.1:5432"] == "ECONNREFUSED"
        assert seen[phase]["127.0.0.1:8000"] == "ECONNREFUSED"
    assert_never_connected(host_listener)


def test_metadata_address_and_outside_world_have_no_route(judge_layout: Judge) -> None:
    # 169.254.169.254 is the cloud metadata service (credentials!). No interface but lo,
    # no route: TCP and UDP fail with ENETUNREACH before a packet exists.
    attack = """
import urllib.request

def tcp(host, port):
    with socket.create_connection((host, port), timeout=5):
        return "connected"

def udp(host, port):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(b"metadata?", (host, port))
        return "sent"

def http(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        r.read(100)
        return "answered"

def ATTACK():
    return {
        "tcp 169.254.169.254:80": attempt(tcp, "169.254.169.254", 80),
        "udp 169.254.169.254:53": attempt(udp, "169.254.169.254", 53),
        "http metadata": attempt(http, "http://169.254.169.254/latest/meta-data/"),
        "tcp [fd00:ec2::254]:80": attempt(tcp, "fd00:ec2::254", 80),
    }
"""
    seen = run_twice(judge_layout, attack)
    for phase in ("import", "call"):
        assert seen[phase]["tcp 169.254.169.254:80"] == "ENETUNREACH", seen
        assert seen[phase]["udp 169.254.169.254:53"] == "ENETUNREACH", seen
        assert seen[phase]["http metadata"] == "ENETUNREACH", seen  # the URLError's reason


def test_dns_fails_at_once(judge_layout: Judge) -> None:
    # A look-up that failed at once and one that waited out the resolver's timeout are
    # the same gaierror: "at once" is that every nameserver the resolver asks refuses at
    # once (no route to it, or the sandbox's own loopback where nothing listens).
    attack = """
def lookup(name):
    socket.getaddrinfo(name, 80)
    return "answered"

def ask(server):
    with socket.socket(socket.AF_INET6 if ":" in server else socket.AF_INET,
                       socket.SOCK_DGRAM) as s:
        s.settimeout(5)
        s.connect((server, 53))
        s.send(b"\\0" * 12)
        s.recv(512)
        return "answered"

def NAMESERVERS():  # as glibc reads them: 127.0.0.1 when none is named
    try:
        lines = open("/etc/resolv.conf").read().splitlines()
    except OSError:
        lines = []
    named = [line.split()[1] for line in lines
             if line.split()[:1] == ["nameserver"] and len(line.split()) > 1]
    return named or ["127.0.0.1"]

def ATTACK():
    found = {name: attempt(lookup, name) for name in
             ("metadata.google.internal", "example.com", "host.docker.internal", "redis")}
    return found | {"nameserver " + server: attempt(ask, server) for server in NAMESERVERS()}
"""
    seen = run_twice(judge_layout, attack)
    for phase in ("import", "call"):
        lookups = {o for name, o in seen[phase].items() if not name.startswith("nameserver")}
        assert lookups == {"gaierror"}, seen
        asked = {o for name, o in seen[phase].items() if name.startswith("nameserver")}
        assert asked and asked <= {"ENETUNREACH", "EADDRNOTAVAIL", "ECONNREFUSED"}, seen


def test_only_a_loopback_interface_and_no_raw_sockets(judge_layout: Judge) -> None:
    attack = """
def interfaces():
    names = sorted(n for _, n in socket.if_nameindex())
    routes = open("/proc/net/route").read().splitlines()[1:]
    return "connected" if names != ["lo"] or routes else "only lo, no route"

def raw():
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).close()
    return "connected"

def packet():
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW).close()
    return "connected"

def ATTACK():
    return {"interfaces": attempt(interfaces), "raw": attempt(raw), "packet": attempt(packet)}
"""
    seen = run_twice(judge_layout, attack)
    for phase in ("import", "call"):
        assert seen[phase]["interfaces"] == "only lo, no route"
        assert seen[phase]["raw"] == "EPERM"  # no CAP_NET_RAW
        assert seen[phase]["packet"] == "EPERM"


def test_host_unix_sockets_are_unreachable(judge_layout: Judge, tmp_path: Path) -> None:
    # Abstract unix sockets belong to a network namespace (CVE-2020-15257 reached
    # containerd's through --network host); path sockets to the filesystem, and the
    # sandbox's /tmp is its own tmpfs.
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(f"\0{TOKEN}-abstract")
    path = Path("/tmp") / f"{TOKEN}.sock"
    on_disk = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    on_disk.bind(str(path))
    for server in (abstract, on_disk):
        server.listen(4)
        server.setblocking(False)
    attack = """
def unix(address):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(address)
        s.sendall(TOKEN.encode())
        return "connected"

def ATTACK():
    return {"abstract": attempt(unix, "\\0" + TOKEN + "-abstract"),
            "path": attempt(unix, "/tmp/" + TOKEN + ".sock"),
            "docker.sock": attempt(unix, "/var/run/docker.sock")}
"""
    try:
        seen = run_twice(judge_layout, attack)
        for phase in ("import", "call"):
            assert seen[phase]["abstract"] == "ECONNREFUSED"
            assert seen[phase]["path"] == "ENOENT"
            assert seen[phase]["docker.sock"] == "ENOENT"
        assert_never_connected(abstract)
        assert_never_connected(on_disk)
    finally:
        abstract.close()
        on_disk.close()
        path.unlink(missing_ok=True)
