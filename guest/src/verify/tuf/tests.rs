//! The TUF client against repositories generated here (ed25519 and ECDSA
//! P-256 keys, a root rotation, consistent snapshots), each negative a
//! single change to the good repository; and Sigstore's real roots, whose
//! signatures pin the canonical JSON encoding.

use super::*;
use crate::verify::encoding::{hex, pem_encode};
use serde_json::json;
use spki::EncodePublicKey;

/// 2023-11-14T22:13:20Z.
pub(crate) const NOW: i64 = 1_700_000_000;
const FUTURE: &str = "2100-01-01T00:00:00Z";
const PAST: &str = "2023-01-01T00:00:00Z";

enum Secret {
    Ed(ed25519_dalek::SigningKey),
    Ec(p256::ecdsa::SigningKey),
}

pub(crate) struct TestKey {
    pub id: String,
    pub json: Value,
    secret: Secret,
}

impl TestKey {
    fn ed(seed: u8) -> TestKey {
        let sk = ed25519_dalek::SigningKey::from_bytes(&[seed; 32]);
        let json = json!({
            "keytype": "ed25519",
            "scheme": "ed25519",
            "keyval": {"public": hex(sk.verifying_key().as_bytes())}
        });
        TestKey::new(json, Secret::Ed(sk))
    }

    fn ec(seed: u8) -> TestKey {
        let sk = p256::ecdsa::SigningKey::from_slice(&[seed; 32]).expect("a P-256 scalar");
        let der = sk.verifying_key().to_public_key_der().expect("SPKI");
        let json = json!({
            "keytype": "ecdsa",
            "scheme": "ecdsa-sha2-nistp256",
            "keyid_hash_algorithms": ["sha256", "sha512"],
            "keyval": {"public": pem_encode("PUBLIC KEY", der.as_bytes())}
        });
        TestKey::new(json, Secret::Ec(sk))
    }

    fn new(json: Value, secret: Secret) -> TestKey {
        let mut canonical = Vec::new();
        canonical_json(&json, &mut canonical).expect("canonical");
        TestKey {
            id: hex(&Sha256::digest(&canonical)),
            json,
            secret,
        }
    }

    fn sign(&self, message: &[u8]) -> String {
        match &self.secret {
            Secret::Ed(sk) => {
                use ed25519_dalek::Signer;
                hex(&sk.sign(message).to_bytes())
            }
            Secret::Ec(sk) => {
                use p256::ecdsa::signature::Signer;
                let sig: p256::ecdsa::Signature = sk.sign(message);
                hex(sig.to_der().as_bytes())
            }
        }
    }
}

// Key indices in `Fixture::keys`.
pub(crate) const A: usize = 0; // ed25519, root v1
pub(crate) const B: usize = 1; // ECDSA, root v1 and v2
pub(crate) const C: usize = 2; // ECDSA, root v2
pub(crate) const TS: usize = 3; // ECDSA, timestamp
pub(crate) const SN: usize = 4; // ed25519, snapshot
pub(crate) const T1: usize = 5; // ECDSA, targets
pub(crate) const T2: usize = 6; // ed25519, targets

/// A repository: the `signed` part of every metadata file and who signs
/// it, published as files by [`Fixture::publish`]. The timestamp's
/// snapshot length and hashes and the target's path are filled in there;
/// everything else is as the test leaves it.
pub(crate) struct Fixture {
    pub keys: Vec<TestKey>,
    pub target: Vec<u8>,
    /// Published as `1.root.json`, `2.root.json`, …; the first is trusted.
    pub roots: Vec<Value>,
    pub root_signers: Vec<Vec<usize>>,
    pub timestamp: Value,
    pub timestamp_signers: Vec<usize>,
    pub snapshot: Value,
    pub snapshot_signers: Vec<usize>,
    pub targets: Value,
    pub targets_signers: Vec<usize>,
    pub files: BTreeMap<String, Vec<u8>>,
}

