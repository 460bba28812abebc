//! Signature verification, all inside the component: keys and X.509
//! (`keys`, `x509`), Sigstore trust material (`trust`) and the TUF
//! repositories it may come from (`tuf`), the Rekor log (`rekor`), DSSE
//! (`dsse`), cosign's legacy `.sig`/`.att` layers (`cosign`) and Sigstore
//! bundles (`sigstore_bundle`).
//!
//! Everything here is pure: bytes and trust material in, a verdict out.
//! Fetching from registries is the engine's job, so every check can be
//! tested natively against other projects' real data.

use thiserror::Error;

/// Why a signature, certificate or log entry was not accepted. The text is
/// what users see in a failed verification, so it names what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0}")]
pub struct VerifyError(pub String);

impl VerifyError {
    pub fn new(message: impl Into<String>) -> VerifyError {
        VerifyError(message.into())
    }
}

pub type Result<T> = std::result::Result<T, VerifyError>;

pub mod cosign;
pub mod dsse;
pub mod encoding;
pub mod keys;
pub mod notary;
pub mod rekor;
pub mod sigstore_bundle;
pub mod standalone;
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
