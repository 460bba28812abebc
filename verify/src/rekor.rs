//! The Rekor v1 transparency log as cosign's legacy layers carry it:
//! the `dev.sigstore.cosign/bundle` annotation, its signed
//! entry timestamp (SET), and the canonicalized entry body.
//!
//! Specification: <https://github.com/sigstore/cosign/blob/main/specs/SIGNATURE_SPEC.md>

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::dsse::Envelope;
use super::encoding::{b64decode, hex, pem_blocks, unhex, EncodingError};
use super::keys::HashAlgorithm;
use super::trust::LogKey;
use super::x509::fmt_time;
use super::{Reason, Result, Shared};

/// Largest bundle annotation / entry body accepted.
const MAX_BUNDLE: usize = 4 << 20;

crate::debug_as_display!(RekorError);
/// Why a Rekor entry, its SET or the bundle carrying them was not accepted.
/// Every failure is [`Reason::Malformed`] here; the transparency-log stage
/// classes it (`Classify::class`).
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum RekorError {
    /// No trusted log has this log id (shown in hex).
    #[error("transparency log {} is not trusted (no matching Rekor public key)", hex(.0))]
    UntrustedLog(Vec<u8>),
    /// The log's key was outside its validity at the entry's time.
    #[error("Rekor key {} was not valid at the entry's integrated time {}", hex(.log_id), fmt_time(*.time))]
    KeyNotValidAt {
        /// The log id (shown in hex).
        log_id: Vec<u8>,
        /// The integrated time, unix seconds (shown in RFC 3339).
        time: i64,
    },
    /// The SET payload could not be canonicalised (RFC 8785).
    #[error("canonicalizing SET payload: {0}")]
    Canonical(#[source] Shared<serde_json::Error>),
    /// The log's signature over the entry does not verify.
    #[error("Rekor signed entry timestamp (SET) does not verify")]
    BadSet,
    /// The `dev.sigstore.cosign/bundle` annotation is over the size bound.
    #[error("Rekor bundle annotation too large")]
    AnnotationTooLarge,
    /// The annotation is not the expected JSON.
    #[error("invalid Rekor bundle annotation: {0}")]
    InvalidAnnotation(#[source] Shared<serde_json::Error>),
    /// A base64 or hex field that cannot be decoded.
    #[error(transparent)]
    Encoding(#[from] EncodingError),
    /// The annotation's payload body is not a string.
    #[error("Rekor bundle payload body is not a string")]
    BodyNotString,
    /// No log keys to check the SET with.
    #[error("no trusted Rekor public keys provided")]
    NoLogKeys,
    /// A base64 field (named) that should hold PEM text does not.
    #[error("{0} is not PEM text")]
    NotPem(&'static str),
    /// The entry body is over the size bound.
    #[error("Rekor entry body too large")]
    BodyTooLarge,
    /// The entry body is not JSON.
    #[error("invalid Rekor entry body: {0}")]
    InvalidBody(#[source] Shared<serde_json::Error>),
    /// The entry lacks a field its kind and version require.
    #[error("Rekor {kind} {version} entry lacks {field}")]
    MissingField {
        /// The entry's kind.
        kind: String,
        /// Its apiVersion.
        version: String,
        /// The missing field's path.
        field: &'static str,
    },
    /// An entry kind or version not checked here.
    #[error("unsupported Rekor entry kind {kind:?} version {version:?}")]
    UnsupportedKind {
        /// The entry's kind.
        kind: String,
        /// Its apiVersion.
        version: String,
    },
    /// A signature's entry must be a hashedrekord.
    #[error("Rekor entry is not a hashedrekord, as a signature's must be")]
    NotHashedRekord,
    /// The logged signature is not the one being verified.
    #[error("signature in the Rekor entry does not match the signature being verified")]
    SignatureMismatch,
    /// An attestation's entry must be intoto or dsse.
    #[error("Rekor entry is a hashedrekord, but an attestation needs an intoto or dsse entry")]
    NotEnvelopeEntry,
    /// The entry logs no hash of the attestation.
    #[error("Rekor entry logs no hash of the attestation")]
    NoAttestationHash,
    /// The entry logs no signature.
    #[error("Rekor entry logs no signature")]
    NoSignature,
    /// More than one DSSE signature logged.
    #[error("Rekor entries with several DSSE signatures are not supported")]
    SeveralSignatures,
    /// The logged signature is not the attestation's.
    #[error("signature in the Rekor entry does not match the attestation's")]
    AttestationSignatureMismatch,
    /// A logged hash that is not SHA-256.
    #[error("unexpected hash algorithm {0:?} in the Rekor entry")]
    HashAlgorithm(String),
    /// A logged hash that is not the hash of `what`.
    #[error("{what} hash in the Rekor entry ({logged}) does not match the {what} ({actual})")]
    HashMismatch {
        /// What was hashed (payload, envelope).
        what: &'static str,
        /// The logged hash, hex.
        logged: String,
        /// The hash of what is verified, hex.
        actual: String,
    },
    /// PEM text without a block.
    #[error("no PEM block")]
    NoPemBlock,
    /// The key or certificate the entry logs cannot be read.
    #[error("public key in the Rekor entry: {0}")]
    LoggedVerifier(#[source] Box<RekorError>),
    /// The logged key or certificate is not the verifier's.
    #[error("public key or certificate in the Rekor entry does not match the verifier")]
    VerifierMismatch,
}

impl RekorError {
    /// The class of this failure: [`Reason::Malformed`] until the
    /// transparency-log stage classes it.
    pub fn reason(&self) -> Reason {
        match self {
            RekorError::Encoding(e) => e.reason(),
            RekorError::LoggedVerifier(e) => e.reason(),
            _ => Reason::Malformed,
        }
    }
}

/// Verifies a Rekor SET: the log's signature over the RFC 8785 canonical
/// JSON `{"body","integratedTime","logID"(hex),"logIndex"}`, made by the
/// log with id `log_id` whose key is valid at `integrated_time`.
pub fn verify_set(
    body_b64: &str,
    integrated_time: i64,
    log_index: i64,
    log_id: &[u8],
    set: &[u8],
    tlogs: &[LogKey],
) -> Result<(), RekorError> {
    let log =
        LogKey::find(tlogs, log_id).ok_or_else(|| RekorError::UntrustedLog(log_id.to_vec()))?;
    if !log.validity.contains(integrated_time) {
        return Err(RekorError::KeyNotValidAt {
            log_id: log_id.to_vec(),
            time: integrated_time,
        });
    }
    let payload = serde_json::json!({
        "body": body_b64,
        "integratedTime": integrated_time,
        "logID": hex(log_id),
        "logIndex": log_index,
    });
    let canonical =
        serde_json_canonicalizer::to_vec(&payload).map_err(|e| RekorError::Canonical(e.into()))?;
    log.key
        .verify(&canonical, set, Some(HashAlgorithm::Sha256))
        .map_err(|_| RekorError::BadSet)
}

/// The `dev.sigstore.cosign/bundle` annotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CosignBundle {
    /// Decoded SignedEntryTimestamp.
    pub set: Vec<u8>,
    /// The base64 canonicalized entry, as logged.
    pub body: String,
    /// When the log integrated the entry, Unix seconds.
    pub integrated_time: i64,
    /// The entry's index in the log.
    pub log_index: i64,
    /// Decoded logID.
    pub log_id: Vec<u8>,
}

#[derive(Deserialize)]
struct BundleJson {
    #[serde(rename = "SignedEntryTimestamp")]
    set: String,
    #[serde(rename = "Payload")]
    payload: PayloadJson,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PayloadJson {
    body: Value,
    integrated_time: i64,
    log_index: i64,
    #[serde(rename = "logID")]
    log_id: String,
}

impl CosignBundle {
    /// Reads the annotation's JSON, bounded in bytes.
    pub fn parse(json: &str) -> Result<CosignBundle, RekorError> {
        if json.len() > MAX_BUNDLE {
            return Err(RekorError::AnnotationTooLarge);
        }
        let b: BundleJson =
            serde_json::from_str(json).map_err(|e| RekorError::InvalidAnnotation(e.into()))?;
        let Value::String(body) = b.payload.body else {
            return Err(RekorError::BodyNotString);
        };
        Ok(CosignBundle {
            set: b64decode("Rekor SignedEntryTimestamp", &b.set)?,
            body,
            integrated_time: b.payload.integrated_time,
            log_index: b.payload.log_index,
            log_id: unhex("Rekor logID", &b.payload.log_id)?,
        })
    }

    /// Verifies the SET; returns the integrated time (the trusted time).
    pub fn verify(&self, tlogs: &[LogKey]) -> Result<i64, RekorError> {
        if tlogs.is_empty() {
            return Err(RekorError::NoLogKeys);
        }
        verify_set(
            &self.body,
            self.integrated_time,
            self.log_index,
            &self.log_id,
            &self.set,
            tlogs,
        )?;
        Ok(self.integrated_time)
    }

    /// The logged entry.
    pub fn entry(&self) -> Result<Body, RekorError> {
        Body::parse(&b64decode("Rekor entry body", &self.body)?)
    }
}

/// A hash in an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryHash {
    /// The algorithm's name as logged (`sha256`).
    pub algorithm: String,
    /// Lowercase hex as logged.
    pub value: String,
}

/// One signature of a DSSE-style entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntrySignature {
    /// Decoded signature bytes.
    pub signature: Vec<u8>,
    /// The verifier PEM text (public key or certificate).
    pub verifier_pem: String,
}

/// A canonicalized Rekor entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// hashedrekord 0.0.1.
    HashedRekord {
        /// The artifact's hash.
        hash: EntryHash,
        /// The decoded signature over the artifact.
        signature: Vec<u8>,
        /// The verifier PEM text (public key or certificate).
        verifier_pem: String,
    },
    /// intoto 0.0.1 / 0.0.2: `hash` is of the envelope, `payload_hash` of
    /// its payload.
    Intoto {
        /// `0.0.1` or `0.0.2`.
        version: String,
        /// The envelope's hash.
        hash: Option<EntryHash>,
        /// The payload's hash.
        payload_hash: Option<EntryHash>,
        /// The envelope's signatures.
        signatures: Vec<EntrySignature>,
    },
    /// dsse 0.0.1.
    Dsse {
        /// The envelope's hash.
        envelope_hash: Option<EntryHash>,
        /// The payload's hash.
        payload_hash: Option<EntryHash>,
        /// The envelope's signatures.
        signatures: Vec<EntrySignature>,
    },
}

fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

fn get_str<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    get(v, path).and_then(Value::as_str)
}

fn entry_hash(v: &Value, path: &[&str]) -> Option<EntryHash> {
    let h = get(v, path)?;
    Some(EntryHash {
        algorithm: h.get("algorithm")?.as_str()?.to_string(),
        value: h.get("value")?.as_str()?.to_ascii_lowercase(),
    })
}

fn pem_field(what: &'static str, b64: &str) -> Result<String, RekorError> {
    String::from_utf8(b64decode(what, b64)?).map_err(|_| RekorError::NotPem(what))
}

impl Body {
    /// Reads a canonicalized body of a kind this verifier checks, bounded in bytes.
    pub fn parse(json: &[u8]) -> Result<Body, RekorError> {
        if json.len() > MAX_BUNDLE {
            return Err(RekorError::BodyTooLarge);
        }
        let v: Value =
            ivpol_refs::json::from_slice(json).map_err(|e| RekorError::InvalidBody(e.into()))?;
        let kind = get_str(&v, &["kind"]).unwrap_or("");
        let version = get_str(&v, &["apiVersion"]).unwrap_or("");
        let missing = |field: &'static str| RekorError::MissingField {
            kind: kind.to_string(),
            version: version.to_string(),
            field,
        };
        match (kind, version) {
            ("hashedrekord", "0.0.1") => Ok(Body::HashedRekord {
                hash: entry_hash(&v, &["spec", "data", "hash"])
                    .ok_or_else(|| missing("spec.data.hash"))?,
                signature: b64decode(
                    "hashedrekord signature",
                    get_str(&v, &["spec", "signature", "content"])
                        .ok_or_else(|| missing("spec.signature.content"))?,
                )?,
                verifier_pem: pem_field(
                    "hashedrekord public key",
                    get_str(&v, &["spec", "signature", "publicKey", "content"])
                        .ok_or_else(|| missing("spec.signature.publicKey.content"))?,
                )?,
            }),
            ("intoto", "0.0.1") => {
                let key =
                    get_str(&v, &["spec", "publicKey"]).ok_or_else(|| missing("spec.publicKey"))?;
                Ok(Body::Intoto {
                    version: version.to_string(),
                    hash: entry_hash(&v, &["spec", "content", "hash"]),
                    payload_hash: entry_hash(&v, &["spec", "content", "payloadHash"]),
                    // 0.0.1 logs only the key; the signature is in the envelope.
                    signatures: vec![EntrySignature {
                        signature: Vec::new(),
                        verifier_pem: pem_field("intoto public key", key)?,
                    }],
                })
            }
            ("intoto", "0.0.2") => {
                let sigs = get(&v, &["spec", "content", "envelope", "signatures"])
                    .and_then(Value::as_array)
                    .ok_or_else(|| missing("spec.content.envelope.signatures"))?;
                let signatures = sigs
                    .iter()
                    .take(16)
                    .map(|s| {
                        let sig = s
                            .get("sig")
                            .and_then(Value::as_str)
                            .ok_or_else(|| missing("sig"))?;
                        // Logged as base64 of the envelope's base64 text.
                        let once = b64decode("intoto signature", sig)?;
                        let signature = std::str::from_utf8(&once)
                            .ok()
                            .and_then(|t| b64decode("intoto signature", t).ok())
                            .unwrap_or(once);
                        let key = s
                            .get("publicKey")
                            .and_then(Value::as_str)
                            .ok_or_else(|| missing("publicKey"))?;
                        Ok(EntrySignature {
                            signature,
                            verifier_pem: pem_field("intoto public key", key)?,
                        })
                    })
                    .collect::<Result<Vec<_>, RekorError>>()?;
                Ok(Body::Intoto {
                    version: version.to_string(),
                    hash: entry_hash(&v, &["spec", "content", "hash"]),
                    payload_hash: entry_hash(&v, &["spec", "content", "payloadHash"]),
                    signatures,
                })
            }
            ("dsse", "0.0.1") => {
                let sigs = get(&v, &["spec", "signatures"])
                    .and_then(Value::as_array)
                    .ok_or_else(|| missing("spec.signatures"))?;
                let signatures = sigs
                    .iter()
                    .take(16)
                    .map(|s| {
                        let sig = s
                            .get("signature")
                            .and_then(Value::as_str)
                            .ok_or_else(|| missing("signature"))?;
                        let key = s
                            .get("verifier")
                            .and_then(Value::as_str)
                            .ok_or_else(|| missing("verifier"))?;
                        Ok(EntrySignature {
                            signature: b64decode("dsse signature", sig)?,
                            verifier_pem: pem_field("dsse verifier", key)?,
                        })
                    })
                    .collect::<Result<Vec<_>, RekorError>>()?;
                Ok(Body::Dsse {
                    envelope_hash: entry_hash(&v, &["spec", "envelopeHash"]),
                    payload_hash: entry_hash(&v, &["spec", "payloadHash"]),
                    signatures,
                })
            }
            _ => Err(RekorError::UnsupportedKind {
                kind: kind.to_string(),
                version: version.to_string(),
            }),
        }
    }

    /// A hashedrekord entry must log this payload hash, this signature and
    /// this verifier (compared by DER, not text).
    pub fn check_hashedrekord(
        &self,
        payload_sha256: &[u8],
        signature: &[u8],
        verifier_pem: &str,
    ) -> Result<(), RekorError> {
        let Body::HashedRekord {
            hash,
            signature: logged_sig,
            verifier_pem: logged_pem,
        } = self
        else {
            return Err(RekorError::NotHashedRekord);
        };
        check_hash("payload", hash, payload_sha256)?;
        if logged_sig != signature {
            return Err(RekorError::SignatureMismatch);
        }
        same_pem(logged_pem, verifier_pem)
    }

    /// An intoto or dsse entry must log this envelope (by hash of its exact
    /// bytes, and of its payload), the signature that verified and this
    /// verifier.
    pub fn check_envelope(
        &self,
        envelope_bytes: &[u8],
        envelope: &Envelope,
        signature: &[u8],
        verifier_pem: &str,
    ) -> Result<(), RekorError> {
        let (hash, payload_hash, signatures) = match self {
            Body::Intoto {
                hash,
                payload_hash,
                signatures,
                ..
            } => (hash, payload_hash, signatures),
            Body::Dsse {
                envelope_hash,
                payload_hash,
                signatures,
            } => (envelope_hash, payload_hash, signatures),
            Body::HashedRekord { .. } => return Err(RekorError::NotEnvelopeEntry),
        };
        // As cosign's bundleHash: the logged envelope hash is of the layer.
        if let Some(h) = hash {
            check_hash("envelope", h, &Sha256::digest(envelope_bytes))?;
        }
        match payload_hash {
            Some(h) => check_hash("payload", h, &Sha256::digest(&envelope.payload))?,
            None if hash.is_none() => return Err(RekorError::NoAttestationHash),
            None => {}
        }
        let Some(entry) = signatures.first() else {
            return Err(RekorError::NoSignature);
        };
        if signatures.len() > 1 {
            return Err(RekorError::SeveralSignatures);
        }
        if !entry.signature.is_empty() && entry.signature != signature {
            return Err(RekorError::AttestationSignatureMismatch);
        }
        same_pem(&entry.verifier_pem, verifier_pem)
    }
}

fn check_hash(what: &'static str, logged: &EntryHash, actual: &[u8]) -> Result<(), RekorError> {
    if logged.algorithm != "sha256" {
        return Err(RekorError::HashAlgorithm(logged.algorithm.clone()));
    }
    if logged.value != hex(actual) {
        return Err(RekorError::HashMismatch {
            what,
            logged: logged.value.clone(),
            actual: hex(actual),
        });
    }
    Ok(())
}

/// Two PEM texts carry the same first block (by DER).
fn same_pem(logged: &str, expected: &str) -> Result<(), RekorError> {
    let first = |s: &str| -> Result<Vec<u8>, RekorError> {
        pem_blocks(s, 16, 256 * 1024)?
            .into_iter()
            .next()
            .map(|b| b.der)
            .ok_or(RekorError::NoPemBlock)
    };
    let logged = first(logged).map_err(|e| RekorError::LoggedVerifier(Box::new(e)))?;
    if logged != first(expected)? {
        return Err(RekorError::VerifierMismatch);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::PublicKey;
    use crate::x509::tests::{read, DERIVED, FIXTURES};

    fn rekor() -> Vec<LogKey> {
        vec![LogKey::from_key(
            PublicKey::from_pem(&read(&format!("{FIXTURES}rekor.pub"))).unwrap(),
        )]
    }

    fn bundle() -> CosignBundle {
        CosignBundle::parse(&read(&format!(
            "{DERIVED}dir-img-cosign-key-rekor-valid/rekor-bundle.json"
        )))
        .unwrap()
    }

    #[test]
    fn set_verifies() {
        let b = bundle();
        assert_eq!(b.verify(&rekor()).unwrap(), 1674251859);
        // Tampered fields.
        let mut t = b.clone();
        t.integrated_time += 1;
        let bad_set = || Err(RekorError::BadSet);
        assert_eq!(t.verify(&rekor()), bad_set());
        let mut t = b.clone();
        t.log_index += 1;
        assert_eq!(t.verify(&rekor()), bad_set());
        let mut t = b.clone();
        t.body.insert(0, 'e');
        assert_eq!(t.verify(&rekor()), bad_set());
        // Wrong key / no key.
        let cosign = vec![LogKey::from_key(
            PublicKey::from_pem(&read(&format!("{FIXTURES}cosign.pub"))).unwrap(),
        )];
        assert!(matches!(
            b.verify(&cosign),
            Err(RekorError::UntrustedLog(id)) if id == b.log_id
        ));
        assert_eq!(b.verify(&[]), Err(RekorError::NoLogKeys));
        // Key not valid at the integrated time.
        let mut keys = rekor();
        keys[0].validity.start = Some(1674251860);
        let e = b.verify(&keys).unwrap_err();
        assert!(
            matches!(
                &e,
                RekorError::KeyNotValidAt {
                    time: 1674251859,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string()
                .ends_with("was not valid at the entry's integrated time 2023-01-20T21:57:39Z"),
            "{e}"
        );
    }

    #[test]
    fn hashedrekord_body() {
        let b = bundle();
        let entry = b.entry().unwrap();
        let payload = std::fs::read(format!(
            "{DERIVED}dir-img-cosign-key-rekor-valid/simplesigning-layer.json"
        ))
        .unwrap();
        let sig = b64decode(
            "",
            &read(&format!(
                "{DERIVED}dir-img-cosign-key-rekor-valid/signature.b64"
            )),
        )
        .unwrap();
        let key = read(&format!("{FIXTURES}cosign2.pub"));
        let h = Sha256::digest(&payload);
        entry.check_hashedrekord(&h, &sig, &key).unwrap();
        // Same key, different PEM text.
        entry
            .check_hashedrekord(&h, &sig, &format!("\n{}", key.replace('\n', "\r\n")))
            .unwrap();
        assert!(matches!(
            entry.check_hashedrekord(&Sha256::digest(b"x"), &sig, &key),
            Err(RekorError::HashMismatch {
                what: "payload",
                ..
            })
        ));
        assert_eq!(
            entry.check_hashedrekord(&h, b"sig", &key),
            Err(RekorError::SignatureMismatch)
        );
        let other = read(&format!("{FIXTURES}cosign.pub"));
        assert_eq!(
            entry.check_hashedrekord(&h, &sig, &other),
            Err(RekorError::VerifierMismatch)
        );
    }

    #[test]
    fn bad_bundles() {
        assert!(matches!(
            CosignBundle::parse("{}"),
            Err(RekorError::InvalidAnnotation(m))
                if m.to_string().contains("missing field `SignedEntryTimestamp`")
        ));
        assert!(matches!(
            CosignBundle::parse(
                r#"{"SignedEntryTimestamp":"AA==","Payload":{"body":1,"integratedTime":1,"logIndex":1,"logID":"00"}}"#
            ),
            Err(RekorError::BodyNotString)
        ));
        assert!(matches!(
            CosignBundle::parse(r#"{"SignedEntryTimestamp":"AA==","Payload":{"body":"","integratedTime":1,"logIndex":1,"logID":"0g"}}"#),
            Err(RekorError::Encoding(EncodingError::Hex { what }))
                if what == "Rekor logID"
        ));
        assert!(matches!(
            Body::parse(br#"{"kind":"rekord","apiVersion":"0.0.1"}"#),
            Err(RekorError::UnsupportedKind { .. })
        ));
        assert!(matches!(
            Body::parse(br#"{"kind":"hashedrekord","apiVersion":"0.0.1","spec":{}}"#),
            Err(RekorError::MissingField {
                field: "spec.data.hash",
                ..
            })
        ));
    }
}
