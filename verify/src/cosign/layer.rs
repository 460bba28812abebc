//! Verification of one `.sig` (simple signing) or `.att` (DSSE) layer.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{Layer, Options, Verified, Verifier};
use crate::dsse::{DsseError, Envelope};
use crate::encoding::{b64decode, pem_encode, EncodingError};
use crate::keys::{KeyError, PublicKey};
use crate::rekor::{Body, CosignBundle, RekorError};
use crate::timestamp::{TimeStampToken, TimestampError};
use crate::trust::CertificateAuthority;
use crate::x509::fulcio::{identities_match, Identity, IdentityRule};
use crate::x509::sct::verify_embedded_sct;
use crate::x509::{verify_chain, Certificate, Purpose, X509Error, MAX_PATH_LEN};
use crate::{Classify, Reason, Result, Shared};

crate::debug_as_display!(LayerError);
/// Why a cosign `.sig` or `.att` layer was not accepted. A signature that
/// does not verify is [`Reason::BadSignature`], a payload for another image
/// or without the required annotations [`Reason::PayloadMismatch`], a
/// certificate chain too short for its SCT [`Reason::TransparencyLog`]; the
/// rest is malformed until the stage that checked it classes it.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayerError {
    /// The certificate annotation holds no PEM block.
    #[error("certificate annotation is empty")]
    EmptyCertificateAnnotation,
    /// The certificate annotation cannot be read.
    #[error("certificate annotation: {0}")]
    CertificateAnnotation(#[source] X509Error),
    /// The chain annotation cannot be read.
    #[error("chain annotation: {0}")]
    ChainAnnotation(#[source] X509Error),
    /// A certificate's key cannot be read.
    #[error(transparent)]
    Certificate(#[from] X509Error),
    /// A key attestor without keys.
    #[error("no public keys configured")]
    NoKeys,
    /// A certificate chain over the length bound (the bound).
    #[error("certificate chain longer than {0}")]
    ChainTooLong(usize),
    /// Keyless verification without the certificate annotation.
    #[error(
        "keyless verification needs the {ANNOTATION_CERTIFICATE} annotation, which is missing"
    )]
    NoCertificate,
    /// The chain annotation holds more than the path bound.
    #[error("chain annotation has more than {MAX_PATH_LEN} certificates")]
    ChainAnnotationTooLong,
    /// The one configured key did not verify the signature (why).
    #[error("signature does not verify: {0}")]
    BadSignature(#[source] Box<LayerError>),
    /// A key that does not verify the signature.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// A DSSE envelope that cannot be read, or that no signature of
    /// verifies.
    #[error(transparent)]
    Dsse(#[from] DsseError),
    /// A base64 annotation that cannot be decoded.
    #[error(transparent)]
    Encoding(#[from] EncodingError),
    /// The Rekor bundle annotation, or the entry it carries, is not
    /// accepted.
    #[error(transparent)]
    Rekor(#[from] RekorError),
    /// The RFC 3161 timestamp does not read or does not verify.
    #[error(transparent)]
    Timestamp(#[from] TimestampError),
    /// None of the configured keys verified the signature (how many).
    #[error("signature does not verify with any of the {0} configured keys")]
    NoKeyVerifies(usize),
    /// A path without the issuer an SCT check needs.
    #[error(
        "certificate chain must contain at least a certificate and its issuer to check its SCT"
    )]
    NoSctIssuer,
    /// The transparency log is required and the layer has no bundle.
    #[error("no Rekor bundle ({ANNOTATION_BUNDLE} annotation) on the signature, and the transparency log is not ignored")]
    NoRekorBundle,
    /// No verifier to match the log entry against.
    #[error("no verifier")]
    NoVerifier,
    /// `ctlog.tsaCertChain` is set and the layer carries no timestamp.
    #[error("no RFC 3161 timestamp ({ANNOTATION_RFC3161} annotation) on the signature, which ctlog.tsaCertChain requires")]
    NoTimestamp,
    /// The timestamp annotation is not JSON (the parser's error).
    #[error(
        "the {ANNOTATION_RFC3161} annotation is not {{\"SignedRFC3161Timestamp\": <base64>}}: {0}"
    )]
    TimestampAnnotation(#[source] Shared<serde_json::Error>),
    /// The timestamp annotation's JSON has no `SignedRFC3161Timestamp` string.
    #[error(
        "the {ANNOTATION_RFC3161} annotation is not {{\"SignedRFC3161Timestamp\": <base64>}}: no SignedRFC3161Timestamp"
    )]
    NoSignedTimestamp,
    /// A layer over the payload bound.
    #[error("signature layer larger than 16 MiB")]
    TooLarge,
    /// An image digest that is not `sha256:<hex>`.
    #[error("image digest {0:?} is not sha256:<hex>")]
    BadDigest(String),
    /// A `.sig` layer of another media type.
    #[error("signature layer media type is {0:?}, not {MEDIA_TYPE_SIMPLESIGNING}")]
    SignatureMediaType(String),
    /// A simple-signing payload that is not JSON (the parser's error).
    #[error("invalid simple-signing payload: {0}")]
    SimpleSigningJson(#[source] Shared<serde_json::Error>),
    /// A payload of another `critical.type`.
    #[error("signature payload type is {0:?}, not {SIMPLESIGNING_TYPE:?}")]
    PayloadType(Option<String>),
    /// The payload signs another image (the digest it names, or `(none)`).
    #[error("signature is for image digest {signed}, not {digest}")]
    OtherImage {
        /// The digest the payload names.
        signed: String,
        /// The image's digest.
        digest: String,
    },
    /// A required payload annotation that is missing or different.
    #[error("signature annotation {key:?} is {have}, required {want:?}")]
    Annotation {
        /// The annotation's key.
        key: String,
        /// Its value as JSON, or `missing`.
        have: String,
        /// The value required.
        want: String,
    },
    /// A `.sig` layer without its signature annotation.
    #[error("signature layer has no {ANNOTATION_SIGNATURE} annotation")]
    NoSignatureAnnotation,
    /// An `.att` layer of another media type.
    #[error("attestation layer media type is {0:?}, not {MEDIA_TYPE_DSSE}")]
    AttestationMediaType(String),
    /// A DSSE payload of another type.
    #[error("attestation payload type is {0:?}, not {INTOTO_PAYLOAD_TYPE}")]
    AttestationPayloadType(String),
    /// A DSSE payload that is not JSON (the parser's error).
    #[error("invalid in-toto statement: {0}")]
    StatementJson(#[source] Shared<serde_json::Error>),
    /// A payload that is not an in-toto statement (its `_type`).
    #[error("attestation is not an in-toto statement (_type {0:?})")]
    NotStatement(Option<String>),
    /// No subject names the image's digest.
    #[error("attestation subjects do not include the image digest {0}")]
    NoSubject(String),
    /// No subject names the image's digest (when subject annotations are required).
    #[error("no subject of the in-toto statement has the image digest {0}")]
    NoAnnotatedSubject(String),
    /// A required subject annotation that is missing or different.
    #[error("statement subject annotation {key:?} is {have}, required {want:?}")]
    SubjectAnnotation {
        /// The annotation's key.
        key: String,
        /// Its value as JSON, or `missing`.
        have: String,
        /// The value required.
        want: String,
    },
}

impl LayerError {
    /// The class of this failure (see the type's documentation).
    pub fn reason(&self) -> Reason {
        match self {
            LayerError::BadSignature(_) | LayerError::NoKeyVerifies(_) => Reason::BadSignature,
            LayerError::OtherImage { .. }
            | LayerError::Annotation { .. }
            | LayerError::NoSubject(_)
            | LayerError::NoAnnotatedSubject(_)
            | LayerError::SubjectAnnotation { .. } => Reason::PayloadMismatch,
            LayerError::NoSctIssuer => Reason::TransparencyLog,
            LayerError::NoTimestamp
            | LayerError::TimestampAnnotation(_)
            | LayerError::NoSignedTimestamp => Reason::Timestamp,
            LayerError::CertificateAnnotation(e)
            | LayerError::ChainAnnotation(e)
            | LayerError::Certificate(e) => e.reason(),
            LayerError::Key(e) => e.reason(),
            LayerError::Dsse(e) => e.reason(),
            LayerError::Encoding(e) => e.reason(),
            LayerError::Rekor(e) => e.reason(),
            LayerError::Timestamp(e) => e.reason(),
            _ => Reason::Malformed,
        }
    }
}

/// The payload media type of a cosign signature layer.
pub const MEDIA_TYPE_SIMPLESIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The payload media type of a cosign attestation layer.
pub const MEDIA_TYPE_DSSE: &str = "application/vnd.dsse.envelope.v1+json";
/// The annotation holding a layer's base64 signature.
pub const ANNOTATION_SIGNATURE: &str = "dev.cosignproject.cosign/signature";
/// The annotation holding a keyless signer's PEM certificate.
pub const ANNOTATION_CERTIFICATE: &str = "dev.sigstore.cosign/certificate";
/// The annotation holding the certificate's PEM chain.
pub const ANNOTATION_CHAIN: &str = "dev.sigstore.cosign/chain";
/// The annotation holding the Rekor bundle (SET and entry).
pub const ANNOTATION_BUNDLE: &str = "dev.sigstore.cosign/bundle";
/// The annotation holding an RFC 3161 timestamp over the signature
/// (`{"SignedRFC3161Timestamp": "<base64 TimeStampResp>"}`).
pub const ANNOTATION_RFC3161: &str = "dev.sigstore.cosign/rfc3161timestamp";

const SIMPLESIGNING_TYPE: &str = "cosign container image signature";
const INTOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
const STATEMENT_TYPES: &[&str] = &[
    "https://in-toto.io/Statement/v0.1",
    "https://in-toto.io/Statement/v1",
];
/// Largest layer payload accepted.
const MAX_PAYLOAD: usize = 16 << 20;

/// A key that may have made the signature, and the PEMs a Rekor entry may
/// name for it.
struct Signer {
    key: PublicKey,
    pems: Vec<String>,
}

/// A certificate to validate once the trusted time is known.
struct CertCheck<'a> {
    leaf: Certificate,
    intermediates: Vec<Certificate>,
    roots: Vec<Certificate>,
    identities: Option<&'a [IdentityRule]>,
}

/// What the signed bytes are and how a Rekor entry must match them.
trait Signed {
    /// Verifies under `key`; returns the signature that verified.
    fn verify(&self, key: &PublicKey, opts: &Options) -> Result<Vec<u8>, LayerError>;
    /// The entry logs this signature, made by the key named by `pem`.
    fn check_entry(&self, body: &Body, signature: &[u8], pem: &str) -> Result<(), RekorError>;
    /// What an RFC 3161 timestamp is over, as cosign stamps it: the raw
    /// `signature` of a `.sig` layer, the whole envelope of an attestation.
    fn stamped<'s>(&'s self, signature: &'s [u8]) -> &'s [u8];
}

struct SimpleSigning<'a> {
    payload: &'a [u8],
    signature: Vec<u8>,
}

