"""JSON from LMS platforms nested deeply (issue 20), against the real tool over HTTP:
a launch's id_token (its header or claims, deep-linking data included), the platform's
key set, its OpenID configuration (dynamic registration), its token and roster answers.
Each is refused past 200 levels, saying so; before, a key set or a configuration nested
deeply was a 500 (``json``'s RecursionError let through), a token or roster answer an
exception out of the delivery or roster code, and a launch's deep claims "not valid"
(PyJWT caught the RecursionError) or, a little less deep, accepted."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
import requests
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from nesting_support import answering, nested_list, nested_object

from lti import registration
from lti.nrps import RosterError, read_roster
from lti.tokens import Platform, TokenRefused, Tokens, request_token
from service.models import LtiPlatform
from tests.lti.conftest import Tool
from tests.lti.platform import DL, LaunchSpec, TestPlatform

SPEC = LaunchSpec(custom={"problem": "demo/layout"})
TOO_DEEP = "nested more than 200 levels deep"
# An id_token is at most 64 KiB: 15,000 levels (30 KB, 40 KB in base64) fit, and
# Python's json gave up at about 1,000.
TOKEN_DEEP = 15_000


def refused(r: requests.Response, status: int, words: str) -> None:
    assert r.status_code == status, (r.status_code, r.text[:600])
    assert r.headers["Content-Type"].startswith("text/html")
    assert words in r.text.replace("&#39;", "'"), r.text[:1000]
    assert "Traceback" not in r.text


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def signed(platform: TestPlatform, header: str, claims: str) -> str:
    """A compact JWS of the texts ``header`` and ``claims``, RS256 with the platform's
    key (written out: a deep document cannot go through ``json.dumps``)."""
    pem = platform.key.private_pem
    key = serialization.load_pem_private_key(pem.encode() if isinstance(pem, str) else pem,
                                             password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    message = f"{b64(header.encode())}.{b64(claims.encode())}"
    signature = key.sign(message.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{message}.{b64(signature)}"


def launch_with(platform: TestPlatform, spec: LaunchSpec, deep_header: str = "",
                deep_claim: str = "", where: str = "x-deep") -> requests.Response:
    session = requests.Session()
    pending = platform.begin(session, spec)
    now = int(time.time())
    claims = platform.message(spec, pending.nonce) | {"iat": now, "exp": now + 300}
    if where == "deep_linking_data":
        claims[DL + "deep_linking_settings"]["data"] = "DEEP"
    else:
        claims[where] = "DEEP"
    header = {"alg": "RS256", "typ": "JWT", "kid": platform.key.kid, "x-deep": "DEEP"}
    token = signed(platform, json.dumps(header).replace('"DEEP"', deep_header or '"x"'),
                   json.dumps(claims).replace('"DEEP"', deep_claim or '"x"'))
    assert len(token) < 64 * 1024
    return platform.post_launch(session, {"id_token": token, "state": pending.state})


def test_the_written_out_token_is_accepted(tool: Tool, platform: TestPlatform) -> None:
    """The control of the tests below: the hand-signed token, shallow, launches."""
    assert launch_with(platform, SPEC).status_code == 303


@pytest.mark.parametrize(("spec", "where"), [
    (SPEC, "x-deep"),
    (LaunchSpec(message_type="LtiDeepLinkingRequest", roles=[
        "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"]), "deep_linking_data"),
], ids=["resource-link", "deep-linking-data"])
@pytest.mark.parametrize("depth", [300, TOKEN_DEEP])
def test_an_id_token_whose_claims_are_nested_too_deeply_is_refused_saying_so(
        tool: Tool, platform: TestPlatform, spec: LaunchSpec, where: str, depth: int) -> None:
    r = launch_with(platform, spec, deep_claim=nested_list(depth), where=where)
    refused(r, 400, f"the id_token's claims are JSON {TOO_DEEP}")


def test_an_id_token_whose_header_is_nested_too_deeply_is_refused_saying_so(
        tool: Tool, platform: TestPlatform) -> None:
    r = launch_with(platform, SPEC, deep_header=nested_object(4_000))
    refused(r, 400, f"the id_token's header is JSON {TOO_DEEP}")


def use_key_set(tool: Tool, platform: TestPlatform, url: str) -> None:
    with tool.db.session() as s:
        row = s.get(LtiPlatform, platform.platform_id)
        assert row is not None
        row.jwks_url = url


@pytest.mark.parametrize(("body", "says"), [
    ('{"keys": ' + nested_list() + "}", f"is JSON {TOO_DEEP}"),
    ('{"keys": [], "pad": "' + "x" * (300 << 10) + '"}', "is larger than 262144 bytes"),
    ("<html>not json</html>", "is not JSON"),
], ids=["deep", "large", "not-json"])
def test_a_key_set_nested_too_deeply_or_too_large_fails_the_launch_saying_so(
        tool: Tool, platform: TestPlatform, body: str, says: str) -> None:
    with answering(body.encode()) as url:
        use_key_set(tool, platform, url + "/jwks")
        r = platform.launch(spec=SPEC)
    refused(r, 502, f"the platform's key set ({url}/jwks) {says}")


def test_the_same_client_reads_a_good_key_set(tool: Tool, platform: TestPlatform) -> None:
    """The control: the key set served elsewhere, shallow, is read and cached."""
    keys = json.dumps({"keys": [k.jwk | {"alg": "RS256", "use": "sig"} for k in platform.keys]})
    with answering(keys.encode()) as url:
        use_key_set(tool, platform, url + "/jwks")
        assert platform.launch(spec=SPEC).status_code == 303
    assert platform.launch(spec=SPEC).status_code == 303  # from the cache


def test_an_openid_configuration_nested_too_deeply_fails_the_registration(tool: Tool) -> None:
    invite = registration.invite(tool.app.extensions["jaxjudge"].redis, "course-b", 600)
    with answering(('{"issuer": ' + nested_list() + "}").encode()) as url:
        r = requests.get(tool.base + "/lti/register", timeout=60, params={
            "invite": invite, "registration_token": "t",
            "openid_configuration": url + "/.well-known/openid-configuration"})
    refused(r, 502, f"the platform's OpenID configuration is JSON {TOO_DEEP}")


def tokens(tool: Tool) -> Tokens:
    return Tokens(tool.db, tool.app.extensions["jaxjudge"].settings)


def test_a_token_answer_nested_too_deeply_is_no_token(tool: Tool,
                                                      platform: TestPlatform) -> None:
    assert platform.platform_id is not None
    # A token answer is read up to 16 KiB: 5,000 levels fit.
    with (answering(('{"access_token": ' + nested_list(5_000) + "}").encode()) as url,
          pytest.raises(TokenRefused) as refusal):
        request_token(tokens(tool), Platform(platform.platform_id, "c", url + "/token"),
                      ["scope"])
    assert refusal.value.outcome.error == "token endpoint: not a token response (TooDeep)"


def test_a_roster_page_nested_too_deeply_is_a_roster_error(tool: Tool,
                                                           platform: TestPlatform) -> None:
    assert platform.platform_id is not None
    answers: dict[str, Any] = {
        "/token": b'{"access_token": "t", "expires_in": 3600}',
        "/members": ('{"members": ' + nested_list() + "}").encode()}
    with (answering(b"{}", paths=answers) as url,
          pytest.raises(RosterError, match=r"page 1 is not a membership container \(TooDeep\)")):
        read_roster(tokens(tool), Platform(platform.platform_id, "c", url + "/token"),
                    url + "/members")
