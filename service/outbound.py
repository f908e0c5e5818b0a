"""The judge's outgoing HTTP client: every request the judge makes to an address a
tenant or an LMS gave (webhooks, :mod:`service.webhooks`; LTI tokens, scores, rosters and
registrations, :mod:`lti.tokens`, :mod:`lti.ags`, :mod:`lti.nrps`,
:mod:`lti.registration`) goes through :func:`fetch`, under one address policy and with a
bounded answer.

SSRF policy: only http(s) URLs with a host, no ``user:pass@``, at most 2048 characters.
``check_url`` (on receipt, no DNS) refuses IP literals in any form ``getaddrinfo`` accepts
(``127.1``, ``0x7f.1``, ``2130706433``, ``[::ffff:127.0.0.1]`` ...) that are loopback, private,
link-local, multicast, reserved, unspecified, shared (100.64/10), site-local or otherwise not
global, and the names ``localhost``, ``*.localhost``, ``localhost.localdomain`` and dotless
names. ``resolve`` (at request time) refuses when ANY resolved address is forbidden, and
``fetch`` connects to that checked address itself, so DNS rebinding cannot redirect the
request. An ``allow`` entry lifts the policy for a host name (exact, case-insensitive; its
resolved addresses are then trusted too) or for an address / CIDR network.

A refusal at request time (:func:`fetch`) says what lifts it: ``refused: <why>; to let the
judge reach it, add "<address or host>" to JAXJUDGE_WEBHOOK_ALLOW``, in words an LMS
administrator connects to the setting. The outcome is marked ``refused``, and a delivery
remembers the allow-list that refused it (:func:`allow_key`), so it is tried again by
itself when the operator changes the setting (:mod:`service.deliveries`).

Bounded answers: redirects are never followed, at most ``limit`` bytes of a response
(64 KiB by default) are read, within about ``timeout`` seconds. An :class:`Outcome`
says how a request ended and whether a later try may succeed: connection errors,
timeouts, 429 and 5xx may; other 4xx, 3xx and policy refusals may not.
"""

from __future__ import annotations

import hashlib
import ipaddress
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import SplitResult, urlsplit

import urllib3

from judge.errors import UsageError

USER_AGENT = "jaxjudge-webhooks/1"
MAX_URL = 2048
MAX_RESPONSE = 64 * 1024
_SHARED = ipaddress.ip_network("100.64.0.0/10")
_RESERVED_NAMES = {"localhost", "localhost.localdomain"}

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class WebhookRefused(UsageError):
    """The URL is refused by policy (one-line reason); nothing was sent. ``entry`` is what
    ``webhook_allow`` would need to let it through (an address or a host name), when the
    allow-list can lift the refusal at all."""

    def __init__(self, message: str, entry: str | None = None) -> None:
        super().__init__(message)
        self.entry = entry


@dataclass(frozen=True)
class Outcome:
    """How one request ended: ``ok`` on a 2xx; ``retry`` when a later try may succeed."""

    ok: bool
    status: int | None
    error: str
    retry: bool
    # What was read of the answer (compared by nothing: an outcome is how a try ended).
    body: bytes = field(default=b"", compare=False)  # at most the limit
    headers: Mapping[str, str] = field(default_factory=dict, compare=False)  # lower-case names
    complete: bool = field(default=False, compare=False)  # all of the body, in time
    # Refused by the address policy before anything was sent (``webhook_allow`` may lift it).
    refused: bool = field(default=False, compare=False)


def allow_key(allow: Sequence[str]) -> str:
    """A short fingerprint of an allow-list, the same for the same entries in any order
    or case: a delivery refused under one key is tried again once the key changes."""
    entries = sorted({e.strip().lower().rstrip(".") for e in allow} - {""})
    return hashlib.sha256("\n".join(entries).encode()).hexdigest()[:16]


def advice(exc: WebhookRefused) -> str:
    """The refusal, and what setting lifts it when one can."""
    if exc.entry is None:
        return str(exc)
    return (f'{exc}; to let the judge reach it, add "{exc.entry}" to '
            "JAXJUDGE_WEBHOOK_ALLOW (a JSON list of hosts, addresses or networks)")


def _forbidden(addr: Address) -> bool:
    if isinstance(addr, ipaddress.IPv6Address):
        inner = addr.ipv4_mapped or addr.sixtofour
        if inner is not None and _forbidden(inner):
            return True
        if addr.is_site_local:
            return True
    elif addr in _SHARED:
        return True
    return (addr.is_loopback or addr.is_private or addr.is_link_local or addr.is_multicast
            or addr.is_reserved or addr.is_unspecified or not addr.is_global)


def _literal(host: str) -> Address | None:
    """The address ``host`` denotes when it is an IP literal in any accepted form, else None."""
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            raise WebhookRefused(f"invalid IPv6 host {host!r}") from None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):
        return None


def _allowed(host: str, addr: Address | None, allow: Sequence[str]) -> bool:
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    for entry in (e.strip().lower().rstrip(".") for e in allow):
        if entry and entry == host:
            return True
        try:
            net = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            continue
        if addr is not None and addr.version == net.version and addr in net:
            return True
    return False


