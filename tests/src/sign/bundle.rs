//! Sigstore bundle v0.3 (message signature or DSSE; certificate or public
//! key), pushed as cosign v3 pushes it to a registry without the referrers
//! API: an OCI 1.1 referrer manifest, plus the referrers tag-schema index at
//! `sha256-<hex>` (created or appended to).

use super::cosign::{pae, Signer, Tamper};
use super::oci::{self, descriptor};
use super::rekor::{self, LogEntry, Rekor};
use super::{b64, hex};
use crate::fixtures::{sha256, Pusher, OCI_INDEX, OCI_MANIFEST};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// What the bundle signs.
#[derive(Clone, Debug)]
pub enum Content {
    /// A DSSE envelope over an in-toto v1 statement about the image
    /// (`cosign sign` v3 uses predicate type `https://sigstore.dev/cosign/sign/v1`
    /// with `{}`; `cosign attest` uses the user's).
    Dsse {
        predicate_type: String,
        predicate: Value,
    },
    /// A message signature over the image manifest bytes (hashedrekord).
    MessageSignature,
}

impl Content {
    /// What `cosign sign` (v3) makes.
    pub fn cosign_sign() -> Content {
        Content::Dsse {
            predicate_type: "https://sigstore.dev/cosign/sign/v1".into(),
            predicate: json!({}),
        }
    }

    pub fn attestation(predicate_type: &str, predicate: Value) -> Content {
        Content::Dsse {
            predicate_type: predicate_type.into(),
            predicate,
        }
    }
}

/// Options for [`Signer::bundle_image`] and [`Signer::bundle`].
#[derive(Clone)]
pub struct BundleOpts<'a> {
    pub content: Content,
    pub rekor: Option<&'a Rekor>,
    pub integrated_time: Option<i64>,
    pub tamper: Tamper,
    /// `cosign sign -a k=v` (v3): the statement subject's annotations.
    pub annotations: Map<String, Value>,
}

impl<'a> BundleOpts<'a> {
    pub fn new(content: Content) -> BundleOpts<'a> {
        BundleOpts {
            content,
            rekor: None,
            integrated_time: None,
            tamper: Tamper::None,
            annotations: Map::new(),
        }
    }
    /// Adds an annotation to the statement's subject, as `cosign sign -a`.
    pub fn annotation(mut self, k: &str, v: &str) -> Self {
        self.annotations.insert(k.into(), Value::String(v.into()));
        self
    }
    pub fn rekor(mut self, rekor: &'a Rekor) -> Self {
        self.rekor = Some(rekor);
        self
    }
    pub fn time(mut self, t: i64) -> Self {
        self.integrated_time = Some(t);
        self
    }
    pub fn tamper(mut self, t: Tamper) -> Self {
        self.tamper = t;
        self
    }
}

/// A pushed bundle.
#[derive(Clone, Debug)]
pub struct BundleRef {
    pub bundle: Value,
    /// The bundle JSON exactly as stored (the referrer's layer blob).
    pub bytes: Vec<u8>,
    pub referrer_digest: String,
    /// The referrers tag-schema index now at `tag`.
    pub index_digest: String,
    pub tag: String,
    pub entry: Option<LogEntry>,
}

/// The public-key hint a key-based bundle carries: base64 SHA-256 of the SPKI.
pub fn key_hint(signer: &Signer) -> String {
    b64(signer.key.key_id())
}

