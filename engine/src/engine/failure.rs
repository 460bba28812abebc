//! Why one attestor did not verify an image: the message users see (in
//! Kyverno's words where Kyverno has them) and its class, which decision
//! logs, audit annotations and metrics report without parsing text.

use super::attestor_error::AttestorError;
use crate::oci::{OciError, OciErrorKind, TransportError};
use crate::verify::{Reason, VerifyError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
/// Why one attestor did not verify an image.
pub struct Failure {
    /// Its class, for decision logs, annotations and metrics.
    pub reason: Reason,
    /// The text users see.
    pub message: String,
    /// The registry involved (`host[:port]`), for registry failures.
    pub registry: Option<String>,
    /// The HTTP status the registry answered, when it answered one.
    pub status: Option<u16>,
}

impl Failure {
    /// A failure of class `reason` with no registry involved.
    pub fn new(reason: Reason, message: impl Into<String>) -> Failure {
        Failure {
            reason,
            message: message.into(),
            registry: None,
            status: None,
        }
    }

    /// The same failure with `context` in front of its message.
    pub fn context(mut self, context: impl fmt::Display) -> Failure {
        self.message = format!("{context}: {}", self.message);
        self
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Text without a class: the evidence or the policy could not be read.
impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::new(Reason::Malformed, message)
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Failure {
        Failure::new(Reason::Malformed, message)
    }
}

/// An attestor whose trust material could not be built: malformed.
impl From<AttestorError> for Failure {
    fn from(e: AttestorError) -> Failure {
        Failure::new(Reason::Malformed, e.to_string())
    }
}

impl From<VerifyError> for Failure {
    fn from(e: VerifyError) -> Failure {
        Failure::new(e.reason(), e.to_string())
    }
}

impl From<OciError> for Failure {
    fn from(e: OciError) -> Failure {
        let reason = match e.kind() {
            OciErrorKind::Transport(TransportError::Denied { .. }) => Reason::RegistryRefused,
            OciErrorKind::Status { .. } | OciErrorKind::Transport(_) => Reason::Registry,
            OciErrorKind::DigestMismatch { .. } => Reason::PayloadMismatch,
            OciErrorKind::Invalid(_) => Reason::Malformed,
        };
        Failure {
            reason,
            message: e.to_string(),
            registry: Some(e.registry().to_string()),
            status: e.status(),
        }
    }
}

/// The failure of a list of candidates that all failed: every message
/// joined; the class is the one they share, else the first one's. No
/// candidate at all is [`Reason::NotFound`].
pub(super) fn all_failed(failures: Vec<Failure>) -> Failure {
    let Some(first) = failures.first().cloned() else {
        return Failure::new(Reason::NotFound, "signatures not found");
    };
    let message = failures
        .iter()
        .map(|f| f.message.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    Failure { message, ..first }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_errors_keep_host_and_status() {
        let status = OciErrorKind::Status {
            status: 503,
            detail: String::new(),
        };
        let f = Failure::from(OciError::new("r.example:5000", "app", "v1", status));
        assert_eq!(f.reason, Reason::Registry);
        assert_eq!(
            (f.registry.as_deref(), f.status),
            (Some("r.example:5000"), Some(503))
        );
        assert_eq!(
            f.message,
            "r.example:5000/app:v1: registry answered HTTP 503"
        );
        let denied = OciErrorKind::Transport(TransportError::Denied {
            host: "10.0.0.1".into(),
        });
        let refused = OciError::new("10.0.0.1", "app", "v1", denied);
        assert_eq!(Failure::from(refused).reason, Reason::RegistryRefused);
    }

    #[test]
    fn all_failed_joins_and_an_empty_list_is_not_found() {
        assert_eq!(all_failed(vec![]).reason, Reason::NotFound);
        let f = all_failed(vec![
            Failure::new(Reason::BadSignature, "a"),
            Failure::new(Reason::Identity, "b"),
        ]);
        assert_eq!(
            (f.reason, f.message.as_str()),
            (Reason::BadSignature, "a; b")
        );
    }
}