impl Signed for SimpleSigning<'_> {
    fn verify(&self, key: &PublicKey, opts: &Options) -> Result<Vec<u8>, LayerError> {
        key.verify(self.payload, &self.signature, opts.hash)?;
        Ok(self.signature.clone())
    }
    fn check_entry(&self, body: &Body, signature: &[u8], pem: &str) -> Result<(), RekorError> {
        body.check_hashedrekord(&Sha256::digest(self.payload), signature, pem)
    }
    fn stamped<'s>(&'s self, signature: &'s [u8]) -> &'s [u8] {
        signature
    }
}

struct Dsse<'a> {
    bytes: &'a [u8],
    envelope: Envelope,
}

impl Signed for Dsse<'_> {
    fn verify(&self, key: &PublicKey, opts: &Options) -> Result<Vec<u8>, LayerError> {
        Ok(self.envelope.verify(key, opts.hash).map(<[u8]>::to_vec)?)
    }
    fn check_entry(&self, body: &Body, signature: &[u8], pem: &str) -> Result<(), RekorError> {
        body.check_envelope(self.bytes, &self.envelope, signature, pem)
    }
    fn stamped<'s>(&'s self, _signature: &'s [u8]) -> &'s [u8] {
        self.bytes
    }
}

fn annotation<'a>(layer: &'a Layer, key: &str) -> Option<&'a str> {
    layer
        .annotations
        .get(key)
        .map(String::as_str)
        .filter(|v| !v.trim().is_empty())
}