impl Fixture {
    /// Root v1 (root keys A, B; threshold 2) rotated to v2 (B, C; 2),
    /// timestamp v7, snapshot v5, targets v3 (T1, T2; 2) listing
    /// `trusted_root.json` = `target`.
    pub(crate) fn new(target: &[u8]) -> Fixture {
        let keys = vec![
            TestKey::ed(1),
            TestKey::ec(2),
            TestKey::ec(3),
            TestKey::ec(4),
            TestKey::ed(5),
            TestKey::ec(6),
            TestKey::ed(7),
        ];
        let mut f = Fixture {
            keys,
            target: target.to_vec(),
            roots: Vec::new(),
            root_signers: vec![vec![A, B], vec![A, B, C]],
            timestamp: json!({
                "_type": "timestamp",
                "spec_version": "1.0",
                "version": 7,
                "expires": FUTURE,
                "meta": {"snapshot.json": {"version": 5}}
            }),
            timestamp_signers: vec![TS],
            snapshot: json!({
                "_type": "snapshot",
                "spec_version": "1.0",
                "version": 5,
                "expires": FUTURE,
                "meta": {"targets.json": {"version": 3}}
            }),
            snapshot_signers: vec![SN],
            targets: json!({
                "_type": "targets",
                "spec_version": "1.0",
                "version": 3,
                "expires": FUTURE,
                "targets": {
                    "trusted_root.json": {
                        "length": target.len(),
                        "hashes": {
                            "sha256": hex(&Sha256::digest(target)),
                            "sha512": hex(&Sha512::digest(target)),
                        },
                        // Canonical JSON escapes only `"` and `\`.
                        "custom": {"sigstore": {"status": "Active", "note": "a \"b\" \\ é\n"}}
                    }
                }
            }),
            targets_signers: vec![T1, T2],
            files: BTreeMap::new(),
        };
        f.roots = vec![f.root(1, &[A, B]), f.root(2, &[B, C])];
        f.publish();
        f
    }

    /// A root `version` whose root role is `root_keys` (threshold 2).
    pub(crate) fn root(&self, version: u64, root_keys: &[usize]) -> Value {
        let ids =
            |ks: &[usize]| -> Vec<String> { ks.iter().map(|&k| self.keys[k].id.clone()).collect() };
        let used: Vec<usize> = root_keys.iter().copied().chain([TS, SN, T1, T2]).collect();
        let keys: serde_json::Map<String, Value> = used
            .iter()
            .map(|&k| (self.keys[k].id.clone(), self.keys[k].json.clone()))
            .collect();
        json!({
            "_type": "root",
            "spec_version": "1.0",
            "version": version,
            "expires": FUTURE,
            "consistent_snapshot": true,
            "keys": keys,
            "roles": {
                "root": {"keyids": ids(root_keys), "threshold": 2},
                "timestamp": {"keyids": ids(&[TS]), "threshold": 1},
                "snapshot": {"keyids": ids(&[SN]), "threshold": 1, "x-tuf-on-ci-expiry-period": 3650},
                "targets": {"keyids": ids(&[T1, T2]), "threshold": 2}
            }
        })
    }

    /// A metadata file: `signed` signed by `signers`, pretty-printed (so
    /// only its canonical form matches the signatures).
    fn envelope(&self, signed: &Value, signers: &[usize]) -> Vec<u8> {
        let mut canonical = Vec::new();
        canonical_json(signed, &mut canonical).expect("canonical");
        let signatures: Vec<Value> = signers
            .iter()
            .map(|&k| json!({"keyid": self.keys[k].id, "sig": self.keys[k].sign(&canonical)}))
            .collect();
        serde_json::to_vec_pretty(&json!({"signatures": signatures, "signed": signed}))
            .expect("json")
    }

    /// Writes every file as the metadata now says.
    pub(crate) fn publish(&mut self) {
        self.files.clear();
        let consistent = self
            .roots
            .last()
            .and_then(|r| r["consistent_snapshot"].as_bool())
            .unwrap_or(false);
        let versioned = |v: &Value, name: &str| match consistent {
            true => format!("{v}.{name}"),
            false => name.to_string(),
        };
        let sha = hex(&Sha256::digest(&self.target));
        let target_path = match consistent {
            true => format!("targets/{sha}.trusted_root.json"),
            false => "targets/trusted_root.json".to_string(),
        };
        self.files.insert(target_path, self.target.clone());
        let targets = self.envelope(&self.targets, &self.targets_signers);
        self.files.insert(
            versioned(
                &self.snapshot["meta"]["targets.json"]["version"],
                "targets.json",
            ),
            targets,
        );
        let snapshot = self.envelope(&self.snapshot, &self.snapshot_signers);
        let meta = &mut self.timestamp["meta"]["snapshot.json"];
        meta["length"] = json!(snapshot.len());
        meta["hashes"] = json!({"sha256": hex(&Sha256::digest(&snapshot))});
        self.files.insert(
            versioned(
                &self.timestamp["meta"]["snapshot.json"]["version"],
                "snapshot.json",
            ),
            snapshot,
        );
        let timestamp = self.envelope(&self.timestamp, &self.timestamp_signers);
        self.files.insert("timestamp.json".into(), timestamp);
        for (i, root) in self.roots.iter().enumerate() {
            let file = self.envelope(root, &self.root_signers[i]);
            self.files.insert(format!("{}.root.json", i + 1), file);
        }
    }