def _split(url: str) -> tuple[SplitResult, str, int]:
    if len(url) > MAX_URL:
        raise WebhookRefused(f"URL longer than {MAX_URL} characters")
    if any(c <= " " or c == "\x7f" for c in url):
        raise WebhookRefused("URL contains whitespace or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise WebhookRefused(f"malformed URL: {exc}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise WebhookRefused(f"URL scheme {parts.scheme!r} is not http or https")
    if "@" in parts.netloc:
        raise WebhookRefused("URL must not carry credentials (user:pass@)")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise WebhookRefused("URL has no host")
    if port == 0:
        raise WebhookRefused("URL has an invalid port")
    return parts, host, port or (443 if parts.scheme.lower() == "https" else 80)


def check_url(url: str, allow: Sequence[str]) -> None:
    """Refuse ``url`` by syntax and policy alone (never resolves a name)."""
    _, host, _ = _split(url)
    addr = _literal(host)
    if _allowed(host, addr, allow):
        return
    if addr is not None:
        if _forbidden(addr):
            raise WebhookRefused(f"{addr} is not a public address", entry=str(addr))
    elif host in _RESERVED_NAMES or host.endswith(".localhost") or "." not in host:
        raise WebhookRefused(f"host {host!r} is a local name", entry=host)


def resolve(url: str, allow: Sequence[str]) -> list[str]:
    """Check ``url``, resolve its host and refuse if any address is forbidden and not allowed.

    Raises ``WebhookRefused`` for policy, ``OSError`` / ``UnicodeError`` when the name does
    not resolve.
    """
    check_url(url, allow)
    _, host, port = _split(url)
    found: list[str] = []
    for *_, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        ip = str(sockaddr[0])
        addr = ipaddress.ip_address(ip.split("%", 1)[0])
        if _forbidden(addr) and not _allowed(host, addr, allow):
            raise WebhookRefused(f"host {host!r} resolves to {addr}, a forbidden address "
                                 "(not public)", entry=str(addr))
        if ip not in found:
            found.append(ip)
    if not found:
        raise OSError(f"{host!r} resolved to no address")
    return found


def fetch(method: str, url: str, *, headers: Mapping[str, str], allow: Sequence[str],
          timeout: float, body: bytes | None = None, content_type: str | None = None,
          limit: int = MAX_RESPONSE) -> Outcome:
    """One HTTP request under the SSRF policy, to an address checked by :func:`resolve`
    (redirects never followed, at most ``limit`` bytes of the response read, within about
    ``timeout`` seconds). Never raises for network trouble: the outcome says whether a
    later try may succeed."""
    try:
        ips = resolve(url, allow)
    except WebhookRefused as exc:
        return Outcome(False, None, f"refused: {advice(exc)}", retry=False, refused=True)
    except (OSError, UnicodeError) as exc:
        return Outcome(False, None, f"cannot resolve host: {exc}", retry=True)
    parts, host, port = _split(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    fixed = {"host", "content-type", "content-length"}
    sent = {"User-Agent": USER_AGENT, **{k: v for k, v in headers.items() if k.lower() not in fixed}}
    sent |= {"Host": parts.netloc}
    if content_type is not None:
        sent["Content-Type"] = content_type
    limits = urllib3.Timeout(connect=timeout, read=timeout)
    error = "no address"
    for ip in ips:
        pool: urllib3.HTTPConnectionPool
        if parts.scheme.lower() == "https":
            pool = urllib3.HTTPSConnectionPool(ip, port, timeout=limits, retries=False,
                                               maxsize=1, server_hostname=host,
                                               assert_hostname=host)
        else:
            pool = urllib3.HTTPConnectionPool(ip, port, timeout=limits, retries=False, maxsize=1)
        try:
            resp = pool.urlopen(method, target, body=body, headers=sent, redirect=False,
                                retries=False, preload_content=False, assert_same_host=False)
            content, whole = _drain(resp, time.monotonic() + timeout, limit)
        except (urllib3.exceptions.NewConnectionError,
                urllib3.exceptions.ConnectTimeoutError) as exc:
            error = f"cannot connect to {ip}: {exc}"
            continue  # nothing was sent: the next checked address may answer
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            return Outcome(False, None, f"{type(exc).__name__}: {exc}", retry=True)
        finally:
            pool.close()
        status = resp.status
        got = {k.lower(): v for k, v in resp.headers.items()}
        if 200 <= status < 300:
            return Outcome(True, status, "", retry=False, body=content, headers=got,
                           complete=whole)
        note = " (redirects are not followed)" if 300 <= status < 400 else ""
        return Outcome(False, status, f"HTTP {status}{note}",
                       retry=status == 429 or status >= 500, body=content, headers=got,
                       complete=whole)
    return Outcome(False, None, error, retry=True)


def _drain(resp: urllib3.BaseHTTPResponse, deadline: float,
           limit: int = MAX_RESPONSE) -> tuple[bytes, bool]:
    """Read at most ``limit`` bytes of the body until ``deadline``: the bytes read, and
    whether that was the whole body. A webhook's status decides; the LTI services read."""
    chunks: list[bytes] = []
    left, whole = limit, False
    try:
        while time.monotonic() < deadline:
            chunk = resp.read1(max(left, 1), decode_content=False)
            if not chunk:
                whole = True
                break
            if len(chunk) > left:  # one byte past the limit: the body is too long
                break
            chunks.append(chunk)
            left -= len(chunk)
    except (urllib3.exceptions.HTTPError, OSError):
        pass
    finally:
        resp.release_conn()
    return b"".join(chunks), whole
