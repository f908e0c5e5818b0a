"""LTI Dynamic Registration end to end with the test platform, the Canvas developer-key
JSON and the JWKS endpoint."""

from __future__ import annotations

import re

import pytest
import requests
from sqlalchemy import select

from lti import registration
from service.models import LtiPlatform, Tenant
from tests.lti.conftest import Tool
from tests.lti.platform import LaunchSpec, TestPlatform


def invite(tool: Tool, tenant: str = "course-b") -> str:
    return registration.invite(tool.app.extensions["jaxjudge"].redis, tenant, 600)


def register(tool: Tool, platform: TestPlatform, token: str,
             bearer: str | None = None) -> requests.Response:
    return requests.get(tool.base + "/lti/register", params={
        "invite": token,
        "openid_configuration": platform.base + "/.well-known/openid-configuration",
        "registration_token": bearer or platform.registration_token}, timeout=30)


def test_dynamic_registration_end_to_end(tool: Tool) -> None:
    with TestPlatform(tool.base) as platform:
        r = register(tool, platform, invite(tool))
        assert r.status_code == 200, r.text
        assert "org.imsglobal.lti.close" in r.text
        nonce = re.search(r'<script nonce="([^"]+)">', r.text)
        assert nonce and f"'nonce-{nonce.group(1)}'" in r.headers["Content-Security-Policy"]
        [sent] = platform.registrations
        assert sent["initiate_login_uri"] == tool.base + "/lti/login"
        assert sent["redirect_uris"] == [tool.base + "/lti/launch"]
        assert sent["jwks_uri"] == tool.base + "/lti/jwks.json"
        assert sent["token_endpoint_auth_method"] == "private_key_jwt"
        assert "https://purl.imsglobal.org/spec/lti-ags/scope/score" in sent["scope"]
        assert "lineitem.readonly" not in sent["scope"]  # not offered by this platform
        tool_conf = sent[registration.TOOL_CONFIGURATION]
        assert tool_conf["messages"][0]["type"] == "LtiDeepLinkingRequest"
        with tool.db.session() as s:
            row = s.scalar(select(LtiPlatform).where(LtiPlatform.issuer == platform.base))
            assert row is not None
            assert row.client_id == platform.registered_client_id
            assert row.deployment_ids == ["dr-deployment-1"]
            assert (row.login_url, row.token_url, row.jwks_url) == (
                platform.base + "/auth", platform.base + "/token", platform.base + "/jwks")
            tenant = s.get(Tenant, row.tenant_id)
            assert tenant is not None and tenant.name == "course-b"
        # The registered platform launches.
        platform.client_id = platform.registered_client_id
        platform.deployment_id = "dr-deployment-1"
        launched = platform.launch(spec=LaunchSpec(custom={"problem": "demo/layout"}))
        assert launched.status_code == 303, launched.text


def test_invitation_is_used_once(tool: Tool) -> None:
    with TestPlatform(tool.base) as platform:
        token = invite(tool)
        assert register(tool, platform, token).status_code == 200
        again = register(tool, platform, token)
        assert again.status_code == 403 and "register-url" in again.text
        assert len(platform.registrations) == 1


def test_without_an_invitation_nothing_is_registered(tool: Tool) -> None:
    with TestPlatform(tool.base) as platform:
        for token in ("", "guessed-invite"):
            r = register(tool, platform, token)
            assert r.status_code == 403
        assert platform.registrations == []
        with tool.db.session() as s:
            assert s.scalars(select(LtiPlatform)).all() == []


def test_a_failed_registration_leaves_the_invitation_usable(tool: Tool) -> None:
    with TestPlatform(tool.base) as platform:
        token = invite(tool)
        refused = register(tool, platform, token, bearer="wrong-token")
        assert refused.status_code == 502 and "HTTP 401" in refused.text
        assert register(tool, platform, token).status_code == 200


def test_issuer_on_another_host_is_refused(tool: Tool) -> None:
    with TestPlatform(tool.base) as platform:
        # The configuration URL on "localhost", its issuer on 127.0.0.1: hosts differ.
        r = requests.get(tool.base + "/lti/register", params={
            "invite": invite(tool),
            "openid_configuration": platform.base.replace("127.0.0.1", "localhost")
            + "/.well-known/openid-configuration",
            "registration_token": platform.registration_token}, timeout=30)
        assert r.status_code == 502 and "not on the host of its configuration" in r.text
        assert platform.registrations == []


def test_a_platform_on_a_private_address_needs_the_allow_list(tool: Tool) -> None:
    """The configuration is fetched by the judge's outgoing client, under the SSRF
    policy of webhooks: a loopback platform not in ``webhook_allow`` is not contacted."""
    from lti.launch import LaunchError

    with TestPlatform(tool.base) as platform:
        redis = tool.app.extensions["jaxjudge"].redis
        token = invite(tool)
        with tool.db.session() as s, pytest.raises(LaunchError) as refused:
            registration.register(s, redis, tool.base, token,
                                  platform.base + "/.well-known/openid-configuration",
                                  platform.registration_token, allow=[])
        assert "refused" in str(refused.value) and "could not be reached" in str(refused.value)
        assert platform.registrations == []
        with tool.db.session() as s:
            assert s.scalars(select(LtiPlatform)).all() == []


def test_canvas_json(tool: Tool) -> None:
    r = requests.get(tool.base + "/lti/canvas.json", timeout=10)
    assert r.status_code == 200
    body = r.json()
    assert body["oidc_initiation_url"] == tool.base + "/lti/login"
    assert body["target_link_uri"] == tool.base + "/lti/launch"
    assert body["public_jwk_url"] == tool.base + "/lti/jwks.json"
    placements = {p["placement"]: p for p in body["extensions"][0]["settings"]["placements"]}
    assert set(placements) == {"link_selection", "assignment_selection"}
    assert all(p["message_type"] == "LtiDeepLinkingRequest" for p in placements.values())
    assert "https://purl.imsglobal.org/spec/lti-ags/scope/score" in body["scopes"]


def test_jwks_endpoint_publishes_public_keys_only(tool: Tool) -> None:
    first = requests.get(tool.base + "/lti/jwks.json", timeout=10).json()
    assert len(first["keys"]) == 1  # made on first use
    assert not {"d", "p", "q", "dp", "dq", "qi"} & set(first["keys"][0])