    /// The trusted root: `1.root.json`.
    pub(crate) fn trusted(&self) -> Vec<u8> {
        self.files["1.root.json"].clone()
    }

    fn fetch(&self) -> impl Fn(&str, usize) -> Result<Option<Vec<u8>>> + '_ {
        move |path, max| match self.files.get(path) {
            None => Ok(None),
            Some(b) if b.len() > max => Err(VerifyError::new(format!("{path}: too large"))),
            Some(b) => Ok(Some(b.clone())),
        }
    }

    fn run(&self) -> Result<String> {
        trusted_root(&self.trusted(), &self.fetch(), NOW)
    }

    /// The error of a run that must fail.
    fn fails(&self) -> String {
        match self.run() {
            Ok(_) => panic!("the repository verified"),
            Err(e) => e.0,
        }
    }
}

const TARGET: &[u8] =
    br#"{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}"#;

fn assert_contains(message: &str, part: &str) {
    assert!(message.contains(part), "{message:?} lacks {part:?}");
}

#[test]
fn a_good_repository_gives_its_target() {
    let f = Fixture::new(TARGET);
    assert_eq!(f.run().unwrap().as_bytes(), TARGET);
    // The trusted root may be the newest one.
    let latest = f.files["2.root.json"].clone();
    assert_eq!(
        trusted_root(&latest, &f.fetch(), NOW).unwrap().as_bytes(),
        TARGET
    );
}

#[test]
fn canonical_json_is_olpc() {
    let v: Value =
        serde_json::from_str(r#"{ "b": [1, -2, true, null], "a": "q\"\\\u00e9\n", "A": {} }"#)
            .unwrap();
    let mut out = Vec::new();
    canonical_json(&v, &mut out).unwrap();
    assert_eq!(
        out,
        "{\"A\":{},\"a\":\"q\\\"\\\\\u{e9}\n\",\"b\":[1,-2,true,null]}".as_bytes()
    );
    assert!(canonical_json(&json!({"x": 1.5}), &mut Vec::new()).is_err());
}

/// Sigstore's production and staging roots verify under their own keys:
/// real ECDSA signatures over securesystemslib's canonical JSON.
#[test]
fn sigstores_roots_are_self_signed() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../conformance/sigstore/");
    for name in ["_tuf-root.sigstore.dev.json", "_tuf-root.sigstage.dev.json"] {
        let bytes = std::fs::read(format!("{dir}{name}")).unwrap();
        let env = Envelope::parse(name, &bytes).unwrap();
        let root = Root::from_envelope(&env).unwrap();
        root.verify("root", &env).unwrap();
        assert!(root.consistent_snapshot);
        let text = String::from_utf8(bytes).unwrap();
        let tampered = text.replacen("\"expires\": \"20", "\"expires\": \"21", 1);
        assert_ne!(tampered, text);
        let env = Envelope::parse(name, tampered.as_bytes()).unwrap();
        let e = root.verify("root", &env).unwrap_err();
        assert_contains(&e.0, "signature does not verify");
    }
}

#[test]
fn an_expired_timestamp_is_rejected() {
    let mut f = Fixture::new(TARGET);
    f.timestamp["expires"] = json!(PAST);
    f.publish();
    assert_contains(
        &f.fails(),
        "timestamp.json (version 7) expired at 2023-01-01T00:00:00Z",
    );
}

#[test]
fn expiry_is_checked_for_the_final_root_snapshot_and_targets_only() {
    let mut f = Fixture::new(TARGET);
    // An expired intermediate root does not matter.
    f.roots[0]["expires"] = json!(PAST);
    f.publish();
    f.run().unwrap();
    f.roots[1]["expires"] = json!(PAST);
    f.publish();
    assert_contains(&f.fails(), "root.json (version 2) expired");
    let mut f = Fixture::new(TARGET);
    f.snapshot["expires"] = json!(PAST);
    f.publish();
    assert_contains(&f.fails(), "5.snapshot.json (version 5) expired");
    let mut f = Fixture::new(TARGET);
    f.targets["expires"] = json!("2023-11-14T22:13:20Z");
    f.publish();
    assert_contains(&f.fails(), "3.targets.json (version 3) expired");
}

