"""Notary Project signature envelope verification with generic libraries (an
oracle for the fixture cross-checks): jwcrypto for JWS, pycose for COSE.

usage: notary_verify.py (jws | cose) ENVELOPE [--no-notary-headers]

Verifies the envelope's signature with the public key of the first
certificate of its chain (x5c / x5chain). Only the signature is checked
here; the chain, the payload and the timestamp are for the caller, so on
success this prints one line `OK {json}` with the decoded payload, the
signature bytes (base64; what a timestamp countersigns), the chain
(base64 DER, leaf first) and the timestamp token (base64 DER or null), and
exits 0, and the protected header (COSE: labels as strings, algorithms as
their numbers, tag-1 times as epoch seconds). On any failure it prints
`FAIL <reason>` and exits 1.

`--no-notary-headers` leaves the Notary header names unregistered with
jwcrypto, which must then refuse the envelope for its `crit`.
"""

import base64
import datetime
import json
import sys
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization

# The Notary headers a verifier must understand (reference §2.3): jwcrypto
# rejects an envelope whose `crit` names a header it has not registered.
NOTARY_CRITICAL = [
    "io.cncf.notary.signingScheme",
    "io.cncf.notary.signingTime",
    "io.cncf.notary.authenticSigningTime",
    "io.cncf.notary.expiry",
]
X5CHAIN = 33
TIMESTAMP = "io.cncf.notary.timestampSignature"


def leaf_public_pem(der: bytes) -> bytes:
    cert = x509.load_der_x509_certificate(der)
    return cert.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def verify_jws(raw: bytes, register: bool = True) -> dict:
    from jwcrypto.common import JWSEHeaderParameter
    from jwcrypto.jwk import JWK
    from jwcrypto.jws import JWS

    envelope = json.loads(raw)
    header = envelope.get("header", {})
    certs = [base64.b64decode(c) for c in header["x5c"]]
    registry = {
        name: JWSEHeaderParameter("Notary Project header", False, True, None)
        for name in NOTARY_CRITICAL
        if register
    }
    jws = JWS(header_registry=registry)
    jws.deserialize(raw.decode())
    jws.verify(JWK.from_pem(leaf_public_pem(certs[0])))
    ts = header.get(TIMESTAMP)
    sig = base64.urlsafe_b64decode(envelope["signature"] + "==")
    protected = json.loads(base64.urlsafe_b64decode(envelope["protected"] + "=="))
    return {
        "protected": protected,
        "payload": json.loads(jws.payload),
        "signature": base64.b64encode(sig).decode(),
        "certs": [base64.b64encode(c).decode() for c in certs],
        "timestamp": ts,
    }


def label(key):
    """A pycose header key as its CBOR label (pycose maps known labels to
    attribute classes, and leaves unknown ones as they are)."""
    return getattr(key, "identifier", key)


def plain(v):
    """A pycose header value as JSON."""
    if hasattr(v, "identifier"):
        return v.identifier
    if isinstance(v, datetime.datetime):
        return int(v.timestamp())
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    return v


def verify_cose(raw: bytes) -> dict:
    from pycose.keys import CoseKey
    from pycose.messages import CoseMessage, Sign1Message

    msg = CoseMessage.decode(raw)
    if not isinstance(msg, Sign1Message):
        raise ValueError(f"not a COSE_Sign1 message: {type(msg).__name__}")
    unprotected = {label(k): v for k, v in msg.uhdr.items()}
    chain = unprotected.get(X5CHAIN)
    if chain is None:
        chain = {label(k): v for k, v in msg.phdr.items()}.get(X5CHAIN)
    certs = [chain] if isinstance(chain, bytes) else list(chain)
    msg.key = CoseKey.from_pem_public_key(leaf_public_pem(certs[0]).decode())
    if not msg.verify_signature():
        raise ValueError("COSE signature does not verify with the leaf key")
    ts = unprotected.get(TIMESTAMP)
    return {
        "protected": {str(label(k)): plain(v) for k, v in msg.phdr.items()},
        "payload": json.loads(msg.payload),
        "signature": base64.b64encode(msg.signature).decode(),
        "certs": [base64.b64encode(c).decode() for c in certs],
        "timestamp": base64.b64encode(ts).decode() if ts is not None else None,
    }


def main() -> int:
    fmt, path = sys.argv[1:3]
    register = "--no-notary-headers" not in sys.argv[3:]
    raw = Path(path).read_bytes()
    try:
        out = verify_jws(raw, register) if fmt == "jws" else verify_cose(raw)
        print("OK " + json.dumps(out))
        return 0
    except Exception as e:  # every failure is a verdict here
        print(f"FAIL {type(e).__name__}: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
