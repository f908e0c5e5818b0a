"""The tool's keys: made on first use, private halves encrypted with the secret, rotated
with an overlap in the JWKS, never a private member in the JWKS."""

from __future__ import annotations

import os
import stat
from datetime import timedelta
from pathlib import Path

import jwt
import pytest
from sqlalchemy import select, update

from judge.errors import UsageError
from lti import keys
from service.db import Database, utcnow
from service.models import LtiKey
from service.secret import secret_key
from service.settings import ServiceSettings

PRIVATE_MEMBERS = {"d", "p", "q", "dp", "dq", "qi", "oth", "k"}


def settings(database_url: str, secret: str = "s3cret-for-tests") -> ServiceSettings:
    return ServiceSettings(database_url=database_url, secret_key=secret)


def test_signing_key_is_made_once_and_signs_what_the_jwks_verifies(database_url: str) -> None:
    db, conf = Database(database_url), settings(database_url)
    kid, private = keys.signing_key(db, conf)
    again, _ = keys.signing_key(db, conf)
    assert again == kid
    assert private.key_size >= 2048
    token = jwt.encode({"hello": "platform"}, private, algorithm="RS256",
                       headers={"kid": kid})
    published = keys.jwks(db)["keys"]
    assert [k["kid"] for k in published] == [kid]
    public = jwt.PyJWK(published[0]).key
    assert jwt.decode(token, public, algorithms=["RS256"]) == {"hello": "platform"}


def test_private_key_is_not_stored_in_plain_text(database_url: str) -> None:
    db, conf = Database(database_url), settings(database_url)
    kid, private = keys.signing_key(db, conf)
    with db.session() as s:
        stored = s.get(LtiKey, kid)
        assert stored is not None
        text = stored.private_key
    assert "PRIVATE KEY" not in text and "BEGIN" not in text
    numbers = private.private_numbers()
    for secret_int in (numbers.d, numbers.p, numbers.q):
        assert format(secret_int, "x") not in text.lower()
    raw = Path(database_url.removeprefix("sqlite:///")).read_bytes()
    assert b"PRIVATE KEY" not in raw
    # Another secret does not open it: a clear error, not a crash.
    with db.session() as s:
        stored = s.get(LtiKey, kid)
        assert stored is not None
        with pytest.raises(UsageError, match="cannot be decrypted"):
            keys.private_key(stored, settings(database_url, "another-secret"))


def test_rotate_keeps_the_old_key_in_the_jwks_until_it_expires(database_url: str) -> None:
    db, conf = Database(database_url), settings(database_url)
    old, _ = keys.signing_key(db, conf)
    with db.session() as s:
        new = keys.rotate(s, conf).kid
    assert new != old
    assert keys.signing_key(db, conf)[0] == new
    published = keys.jwks(db)["keys"]
    assert {k["kid"] for k in published} == {old, new}
    for jwk in published:
        assert not PRIVATE_MEMBERS & set(jwk), jwk
        assert jwk["kty"] == "RSA" and jwk["alg"] == "RS256" and jwk["use"] == "sig"
    with db.session() as s:
        row = s.get(LtiKey, old)
        assert row is not None and row.expires_at is not None
        left = row.expires_at - utcnow()
        assert timedelta(days=29) < left <= timedelta(days=30)
        s.execute(update(LtiKey).where(LtiKey.kid == old)
                  .values(expires_at=utcnow() - timedelta(seconds=1)))
    assert [k["kid"] for k in keys.jwks(db)["keys"]] == [new]
    with db.session() as s:
        assert len(s.scalars(select(LtiKey)).all()) == 2  # kept, only not published


def test_secret_file_is_made_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "var" / "secret_key"
    conf = ServiceSettings(secret_key="")
    first = secret_key(conf, path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert len(first) >= 32
    assert secret_key(conf, path) == first
    assert secret_key(ServiceSettings(secret_key="configured"), path) == b"configured"