fn key_pem(key: &PublicKey) -> String {
    pem_encode("PUBLIC KEY", key.spki_der())
}

fn layer_certificate(layer: &Layer) -> Result<Option<Certificate>, LayerError> {
    annotation(layer, ANNOTATION_CERTIFICATE)
        .map(|pem| {
            Certificate::read_pem(pem)
                .map_err(LayerError::CertificateAnnotation)?
                .into_iter()
                .next()
                .ok_or(LayerError::EmptyCertificateAnnotation)
        })
        .transpose()
}

/// The keys that may have signed, and the certificate to validate.
fn signers<'a>(
    layer: &Layer,
    opts: &'a Options,
) -> Result<(Vec<Signer>, Option<CertCheck<'a>>), LayerError> {
    match &opts.verifier {
        Verifier::Keys(keys) => {
            if keys.is_empty() {
                return Err(LayerError::NoKeys);
            }
            // Cosign's comparePublicKey names the layer's certificate when
            // it has one; accept it when its key is the verifying key.
            let cert = layer_certificate(layer).ok().flatten();
            let signers = keys
                .iter()
                .map(|key| {
                    let mut pems = vec![key_pem(key)];
                    if let Some(c) = &cert {
                        if c.subject_key().is_ok_and(|k| k == *key) {
                            pems.push(c.pem());
                        }
                    }
                    Signer {
                        key: key.clone(),
                        pems,
                    }
                })
                .collect();
            Ok((signers, None))
        }
        Verifier::Certificate { cert, chain } => {
            let signer = Signer {
                key: cert.subject_key()?,
                pems: vec![cert.pem()],
            };
            let check = match chain.split_last() {
                None => None,
                Some((root, intermediates)) => {
                    if chain.len() > MAX_PATH_LEN + 1 {
                        return Err(LayerError::ChainTooLong(MAX_PATH_LEN + 1));
                    }
                    Some(CertCheck {
                        leaf: cert.clone(),
                        intermediates: intermediates.to_vec(),
                        roots: vec![root.clone()],
                        identities: None,
                    })
                }
            };
            Ok((vec![signer], check))
        }
        Verifier::Keyless { identities, roots } => {
            let leaf = layer_certificate(layer)?.ok_or(LayerError::NoCertificate)?;
            let mut intermediates = match annotation(layer, ANNOTATION_CHAIN) {
                Some(pem) => Certificate::read_pem(pem).map_err(LayerError::ChainAnnotation)?,
                None => Vec::new(),
            };
            if intermediates.len() > MAX_PATH_LEN {
                return Err(LayerError::ChainAnnotationTooLong);
            }
            intermediates.extend(roots.iter().cloned());
            let signer = Signer {
                key: leaf.subject_key()?,
                pems: vec![leaf.pem()],
            };
            Ok((
                vec![signer],
                Some(CertCheck {
                    leaf,
                    intermediates,
                    roots: roots.clone(),
                    identities: Some(identities),
                }),
            ))
        }
    }
}