#[test]
fn signatures_under_the_threshold_are_rejected() {
    let mut f = Fixture::new(TARGET);
    f.targets_signers = vec![T1];
    f.publish();
    assert_contains(
        &f.fails(),
        "3.targets.json: 1 valid signature(s) from the targets role's keys, 2 required",
    );
    // The same key twice counts once.
    f.targets_signers = vec![T1, T1];
    f.publish();
    assert_contains(
        &f.fails(),
        "1 valid signature(s) from the targets role's keys",
    );
    // A key of another role does not count.
    f.targets_signers = vec![T1, TS];
    f.publish();
    assert_contains(
        &f.fails(),
        "1 valid signature(s) from the targets role's keys",
    );

    let mut f = Fixture::new(TARGET);
    let mut ts: Value = serde_json::from_slice(&f.files["timestamp.json"]).unwrap();
    let sig = ts["signatures"][0]["sig"].as_str().unwrap().to_string();
    let flipped = format!(
        "{}{}",
        &sig[..20],
        if &sig[20..21] == "0" { "1" } else { "0" }
    );
    ts["signatures"][0]["sig"] = json!(format!("{flipped}{}", &sig[21..]));
    f.files
        .insert("timestamp.json".into(), serde_json::to_vec(&ts).unwrap());
    let e = f.fails();
    assert_contains(
        &e,
        "timestamp.json: 0 valid signature(s) from the timestamp role's keys, 1 required",
    );
    assert_contains(&e, "signature does not verify");

    // Changing what was signed breaks the signature too.
    let mut f = Fixture::new(TARGET);
    let text = String::from_utf8(f.files["timestamp.json"].clone()).unwrap();
    let text = text.replacen("\"version\": 7", "\"version\": 8", 1);
    f.files.insert("timestamp.json".into(), text.into_bytes());
    assert_contains(&f.fails(), "timestamp.json: 0 valid signature(s)");
}

#[test]
fn a_wrong_target_hash_is_rejected() {
    let mut f = Fixture::new(TARGET);
    let path = format!("targets/{}.trusted_root.json", hex(&Sha256::digest(TARGET)));
    let mut tampered = TARGET.to_vec();
    tampered[3] ^= 1;
    f.files.insert(path.clone(), tampered);
    let e = f.fails();
    assert_contains(&e, &format!("{path} has sha256 "));
    assert_contains(&e, "but targets.json gives");
    // A longer file is refused for its length.
    f.files.insert(path, [TARGET, b" "].concat());
    assert_contains(&f.fails(), "too large");
}

#[test]
fn a_tampered_snapshot_fails_the_timestamps_hash() {
    let mut f = Fixture::new(TARGET);
    let mut snapshot = f.files["5.snapshot.json"].clone();
    let last = snapshot.len() - 2;
    snapshot[last] = b' ';
    f.files.insert("5.snapshot.json".into(), snapshot);
    assert_contains(&f.fails(), "5.snapshot.json has sha256");
}

#[test]
fn a_rotation_signed_only_by_the_new_keys_is_rejected() {
    let mut f = Fixture::new(TARGET);
    f.root_signers[1] = vec![B, C];
    f.publish();
    let e = f.fails();
    assert_contains(
        &e,
        "2.root.json: 1 valid signature(s) from the root role's keys, 2 required",
    );
    assert_contains(&e, "(old root, version 1)");
    // …and one signed only by the old keys.
    f.root_signers[1] = vec![A, B];
    f.publish();
    assert_contains(&f.fails(), "(new root)");
}

#[test]
fn the_new_roots_keys_sign_the_rest() {
    let mut f = Fixture::new(TARGET);
    // Root v2 hands the timestamp role to key C.
    let c = f.keys[C].id.clone();
    f.roots[1]["roles"]["timestamp"]["keyids"] = json!([c]);
    f.publish();
    assert_contains(
        &f.fails(),
        "timestamp.json: 0 valid signature(s) from the timestamp role's keys",
    );
    f.timestamp_signers = vec![C];
    f.publish();
    f.run().unwrap();
}

