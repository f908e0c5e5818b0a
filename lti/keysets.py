"""The platforms' key sets: each platform's JWKS, fetched as the judge reads any JSON
from outside (bounded in size and nesting, no redirects), cached per process, and
fetched again once when a token names a ``kid`` the cache does not have (a key the
platform rotated in). :func:`lti.launch.complete_launch` checks a token's signature
with it.
"""

from __future__ import annotations

import http.client
import threading
import time
import urllib.request
from typing import Any
from urllib.error import HTTPError, URLError

import jwt

from judge.nesting import TooDeep, load_json
from lti.errors import LaunchError

MAX_KEY_SET_BYTES = 256 << 10  # a key set of a few RSA keys is a few KiB


class KeySetUnreadable(jwt.PyJWKClientError):
    """The platform's key set answer is too large or not JSON within the nesting bound."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *_: Any, **__: Any) -> None:
        return None


class KeySetClient(jwt.PyJWKClient):
    """PyJWT's client, reading the key set as the judge reads any JSON from outside: at
    most :data:`MAX_KEY_SET_BYTES` of it (PyJWT reads the whole answer), parsed by
    :func:`judge.nesting.load_json` (PyJWT's ``json.load`` lets a ``RecursionError`` out
    of a set nested deeply, a 500 at the launch). The request is PyJWT's own: ``GET``
    with the client's headers and timeout, no redirect followed. ``fetch_data`` is the
    method PyJWT documents for a subclass to replace; the client caches what it returns."""

    def fetch_data(self) -> Any:
        request = urllib.request.Request(url=self.uri, headers=self.headers)
        try:
            with urllib.request.build_opener(_NoRedirect()).open(
                    request, timeout=self.timeout) as response:
                body = response.read(MAX_KEY_SET_BYTES + 1)
        except (URLError, TimeoutError, http.client.HTTPException) as exc:
            if isinstance(exc, HTTPError):
                exc.close()
            raise jwt.PyJWKClientConnectionError(f"cannot fetch {self.uri}: {exc}") from None
        if len(body) > MAX_KEY_SET_BYTES:
            raise KeySetUnreadable(f"is larger than {MAX_KEY_SET_BYTES} bytes")
        try:
            found = load_json(body)
        except TooDeep as exc:
            raise KeySetUnreadable(f"is JSON {exc}") from None
        except ValueError:
            raise KeySetUnreadable("is not JSON") from None
        self._last_successful_fetch = time.monotonic()  # PyJWT's cooldown starts here
        return found


class KeySets:
    """The platforms' key sets, one :class:`KeySetClient` (PyJWT's ``PyJWKClient``) per
    URL, kept for the process.

    A set is cached for ``lifespan`` seconds; a ``kid`` not in it makes the client fetch
    it once more (a key the platform rotated in), at most once per ``cooldown`` seconds
    per URL, so forged tokens naming random kids cannot make the tool fetch in a loop.
    """

    def __init__(self, lifespan: float = 300.0, cooldown: float = 5.0,
                 timeout: float = 5.0) -> None:
        self.lifespan, self.cooldown, self.timeout = lifespan, cooldown, timeout
        self._clients: dict[str, jwt.PyJWKClient] = {}
        self._lock = threading.Lock()

    def client(self, url: str) -> jwt.PyJWKClient:
        with self._lock:
            found = self._clients.get(url)
            if found is None or found.cooldown_duration != self.cooldown:
                found = KeySetClient(url, cache_keys=False, lifespan=self.lifespan,
                                     timeout=self.timeout, cooldown_duration=self.cooldown,
                                     headers={"User-Agent": "jaxjudge-lti"})
                self._clients[url] = found
            return found

    def key(self, url: str, kid: str) -> Any:
        try:
            return self.client(url).get_signing_key(kid).key
        except jwt.PyJWKClientConnectionError:
            raise LaunchError("the platform's key set could not be fetched; try again",
                              502) from None
        except KeySetUnreadable as exc:
            raise LaunchError(f"the platform's key set ({url}) {exc}", 502) from None
        except (jwt.PyJWKClientError, jwt.PyJWKError, jwt.PyJWKSetError):
            raise LaunchError("the token is signed with a key the platform does not "
                              "publish") from None
