"""Launches that must be refused, each against the real tool over HTTP with real Redis:
replays, foreign or missing state, tokens from the wrong issuer or for another tool,
expired or premature ones, unsigned, ``alg: none``, HS256 keyed with the platform's
public key, unknown keys, unknown deployments, wrong message types, a state cookie of
another login. Each refusal is an HTML page with a 4xx status."""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest
import requests

from lti.launch import STATE_COOKIE
from tests.lti.conftest import Tool
from tests.lti.platform import LTI, LaunchSpec, PlatformKey, TestPlatform

SPEC = LaunchSpec(custom={"problem": "demo/layout"})


def refused(r: requests.Response, status: int, words: str) -> None:
    assert r.status_code == status, (r.status_code, r.text[:300])
    assert r.headers["Content-Type"].startswith("text/html")
    assert words in r.text, r.text[:600]
    assert "Traceback" not in r.text and "eyJ" not in r.text  # no trace, no token echoed


def forged(platform: TestPlatform, **token: Any) -> requests.Response:
    """A fresh login, then a launch carrying a token forged with ``token``."""
    session = requests.Session()
    pending = platform.begin(session, SPEC)
    return platform.post_launch(session, {"id_token": platform.id_token(pending.nonce, SPEC,
                                                                        **token),
                                          "state": pending.state})


def test_the_genuine_forged_token_is_accepted(tool: Tool, platform: TestPlatform) -> None:
    """The control of the tests below: the forging helper, left alone, makes a launch
    the tool accepts."""
    r = forged(platform)
    assert r.status_code == 303, r.text


def test_replayed_id_token_and_state(tool: Tool, platform: TestPlatform) -> None:
    session = requests.Session()
    pending = platform.begin(session, SPEC)
    action, form = platform.authorize(session, pending)
    assert platform.post_launch(session, form, action).status_code == 303
    refused(platform.post_launch(session, form, action), 403, "used already")
    refused(platform.post_launch(requests.Session(), form, action), 403, "used already")


def test_id_token_replayed_into_a_new_login(tool: Tool, platform: TestPlatform) -> None:
    """The same nonce under a fresh state: the nonce is not the new login's."""
    session = requests.Session()
    first = platform.begin(session, SPEC)
    _action, form = platform.authorize(session, first)
    assert platform.post_launch(session, form).status_code == 303
    second = platform.begin(session, SPEC)
    r = platform.post_launch(session, {"id_token": form["id_token"], "state": second.state})
    refused(r, 403, "nonce")


def test_nonce_is_consumed_once(tool: Tool, platform: TestPlatform) -> None:
    """A token whose nonce is still unused but whose state is gone: refused by the state;
    the nonce of a used launch is gone from Redis too."""
    session = requests.Session()
    pending = platform.begin(session, SPEC)
    redis = tool.app.extensions["jaxjudge"].redis
    assert redis.exists("jaxjudge:lti:nonce:" + pending.nonce)
    token = platform.id_token(pending.nonce, SPEC)
    assert platform.post_launch(session, {"id_token": token,
                                          "state": pending.state}).status_code == 303
    assert not redis.exists("jaxjudge:lti:nonce:" + pending.nonce)
    assert not redis.exists("jaxjudge:lti:state:" + pending.state)


@pytest.mark.parametrize("state", ["", "made-up-state", "x" * 43])
def test_missing_or_foreign_state(tool: Tool, platform: TestPlatform, state: str) -> None:
    session = requests.Session()
    pending = platform.begin(session, SPEC)
    token = platform.id_token(pending.nonce, SPEC)
    r = platform.post_launch(session, {"id_token": token, "state": state})
    assert r.status_code in (400, 403)
    assert r.headers["Content-Type"].startswith("text/html")


def test_state_cookie_of_another_login(tool: Tool, platform: TestPlatform) -> None:
    session = requests.Session()
    pending = platform.begin(session, SPEC)
    # The cookie the login set (requests keeps Secure cookies for https only: read it).
    ours = session.cookies.get(STATE_COOKIE)
    assert ours and len(ours) == 43
    token = platform.id_token(pending.nonce, SPEC)
    fields = {"id_token": token, "state": pending.state}
    r = requests.post(tool.base + "/lti/launch", data=fields, allow_redirects=False,
                      headers={"Cookie": f"{STATE_COOKIE}={'A' * 43}"}, timeout=10)
    refused(r, 403, "another browser")


def test_state_cookie_that_matches_is_accepted(tool: Tool, platform: TestPlatform) -> None:
    session = requests.Session()
    pending = platform.begin(session, SPEC)
    ours = session.cookies.get(STATE_COOKIE)
    token = platform.id_token(pending.nonce, SPEC)
    r = requests.post(tool.base + "/lti/launch", data={"id_token": token, "state":
                                                       pending.state},
                      headers={"Cookie": f"{STATE_COOKIE}={ours}"}, allow_redirects=False,
                      timeout=10)
    assert r.status_code == 303


def test_state_cookie_attributes(tool: Tool, platform: TestPlatform) -> None:
    r = requests.get(platform.login_url(SPEC), allow_redirects=False, timeout=10)
    cookie = r.headers["Set-Cookie"].lower()
    assert "samesite=none" in cookie and "secure" in cookie and "httponly" in cookie


def test_wrong_issuer(tool: Tool, platform: TestPlatform) -> None:
    refused(forged(platform, iss="https://evil.example"), 401, "issuer")


