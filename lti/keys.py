"""The tool's RSA key pairs (table ``lti_keys``): the current one signs client assertions
(AGS, NRPS) and Deep Linking responses; the public halves are the tool's JWKS.

Private keys are kept in the database only encrypted: Fernet (AES-128-CBC with an
HMAC-SHA256), under a key derived with HKDF-SHA256 from the deployment's secret
(:func:`service.secret.secret_key`). A database dump without the secret holds no
usable private key, and nothing of them is ever in the repository.

``jaxjudge lti keys rotate`` makes a new current key and retires the old one, which
stays in the JWKS for ``lti_key_overlap_days`` (a platform that cached the key set, or a
JWT signed just before, still verifies) and is left out of it after.
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import timedelta
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from jwt.algorithms import RSAAlgorithm
from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from judge.errors import UsageError
from service.db import Database, utcnow
from service.models import LtiKey
from service.secret import secret_key
from service.settings import ServiceSettings

KEY_BITS = 3072
ALGORITHM = "RS256"
_HKDF_INFO = b"jaxjudge lti tool private keys v1"

# Decrypted keys by kid: a key never changes once made, so decrypting it once per process
# is enough.
_loaded: dict[tuple[str, bytes], rsa.RSAPrivateKey] = {}


def _fernet(settings: ServiceSettings) -> Fernet:
    raw = HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
               info=_HKDF_INFO).derive(secret_key(settings))
    return Fernet(base64.urlsafe_b64encode(raw))


def public_jwk(public: rsa.RSAPublicKey) -> dict[str, Any]:
    """The JWK of a public key, with its RFC 7638 thumbprint as ``kid``."""
    jwk: dict[str, Any] = RSAAlgorithm.to_jwk(public, as_dict=True)
    members = json.dumps({"e": jwk["e"], "kty": "RSA", "n": jwk["n"]},
                         separators=(",", ":"), sort_keys=True)
    kid = base64.urlsafe_b64encode(hashlib.sha256(members.encode()).digest()).rstrip(b"=")
    return {"kty": "RSA", "e": jwk["e"], "n": jwk["n"], "kid": kid.decode(),
            "alg": ALGORITHM, "use": "sig"}


def create(s: Session, settings: ServiceSettings) -> LtiKey:
    """A new current key pair, stored (private half encrypted)."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    pem = private.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    jwk = public_jwk(private.public_key())
    row = LtiKey(kid=jwk["kid"], private_key=_fernet(settings).encrypt(pem).decode(),
                 public_jwk=jwk, created_at=utcnow())
    s.add(row)
    s.flush()
    return row


def _current(s: Session) -> LtiKey | None:
    # Two processes that both found no key may each make one: the newest signs, and
    # both are in the JWKS, so whatever either signed verifies.
    return s.scalars(select(LtiKey).where(LtiKey.retired_at.is_(None))
                     .order_by(LtiKey.created_at.desc(), LtiKey.kid)).first()


def private_key(row: LtiKey, settings: ServiceSettings) -> rsa.RSAPrivateKey:
    """The decrypted private key of ``row``; UsageError if the secret does not open it."""
    secret = secret_key(settings)
    found = _loaded.get((row.kid, secret))
    if found is not None:
        return found
    try:
        pem = _fernet(settings).decrypt(row.private_key.encode())
    except InvalidToken:
        raise UsageError(f"the LTI key {row.kid} cannot be decrypted with the configured "
                         "secret (JAXJUDGE_SECRET_KEY changed?)") from None
    key = serialization.load_pem_private_key(pem, password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    _loaded[(row.kid, secret)] = key
    return key


def signing_key(db: Database | Session,
                settings: ServiceSettings) -> tuple[str, rsa.RSAPrivateKey]:
    """The current key's kid and private key, made first if the tool has none."""
    if isinstance(db, Session):
        row = _current(db) or create(db, settings)
        return row.kid, private_key(row, settings)
    with db.session() as s:
        row = _current(s) or create(s, settings)
    return row.kid, private_key(row, settings)


def ensure_key(db: Database, settings: ServiceSettings) -> str:
    """The current key's kid, made first if the tool has none; nothing is decrypted (the
    JWKS endpoint calls it, and publishing public keys needs no secret)."""
    with db.session() as s:
        row = _current(s) or create(s, settings)
        return row.kid


def rotate(s: Session, settings: ServiceSettings) -> LtiKey:
    """A new current key; the current ones retire and leave the JWKS after the overlap."""
    now = utcnow()
    expires = now + timedelta(days=settings.lti_key_overlap_days)
    for row in s.scalars(select(LtiKey).where(LtiKey.retired_at.is_(None))):
        row.retired_at = now
        row.expires_at = expires
    return create(s, settings)


def listed(s: Session) -> list[LtiKey]:
    return list(s.scalars(select(LtiKey).order_by(LtiKey.created_at.desc(), LtiKey.kid)))


def jwks(db: Database | Session) -> dict[str, Any]:
    """The tool's key set: the public halves of the keys not yet expired."""
    def keys(s: Session) -> list[dict[str, Any]]:
        rows = s.scalars(select(LtiKey).where(
            or_(LtiKey.expires_at.is_(None), LtiKey.expires_at > utcnow()))
            .order_by(LtiKey.created_at.desc(), LtiKey.kid))
        return [dict(row.public_jwk) for row in rows]

    if isinstance(db, Session):
        return {"keys": keys(db)}
    with db.session() as s:
        return {"keys": keys(s)}