/// Signature, transparency and certificate checks shared by both layer kinds.
fn verify_common(layer: &Layer, opts: &Options, signed: &dyn Signed) -> Result<Verified> {
    let (signers, cert_check) = signers(layer, opts)?;
    let mut found = None;
    let mut last_error = None;
    for signer in &signers {
        match signed.verify(&signer.key, opts) {
            Ok(sig) => {
                found = Some((signer, sig));
                break;
            }
            Err(e) => last_error = Some(e),
        }
    }
    let Some((signer, signature)) = found else {
        return Err(match (signers.len(), last_error) {
            (1, Some(why)) => LayerError::BadSignature(Box::new(why)),
            (n, _) => LayerError::NoKeyVerifies(n),
        }
        .into());
    };

    // cosign's `UseSignedTimestamps` (`ctlog.tsaCertChain`): a timestamp
    // by that authority is required, and the certificate must be valid at
    // its time, as at the log's.
    let stamped = match opts.tsa.is_empty() {
        true => None,
        false => Some(
            signed_timestamp(layer, signed.stamped(&signature), &opts.tsa)
                .class(Reason::Timestamp)?,
        ),
    };
    let (trusted_time, tlog_verified) = match (opts.ignore_tlog, stamped) {
        (true, Some(t)) => (t, false),
        (true, None) => (opts.now, false),
        (false, _) => (
            transparency(layer, opts, signed, signer, &signature).class(Reason::TransparencyLog)?,
            true,
        ),
    };
    let times: Vec<i64> = std::iter::once(trusted_time)
        .chain(stamped.filter(|&t| t != trusted_time))
        .collect();

    let mut identity = None;
    let mut certificate = None;
    if let Some(check) = cert_check {
        let mut path = Vec::new();
        for &t in &times {
            path = verify_chain(
                &check.leaf,
                &check.intermediates,
                &check.roots,
                t,
                Purpose::CodeSigning,
            )
            .class(Reason::UntrustedChain)?;
        }
        let id = Identity::of(&check.leaf).class(Reason::Identity)?;
        if let Some(rules) = check.identities {
            identities_match(rules, &id).class(Reason::Identity)?;
        }
        if !opts.ignore_sct {
            let issuer = path.get(1).ok_or(LayerError::NoSctIssuer)?;
            verify_embedded_sct(&check.leaf, issuer, &opts.ctlogs)
                .class(Reason::TransparencyLog)?;
        }
        identity = Some(id);
        certificate = Some(check.leaf);
    } else if let Verifier::Certificate { cert, .. } = &opts.verifier {
        identity = Identity::of(cert).ok();
        certificate = Some(cert.clone());
    }
    Ok(Verified {
        trusted_time,
        tlog_verified,
        identity,
        certificate,
        key: signer.key.clone(),
        payload: Value::Null,
    })
}

