//! A TUF repository (specification 1.0, consistent snapshots) that serves
//! one target, `trusted_root.json`, as Sigstore's TUF repository does; one
//! Ed25519 key holds every role. Signatures are over OLPC canonical JSON,
//! which for this generator's ASCII-only, integer-only values is the same
//! text as [`canonical_json`](super::canonical_json).

use super::keys::{KeyKind, KeyPair};
use super::{canonical_json, hex, now, rfc3339};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

pub struct TufRepo {
    /// The root metadata a policy trusts (`tuf.root.data`, base64).
    pub root: Vec<u8>,
    /// (path under the mirror, bytes) of every file the mirror serves.
    pub files: Vec<(String, Vec<u8>)>,
}

/// A repository whose target `trusted_root.json` is `trusted_root`;
/// metadata expires a day from now.
pub fn repository(trusted_root: &str) -> TufRepo {
    let key = KeyPair::from_seed(KeyKind::Ed25519, "tuf");
    let public = json!({"keytype": "ed25519", "scheme": "ed25519", "keyval": {"public": hex(&raw_ed25519(&key))}});
    let key_id = hex(&Sha256::digest(canonical_json(&public)));
    let expires = rfc3339(now() + 86_400);
    let role = json!({"keyids": [key_id], "threshold": 1});
    let sign = |signed: Value| -> Vec<u8> {
        let sig = key.sign(&canonical_json(&signed));
        serde_json::to_vec(
            &json!({"signed": signed, "signatures": [{"keyid": key_id, "sig": hex(&sig)}]}),
        )
        .expect("json")
    };
    let root = sign(json!({
        "_type": "root", "spec_version": "1.0.31", "version": 1, "expires": expires,
        "consistent_snapshot": true, "keys": {key_id.clone(): public},
        "roles": {"root": role, "timestamp": role, "snapshot": role, "targets": role},
    }));
    let target = trusted_root.as_bytes().to_vec();
    let target_hash = hex(&Sha256::digest(&target));
    let targets = sign(json!({
        "_type": "targets", "spec_version": "1.0.31", "version": 1, "expires": expires,
        "targets": {"trusted_root.json": {"length": target.len(), "hashes": {"sha256": target_hash}}},
    }));
    let snapshot = sign(json!({
        "_type": "snapshot", "spec_version": "1.0.31", "version": 1, "expires": expires,
        "meta": {"targets.json": {"version": 1}},
    }));
    let timestamp = sign(json!({
        "_type": "timestamp", "spec_version": "1.0.31", "version": 1, "expires": expires,
        "meta": {"snapshot.json": {"version": 1}},
    }));
    TufRepo {
        files: vec![
            ("/1.root.json".into(), root.clone()),
            ("/timestamp.json".into(), timestamp),
            ("/1.snapshot.json".into(), snapshot),
            ("/1.targets.json".into(), targets),
            (format!("/targets/{target_hash}.trusted_root.json"), target),
        ],
        root,
    }
}

/// The 32-byte Ed25519 public key (the end of its SPKI).
fn raw_ed25519(key: &KeyPair) -> Vec<u8> {
    let spki = key.spki_der();
    spki[spki.len().saturating_sub(32)..].to_vec()
}