def test_wrong_audience(tool: Tool, platform: TestPlatform) -> None:
    refused(forged(platform, aud="another-tool", azp=None), 401, "not for this tool")


def test_audience_list_without_azp(tool: Tool, platform: TestPlatform) -> None:
    refused(forged(platform, aud=[platform.client_id, "another-tool"], azp=None), 401,
            "no azp")


def test_audience_list_with_foreign_azp(tool: Tool, platform: TestPlatform) -> None:
    refused(forged(platform, aud=[platform.client_id, "another-tool"], azp="another-tool"),
            401, "azp")


def test_audience_list_with_our_azp_is_accepted(tool: Tool, platform: TestPlatform) -> None:
    r = forged(platform, aud=[platform.client_id, "another-tool"], azp=platform.client_id)
    assert r.status_code == 303, r.text


def test_expired(tool: Tool, platform: TestPlatform) -> None:
    refused(forged(platform, iat=int(time.time()) - 3600, lifetime=600), 401, "expired")


def test_iat_in_the_future_beyond_the_leeway(tool: Tool, platform: TestPlatform) -> None:
    leeway = tool.app.extensions["jaxjudge"].settings.lti_leeway_seconds
    refused(forged(platform, iat=int(time.time() + leeway + 600)), 401, "not valid yet")


def test_unsigned(tool: Tool, platform: TestPlatform) -> None:
    session = requests.Session()
    pending = platform.begin(session, SPEC)
    header, payload, _sig = platform.id_token(pending.nonce, SPEC).split(".")
    r = platform.post_launch(session, {"id_token": f"{header}.{payload}.",
                                       "state": pending.state})
    refused(r, 401, "signature")


def test_alg_none(tool: Tool, platform: TestPlatform) -> None:
    refused(forged(platform, alg="none"), 400, "RS256")


def test_hs256_keyed_with_the_platform_public_key(tool: Tool, platform: TestPlatform) -> None:
    # PyJWT refuses to HMAC with a PEM public key; sign the way an attacker would.
    import base64
    import hashlib
    import hmac
    import json

    session = requests.Session()
    pending = platform.begin(session, SPEC)
    claims = jwt.decode(platform.id_token(pending.nonce, SPEC),
                        options={"verify_signature": False})

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    head = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": platform.key.kid}).encode())
    body = b64(json.dumps(claims).encode())
    signature = hmac.new(platform.key.public_pem.encode(), f"{head}.{body}".encode(),
                         hashlib.sha256).digest()
    r = platform.post_launch(session, {"id_token": f"{head}.{body}.{b64(signature)}",
                                       "state": pending.state})
    refused(r, 400, "RS256")


def test_signed_by_another_key_with_the_platform_kid(tool: Tool,
                                                     platform: TestPlatform) -> None:
    refused(forged(platform, key=PlatformKey.new().private_pem), 401, "signature")


def test_unknown_kid_stays_unknown_after_a_refresh(tool: Tool, platform: TestPlatform) -> None:
    assert forged(platform).status_code == 303  # the key set is fetched and cached
    fetched = platform.jwks_requests
    stranger = PlatformKey.new()
    refused(forged(platform, key=stranger.private_pem, kid=stranger.kid), 400,
            "does not publish")
    assert platform.jwks_requests == fetched + 1  # fetched again, once


def test_key_rotated_at_the_platform_is_fetched(tool: Tool, platform: TestPlatform) -> None:
    assert forged(platform).status_code == 303
    fetched = platform.jwks_requests
    platform.rotate()
    r = platform.launch(spec=LaunchSpec(custom={"problem": "demo/layout"}))
    assert r.status_code == 303, r.text
    assert platform.jwks_requests == fetched + 1


def test_unknown_deployment(tool: Tool, platform: TestPlatform) -> None:
    refused(forged(platform, **{LTI + "deployment_id": "another-deployment"}), 403,
            "deployment")


def test_unknown_deployment_at_login(tool: Tool, platform: TestPlatform) -> None:
    url = platform.login_url(SPEC).replace("lti_deployment_id=deployment-1",
                                           "lti_deployment_id=other")
    refused(requests.get(url, allow_redirects=False, timeout=10), 403, "deployment")


def test_unknown_issuer_at_login(tool: Tool, platform: TestPlatform) -> None:
    r = requests.get(tool.base + "/lti/login", params={
        "iss": "https://unknown.example", "login_hint": "x",
        "target_link_uri": tool.base + "/lti/launch"}, allow_redirects=False, timeout=10)
    refused(r, 404, "not registered")


def test_wrong_message_type(tool: Tool, platform: TestPlatform) -> None:
    refused(forged(platform, **{LTI + "message_type": "LtiSubmissionReviewRequest"}), 400,
            "message type")


def test_wrong_version(tool: Tool, platform: TestPlatform) -> None:
    refused(forged(platform, **{LTI + "version": "1.1"}), 400, "1.3.0")


@pytest.mark.parametrize("claim", ["sub", LTI + "roles", LTI + "resource_link",
                                   LTI + "context", LTI + "target_link_uri", "nonce"])
def test_required_claims(tool: Tool, platform: TestPlatform, claim: str) -> None:
    r = forged(platform, drop=(claim,))
    assert r.status_code in (400, 401, 403), r.text
    assert r.headers["Content-Type"].startswith("text/html")