/// The time of the layer's RFC 3161 timestamp over `message`, verified
/// against `tsas`.
fn signed_timestamp(
    layer: &Layer,
    message: &[u8],
    tsas: &[CertificateAuthority],
) -> Result<i64, LayerError> {
    let json = annotation(layer, ANNOTATION_RFC3161).ok_or(LayerError::NoTimestamp)?;
    let doc: Value =
        serde_json::from_str(json).map_err(|e| LayerError::TimestampAnnotation(e.into()))?;
    let b64 = doc["SignedRFC3161Timestamp"]
        .as_str()
        .ok_or(LayerError::NoSignedTimestamp)?;
    let der = crate::encoding::b64decode("SignedRFC3161Timestamp", b64)?;
    let token = TimeStampToken::parse(&der)?;
    Ok(crate::timestamp::verify(&token, message, tsas)?)
}

/// The layer's Rekor bundle, verified against the logs and the signature:
/// the time it proves.
fn transparency(
    layer: &Layer,
    opts: &Options,
    signed: &dyn Signed,
    signer: &Signer,
    signature: &[u8],
) -> Result<i64, LayerError> {
    let json = annotation(layer, ANNOTATION_BUNDLE).ok_or(LayerError::NoRekorBundle)?;
    let bundle = CosignBundle::parse(json)?;
    let time = bundle.verify(&opts.tlogs)?;
    let body = bundle.entry()?;
    let mut result = Err(LayerError::NoVerifier);
    for pem in &signer.pems {
        result = signed
            .check_entry(&body, signature, pem)
            .map_err(LayerError::from);
        if result.is_ok() {
            break;
        }
    }
    result?;
    Ok(time)
}

fn check_size(layer: &Layer) -> Result<(), LayerError> {
    if layer.payload.len() > MAX_PAYLOAD {
        return Err(LayerError::TooLarge);
    }
    Ok(())
}

fn digest_hex(digest: &str) -> Result<&str, LayerError> {
    digest
        .strip_prefix("sha256:")
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| LayerError::BadDigest(digest.to_string()))
}

/// Verifies a `.sig` layer for the image manifest `digest` (`sha256:<hex>`).
pub fn verify_signature(layer: &Layer, digest: &str, opts: &Options) -> Result<Verified> {
    check_size(layer)?;
    digest_hex(digest)?;
    if layer.media_type != MEDIA_TYPE_SIMPLESIGNING {
        return Err(LayerError::SignatureMediaType(layer.media_type.clone()).into());
    }
    let payload: Value = ivpol_refs::json::from_slice(&layer.payload)
        .map_err(|e| LayerError::SimpleSigningJson(e.into()))?;
    let kind = payload.pointer("/critical/type").and_then(Value::as_str);
    if kind != Some(SIMPLESIGNING_TYPE) {
        return Err(LayerError::PayloadType(kind.map(str::to_string)).into());
    }
    let signed_digest = payload
        .pointer("/critical/image/docker-manifest-digest")
        .and_then(Value::as_str);
    if signed_digest != Some(digest) {
        return Err(LayerError::OtherImage {
            signed: signed_digest.unwrap_or("(none)").to_string(),
            digest: digest.to_string(),
        }
        .into());
    }
    for (k, want) in &opts.annotations {
        let have = payload.pointer("/optional").and_then(|o| o.get(k));
        if have.and_then(Value::as_str) != Some(want.as_str()) {
            return Err(LayerError::Annotation {
                key: k.clone(),
                have: have
                    .map(Value::to_string)
                    .unwrap_or_else(|| "missing".into()),
                want: want.clone(),
            }
            .into());
        }
    }
    let sig_b64 =
        annotation(layer, ANNOTATION_SIGNATURE).ok_or(LayerError::NoSignatureAnnotation)?;
    let signed = SimpleSigning {
        payload: &layer.payload,
        signature: b64decode("signature annotation", sig_b64).map_err(LayerError::from)?,
    };
    let mut verified = verify_common(layer, opts, &signed)?;
    verified.payload = payload;
    Ok(verified)
}

