//! Registry errors. Every one names the registry, repository and reference
//! involved, and the HTTP status when there was one.

use super::transport::TransportError;
use thiserror::Error;

/// A failed registry fetch, naming the registry, repository and reference.
///
/// Boxed: a fetch's `Result` travels through every layer of the engine,
/// and its error case stays one pointer wide instead of the size of five
/// strings, so the errors that wrap it need no box of their own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciError(Box<Located>);

/// Its text already holds the kind's (no source, so chains say it once).
impl std::error::Error for OciError {}

/// `registry/repository@sha256:…` for a digest, `registry/repository:tag`
/// for a tag, as an image reference is written.
impl std::fmt::Display for OciError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let l = &self.0;
        let at = if l.reference.contains(':') { '@' } else { ':' };
        write!(
            f,
            "{}/{}{at}{}: {}",
            l.registry, l.repository, l.reference, l.kind
        )
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_is_written_with_a_colon_and_a_digest_with_an_at() {
        let status = || OciErrorKind::Status {
            status: 401,
            detail: String::new(),
        };
        let tagged = OciError::new("127.0.0.1:41445", "team/private", "1", status());
        assert_eq!(
            tagged.to_string(),
            "127.0.0.1:41445/team/private:1: registry answered HTTP 401"
        );
        let digest = format!("sha256:{}", "a".repeat(64));
        let pinned = OciError::new("r.io", "team/app", &digest, status());
        assert_eq!(
            pinned.to_string(),
            format!("r.io/team/app@{digest}: registry answered HTTP 401")
        );
    }
}
