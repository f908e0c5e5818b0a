"""service.webhooks (Standard Webhooks signing) and service.outbound (the SSRF policy and
bounded requests, here through a webhook's POST) against a real local server.

Network rule: the only traffic is to a ThreadingHTTPServer on 127.0.0.1 that a test starts.
Refusals are proven to happen before any DNS look-up or connection by the ``no_network``
fixture, which makes every such call fail the test; names other than ``localhost`` are
"resolved" by ``fake_dns``, which never asks a resolver.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import pytest
import urllib3
from standardwebhooks import Webhook

from service.backoff import backoff
from service.outbound import USER_AGENT, Outcome, WebhookRefused, allow_key, check_url, resolve
from service.webhooks import (
    ID_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    deliver,
    new_secret,
    sign,
    verify,
)

SECRET = new_secret()
BODY = b'{"submission":"s-1","verdict":"accepted","score":1.0}'
STATUS = {"/created": 201, "/redirect": 302, "/missing": 404, "/throttle": 429,
          "/fail": 500, "/unavailable": 503}


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Hook:
    port: int
    seen: list[Seen] = field(default_factory=list)

    def url(self, path: str = "/ok", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


class _Server(ThreadingHTTPServer):
    hook: Hook
    release: threading.Event


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        server = cast(_Server, self.server)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        server.hook.seen.append(Seen(self.path, dict(self.headers.items()), body))
        if self.path == "/slow":  # answers once the test is over
            server.release.wait()
        status = STATUS.get(self.path, 200)
        payload = b"x" * (1 << 20) if self.path == "/big" else b"{}"
        try:
            self.send_response(status)
            if status == 302:
                self.send_header("Location", "/ok")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except OSError:  # the client gave up (timeout test)
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def hook() -> Iterator[Hook]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.hook = Hook(server.server_address[1])
    server.release = threading.Event()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server.hook
    server.release.set()
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Any DNS look-up or connection attempt is recorded and fails the test."""
    calls: list[str] = []

    def trip(name: str) -> Callable[..., Any]:
        def tripped(*args: Any, **kwargs: Any) -> Any:
            calls.append(f"{name}{args[-2:]!r}")
            pytest.fail(f"network call {name} during a refusal: {args!r}")
        return tripped

    monkeypatch.setattr(socket, "getaddrinfo", trip("getaddrinfo"))
    monkeypatch.setattr(socket, "create_connection", trip("create_connection"))
    monkeypatch.setattr(socket.socket, "connect", trip("connect"))
    monkeypatch.setattr(socket.socket, "connect_ex", trip("connect_ex"))
    monkeypatch.setattr(urllib3.util.connection, "create_connection", trip("urllib3"))
    return calls