/// Verifies an `.att` layer for the image `digest`; returns the in-toto
/// statement.
pub fn verify_attestation(layer: &Layer, digest: &str, opts: &Options) -> Result<Value> {
    verify_attestation_verified(layer, digest, opts).map(|v| v.payload)
}

/// As `verify_attestation`, with the trusted time and identity; the
/// statement is `payload`.
pub fn verify_attestation_verified(
    layer: &Layer,
    digest: &str,
    opts: &Options,
) -> Result<Verified> {
    check_size(layer)?;
    let hex = digest_hex(digest)?;
    if layer.media_type != MEDIA_TYPE_DSSE {
        return Err(LayerError::AttestationMediaType(layer.media_type.clone()).into());
    }
    let envelope = Envelope::parse(&layer.payload).map_err(LayerError::from)?;
    if envelope.payload_type != INTOTO_PAYLOAD_TYPE {
        return Err(LayerError::AttestationPayloadType(envelope.payload_type.clone()).into());
    }
    let signed = Dsse {
        bytes: &layer.payload,
        envelope,
    };
    // The signature first: nothing unsigned is read as the statement, and
    // tampered bytes are a bad signature, not a malformed statement.
    let mut verified = verify_common(layer, opts, &signed)?;
    let statement: Value = ivpol_refs::json::from_slice(&signed.envelope.payload)
        .map_err(|e| LayerError::StatementJson(e.into()))?;
    let kind = statement.get("_type").and_then(Value::as_str);
    if !kind.is_some_and(|k| STATEMENT_TYPES.contains(&k)) {
        return Err(LayerError::NotStatement(kind.map(str::to_string)).into());
    }
    if subject_of(&statement, hex).is_none() {
        return Err(LayerError::NoSubject(digest.to_string()).into());
    }
    subject_annotations(&statement, digest, &opts.annotations)?;
    verified.payload = statement;
    Ok(verified)
}

/// The statement's first subject whose sha256 is `hex`.
fn subject_of<'a>(statement: &'a Value, hex: &str) -> Option<&'a Value> {
    let subjects = statement.get("subject").and_then(Value::as_array)?;
    subjects.iter().find(|s| {
        s.pointer("/digest/sha256")
            .and_then(Value::as_str)
            .is_some_and(|d| d.eq_ignore_ascii_case(hex))
    })
}

/// Cosign's `IntotoSubjectClaimVerifier`: the in-toto statement's subject
/// for the image `digest` carries every required annotation with exactly
/// that string value. This is where `cosign sign -a k=v` (v3, Sigstore
/// bundles) writes annotations, and what `cosign verify --annotations`
/// and `verify-attestation --annotations` check, for bundles and `.att`
/// layers alike.
pub fn check_subject_annotations(
    statement: &Value,
    digest: &str,
    wanted: &std::collections::BTreeMap<String, String>,
) -> Result<()> {
    Ok(subject_annotations(statement, digest, wanted)?)
}

/// As [`check_subject_annotations`].
fn subject_annotations(
    statement: &Value,
    digest: &str,
    wanted: &std::collections::BTreeMap<String, String>,
) -> Result<(), LayerError> {
    if wanted.is_empty() {
        return Ok(());
    }
    let hex = digest_hex(digest)?;
    let subject = subject_of(statement, hex)
        .ok_or_else(|| LayerError::NoAnnotatedSubject(digest.to_string()))?;
    let have = subject.get("annotations");
    for (k, want) in wanted {
        let value = have.and_then(|a| a.get(k));
        if value.and_then(Value::as_str) != Some(want.as_str()) {
            return Err(LayerError::SubjectAnnotation {
                key: k.clone(),
                have: value
                    .map(Value::to_string)
                    .unwrap_or_else(|| "missing".into()),
                want: want.clone(),
            });
        }
    }
    Ok(())
}
