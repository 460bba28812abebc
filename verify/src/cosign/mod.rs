//! Cosign's legacy `.sig` / `.att` layers: the pure
//! verifier of one layer, given its bytes and annotations and the policy's
//! verification material. Follows cosign's `verifyInternal` /
//! `VerifyBundle` / `ValidateAndUnpackCert` as Kyverno configures them:
//!
//! - `Verifier::Keys`: any key verifies; a certificate annotation is ignored.
//! - `Verifier::Certificate` without chain: only the certificate's key is
//!   used (Kyverno's `signature.LoadVerifier(cert.PublicKey)`), no validity
//!   check. With a chain (intermediates…root, root last): the certificate
//!   must chain to the chain's last certificate, for code signing, at the
//!   trusted time, and carry a valid SCT unless `ignore_sct`
//!   (`ValidateAndUnpackCertWithChain`).
//! - `Verifier::Keyless`: the layer's certificate annotation is the leaf,
//!   its chain annotation (≤ 10 certificates) plus `roots` the candidate
//!   intermediates, `roots` the anchors; chain, identities and SCT (unless
//!   `ignore_sct`) are checked at the trusted time.
//! - Transparency, unless `ignore_tlog`: the bundle annotation must be there,
//!   its SET verify under `tlogs`, and its entry log this payload, signature
//!   and key/certificate. Its integrated time is the trusted time; with
//!   `ignore_tlog` the trusted time is `now`.
//!
//! Cosign validates Fulcio chains at the leaf's notBefore and then checks
//! the trusted time lies in the leaf's validity; validating the whole path
//! at the trusted time, as here, is the same for the leaf and stricter for
//! the CAs.
//!
//! Specification: <https://github.com/sigstore/cosign/blob/main/specs/SIGNATURE_SPEC.md>

mod layer;

use std::collections::BTreeMap;

pub use layer::{
    check_subject_annotations, verify_attestation, verify_attestation_verified, verify_signature,
    LayerError,
};
pub use layer::{
    ANNOTATION_BUNDLE, ANNOTATION_CERTIFICATE, ANNOTATION_CHAIN, ANNOTATION_RFC3161,
    ANNOTATION_SIGNATURE, MEDIA_TYPE_DSSE, MEDIA_TYPE_SIMPLESIGNING,
};

use super::keys::{HashAlgorithm, PublicKey};
use super::trust::{CertificateAuthority, LogKey};
use super::x509::fulcio::{Identity, IdentityRule};
use super::x509::Certificate;

/// One layer of a `.sig` or `.att` image.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Layer {
    /// The layer's media type (simple signing or DSSE).
    pub media_type: String,
    /// The layer blob (already checked against its descriptor digest).
    pub payload: Vec<u8>,
    /// The layer's annotations (signature, certificate, chain, bundle).
    pub annotations: BTreeMap<String, String>,
}

/// What the policy trusts to have signed.
#[derive(Debug, Clone)]
// The API keeps `cert: Certificate` unboxed; there is one per verification.
#[allow(clippy::large_enum_variant)]
pub enum Verifier {
    /// Kyverno `key`: any of these keys.
    Keys(Vec<PublicKey>),
    /// Kyverno `certificate`: the certificate's key; `chain` (intermediates
    /// then root), if not empty, validates the certificate.
    Certificate {
        /// The certificate whose key must have signed.
        cert: Certificate,
        /// Intermediates then root that validate `cert`, if any.
        chain: Vec<Certificate>,
    },
    /// Kyverno `keyless`: a certificate from the layer, chaining to `roots`
    /// (anchors; roots and intermediates may be mixed), matching one of
    /// `identities`.
    Keyless {
        /// The identities the certificate must match (any one).
        identities: Vec<IdentityRule>,
        /// The anchors the certificate must chain to.
        roots: Vec<Certificate>,
    },
}

/// Everything one layer verification needs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Who must have signed.
    pub verifier: Verifier,
    /// The signature hash (Kyverno `key.hashAlgorithm`); None tries SHA-256
    /// then the key's own hash.
    pub hash: Option<HashAlgorithm>,
    /// Rekor keys.
    pub tlogs: Vec<LogKey>,
    /// CT log keys (for SCTs).
    pub ctlogs: Vec<LogKey>,
    /// Skip the Rekor bundle check (Kyverno `ctlog.insecureIgnoreTlog`).
    pub ignore_tlog: bool,
    /// Skip the certificate's SCT check (Kyverno `ctlog.insecureIgnoreSCT`).
    pub ignore_sct: bool,
    /// `cosign.annotations`: required `optional` annotations of a
    /// simple-signing payload, or annotations of the in-toto statement's
    /// subject for the image (attestations and Sigstore bundles).
    pub annotations: BTreeMap<String, String>,
    /// `ctlog.tsaCertChain` as one timestamp authority (leaf first, root
    /// last); when set, every signature needs an RFC 3161 timestamp by it
    /// (cosign's `UseSignedTimestamps`). Empty: timestamps are not read.
    pub tsa: Vec<CertificateAuthority>,
    /// Current unix time.
    pub now: i64,
}

/// A layer that verified.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The integrated time of the Rekor entry, or `now` with `ignore_tlog`.
    pub trusted_time: i64,
    /// Whether a Rekor SET was verified.
    pub tlog_verified: bool,
    /// The signing certificate's identity (keyless and certificate modes).
    pub identity: Option<Identity>,
    /// The signing certificate (keyless and certificate modes).
    pub certificate: Option<Certificate>,
    /// The key that verified.
    pub key: PublicKey,
    /// The signed JSON: the simple-signing payload, or the in-toto statement.
    pub payload: serde_json::Value,
}

#[cfg(test)]
mod tests;
