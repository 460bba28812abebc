//! The cosign / Sigstore fixture generator: real signed artifacts made the
//! way cosign makes them, with the test suite's own keys, CA, CT log and
//! Rekor, so that the verifier can be tested offline against a local registry.
//!
//! - [`keys`]: ECDSA P-256/P-384, RSA-2048 (PKCS#1 v1.5, PSS), Ed25519 (pure, ph).
//! - [`ca`]: a Fulcio-style CA (root, intermediate, leaf certificates with
//!   Fulcio extensions and an embedded SCT from [`ca::CtLog`]).
//! - [`rekor`]: an in-memory Rekor v1: entry bodies, SETs, a Merkle tree with
//!   inclusion proofs and signed checkpoints.
//! - [`cosign`]: legacy `.sig` / `.att` images in a registry.
//! - [`bundle`]: Sigstore bundle v0.3, pushed as an OCI 1.1 referrer.
//! - [`trusted_root`]: `trusted_root.json` for all of the above.
//! - [`tuf`]: a TUF repository serving that `trusted_root.json`.
//! - [`notary`]: Notary Project (notation) JWS / COSE signatures from an own
//!   CA, as OCI 1.1 referrers, optionally countersigned by [`tsa`], an own
//!   RFC 3161 timestamp authority.
//! - [`revocation`]: the OCSP and CRL endpoints a certificate names, CRLs,
//!   and a real `openssl ocsp` responder.
//!
//! Everything is deterministic for given seeds and times, except the
//! default times ([`now`]).

pub mod bundle;
pub mod ca;
pub mod cbor;
pub mod cosign;
pub mod der;
pub mod keys;
pub mod notary;
pub mod oci;
pub mod rekor;
pub mod revocation;
pub mod trusted_root;
pub mod tsa;
pub mod tuf;

pub use bundle::{BundleOpts, BundleRef, Content};
pub use ca::{CtLog, Fulcio, Identity, Leaf, LeafSpec, Window};
pub use cosign::{AttOpts, SignOpts, Signed, Signer, Tamper};
pub use keys::{KeyKind, KeyPair, SigHash};
pub use notary::{
    attach_referrer, Format, NotaryAlg, NotaryCa, NotaryLeaf, NotaryOpts, NotarySigner,
    NotaryTamper,
};
pub use rekor::{LogEntry, Rekor};
pub use trusted_root::TrustedRoot;
pub use tsa::Tsa;

use base64::Engine;
use k8s_openapi::jiff::tz::Offset;
use k8s_openapi::jiff::Timestamp;

pub fn b64(bytes: impl AsRef<[u8]>) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn unb64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .unwrap_or_else(|e| panic!("not base64 ({e}): {s:.60}"))
}

/// Lowercase hex, written here rather than taken from the code under test
/// (the fixtures are an independent oracle).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Seconds since the Unix epoch, now.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs() as i64
}

/// (year, month, day, hour, minute, second) of a Unix time, UTC: the
/// fields the DER and OpenSSL time formats are written from.
pub fn civil(unix: i64) -> (i64, u32, u32, u32, u32, u32) {
    let t = Offset::UTC.to_datetime(timestamp(unix));
    let field = |n: i8| u32::try_from(n).expect("calendar fields are never negative");
    (
        i64::from(t.year()),
        field(t.month()),
        field(t.day()),
        field(t.hour()),
        field(t.minute()),
        field(t.second()),
    )
}

/// RFC 3339, UTC, whole seconds: `2026-12-01T10:00:00Z`.
pub fn rfc3339(unix: i64) -> String {
    timestamp(unix).to_string()
}

/// A Unix time as jiff's instant, the one date crate of the tests (the one
/// k8s-openapi brings); the fixtures' times are all within its range.
fn timestamp(unix: i64) -> Timestamp {
    Timestamp::from_second(unix).expect("a Unix time within jiff's range")
}

/// RFC 8785 (JCS) canonical JSON, for the values this generator makes
/// (integers only; keys sorted by UTF-16 code units).
pub fn canonical_json(v: &serde_json::Value) -> Vec<u8> {
    use serde_json::Value;
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(k).expect("string"));
                    out.push(':');
                    write(&m[k], out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(x, out);
                }
                out.push(']');
            }
            Value::Number(n) => {
                assert!(
                    n.is_i64() || n.is_u64(),
                    "canonical_json: only integers are supported, got {n}"
                );
                out.push_str(&n.to_string());
            }
            other => out.push_str(&serde_json::to_string(other).expect("scalar")),
        }
    }
    let mut out = String::new();
    write(v, &mut out);
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_and_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_796_153_751), "2026-12-01T19:35:51Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn canonical_json_sorts_keys() {
        let v = serde_json::json!({"logIndex": 1, "body": "x", "logID": "ab", "integratedTime": 5, "n": {"b": [1, {"z": null, "a": true}]}});
        assert_eq!(
            String::from_utf8(canonical_json(&v)).unwrap(),
            r#"{"body":"x","integratedTime":5,"logID":"ab","logIndex":1,"n":{"b":[1,{"a":true,"z":null}]}}"#
        );
    }
}