#[test]
fn version_rollbacks_are_rejected() {
    let mut f = Fixture::new(TARGET);
    f.roots[1]["version"] = json!(1);
    f.publish();
    assert_contains(&f.fails(), "2.root.json has version 1, expected 2");

    // The timestamp names snapshot 6; the mirror serves snapshot 5 there.
    let mut f = Fixture::new(TARGET);
    f.timestamp["meta"]["snapshot.json"]["version"] = json!(6);
    f.publish();
    assert_contains(
        &f.fails(),
        "6.snapshot.json has version 5, but timestamp.json names version 6",
    );

    let mut f = Fixture::new(TARGET);
    f.snapshot["meta"]["targets.json"]["version"] = json!(4);
    f.publish();
    assert_contains(
        &f.fails(),
        "4.targets.json has version 3, but snapshot.json names version 4",
    );
}

#[test]
fn a_missing_target_is_rejected() {
    let mut f = Fixture::new(TARGET);
    f.targets["targets"] =
        json!({"other.json": {"length": 1, "hashes": {"sha256": hex(&Sha256::digest(b"x"))}}});
    f.publish();
    assert_contains(&f.fails(), "targets.json has no target trusted_root.json");
    f.targets["delegations"] = json!({"keys": {}, "roles": [{"name": "d", "keyids": [], "threshold": 1, "paths": ["*"], "terminating": true}]});
    f.publish();
    assert_contains(&f.fails(), "does not follow delegated targets roles");

    // Listed but not on the mirror.
    let mut f = Fixture::new(TARGET);
    f.files.retain(|k, _| !k.starts_with("targets/"));
    assert_contains(&f.fails(), ".trusted_root.json not found on the mirror");
}

#[test]
fn missing_metadata_is_rejected() {
    for (file, message) in [
        ("timestamp.json", "timestamp.json not found on the mirror"),
        ("5.snapshot.json", "5.snapshot.json not found on the mirror"),
        ("3.targets.json", "3.targets.json not found on the mirror"),
    ] {
        let mut f = Fixture::new(TARGET);
        f.files.remove(file);
        assert_contains(&f.fails(), message);
    }
}

#[test]
fn without_consistent_snapshots_files_are_unversioned() {
    let mut f = Fixture::new(TARGET);
    f.roots[1]["consistent_snapshot"] = json!(false);
    f.publish();
    assert!(
        f.files.contains_key("snapshot.json") && f.files.contains_key("targets/trusted_root.json")
    );
    assert_eq!(f.run().unwrap().as_bytes(), TARGET);
}

#[test]
fn too_many_rotations_are_rejected() {
    let mut f = Fixture::new(TARGET);
    for v in 3..=(MAX_ROOT_ROTATIONS + 1) {
        let root = f.root(v, &[B, C]);
        f.roots.push(root);
        f.root_signers.push(vec![B, C]);
    }
    f.publish();
    f.run().unwrap();
    let root = f.root(MAX_ROOT_ROTATIONS + 2, &[B, C]);
    f.roots.push(root);
    f.root_signers.push(vec![B, C]);
    f.publish();
    assert_contains(
        &f.fails(),
        "more than 32 root versions newer than the trusted one",
    );
}

#[test]
fn malformed_roots_are_rejected() {
    let f = Fixture::new(TARGET);
    let e = trusted_root(b"{\"signed\": 1}", &f.fetch(), NOW).unwrap_err();
    assert_contains(&e.0, "the trusted root.json is not TUF metadata");
    let e = trusted_root(&f.files["timestamp.json"], &f.fetch(), NOW).unwrap_err();
    assert_contains(&e.0, "_type is \"timestamp\", expected \"root\"");
    // The trusted root must be signed by its own root role.
    let mut f = Fixture::new(TARGET);
    f.root_signers[0] = vec![A];
    f.publish();
    assert_contains(&f.fails(), "the trusted root.json: 1 valid signature(s)");
    // A zero threshold never passes.
    let mut f = Fixture::new(TARGET);
    f.roots[1]["roles"]["targets"]["threshold"] = json!(0);
    f.publish();
    assert_contains(
        &f.fails(),
        "the targets role's threshold must be at least 1",
    );
    let mut f = Fixture::new(TARGET);
    f.roots[1]["spec_version"] = json!("2.0");
    f.publish();
    assert_contains(&f.fails(), "unsupported spec_version \"2.0\"");
    let big = vec![b' '; MAX_METADATA + 1];
    let e = trusted_root(&big, &f.fetch(), NOW).unwrap_err();
    assert_contains(&e.0, "more than the 1048576 allowed");
}
