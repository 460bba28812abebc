//! An own, in-memory Rekor v1: entry bodies (hashedrekord 0.0.1, dsse
//! 0.0.1, intoto 0.0.2), the signed entry timestamp (SET) over the RFC 8785
//! canonical payload, an RFC 6962 Merkle tree with inclusion proofs, and
//! checkpoints as C2SP signed notes.

use super::keys::{KeyKind, KeyPair};
use super::{b64, canonical_json, hex};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::sync::Mutex;

/// RFC 6962 leaf hash: SHA-256(0x00 || data).
pub fn leaf_hash(data: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(data);
    h.finalize().into()
}

/// RFC 6962 node hash: SHA-256(0x01 || left || right).
pub fn node_hash(l: &[u8; 32], r: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(l);
    h.update(r);
    h.finalize().into()
}

fn split(n: usize) -> usize {
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    k
}

/// The Merkle tree hash of these leaf hashes.
pub fn tree_hash(leaves: &[[u8; 32]]) -> [u8; 32] {
    match leaves.len() {
        0 => Sha256::digest([]).into(),
        1 => leaves[0],
        n => {
            let k = split(n);
            node_hash(&tree_hash(&leaves[..k]), &tree_hash(&leaves[k..]))
        }
    }
}

/// The RFC 6962 audit path of leaf `m` (bottom-up).
pub fn audit_path(m: usize, leaves: &[[u8; 32]]) -> Vec<[u8; 32]> {
    let n = leaves.len();
    if n <= 1 {
        return Vec::new();
    }
    let k = split(n);
    if m < k {
        let mut p = audit_path(m, &leaves[..k]);
        p.push(tree_hash(&leaves[k..]));
        p
    } else {
        let mut p = audit_path(m - k, &leaves[k..]);
        p.push(tree_hash(&leaves[..k]));
        p
    }
}

/// One logged entry with everything a verifier checks offline.
#[derive(Clone, Debug)]
pub struct LogEntry {
    /// The canonicalized body (RFC 8785 JSON bytes).
    pub body: Vec<u8>,
    pub kind: String,
    pub version: String,
    pub log_index: u64,
    pub integrated_time: i64,
    /// SHA-256 of the log key's SPKI.
    pub log_id: [u8; 32],
    /// ASN.1 DER ECDSA signature over SHA-256 of [`LogEntry::set_payload`].
    pub set: Vec<u8>,
    pub tree_size: u64,
    pub root_hash: [u8; 32],
    pub hashes: Vec<[u8; 32]>,
    /// The signed note: `origin\nsize\nroot\n\n— name b64(hint||sig)\n`.
    pub checkpoint: String,
}

impl LogEntry {
    /// The JSON the SET signs (before canonicalization).
    pub fn set_payload(&self) -> Value {
        json!({
            "body": b64(&self.body),
            "integratedTime": self.integrated_time,
            "logID": hex(&self.log_id),
            "logIndex": self.log_index,
        })
    }

    /// The exact bytes the SET signs.
    pub fn set_payload_canonical(&self) -> Vec<u8> {
        canonical_json(&self.set_payload())
    }

    /// The `dev.sigstore.cosign/bundle` annotation value, Go field order.
    pub fn cosign_bundle(&self) -> String {
        format!(
            "{{\"SignedEntryTimestamp\":{},\"Payload\":{{\"body\":{},\"integratedTime\":{},\"logIndex\":{},\"logID\":{}}}}}",
            serde_json::to_string(&b64(&self.set)).expect("json"),
            serde_json::to_string(&b64(&self.body)).expect("json"),
            self.integrated_time,
            self.log_index,
            serde_json::to_string(&hex(&self.log_id)).expect("json"),
        )
    }

