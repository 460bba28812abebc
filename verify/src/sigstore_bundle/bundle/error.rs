//! Why a Sigstore bundle could not be read.

use super::{
    MAX_BUNDLE_BYTES, MAX_CHAIN_CERTS, MAX_PROOF_HASHES, MAX_TIMESTAMPS, MAX_TLOG_ENTRIES,
};
use crate::{Reason, Shared};

crate::debug_as_display!(BundleError);
/// Why a Sigstore bundle could not be read. A log entry without the proof
/// its bundle version requires is [`Reason::TransparencyLog`]; the rest is
/// malformed.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    /// A media type that names no known bundle version.
    #[error("unsupported Sigstore bundle media type {0:?}")]
    MediaType(String),
    /// An int64 field (named) whose text is not an integer.
    #[error("{what} {value:?} is not an integer")]
    NotInteger {
        /// The field.
        what: &'static str,
        /// Its text.
        value: String,
    },
    /// An unsigned field (named) that is negative.
    #[error("{what} {value} is negative")]
    Negative {
        /// The field.
        what: &'static str,
        /// Its value.
        value: i64,
    },
    /// A bytes field (named) that is not base64.
    #[error("{what} is not valid base64: {source}")]
    Base64 {
        /// The field.
        what: &'static str,
        /// The decoder's error.
        source: base64::DecodeError,
    },
    /// A required field (named) that is absent.
    #[error("bundle has no {0}")]
    Missing(&'static str),
    /// A bytes field (named) that is empty.
    #[error("bundle {0} is empty")]
    Empty(&'static str),
    /// A hash field (named) that is not 32 bytes (its length).
    #[error("{what} is {len} bytes, not a 32-byte SHA-256 hash")]
    HashLength {
        /// The field.
        what: &'static str,
        /// Its length.
        len: usize,
    },
    /// The document is over the size bound (its size).
    #[error("bundle is {0} bytes, more than the {MAX_BUNDLE_BYTES} allowed")]
    TooLarge(usize),
    /// Not JSON (the parser's error).
    #[error("bundle is not valid JSON: {0}")]
    Json(#[source] Shared<serde_json::Error>),
    /// More log entries than the bound (how many).
    #[error("bundle has {0} transparency log entries, more than the {MAX_TLOG_ENTRIES} allowed")]
    TooManyEntries(usize),
    /// More RFC 3161 timestamps than the bound (how many).
    #[error("bundle has {0} RFC 3161 timestamps, more than the {MAX_TIMESTAMPS} allowed")]
    TooManyTimestamps(usize),
    /// The same timestamp twice.
    #[error("bundle carries the same RFC 3161 timestamp twice")]
    DuplicateTimestamp,
    /// A DSSE envelope without exactly one signature (how many).
    #[error("DSSE envelope has {0} signatures; exactly one is required")]
    DsseSignatures(usize),
    /// Both content kinds.
    #[error("bundle has both messageSignature and dsseEnvelope")]
    BothContents,
    /// Neither content kind.
    #[error("bundle has neither messageSignature nor dsseEnvelope")]
    NoContent,
    /// A v0.1 log entry without its inclusion promise.
    #[error("a v0.1 bundle's log entry must carry an inclusion promise")]
    NoPromise,
    /// A v0.2+ log entry (its index) without an inclusion proof.
    #[error(
        "log entry {0} has no inclusion proof, which a bundle of version 0.2 or later requires"
    )]
    NoProof(u64),
    /// An inclusion proof (its entry's index) without a checkpoint.
    #[error("log entry {0}'s inclusion proof has no checkpoint")]
    NoCheckpoint(u64),
    /// Not exactly one kind of verification material.
    #[error("bundle verificationMaterial must hold exactly one of publicKey, x509CertificateChain and certificate")]
    MaterialKinds,
    /// A v0.3 bundle with a certificate chain.
    #[error(
        "a v0.3 bundle must carry its signing certificate in certificate, not x509CertificateChain"
    )]
    ChainInV03,
    /// An empty certificate chain.
    #[error("bundle has an empty certificate chain")]
    EmptyChain,
    /// A chain over the bound (its length).
    #[error(
        "bundle certificate chain has {0} certificates, more than the {MAX_CHAIN_CERTS} allowed"
    )]
    ChainTooLong(usize),
    /// A v0.1/v0.2 bundle with a single certificate field.
    #[error("a v0.1/v0.2 bundle must carry its certificates in x509CertificateChain")]
    CertificateInV02,
    /// No verification material at all.
    #[error("bundle has no verification material")]
    NoMaterial,
    /// A negative integrated time.
    #[error("log entry integratedTime {0} is negative")]
    NegativeTime(i64),
    /// An inclusion proof over the hash bound (how many).
    #[error("inclusion proof has {0} hashes, more than the {MAX_PROOF_HASHES} allowed")]
    TooManyProofHashes(usize),
    /// A promise without the time it promises.
    #[error("log entry has an inclusion promise but no integratedTime")]
    PromiseWithoutTime,
}

impl BundleError {
    /// The class of this failure (see the type's documentation).
    pub fn reason(&self) -> Reason {
        match self {
            BundleError::NoPromise | BundleError::NoProof(_) | BundleError::NoCheckpoint(_) => {
                Reason::TransparencyLog
            }
            _ => Reason::Malformed,
        }
    }
}
