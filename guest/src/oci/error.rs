//! Registry errors. Every one names the registry, repository and reference
//! involved, and the HTTP status when there was one.

use super::transport::TransportError;
use thiserror::Error;

/// A failed registry fetch, naming the registry, repository and reference.
///
/// Boxed: a fetch's `Result` travels through every layer of the engine,
/// and its error case stays one pointer wide instead of the size of five
/// strings, so the errors that wrap it need no box of their own.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{}/{}@{}: {}", .0.registry, .0.repository, .0.reference, .0.kind)]
pub struct OciError(Box<Located>);

/// Where a fetch failed, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Located {
    registry: String,
    repository: String,
    reference: String,
    kind: OciErrorKind,
}

/// What went wrong with a registry fetch.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum OciErrorKind {
    /// The transport failed the request, or a budget refused it (see
    /// [`TransportError`]).
    #[error(transparent)]
    Transport(TransportError),
    /// The registry answered with an HTTP status other than the one expected.
    #[error("registry answered HTTP {status}{detail}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// `: CODE message` from the registry's error body, clipped; empty when
        /// it has none.
        detail: String,
    },
    /// The content's sha256 digest is not the digest it was fetched by.
    #[error("content digest {actual} does not match {expected}")]
    DigestMismatch {
        /// The digest the content was fetched by.
        expected: String,
        /// The digest of the content received.
        actual: String,
    },
    /// The answer is unusable: JSON refused or malformed, a bad redirect, too
    /// many referrers (what is wrong with it).
    #[error("{0}")]
    Invalid(String),
}

impl OciError {
    /// A fetch of `registry/repository@reference` that failed with `kind`.
    pub fn new(registry: &str, repository: &str, reference: &str, kind: OciErrorKind) -> OciError {
        OciError(Box::new(Located {
            registry: registry.to_string(),
            repository: repository.to_string(),
            reference: reference.to_string(),
            kind,
        }))
    }

    /// What went wrong.
    pub fn kind(&self) -> &OciErrorKind {
        &self.0.kind
    }

    /// The registry's host.
    pub fn registry(&self) -> &str {
        &self.0.registry
    }

    /// The HTTP status the registry answered, when it answered one.
    pub fn status(&self) -> Option<u16> {
        match self.0.kind {
            OciErrorKind::Status { status, .. } => Some(status),
            _ => None,
        }
    }

    /// Whether the registry answered 404: the tag or digest is not there.
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }
}
