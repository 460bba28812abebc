//! Signature verification, for the component and for native tools: keys and X.509
//! (`keys`, `x509`), Sigstore trust material (`trust`), the Rekor log
//! (`rekor`), DSSE (`dsse`), RFC 3161 timestamps (`timestamp`), cosign's legacy
//! `.sig`/`.att` layers (`cosign`) and Sigstore bundles (`sigstore_bundle`).
//!
//! Everything here is pure: bytes and trust material in, a verdict out.
//! Fetching from registries is the engine's job, so every check can be
//! tested natively against other projects' real data. It is its own crate
//! so that the compiler holds that line: nothing here can reach Kubernetes
//! objects, policies or the network.
//!
//! Notary Project signatures are ivpol-notary's, and the TUF client that
//! checks a mirror's Sigstore trusted root is ivpol-tuf's: crates over this
//! one that share its keys, encodings, times and errors. This crate may import ivpol-refs
//! only, never the crates built on it: it carries their errors as
//! [`VerifyError::Foreign`], without naming them.

// Nothing here needs unsafe code; the component glue that does lives in
// the guest crate.
#![forbid(unsafe_code)]
// Every public item says what it is: the guest, the host's tools and the
// bench read this crate's API from its docs.
#![deny(missing_docs)]

use thiserror::Error;

/// `Debug` for error types as their `Display`. `std::error::Error`
/// requires `Debug`, so every error that can be a `source()` keeps its
/// `Debug` in the component; a derived one formats every field, and the
/// fields' fields: for the errors that use this, 0.15 MB of the component
/// (docs/performance.md). The message is what a developer wants from
/// `{:?}` of an error anyway.
#[macro_export]
macro_rules! debug_as_display {
    ($($t:ty),+ $(,)?) => {$(
        impl ::core::fmt::Debug for $t {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                ::core::fmt::Display::fmt(self, f)
            }
        }
    )+};
}

debug_as_display!(VerifyError);
/// Why a signature, certificate or log entry was not accepted. The text is
/// what users see in a failed verification, so it names what was wrong;
/// the [`Reason`] is its class, for decision logs and metrics.
///
/// Each module's failures are its own enum, wrapped here; the texts are
/// the ones users have always seen, so tests and Kyverno-compatible
/// messages do not change with the type.
#[derive(Clone, PartialEq, Eq, Error)]
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
    /// A signature given outside admission that was not accepted.
    #[error(transparent)]
    Standalone(#[from] standalone::StandaloneError),
    /// A failure of a verifier built on this crate (ivpol-notary's,
    /// ivpol-tuf's), which this crate cannot name: its text, class and
    /// source are that verifier's own.
    #[error(transparent)]
    Foreign(Foreign),
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
            VerifyError::Foreign(e) => e.reason(),
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

impl<T, E: Into<VerifyError>> Classify<T> for std::result::Result<T, E> {
    fn class(self, reason: Reason) -> Result<T> {
        self.map_err(|e| {
            let e = e.into();
            match e.reason() {
                Reason::Malformed => VerifyError::Classified {
                    reason,
                    source: Box::new(e),
                },
                _ => e,
            }
        })
    }
}

/// What every verification returns: at the crate's entry points a
/// [`VerifyError`], inside it each module's own error.
pub type Result<T, E = VerifyError> = std::result::Result<T, E>;

/// A lower error that cannot be cloned or compared (serde_json's, coset's,
/// regex's), shared so that the errors holding it still can be: two are
/// equal when they say the same. It adds nothing to the lower error's text
/// and hands on its source.
#[derive(Debug)]
pub struct Shared<E>(std::sync::Arc<E>);

impl<E> Shared<E> {
    /// The lower error.
    pub fn get(&self) -> &E {
        &self.0
    }
}

impl<E> Clone for Shared<E> {
    fn clone(&self) -> Shared<E> {
        Shared(self.0.clone())
    }
}

impl<E> From<E> for Shared<E> {
    fn from(e: E) -> Shared<E> {
        Shared(std::sync::Arc::new(e))
    }
}

impl<E: std::fmt::Display> std::fmt::Display for Shared<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl<E: std::error::Error> std::error::Error for Shared<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl<E: std::fmt::Display> PartialEq for Shared<E> {
    fn eq(&self, other: &Shared<E>) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl<E: std::fmt::Display> Eq for Shared<E> {}

/// An error of a verifier built on this crate (ivpol-notary's,
/// ivpol-tuf's), which a [`VerifyError`] carries as [`VerifyError::Foreign`]:
/// every such error converts into one with `?`, and says its own class.
pub trait Failure: std::error::Error + std::any::Any + Send + Sync {
    /// The class of this failure.
    fn reason(&self) -> Reason;
}

impl<E: Failure> From<E> for VerifyError {
    fn from(e: E) -> VerifyError {
        VerifyError::Foreign(Foreign(std::sync::Arc::new(e)))
    }
}

/// A [`Failure`] held in a [`VerifyError`]: cloned by reference, and equal
/// to another of the same type that says the same. Its text, source and
/// debug form are the failure's own.
#[derive(Clone)]
pub struct Foreign(std::sync::Arc<dyn Failure>);

impl Foreign {
    /// The class of the failure.
    pub fn reason(&self) -> Reason {
        self.0.reason()
    }

    /// The failure, if it is an `E`.
    pub fn downcast_ref<E: Failure>(&self) -> Option<&E> {
        let any: &dyn std::any::Any = &*self.0;
        any.downcast_ref()
    }
}

impl std::fmt::Debug for Foreign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl std::fmt::Display for Foreign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&*self.0, f)
    }
}