    /// A bundle's `verificationMaterial.tlogEntries[]` member (protobuf JSON).
    pub fn tlog_entry(&self) -> Value {
        json!({
            "logIndex": self.log_index.to_string(),
            "logId": {"keyId": b64(self.log_id)},
            "kindVersion": {"kind": self.kind, "version": self.version},
            "integratedTime": self.integrated_time.to_string(),
            "inclusionPromise": {"signedEntryTimestamp": b64(&self.set)},
            "inclusionProof": {
                "logIndex": self.log_index.to_string(),
                "rootHash": b64(self.root_hash),
                "treeSize": self.tree_size.to_string(),
                "hashes": self.hashes.iter().map(b64).collect::<Vec<_>>(),
                "checkpoint": {"envelope": self.checkpoint},
            },
            "canonicalizedBody": b64(&self.body),
        })
    }

    /// The body as JSON.
    pub fn body_json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("body is JSON")
    }
}

/// The log: a key, a name, and the leaves so far.
pub struct Rekor {
    pub key: KeyPair,
    pub base_url: String,
    /// The checkpoint's first line.
    pub origin: String,
    /// The name on the checkpoint's signature line.
    pub signer_name: String,
    leaves: Mutex<Vec<[u8; 32]>>,
}

impl Default for Rekor {
    fn default() -> Self {
        Rekor::new()
    }
}

impl Rekor {
    /// The default log (seed `ivpol-rekor`), with 5 filler entries so that
    /// real ones have non-zero indexes and non-trivial inclusion proofs.
    pub fn new() -> Rekor {
        Rekor::with_seed("ivpol-rekor", 5)
    }

    pub fn with_seed(seed: &str, fillers: usize) -> Rekor {
        let leaves = (0..fillers)
            .map(|i| leaf_hash(format!("{seed} filler {i}").as_bytes()))
            .collect();
        Rekor {
            key: KeyPair::from_seed(KeyKind::P256, seed),
            base_url: "https://rekor.ivpol.test".into(),
            origin: "rekor.ivpol.test - 4242424242".into(),
            signer_name: "rekor.ivpol.test".into(),
            leaves: Mutex::new(leaves),
        }
    }

    pub fn log_id(&self) -> [u8; 32] {
        self.key.key_id()
    }

    pub fn public_pem(&self) -> String {
        self.key.public_pem()
    }

    pub fn size(&self) -> u64 {
        self.leaves.lock().expect("leaves").len() as u64
    }

    /// Appends a body (made canonical here) at `integrated_time`.
    pub fn log(&self, body: &Value, integrated_time: i64) -> LogEntry {
        let body = canonical_json(body);
        let kind = body_field(&body, "kind");
        let version = body_field(&body, "apiVersion");
        let index = {
            let mut leaves = self.leaves.lock().expect("leaves");
            leaves.push(leaf_hash(&body));
            leaves.len() as u64 - 1
        };
        let mut entry = LogEntry {
            body,
            kind,
            version,
            log_index: index,
            integrated_time,
            log_id: self.log_id(),
            set: Vec::new(),
            tree_size: 0,
            root_hash: [0; 32],
            hashes: Vec::new(),
            checkpoint: String::new(),
        };
        entry.set = self.key.sign(&entry.set_payload_canonical());
        self.prove(&mut entry, index + 1);
        entry
    }

    /// Re-signs the SET (after a test changed the entry on purpose).
    pub fn resign_set(&self, entry: &mut LogEntry) {
        entry.set = self.key.sign(&entry.set_payload_canonical());
    }

    /// Sets the entry's inclusion proof and checkpoint for a tree of `size`.
    pub fn prove(&self, entry: &mut LogEntry, size: u64) {
        let leaves = self.leaves.lock().expect("leaves");
        let upto = &leaves[..size as usize];
        entry.tree_size = size;
        entry.root_hash = tree_hash(upto);
        entry.hashes = audit_path(entry.log_index as usize, upto);
        drop(leaves);
        entry.checkpoint = self.checkpoint(size, &entry.root_hash);
    }

    /// A signed checkpoint for this tree size and root.
    pub fn checkpoint(&self, size: u64, root: &[u8; 32]) -> String {
        let note = format!("{}\n{size}\n{}\n", self.origin, b64(root));
        let sig = self.key.sign(note.as_bytes());
        let mut blob = self.log_id()[..4].to_vec();
        blob.extend(sig);
        format!("{note}\n\u{2014} {} {}\n", self.signer_name, b64(blob))
    }
}

