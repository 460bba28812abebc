//! Signature verification, all inside the component: keys and X.509
//! (`keys`, `x509`), Sigstore trust material (`trust`), the Rekor log
//! (`rekor`), DSSE (`dsse`), cosign's legacy `.sig`/`.att` layers
//! (`cosign`) and Sigstore bundles (`sigstore_bundle`).
//!
//! Everything here is pure: bytes and trust material in, a verdict out.
//! Fetching from registries is the engine's job, so every check can be
//! tested natively against other projects' real data.

pub mod sigstore_bundle;

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
pub mod rekor;
pub mod trust;
pub mod x509;