@pytest.fixture
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Names in the returned dict resolve to their addresses; anything else must be numeric."""
    table: dict[str, list[str]] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0,
                    flags: int = 0) -> list[Any]:
        if isinstance(host, str) and host.lower() in table:
            out = []
            for ip in table[host.lower()]:
                fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
                addr = (ip, port, 0, 0) if fam == socket.AF_INET6 else (ip, port)
                out.append((fam, socket.SOCK_STREAM, 6, "", addr))
            return out
        return real(host, port, family, type, proto, flags | socket.AI_NUMERICHOST)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return table


def signed(body: bytes = BODY) -> dict[str, str]:
    return sign(SECRET, "dlv-0001", body)


# --- signing ---------------------------------------------------------------------------------

# The Standard Webhooks specification's published test vector.
VECTOR_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
VECTOR_ID, VECTOR_TIME, VECTOR_BODY = "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, \
    b'{"test": 2432232314}'
VECTOR_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_signatures_reproduce_the_specification_test_vector() -> None:
    headers = sign(VECTOR_SECRET, VECTOR_ID, VECTOR_BODY, at=VECTOR_TIME)
    assert headers == {ID_HEADER: VECTOR_ID, TIMESTAMP_HEADER: str(VECTOR_TIME),
                       SIGNATURE_HEADER: VECTOR_SIGNATURE}
    # and the same by hand: HMAC-SHA256 of "id.timestamp.body", base64, "v1," in front
    key = base64.b64decode(VECTOR_SECRET.removeprefix("whsec_"))
    mac = hmac.new(key, b"%s.%d.%s" % (VECTOR_ID.encode(), VECTOR_TIME, VECTOR_BODY),
                   hashlib.sha256).digest()
    assert "v1," + base64.b64encode(mac).decode() == VECTOR_SIGNATURE


def test_secrets_are_standard_webhooks_secrets() -> None:
    secret = new_secret()
    assert re.fullmatch(r"whsec_[A-Za-z0-9+/]{43}=", secret)
    assert len(base64.b64decode(secret.removeprefix("whsec_"))) == 32
    assert new_secret() != secret


def test_sign_and_verify_round_trip() -> None:
    headers = sign(SECRET, "dlv-0001", BODY)
    assert re.fullmatch(r"v1,[A-Za-z0-9+/]{43}=", headers[SIGNATURE_HEADER])
    assert verify(SECRET, BODY, headers)
    Webhook(SECRET).verify(BODY, headers)  # what a receiver using the package does
    assert not verify(SECRET, BODY + b" ", headers)
    assert not verify(new_secret(), BODY, headers)
    assert not verify(SECRET, BODY, headers | {ID_HEADER: "dlv-0002"})  # the id is signed
    signature = headers[SIGNATURE_HEADER]
    # One character off, in the middle: the last one before "=" carries two padding bits
    # that decoding ignores, so changing it may change nothing.
    changed = signature[:10] + ("B" if signature[10] == "A" else "A") + signature[11:]
    for bad in ("", "v1,", "v1", "v2," + signature[3:], changed, "v1,!!!"):
        assert not verify(SECRET, BODY, headers | {SIGNATURE_HEADER: bad}), bad
    assert not verify(SECRET, BODY, {k: v for k, v in headers.items() if k != ID_HEADER})


def test_a_captured_delivery_cannot_be_replayed_later() -> None:
    """The timestamp is signed, and a receiver refuses one over 5 minutes from its clock:
    replaying an old delivery, or moving its timestamp, fails."""
    old = sign(SECRET, "dlv-0001", BODY, at=time.time() - 6 * 60)
    assert not verify(SECRET, BODY, old)
    moved = old | {TIMESTAMP_HEADER: str(int(time.time()))}
    assert not verify(SECRET, BODY, moved)
    assert not verify(SECRET, BODY, sign(SECRET, "dlv-0001", BODY, at=time.time() + 6 * 60))
    assert verify(SECRET, BODY, sign(SECRET, "dlv-0001", BODY, at=time.time() - 60))


def test_delivered_body_and_headers_verify(hook: Hook) -> None:
    headers = signed() | {"host": "evil.example", "Content-Type": "text/plain"}
    result = deliver(hook.url("/ok"), BODY, headers, allow=["127.0.0.1"], timeout=5)
    assert result == Outcome(ok=True, status=200, error="", retry=False)
    [got] = hook.seen
    assert got.body == BODY
    assert verify(SECRET, got.body, got.headers)
    assert not verify(SECRET, got.body.replace(b"accepted", b"wrong_answer"), got.headers)
    assert got.headers[ID_HEADER] == "dlv-0001"
    assert got.headers["Content-Type"] == "application/json"
    assert got.headers["User-Agent"] == USER_AGENT
    assert got.headers["Host"] == f"127.0.0.1:{hook.port}"


# --- the SSRF policy -------------------------------------------------------------------------

REFUSED = [
    "http://10.0.0.1/hook",
    "http://192.168.1.1/",
    "http://172.16.0.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://127.0.0.1:8080/",
    "http://127.0.0.1./",
    "http://127.1/",
    "http://0x7f.1/",
    "http://0x7f000001/",
    "http://2130706433/",
    "http://017700000001/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:a00:1]/",
    "http://[2002:7f00:1::1]/",
    "http://[fe80::1]/",
    "http://[fec0::1]/",
    "http://[ff02::1]/",
    "http://0.0.0.0/",
    "http://0/",
    "http://[::]/",
    "http://100.64.0.1/",
    "http://224.0.0.1/",
    "http://240.0.0.1/",
    "http://localhost/",
    "http://LOCALHOST:8000/",
    "http://localhost./",
    "http://foo.localhost/",
    "http://localhost.localdomain/",
    "http://intranet/",
    "ftp://example.com/",
    "file:///etc/passwd",
    "javascript:alert(1)",
    "http://user:pw@example.com/",
    "http://user@example.com/",
    "http:///no-host",
    "http://[::1/",
    "http://exa mple.com/",
    "http://example.com:99999/",
    "http://example.com:0/",
    "http://example.com/" + "a" * 2048,
]


@pytest.mark.parametrize("url", REFUSED)
def test_refused_before_any_network(url: str, no_network: list[str]) -> None:
    with pytest.raises(WebhookRefused) as info:
        check_url(url, [])
    assert "\n" not in str(info.value) and str(info.value)
    with pytest.raises(WebhookRefused):
        resolve(url, [])
    result = deliver(url, BODY, signed(), allow=[], timeout=1)
    assert not result.ok and not result.retry and result.status is None
    assert result.error.startswith("refused:")
    assert no_network == []


@pytest.mark.parametrize("url", ["https://hooks.example.com/x?y=1", "http://8.8.8.8/",
                                 "http://[2606:4700::1111]:8443/", "HTTPS://Hooks.Example.COM./"])
def test_public_urls_pass_without_dns(url: str, no_network: list[str]) -> None:
    check_url(url, [])
    assert no_network == []


def test_allow_by_cidr(no_network: list[str]) -> None:
    for url in ("http://127.1/", "http://2130706433/", "http://[::ffff:127.0.0.1]/"):
        check_url(url, ["127.0.0.0/8"])
    check_url("http://[::1]/", ["::1/128"])
    with pytest.raises(WebhookRefused):
        check_url("http://127.0.0.2/", ["127.0.0.1"])
    with pytest.raises(WebhookRefused):
        check_url("http://127.0.0.1/", ["10.0.0.0/8", "localhost"])
    assert no_network == []


def test_deliver_allowed_by_cidr(hook: Hook) -> None:
    assert deliver(hook.url(), BODY, signed(), allow=["127.0.0.0/8"], timeout=5).ok
    assert deliver(hook.url(host="127.1"), BODY, signed(), allow=["127.0.0.1"], timeout=5).ok
    assert [s.headers["Host"] for s in hook.seen] == [f"127.0.0.1:{hook.port}",
                                                      f"127.1:{hook.port}"]


def test_allow_by_hostname(no_network: list[str]) -> None:
    check_url("http://LocalHost:8000/", ["localhost"])
    check_url("http://intranet/", ["INTRANET"])
    with pytest.raises(WebhookRefused):
        check_url("http://foo.localhost/", ["localhost"])
    assert no_network == []


def test_deliver_allowed_by_hostname_pins_the_address(hook: Hook,
                                                      fake_dns: dict[str, list[str]]) -> None:
    fake_dns["hooks.internal.example"] = ["127.0.0.1"]
    url = hook.url(host="hooks.internal.example")
    refused = deliver(url, BODY, signed(), allow=["127.0.0.2"], timeout=5)
    assert not refused.ok and not refused.retry and "127.0.0.1" in refused.error
    assert hook.seen == []
    result = deliver(url, BODY, signed(), allow=["Hooks.Internal.Example"], timeout=5)
    assert result.ok
    assert hook.seen[0].headers["Host"] == f"hooks.internal.example:{hook.port}"


def test_resolve_refuses_localhost_unless_allowed() -> None:
    with pytest.raises(WebhookRefused):
        resolve("http://localhost:9/", [])
    ips = resolve("http://localhost:9/", ["localhost"])  # /etc/hosts; no connection is made
    assert ips and all(ip in ("127.0.0.1", "::1") or ip.startswith("127.") for ip in ips)


def test_resolve_refuses_rebinding(fake_dns: dict[str, list[str]],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    fake_dns["public.example.com"] = ["8.8.8.8", "2001:4860:4860::8888"]
    fake_dns["rebind.example.com"] = ["8.8.8.8", "127.0.0.1"]
    fake_dns["mapped.example.com"] = ["::ffff:10.0.0.1"]
    assert resolve("https://public.example.com/x", []) == ["8.8.8.8", "2001:4860:4860::8888"]
    for name in ("rebind", "mapped"):
        url = f"https://{name}.example.com/x"
        check_url(url, [])  # passes on receipt: only delivery-time resolution can catch it
        with pytest.raises(WebhookRefused, match="forbidden address"):
            resolve(url, [])
    assert resolve("http://rebind.example.com/", ["127.0.0.0/8"]) == ["8.8.8.8", "127.0.0.1"]
    monkeypatch.setattr(urllib3.util.connection, "create_connection",
                        lambda *a, **k: pytest.fail("connected after a refusal"))
    result = deliver("http://rebind.example.com/", BODY, signed(), allow=[], timeout=1)
    assert not result.ok and not result.retry and result.error.startswith("refused:")


def test_unresolvable_name_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", fail)
    result = deliver("https://gone.example.com/", BODY, signed(), allow=[], timeout=1)
    assert not result.ok and result.retry and result.status is None and result.error


# --- delivery outcomes -----------------------------------------------------------------------


@pytest.mark.parametrize(("path", "status", "ok", "retry"), [
    ("/ok", 200, True, False),
    ("/created", 201, True, False),
    ("/big", 200, True, False),
    ("/fail", 500, False, True),
    ("/unavailable", 503, False, True),
    ("/throttle", 429, False, True),
    ("/missing", 404, False, False),
    ("/redirect", 302, False, False),
])
def test_deliver_status(hook: Hook, path: str, status: int, ok: bool, retry: bool) -> None:
    result = deliver(hook.url(path), BODY, signed(), allow=["127.0.0.1"], timeout=5)
    assert (result.ok, result.status, result.retry) == (ok, status, retry)
    assert bool(result.error) is not ok
    assert [s.path for s in hook.seen] == [path]  # exactly one request: no redirect followed


def test_deliver_timeout_is_retried(hook: Hook) -> None:
    # The receiver holds the request until the test is over, then answers 200: only the
    # timeout fails it.
    result = deliver(hook.url("/slow"), BODY, signed(), allow=["127.0.0.1"], timeout=0.3)
    assert not result.ok and result.retry and result.status is None
    assert "timed out" in result.error.lower()


def test_deliver_to_closed_port_is_retried() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = deliver(f"http://127.0.0.1:{port}/", BODY, signed(), allow=["127.0.0.1"], timeout=2)
    assert not result.ok and result.retry and result.status is None and result.error


def test_https_to_a_plain_server_fails_and_is_retried(hook: Hook) -> None:
    url = f"https://127.0.0.1:{hook.port}/ok"
    result = deliver(url, BODY, signed(), allow=["127.0.0.1"], timeout=5)
    assert not result.ok and result.retry and result.status is None and result.error
    assert hook.seen == []


# --- backoff ---------------------------------------------------------------------------------


def test_backoff_grows_with_jitter_and_caps() -> None:
    for attempt in range(1, 8):
        expected = 2.0 * 2 ** (attempt - 1)
        delays = [backoff(attempt, 2.0) for _ in range(50)]
        assert all(0.8 * expected <= d <= 1.2 * expected for d in delays)
        assert min(delays) < max(delays)  # jittered
        assert min(backoff(attempt + 1, 2.0) for _ in range(20)) > max(delays)
    assert backoff(30, 10.0, cap=60.0) == 60.0
    assert backoff(10_000, 1.0) == 3600.0
    assert all(backoff(7, 1.0, cap=64.0) <= 64.0 for _ in range(100))
    with pytest.raises(ValueError):
        backoff(0, 1.0)


def test_a_refusal_says_which_setting_lifts_it(fake_dns: dict[str, list[str]]) -> None:
    fake_dns["moodle.campus.example.edu"] = ["10.20.0.5"]
    for url, entry in (("http://10.20.0.5/mod/lti/token.php", "10.20.0.5"),
                       ("https://moodle.campus.example.edu/mod/lti/token.php", "10.20.0.5"),
                       ("http://intranet/", "intranet")):
        result = deliver(url, BODY, signed(), allow=[], timeout=1)
        assert (result.ok, result.retry, result.refused) == (False, False, True)
        assert result.error.startswith("refused: ") and "callback" not in result.error
        assert result.error.endswith(f'add "{entry}" to JAXJUDGE_WEBHOOK_ALLOW (a JSON list '
                                     "of hosts, addresses or networks)"), result.error
    syntax = deliver("ftp://example.com/", BODY, signed(), allow=[], timeout=1)
    assert syntax.refused and "JAXJUDGE_WEBHOOK_ALLOW" not in syntax.error  # nothing lifts it


def test_the_allow_lists_fingerprint_ignores_order_case_and_blanks() -> None:
    assert allow_key(["10.0.0.0/8", "Moodle.Example."]) == allow_key(
        ["moodle.example", "10.0.0.0/8", " "])
    assert allow_key([]) != allow_key(["127.0.0.1"]) and len(allow_key([])) == 16
