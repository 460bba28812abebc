//! Signature verification, for the component and for native tools: keys and X.509
//! (`keys`, `x509`), Sigstore trust material (`trust`) and the TUF
//! repositories it may come from (`tuf`), the Rekor log (`rekor`), DSSE
//! (`dsse`), cosign's legacy `.sig`/`.att` layers (`cosign`) and Sigstore
//! bundles (`sigstore_bundle`).
//!
//! Everything here is pure: bytes and trust material in, a verdict out.
//! Fetching from registries is the engine's job, so every check can be
//! tested natively against other projects' real data. It is its own crate
//! so that the compiler holds that line: nothing here can reach Kubernetes
//! objects, policies or the network.

// Nothing here needs unsafe code; the component glue that does lives in
// the guest crate.
#![forbid(unsafe_code)]
// Every public item says what it is: the guest, the host's tools and the
// bench read this crate's API from its docs.
#![deny(missing_docs)]

use thiserror::Error;

/// Why a signature, certificate or log entry was not accepted. The text is
/// what users see in a failed verification, so it names what was wrong;
/// the [`Reason`] is its class, for decision logs and metrics.
///
/// Each module's failures are its own enum, wrapped here; the texts are
/// the ones users have always seen, so tests and Kyverno-compatible
/// messages do not change with the type.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum VerifyError {
    /// A DSSE envelope that does not verify or cannot be read.
    #[error(transparent)]
    Dsse(#[from] dsse::DsseError),
    /// Base64, hex or PEM text that cannot be decoded.
    #[error(transparent)]
    Encoding(#[from] encoding::EncodingError),
    /// An inclusion proof that does not lead to the log's root.
    #[error(transparent)]
    Merkle(#[from] sigstore_bundle::merkle::MerkleError),
    /// A public key that is refused, or a signature it does not verify.
    #[error(transparent)]
    Key(#[from] keys::KeyError),
    /// A Rekor entry, its SET, or the cosign bundle annotation carrying them.
    #[error(transparent)]
    Rekor(#[from] rekor::RekorError),
    /// A Sigstore trusted root that cannot be read.
    #[error(transparent)]
    Trust(#[from] trust::TrustError),
    /// A log checkpoint (signed note) that cannot be read.
    #[error(transparent)]
    Checkpoint(#[from] sigstore_bundle::checkpoint::CheckpointError),
    /// A Fulcio certificate's identity: unreadable, or not the one expected.
    #[error(transparent)]
    Fulcio(#[from] x509::fulcio::FulcioError),
    /// A certificate's embedded SCTs.
    #[error(transparent)]
    Sct(#[from] x509::sct::SctError),
    /// A certificate, or a path of them to a trusted root.
    #[error(transparent)]
    X509(#[from] x509::X509Error),
    /// A cosign `.sig` or `.att` layer.
    #[error(transparent)]
    Layer(#[from] cosign::LayerError),
    /// A Sigstore bundle that cannot be read.
    #[error(transparent)]
    Bundle(#[from] sigstore_bundle::bundle::BundleError),
    /// An RFC 3161 timestamp.
    #[error(transparent)]
    Timestamp(#[from] timestamp::TimestampError),
    /// A log entry whose body does not describe the bundle.
    #[error(transparent)]
    Entry(#[from] sigstore_bundle::EntryError),
    /// A Notary envelope that cannot be read.
    #[error(transparent)]
    Envelope(#[from] notary::EnvelopeError),
    /// A Notary envelope's chain that breaks the Notary certificate rules.
    #[error(transparent)]
    NotaryChain(#[from] notary::certs::ChainError),
    /// A Notary signature that does not verify.
    #[error(transparent)]
    Notary(#[from] notary::NotaryError),
    /// A certificate of a Notary chain that is revoked, or whose status
    /// could not be learnt.
    #[error(transparent)]
    Revocation(#[from] notary::revocation::RevocationError),
    /// A TUF repository that does not hand out the target.
    #[error(transparent)]
    Tuf(#[from] tuf::TufError),
    /// A signature given outside admission that was not accepted.
    #[error(transparent)]
    Standalone(#[from] standalone::StandaloneError),
    /// A parsed bundle that does not verify against the trust material
    /// and the policy.
    #[error(transparent)]
    Check(#[from] sigstore_bundle::CheckError),
    /// `source` with `context` in front of its message ([`VerifyError::context`]).
    #[error("{context}: {source}")]
    Context {
        /// What was being done.
        context: String,
        /// What went wrong.
        source: Box<VerifyError>,
    },
    /// `source`, classed by the verification stage it failed in
    /// ([`Classify::class`]); the message is unchanged.
    #[error("{source}")]
    Classified {
        /// The stage's class.
        reason: Reason,
        /// The failure.
        source: Box<VerifyError>,
    },
}

/// The class of a failed verification. Every failure has one; evidence
/// that cannot even be read is [`Reason::Malformed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// No signature or attestation was found for the image.
    NotFound,
    /// A signature does not verify with the key (or certificate key).
    BadSignature,
    /// The certificate's identity or issuer does not match, or a required
    /// extension is missing or different.
    Identity,
    /// The certificate does not chain to a trusted root.
    UntrustedChain,
    /// A transparency-log entry (or an SCT) is missing or invalid.
    TransparencyLog,
    /// A signing time outside the certificate's (or key's) validity
    /// window, or a timestamp that does not verify.
    Timestamp,
    /// The signed payload does not name this image's digest, or its
    /// content does not match what the policy asks.
    PayloadMismatch,
    /// No attestation of the wanted type verified.
    AttestationMissing,
    /// The registry answered with an error, or could not be reached.
    Registry,
    /// The host's network policy refused the registry.
    RegistryRefused,
    /// A certificate is revoked, or its revocation status could not be
    /// learnt.
    Revocation,
    /// The evidence or the trust material could not be read.
    Malformed,
}

impl Reason {
    /// The reason's name in decision logs, audit annotations and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NotFound => "not-found",
            Reason::BadSignature => "bad-signature",
            Reason::Identity => "identity",
            Reason::UntrustedChain => "untrusted-chain",
            Reason::TransparencyLog => "transparency-log",
            Reason::Timestamp => "timestamp",
            Reason::PayloadMismatch => "payload-mismatch",
            Reason::AttestationMissing => "attestation-missing",
            Reason::Registry => "registry",
            Reason::RegistryRefused => "registry-refused",
            Reason::Revocation => "revocation",
            Reason::Malformed => "malformed",
        }
    }
}

impl VerifyError {
    /// The class of this failure, for decision logs and metrics.
    pub fn reason(&self) -> Reason {
        match self {
            VerifyError::Dsse(e) => e.reason(),
            VerifyError::Encoding(e) => e.reason(),
            VerifyError::Merkle(e) => e.reason(),
            VerifyError::Key(e) => e.reason(),
            VerifyError::Rekor(e) => e.reason(),
            VerifyError::Trust(e) => e.reason(),
            VerifyError::Checkpoint(e) => e.reason(),
            VerifyError::Fulcio(e) => e.reason(),
            VerifyError::Sct(e) => e.reason(),
            VerifyError::X509(e) => e.reason(),
            VerifyError::Layer(e) => e.reason(),
            VerifyError::Bundle(e) => e.reason(),
            VerifyError::Timestamp(e) => e.reason(),
            VerifyError::Entry(e) => e.reason(),
            VerifyError::Check(e) => e.reason(),
            VerifyError::Standalone(e) => e.reason(),
            VerifyError::Tuf(e) => e.reason(),
            VerifyError::Envelope(e) => e.reason(),
            VerifyError::Notary(e) => e.reason(),
            VerifyError::NotaryChain(e) => e.reason(),
            VerifyError::Revocation(e) => e.reason(),
            VerifyError::Classified { reason, .. } => *reason,
            VerifyError::Context { source, .. } => source.reason(),
        }
    }

    /// The same failure with `context` in front of its message.
    pub fn context(self, context: impl std::fmt::Display) -> VerifyError {
        VerifyError::Context {
            context: context.to_string(),
            source: Box::new(self),
        }
    }
}

/// Classes the failures of one verification stage: a failure that its
/// own check left [`Reason::Malformed`] takes the stage's class (a
/// signature that does not verify inside the chain stage is an untrusted
/// chain); one that knows its class better keeps it (a validity window).
pub trait Classify<T> {
    /// The failure, if any, classed as `reason` unless it knows better.
    fn class(self, reason: Reason) -> Result<T>;
}

impl<T> Classify<T> for Result<T> {
    fn class(self, reason: Reason) -> Result<T> {
        self.map_err(|e| match e.reason() {
            Reason::Malformed => VerifyError::Classified {
                reason,
                source: Box::new(e),
            },
            _ => e,
        })
    }
}

/// What every verification returns.
pub type Result<T> = std::result::Result<T, VerifyError>;

pub mod cosign;
pub mod dsse;
pub mod encoding;
pub mod keys;
pub mod notary;
pub mod rekor;
pub mod sigstore_bundle;
pub mod standalone;
#[cfg(any(test, feature = "test-support"))]
pub mod testdata;
pub mod timestamp;
pub mod trust;
pub mod tuf;
pub mod x509;

/// Seconds since the Unix epoch: the time certificates are checked at when
/// no transparency log or timestamp vouches for the signing time.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
