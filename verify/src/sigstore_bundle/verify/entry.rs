//! A log entry's body against the bundle: the entry must log this bundle's
//! signature, its signer and its artifact. Rekor v1 bodies are read by
//! [`crate::rekor::Body`]; the Rekor v2 bodies (hashedrekord 0.0.2, dsse
//! 0.0.2) are typed here, as their protobuf-JSON has them.

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::super::bundle::{Bundle, BundleError, Content, TlogEntry};
use super::{hex, Signer};
use crate::dsse::Envelope;
use crate::encoding::{pem_encode, EncodingError};
use crate::keys::{HashAlgorithm, PublicKey};
use crate::rekor::{Body, RekorError};
use crate::{Reason, Result, Shared};

crate::debug_as_display!(EntryError);
/// Why a log entry's body does not describe the bundle. Malformed until
/// the transparency-log stage classes it.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// The body is not JSON, or not the shape its kind has (the parser's
    /// error).
    #[error("canonicalizedBody is not JSON: {0}")]
    NotJson(#[source] Shared<serde_json::Error>),
    /// The body says something other than the bundle.
    #[error("log entry is inconsistent with the bundle: {0}")]
    Inconsistent(Inconsistency),
    /// A base64 field of a Rekor v2 body that cannot be decoded.
    #[error(transparent)]
    Field(#[from] BundleError),
    /// A Rekor v1 body that cannot be read or does not log the bundle.
    #[error(transparent)]
    Rekor(#[from] RekorError),
    /// A logged verifier whose PEM text cannot be decoded.
    #[error(transparent)]
    Pem(#[from] EncodingError),
    /// A kind and version not checked for this content.
    #[error("unsupported log entry type {kind}/{version} for this bundle's content")]
    Unsupported {
        /// The body's kind.
        kind: String,
        /// Its apiVersion.
        version: String,
    },
    /// A Rekor v1 body of a kind that does not fit the content.
    #[error("log entry type {kind}/{version} does not fit this bundle's content")]
    DoesNotFit {
        /// The entry's kind.
        kind: String,
        /// Its version.
        version: String,
    },
}

impl EntryError {
    /// The class of this failure: [`Reason::Malformed`] until the
    /// transparency-log stage classes it.
    pub fn reason(&self) -> Reason {
        match self {
            EntryError::Field(e) => e.reason(),
            EntryError::Rekor(e) => e.reason(),
            EntryError::Pem(e) => e.reason(),
            _ => Reason::Malformed,
        }
    }
}

crate::debug_as_display!(Inconsistency);
/// What a log entry's body says that the bundle does not.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum Inconsistency {
    /// The body's kind or version is not the entry's `kindVersion`.
    #[error("body is {body_kind}/{body_version} but kindVersion says {kind}/{version}")]
    KindVersion {
        /// The body's kind.
        body_kind: String,
        /// The body's apiVersion.
        body_version: String,
        /// The entry's kind.
        kind: String,
        /// The entry's version.
        version: String,
    },
    /// A logged hash algorithm (its field) other than the one expected.
    #[error("{field}.algorithm {got:?} is not {want}")]
    Algorithm {
        /// The hash's field (`data`, `payloadHash`).
        field: &'static str,
        /// The algorithm logged.
        got: String,
        /// The algorithm expected.
        want: &'static str,
    },
    /// A field the body lacks.
    #[error("{0} is missing")]
    Missing(&'static str),
    /// The logged digest is not of the envelope's PAE.
    #[error("data.digest is not the digest of the envelope's PAE")]
    NotPaeDigest,
    /// The logged digest (its field) is not the artifact's.
    #[error("{0}.digest is not the artifact's digest")]
    NotArtifactDigest(&'static str),
    /// A dsse entry without signatures.
    #[error("no signatures")]
    NoSignatures,
    /// An entry logging other than one signature.
    #[error("the entry must log exactly one signature")]
    NotOneSignature,
    /// The logged signature is not the bundle's.
    #[error("the logged signature is not the bundle's")]
    BundleSignature,
    /// The logged certificate is not the bundle's.
    #[error("the logged certificate is not the bundle's")]
    Certificate,
    /// The logged public key is not the policy's.
    #[error("the logged public key is not the policy's")]
    PublicKey,
    /// The logged payload hash is not the envelope payload's.
    #[error("the logged payload hash is not the envelope payload's")]
    PayloadHash,
    /// The logged signature is not the envelope's.
    #[error("the logged signature is not the envelope's")]
    EnvelopeSignature,
    /// The logged verifier is not the bundle's signer.
    #[error("the logged verifier is not the bundle's signer")]
    Verifier,
    /// The logged verifier is not PEM text.
    #[error("the logged verifier is not PEM")]
    VerifierNotPem,
}

fn inconsistent(what: Inconsistency) -> EntryError {
    EntryError::Inconsistent(what)
}

/// The kind and version every body starts with.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Header {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    api_version: String,
}

/// A Rekor v2 body: `spec` holds one of the two v0.0.2 kinds.
#[derive(Deserialize)]
struct V2Body {
    #[serde(default)]
    spec: V2Spec,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct V2Spec {
    #[serde(default)]
    hashed_rekord_v002: HashedRekordV002,
    #[serde(default)]
    dsse_v002: DsseV002,
}

/// `HashedRekordLogEntryV002`: the digest signed and the signature.
#[derive(Default, Deserialize)]
struct HashedRekordV002 {
    #[serde(default)]
    data: HashOutput,
    #[serde(default)]
    signature: V2Signature,
}

/// `DSSELogEntryV002`: the payload's digest and the envelope's signatures.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DsseV002 {
    #[serde(default)]
    payload_hash: HashOutput,
    signatures: Option<Vec<V2Signature>>,
}

/// `HashOutput`: an algorithm name (`SHA2_256`, ...) and a base64 digest.
#[derive(Default, Deserialize)]
struct HashOutput {
    #[serde(default)]
    algorithm: String,
    digest: Option<String>,
}

/// `Signature {content, verifier}`.
#[derive(Default, Deserialize)]
struct V2Signature {
    content: Option<String>,
    #[serde(default)]
    verifier: V2Verifier,
}

/// `Verifier`: the signer's certificate or public key, as raw DER.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct V2Verifier {
    #[serde(default)]
    x509_certificate: RawBytes,
    #[serde(default)]
    public_key: RawBytes,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawBytes {
    raw_bytes: Option<String>,
}

fn parse<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, EntryError> {
    ivpol_refs::json::from_slice(body).map_err(|e| EntryError::NotJson(e.into()))
}

/// Checks that the entry's body describes this bundle's signature, signer
/// and artifact.
pub(super) fn verify_body(
    bundle: &Bundle,
    entry: &TlogEntry,
    signer: &Signer,
    digest: &[u8; 32],
) -> Result<(), EntryError> {
    let Header { kind, api_version } = parse(&entry.body)?;
    if kind != entry.kind || api_version != entry.version {
        return Err(inconsistent(Inconsistency::KindVersion {
            body_kind: kind,
            body_version: api_version,
            kind: entry.kind.clone(),
            version: entry.version.clone(),
        }));
    }
    match (&bundle.content, kind.as_str(), api_version.as_str()) {
        (Content::MessageSignature { signature, .. }, "hashedrekord", "0.0.2") => {
            let spec = parse::<V2Body>(&entry.body)?.spec.hashed_rekord_v002;
            check_hash_output(&spec.data, digest, "data", "data.digest")?;
            check_v2_signature(&spec.signature, signature, signer)
        }
        (Content::Dsse(env), "hashedrekord", "0.0.2") => {
            let spec = parse::<V2Body>(&entry.body)?.spec.hashed_rekord_v002;
            let sig = bundle.content.signature();
            let pae = Envelope::pae(&env.payload_type, &env.payload);
            let hash = prehash_for(signer.key());
            let algorithm = &spec.data.algorithm;
            if algorithm != hash_name(hash) {
                return Err(inconsistent(Inconsistency::Algorithm {
                    field: "data",
                    got: algorithm.clone(),
                    want: hash_name(hash),
                }));
            }
            let logged = b64_value(spec.data.digest.as_deref(), "data.digest")?;
            if logged != hash.digest(&pae) {
                return Err(inconsistent(Inconsistency::NotPaeDigest));
            }
            check_v2_signature(&spec.signature, sig, signer)
        }
        (Content::Dsse(env), "dsse", "0.0.2") => {
            let spec = parse::<V2Body>(&entry.body)?.spec.dsse_v002;
            check_hash_output(
                &spec.payload_hash,
                &Sha256::digest(&env.payload).into(),
                "payloadHash",
                "payloadHash.digest",
            )?;
            let sigs = spec
                .signatures
                .ok_or(EntryError::Inconsistent(Inconsistency::NoSignatures))?;
            let [logged] = sigs.as_slice() else {
                return Err(inconsistent(Inconsistency::NotOneSignature));
            };
            let sig = bundle.content.signature();
            check_v2_signature(logged, sig, signer)
        }
        (_, "hashedrekord" | "dsse" | "intoto", "0.0.1" | "0.0.2") => {
            verify_v1_body(bundle, entry, signer, digest)
        }
        (_, kind, version) => Err(EntryError::Unsupported {
            kind: kind.to_string(),
            version: version.to_string(),
        }),
    }
}

fn b64_value(v: Option<&str>, what: &'static str) -> Result<Vec<u8>, EntryError> {
    let s = v.ok_or(EntryError::Inconsistent(Inconsistency::Missing(what)))?;
    Ok(super::super::bundle::b64(s, what)?)
}

/// The `HashOutput` at `field` (its digest at `digest_field`) is the
/// SHA-256 `digest`.
fn check_hash_output(
    v: &HashOutput,
    digest: &[u8; 32],
    field: &'static str,
    digest_field: &'static str,
) -> Result<(), EntryError> {
    let algorithm = &v.algorithm;
    if algorithm != "SHA2_256" {
        return Err(inconsistent(Inconsistency::Algorithm {
            field,
            got: algorithm.clone(),
            want: "SHA2_256",
        }));
    }
    if b64_value(v.digest.as_deref(), digest_field)?.as_slice() != digest {
        return Err(inconsistent(Inconsistency::NotArtifactDigest(field)));
    }
    Ok(())
}

/// A Rekor v2 `Signature {content, verifier}`.
fn check_v2_signature(
    v: &V2Signature,
    signature: &[u8],
    signer: &Signer,
) -> Result<(), EntryError> {
    if b64_value(v.content.as_deref(), "signature.content")? != signature {
        return Err(inconsistent(Inconsistency::BundleSignature));
    }
    match signer {
        Signer::Certificate { leaf, .. } => {
            let raw = b64_value(
                v.verifier.x509_certificate.raw_bytes.as_deref(),
                "verifier.x509Certificate",
            )?;
            if raw != leaf.der() {
                return Err(inconsistent(Inconsistency::Certificate));
            }
        }
        Signer::Key(key) => {
            let raw = b64_value(
                v.verifier.public_key.raw_bytes.as_deref(),
                "verifier.publicKey",
            )?;
            if raw != key.spki_der() {
                return Err(inconsistent(Inconsistency::PublicKey));
            }
        }
    }
    Ok(())
}

/// The digest Rekor v2 uses for a key's prehashed signatures.
fn prehash_for(key: &PublicKey) -> HashAlgorithm {
    let alg = key.algorithm();
    if alg.contains("P-384") {
        HashAlgorithm::Sha384
    } else if alg.contains("P-521") || alg.contains("Ed25519") {
        HashAlgorithm::Sha512
    } else {
        HashAlgorithm::Sha256
    }
}

fn hash_name(h: HashAlgorithm) -> &'static str {
    match h {
        HashAlgorithm::Sha224 => "SHA2_224",
        HashAlgorithm::Sha256 => "SHA2_256",
        HashAlgorithm::Sha384 => "SHA2_384",
        HashAlgorithm::Sha512 => "SHA2_512",
    }
}

/// Rekor v1 bodies: hashedrekord 0.0.1, dsse 0.0.1, intoto 0.0.2.
///
/// The entry must log the bundle's signature, the signer's certificate (or
/// the policy's key) and the artifact digest (for DSSE, the payload hash).
/// The logged envelope hash of dsse/intoto entries is not checked: it is of
/// the envelope as submitted, which a bundle does not preserve byte for byte
/// (sigstore-python and sigstore-js do not check it either).
fn verify_v1_body(
    bundle: &Bundle,
    entry: &TlogEntry,
    signer: &Signer,
    digest: &[u8; 32],
) -> Result<(), EntryError> {
    let body = Body::parse(&entry.body)?;
    let verifier_pem = match signer {
        Signer::Certificate { leaf, .. } => leaf.pem(),
        Signer::Key(key) => pem_encode("PUBLIC KEY", key.spki_der()),
    };
    match (&bundle.content, &body) {
        (Content::MessageSignature { signature, .. }, Body::HashedRekord { .. }) => {
            Ok(body.check_hashedrekord(digest, signature, &verifier_pem)?)
        }
        (
            Content::Dsse(env),
            Body::Dsse {
                payload_hash,
                signatures,
                ..
            }
            | Body::Intoto {
                payload_hash,
                signatures,
                ..
            },
        ) => {
            let want = hex(&Sha256::digest(&env.payload));
            match payload_hash {
                Some(h) if h.algorithm == "sha256" && h.value == want => {}
                _ => return Err(inconsistent(Inconsistency::PayloadHash)),
            }
            let [logged] = signatures.as_slice() else {
                return Err(inconsistent(Inconsistency::NotOneSignature));
            };
            let sig = bundle.content.signature();
            if logged.signature != sig {
                return Err(inconsistent(Inconsistency::EnvelopeSignature));
            }
            let logged_der = first_pem_der(&logged.verifier_pem)?;
            if logged_der != first_pem_der(&verifier_pem)? {
                return Err(inconsistent(Inconsistency::Verifier));
            }
            Ok(())
        }
        _ => Err(EntryError::DoesNotFit {
            kind: entry.kind.clone(),
            version: entry.version.clone(),
        }),
    }
}

fn first_pem_der(pem: &str) -> Result<Vec<u8>, EntryError> {
    crate::encoding::pem_blocks(pem, 16, 256 * 1024)?
        .into_iter()
        .next()
        .map(|b| b.der)
        .ok_or(EntryError::Inconsistent(Inconsistency::VerifierNotPem))
}