impl Signer {
    /// Makes a bundle over `artifact` (for [`Content::MessageSignature`]) or
    /// over a statement about `digest` (DSSE). Does not push.
    pub fn bundle(
        &self,
        artifact: &[u8],
        digest: &str,
        opts: &BundleOpts,
    ) -> (Value, Option<LogEntry>) {
        let t = self.default_time(opts.integrated_time);
        let verifier = self.verifier_pem();
        let other_artifact;
        let (artifact, claimed) = match (&opts.tamper, &opts.content) {
            (Tamper::OtherDigest(d), Content::MessageSignature) => {
                other_artifact = d.as_bytes().to_vec();
                (other_artifact.as_slice(), sha256(&other_artifact))
            }
            (Tamper::OtherDigest(d) | Tamper::ClaimedDigest(d), _) => (artifact, d.clone()),
            _ => (artifact, digest.to_string()),
        };
        let claimed_hex = claimed
            .strip_prefix("sha256:")
            .unwrap_or(&claimed)
            .to_string();
        let (content_key, content, body) = match &opts.content {
            Content::MessageSignature => {
                let signature = self.signature_over(artifact, &opts.tamper);
                let logged = match &opts.tamper {
                    Tamper::LogBody => hex(&Sha256::digest(b"another artifact")),
                    _ => claimed_hex.clone(),
                };
                let digest_bytes: Vec<u8> = (0..claimed_hex.len() / 2)
                    .map(|i| u8::from_str_radix(&claimed_hex[2 * i..2 * i + 2], 16).expect("hex"))
                    .collect();
                (
                    "messageSignature",
                    json!({
                        "messageDigest": {"algorithm": "SHA2_256", "digest": b64(digest_bytes)},
                        "signature": b64(&signature),
                    }),
                    rekor::hashedrekord(&logged, &signature, &verifier),
                )
            }
            Content::Dsse {
                predicate_type,
                predicate,
            } => {
                let stmt = statement_v1_annotated(
                    &claimed_hex,
                    predicate_type,
                    predicate,
                    &opts.annotations,
                );
                let signature = self.signature_over(&pae(oci::IN_TOTO, &stmt), &opts.tamper);
                let stored = match &opts.tamper {
                    Tamper::PayloadAfterSigning => statement_v1_annotated(
                        &claimed_hex,
                        &format!("{predicate_type}/tampered"),
                        predicate,
                        &opts.annotations,
                    ),
                    _ => stmt.clone(),
                };
                let logged = match &opts.tamper {
                    Tamper::LogBody => b"another statement".to_vec(),
                    _ => stmt.clone(),
                };
                (
                    "dsseEnvelope",
                    json!({
                        "payload": b64(&stored),
                        "payloadType": oci::IN_TOTO,
                        "signatures": [{"sig": b64(&signature)}],
                    }),
                    rekor::dsse(oci::IN_TOTO, &logged, &signature, &verifier),
                )
            }
        };
        let entry = opts.rekor.map(|r| self.log(r, &body, t, &opts.tamper));
        let mut material = Map::new();
        match &self.cert {
            Some(c) => {
                material.insert("certificate".into(), json!({"rawBytes": b64(&c.der)}));
            }
            None => {
                material.insert("publicKey".into(), json!({"hint": key_hint(self)}));
            }
        }
        material.insert(
            "tlogEntries".into(),
            Value::Array(entry.iter().map(LogEntry::tlog_entry).collect()),
        );
        let mut bundle = Map::new();
        bundle.insert("mediaType".into(), Value::String(oci::BUNDLE_V03.into()));
        bundle.insert("verificationMaterial".into(), Value::Object(material));
        bundle.insert(content_key.into(), content);
        (Value::Object(bundle), entry)
    }

    /// Signs the image `digest` in `repo` into a bundle and pushes it as a
    /// referrer, recording it in the referrers tag-schema index.
    pub fn bundle_image(
        &self,
        p: &Pusher,
        repo: &str,
        digest: &str,
        opts: &BundleOpts,
    ) -> BundleRef {
        let (subject_type, subject) = oci::get_manifest(p, repo, digest)
            .unwrap_or_else(|| panic!("{repo}@{digest} is not in the registry"));
        let (bundle, entry) = self.bundle(&subject, digest, opts);
        let bytes = serde_json::to_vec(&bundle).expect("json");
        let (content, predicate_type) = match &opts.content {
            Content::Dsse { predicate_type, .. } => ("dsse-envelope", Some(predicate_type.clone())),
            Content::MessageSignature => ("message-signature", None),
        };
        let t = self.default_time(opts.integrated_time);
        let mut ann = Map::new();
        ann.insert(
            "dev.sigstore.bundle.content".into(),
            Value::String(content.into()),
        );
        if let Some(pt) = predicate_type {
            ann.insert(
                "dev.sigstore.bundle.predicateType".into(),
                Value::String(pt),
            );
        }
        ann.insert(
            "org.opencontainers.image.created".into(),
            Value::String(super::rfc3339(t)),
        );
        let referrer = push_referrer(
            p,
            repo,
            digest,
            &subject_type,
            subject.len(),
            oci::BUNDLE_V03,
            oci::BUNDLE_V03,
            &bytes,
            &ann,
        );
        let tag = oci::digest_tag(digest, "", "");
        let index_digest = record_referrer(p, repo, digest, &referrer, oci::BUNDLE_V03, &ann);
        BundleRef {
            bundle,
            bytes,
            referrer_digest: referrer.0,
            index_digest,
            tag,
            entry,
        }
    }
}