fn body_field(body: &[u8], field: &str) -> String {
    let v: Value = serde_json::from_slice(body).expect("body is JSON");
    v[field].as_str().unwrap_or_default().to_string()
}

/// hashedrekord 0.0.1 over an artifact with this SHA-256; `verifier_pem` is
/// the PEM public key or certificate.
pub fn hashedrekord(sha256_hex: &str, signature: &[u8], verifier_pem: &str) -> Value {
    json!({
        "apiVersion": "0.0.1",
        "kind": "hashedrekord",
        "spec": {
            "data": {"hash": {"algorithm": "sha256", "value": sha256_hex}},
            "signature": {"content": b64(signature), "publicKey": {"content": b64(verifier_pem)}},
        },
    })
}

/// The DSSE envelope JSON as Go's dsse package marshals it (for hashes).
fn envelope_json(payload_type: &str, payload: &[u8], signature: &[u8]) -> Vec<u8> {
    format!(
        "{{\"payloadType\":{},\"payload\":{},\"signatures\":[{{\"keyid\":\"\",\"sig\":{}}}]}}",
        serde_json::to_string(payload_type).expect("json"),
        serde_json::to_string(&b64(payload)).expect("json"),
        serde_json::to_string(&b64(signature)).expect("json"),
    )
    .into_bytes()
}

/// dsse 0.0.1 for a one-signature envelope.
pub fn dsse(payload_type: &str, payload: &[u8], signature: &[u8], verifier_pem: &str) -> Value {
    let envelope = envelope_json(payload_type, payload, signature);
    json!({
        "apiVersion": "0.0.1",
        "kind": "dsse",
        "spec": {
            "envelopeHash": {"algorithm": "sha256", "value": hex(&Sha256::digest(&envelope))},
            "payloadHash": {"algorithm": "sha256", "value": hex(&Sha256::digest(payload))},
            "signatures": [{"signature": b64(signature), "verifier": b64(verifier_pem)}],
        },
    })
}

/// intoto 0.0.2 for a one-signature envelope, as Rekor stores it: the
/// envelope without its payload, signatures base64 twice (Rekor's quirk),
/// the envelope hash and the payload hash.
pub fn intoto(payload_type: &str, payload: &[u8], signature: &[u8], verifier_pem: &str) -> Value {
    let envelope = envelope_json(payload_type, payload, signature);
    json!({
        "apiVersion": "0.0.2",
        "kind": "intoto",
        "spec": {"content": {
            "envelope": {
                "payloadType": payload_type,
                "signatures": [{"sig": b64(b64(signature)), "publicKey": b64(verifier_pem)}],
            },
            "hash": {"algorithm": "sha256", "value": hex(&Sha256::digest(&envelope))},
            "payloadHash": {"algorithm": "sha256", "value": hex(&Sha256::digest(payload))},
        }},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Walks an audit path back to the root (RFC 9162 §2.1.3.2).
    fn root_from(index: u64, size: u64, leaf: [u8; 32], path: &[[u8; 32]]) -> [u8; 32] {
        let (mut fn_, mut sn) = (index, size - 1);
        let mut r = leaf;
        for p in path {
            if fn_ & 1 == 1 || fn_ == sn {
                r = node_hash(p, &r);
                while fn_ & 1 == 0 && fn_ != 0 {
                    fn_ >>= 1;
                    sn >>= 1;
                }
            } else {
                r = node_hash(&r, p);
            }
            fn_ >>= 1;
            sn >>= 1;
        }
        r
    }

    #[test]
    fn every_proof_walks_to_the_root() {
        for n in 1..20usize {
            let leaves: Vec<[u8; 32]> = (0..n).map(|i| leaf_hash(&[i as u8])).collect();
            let root = tree_hash(&leaves);
            for m in 0..n {
                let path = audit_path(m, &leaves);
                assert_eq!(
                    root_from(m as u64, n as u64, leaves[m], &path),
                    root,
                    "{m}/{n}"
                );
            }
        }
    }
}
