//! TUF repositories generated for tests (ed25519 and ECDSA P-256 keys, a
//! root rotation, consistent snapshots): this crate's tests, and the
//! guest's through the `test-support` feature, change one thing in the good
//! repository and expect the client to refuse it.

use std::collections::BTreeMap;

use super::metadata::canonical_json;
use super::*;
use ivpol_verify::encoding::{hex, pem_encode};
use serde_json::{json, Value};
use spki::EncodePublicKey;

/// 2023-11-14T22:13:20Z.
pub const NOW: i64 = 1_700_000_000;
/// An expiry far ahead of [`NOW`].
pub const FUTURE: &str = "2100-01-01T00:00:00Z";
/// An expiry before [`NOW`].
pub const PAST: &str = "2023-01-01T00:00:00Z";

enum Secret {
    Ed(ed25519_dalek::SigningKey),
    Ec(p256::ecdsa::SigningKey),
}

/// A repository key with its secret half.
pub struct TestKey {
    /// Its key id: the SHA-256 of its canonical JSON.
    pub id: String,
    /// Its public JSON, as a root lists it.
    pub json: Value,
    secret: Secret,
}

impl TestKey {
    /// An ed25519 key from a 32-byte seed of `seed`.
    pub fn ed(seed: u8) -> TestKey {
        let sk = ed25519_dalek::SigningKey::from_bytes(&[seed; 32]);
        let json = json!({
            "keytype": "ed25519",
            "scheme": "ed25519",
            "keyval": {"public": hex(sk.verifying_key().as_bytes())}
        });
        TestKey::new(json, Secret::Ed(sk))
    }

    /// An ECDSA P-256 key whose scalar is 32 bytes of `seed`.
    pub fn ec(seed: u8) -> TestKey {
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

    /// The hex signature of `message`, as a metadata file carries it.
    pub fn sign(&self, message: &[u8]) -> String {
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
/// ed25519, a root v1 key.
pub const A: usize = 0;
/// ECDSA, a root v1 and v2 key.
pub const B: usize = 1;
/// ECDSA, a root v2 key.
pub const C: usize = 2;
/// ECDSA, the timestamp key.
pub const TS: usize = 3;
/// ed25519, the snapshot key.
pub const SN: usize = 4;
/// ECDSA, a targets key.
pub const T1: usize = 5;
/// ed25519, a targets key.
pub const T2: usize = 6;

/// A repository: the `signed` part of every metadata file and who signs
/// it, published as files by [`Fixture::publish`]. The timestamp's
/// snapshot length and hashes and the target's path are filled in there;
/// everything else is as the test leaves it.
pub struct Fixture {
    /// Every key, by the indices above.
    pub keys: Vec<TestKey>,
    /// The target's bytes.
    pub target: Vec<u8>,
    /// Published as `1.root.json`, `2.root.json`, …; the first is trusted.
    pub roots: Vec<Value>,
    /// The keys that sign each root.
    pub root_signers: Vec<Vec<usize>>,
    /// `timestamp.json`'s `signed`.
    pub timestamp: Value,
    /// The keys that sign it.
    pub timestamp_signers: Vec<usize>,
    /// `snapshot.json`'s `signed`.
    pub snapshot: Value,
    /// The keys that sign it.
    pub snapshot_signers: Vec<usize>,
    /// `targets.json`'s `signed`.
    pub targets: Value,
    /// The keys that sign it.
    pub targets_signers: Vec<usize>,
    /// The mirror's files by path, as published.
    pub files: BTreeMap<String, Vec<u8>>,
}

impl Fixture {
    /// Root v1 (root keys A, B; threshold 2) rotated to v2 (B, C; 2),
    /// timestamp v7, snapshot v5, targets v3 (T1, T2; 2) listing
    /// `trusted_root.json` = `target`.
    pub fn new(target: &[u8]) -> Fixture {
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
    pub fn root(&self, version: u64, root_keys: &[usize]) -> Value {
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
    pub fn envelope(&self, signed: &Value, signers: &[usize]) -> Vec<u8> {
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
    pub fn publish(&mut self) {
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
    pub fn trusted(&self) -> Vec<u8> {
        self.files["1.root.json"].clone()
    }

    /// The mirror as a [`Repository`].
    pub fn fetch(&self) -> impl Fn(&str, usize) -> Result<Option<Vec<u8>>> + '_ {
        move |path, max| match self.files.get(path) {
            None => Ok(None),
            // A mirror that sends more than asked is cut off, as the host does.
            Some(b) if b.len() > max => Err(TufError::TooLarge {
                file: path.to_string(),
                size: b.len(),
                max,
            }
            .into()),
            Some(b) => Ok(Some(b.clone())),
        }
    }

    /// The client's run against the mirror at [`NOW`].
    pub fn run(&self) -> Result<String> {
        trusted_root(&self.trusted(), &self.fetch(), NOW)
    }

    /// The error of a run that must fail.
    pub fn fails(&self) -> String {
        match self.run() {
            Ok(_) => panic!("the repository verified"),
            Err(e) => e.to_string(),
        }
    }
}
