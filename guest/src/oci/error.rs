//! Registry errors. Every one names the registry, repository and reference
//! involved, and the HTTP status when there was one.

use super::transport::TransportError;
use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum OciError {
    #[error("{registry}/{repository}@{reference}: {source}")]
    Transport {
        registry: String,
        repository: String,
        reference: String,
        source: TransportError,
    },
    #[error("{registry}/{repository}@{reference}: registry answered HTTP {status}{detail}")]
    Status {
        registry: String,
        repository: String,
        reference: String,
        status: u16,
        detail: String,
    },
    #[error(
        "{registry}/{repository}@{reference}: content digest {actual} does not match {expected}"
    )]
    DigestMismatch {
        registry: String,
        repository: String,
        reference: String,
        expected: String,
        actual: String,
    },
    #[error("{registry}/{repository}@{reference}: {message}")]
    Invalid {
        registry: String,
        repository: String,
        reference: String,
        message: String,
    },
}