/// cosign v3's in-toto v1 statement (protobuf JSON order, no subject name).
pub fn statement_v1(hex: &str, predicate_type: &str, predicate: &Value) -> Vec<u8> {
    statement_v1_annotated(hex, predicate_type, predicate, &Map::new())
}

/// [`statement_v1`] with the subject's `annotations` (cosign v3 `sign -a`;
/// left out when empty, as protojson leaves out an empty struct).
pub fn statement_v1_annotated(
    hex: &str,
    predicate_type: &str,
    predicate: &Value,
    annotations: &Map<String, Value>,
) -> Vec<u8> {
    let annotations = if annotations.is_empty() {
        String::new()
    } else {
        format!(
            ",\"annotations\":{}",
            String::from_utf8(super::canonical_json(&Value::Object(annotations.clone())))
                .expect("utf8")
        )
    };
    format!(
        "{{\"_type\":\"https://in-toto.io/Statement/v1\",\"subject\":[{{\"digest\":{{\"sha256\":{}}}{annotations}}}],\"predicateType\":{},\"predicate\":{}}}",
        serde_json::to_string(hex).expect("json"),
        serde_json::to_string(predicate_type).expect("json"),
        serde_json::to_string(predicate).expect("json"),
    )
    .into_bytes()
}

/// Pushes an OCI 1.1 referrer manifest (empty config, one layer, `subject`)
/// by digest; returns (digest, size).
#[allow(clippy::too_many_arguments)]
pub fn push_referrer(
    p: &Pusher,
    repo: &str,
    subject_digest: &str,
    subject_type: &str,
    subject_size: usize,
    artifact_type: &str,
    layer_type: &str,
    layer: &[u8],
    annotations: &Map<String, Value>,
) -> (String, usize) {
    let config_digest = p.blob(repo, b"{}");
    let layer_digest = p.blob(repo, layer);
    let manifest = format!(
        "{{\"schemaVersion\":2,\"mediaType\":\"{OCI_MANIFEST}\",\"artifactType\":{},\"config\":{{\"mediaType\":\"{}\",\"size\":2,\"digest\":\"{config_digest}\",\"artifactType\":{}}},\"layers\":[{}],\"subject\":{},\"annotations\":{}}}",
        serde_json::to_string(artifact_type).expect("json"),
        oci::OCI_EMPTY,
        serde_json::to_string(artifact_type).expect("json"),
        descriptor(layer_type, layer.len(), &layer_digest, &Map::new()),
        descriptor(subject_type, subject_size, subject_digest, &Map::new()),
        String::from_utf8(super::canonical_json(&Value::Object(annotations.clone()))).expect("utf8"),
    )
    .into_bytes();
    let digest = sha256(&manifest);
    p.manifest(repo, &digest, OCI_MANIFEST, &manifest);
    (digest, manifest.len())
}

/// Adds a referrer to the tag-schema index `sha256-<hex>` of its subject
/// (creating it); returns the index digest.
pub fn record_referrer(
    p: &Pusher,
    repo: &str,
    subject_digest: &str,
    referrer: &(String, usize),
    artifact_type: &str,
    annotations: &Map<String, Value>,
) -> String {
    let tag = oci::digest_tag(subject_digest, "", "");
    let mut manifests: Vec<Value> = oci::get_manifest(p, repo, &tag)
        .map(|(_, body)| {
            let v: Value = serde_json::from_slice(&body).expect("index JSON");
            v["manifests"].as_array().cloned().unwrap_or_default()
        })
        .unwrap_or_default();
    manifests.retain(|m| m["digest"] != referrer.0.as_str());
    manifests.push(json!({
        "mediaType": OCI_MANIFEST,
        "digest": referrer.0,
        "size": referrer.1,
        "artifactType": artifact_type,
        "annotations": annotations,
    }));
    let index = json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests});
    p.manifest(
        repo,
        &tag,
        OCI_INDEX,
        &serde_json::to_vec(&index).expect("json"),
    )
}