impl std::error::Error for Foreign {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for Foreign {
    fn eq(&self, other: &Foreign) -> bool {
        let (a, b): (&dyn std::any::Any, &dyn std::any::Any) = (&*self.0, &*other.0);
        std::sync::Arc::ptr_eq(&self.0, &other.0)
            || (a.type_id() == b.type_id() && self.0.to_string() == other.0.to_string())
    }
}

impl Eq for Foreign {}

pub mod cosign;
pub mod dsse;
pub mod encoding;
pub mod keys;
pub mod rekor;
pub mod sigstore_bundle;
pub mod standalone;
#[cfg(any(test, feature = "test-support"))]
pub mod testdata;
pub mod timestamp;
pub mod trust;
pub mod x509;

/// `items`' texts joined with `separator`, for the messages that list
/// several failures (here and in the verifiers built on this crate).
pub fn joined<T: std::fmt::Display>(items: &[T], separator: &str) -> String {
    items
        .iter()
        .map(T::to_string)
        .collect::<Vec<_>>()
        .join(separator)
}

/// Seconds since the Unix epoch: the time certificates are checked at when
/// no transparency log or timestamp vouches for the signing time.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    /// Every error here can be boxed into an `anyhow` error and sent
    /// across threads (the bench does), whatever lower error it holds;
    /// [`super::Failure`]'s bounds hold the verifiers built on this crate
    /// (and the lower errors theirs hold) to the same.
    #[test]
    fn errors_are_send_sync_and_static() {
        fn check<E: std::error::Error + Clone + Eq + Send + Sync + 'static>() {}
        check::<super::VerifyError>();
        check::<super::Shared<serde_json::Error>>();
        check::<super::Shared<regex::Error>>();
    }

    #[test]
    fn shared_errors_compare_by_what_they_say() {
        let parse = |text: &str| {
            super::Shared::from(serde_json::from_str::<serde_json::Value>(text).unwrap_err())
        };
        assert_eq!(parse("{"), parse("{"));
        assert_ne!(parse("{"), parse("["));
        assert_eq!(
            parse("{").to_string(),
            "EOF while parsing an object at line 1 column 1"
        );
    }
}
