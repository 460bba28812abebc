//! Registry errors. Every one names the registry, repository and reference
//! involved, and the HTTP status when there was one.

use super::transport::TransportError;
use thiserror::Error;

/// A failed registry fetch, naming the registry, repository and reference.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum OciError {
    /// The transport failed the request, or a budget refused it (see
    /// [`TransportError`]).
    #[error("{registry}/{repository}@{reference}: {source}")]
    Transport {
        /// The registry's host.
        registry: String,
        /// The repository in the registry.
        repository: String,
        /// The tag or digest fetched.
        reference: String,
        /// Why the request failed.
        source: TransportError,
    },
    /// The registry answered with an HTTP status other than the one expected.
    #[error("{registry}/{repository}@{reference}: registry answered HTTP {status}{detail}")]
    Status {
        /// The registry's host.
        registry: String,
        /// The repository in the registry.
        repository: String,
        /// The tag or digest fetched.
        reference: String,
        /// The HTTP status.
        status: u16,
        /// `: CODE message` from the registry's error body, clipped; empty when
        /// it has none.
        detail: String,
    },
    /// The content's sha256 digest is not the digest it was fetched by.
    #[error(
        "{registry}/{repository}@{reference}: content digest {actual} does not match {expected}"
    )]
    DigestMismatch {
        /// The registry's host.
        registry: String,
        /// The repository in the registry.
        repository: String,
        /// The tag or digest fetched.
        reference: String,
        /// The digest the content was fetched by.
        expected: String,
        /// The digest of the content received.
        actual: String,
    },
    /// The answer is unusable: JSON refused or malformed, a bad redirect, too
    /// many referrers.
    #[error("{registry}/{repository}@{reference}: {message}")]
    Invalid {
        /// The registry's host.
        registry: String,
        /// The repository in the registry.
        repository: String,
        /// The tag or digest fetched.
        reference: String,
        /// What is wrong with the answer.
        message: String,
    },
}
