//! Why an attestor's trust material could not be built for a request: its
//! expressions, its keys and certificates, or its trust root. The attestor
//! then fails each verification it is asked for (class `malformed`), and
//! its verdicts are never cached, since nothing can key them.

use crate::cel::EvalError;
use crate::verify::VerifyError;

ivpol_verify::debug_as_display!(AttestorError);
/// An attestor the policy declares but this request cannot use.
#[derive(Clone, PartialEq, thiserror::Error)]
pub(crate) enum AttestorError {
    /// A `cosign.key.kms` key the host could not read.
    #[error("key.kms {uri}: {why}")]
    Kms {
        /// The key's URI, as the policy gives it.
        uri: String,
        /// Why it could not be read.
        why: String,
    },
    /// A `tuf.root.path` file the host could not read.
    #[error("tuf.root.path {path}: {why}")]
    TrustFile {
        /// The file's path, as the policy gives it.
        path: String,
        /// Why it could not be read.
        why: String,
    },
    /// A name the policy does not declare.
    #[error("attestor not found in policy: {0}")]
    Unknown(String),
    /// One of its CEL expressions failed.
    #[error(transparent)]
    Expression(#[from] EvalError),
    /// One of its CEL expressions returned something other than a string.
    #[error("attestor expression `{expression}` must return a string, got {got}")]
    NotAString {
        /// The expression's source.
        expression: String,
        /// The CEL type it returned.
        got: String,
    },
    /// A key, certificate or trusted root that does not read.
    #[error(transparent)]
    Material(#[from] VerifyError),
    /// A field's value that is refused: the field's path, then why.
    #[error("{field}: {source}")]
    Field {
        /// The field's path (`notary.certs`, `source.repository`, ...).
        field: String,
        /// Why.
        source: Box<AttestorError>,
    },
    /// A field that holds no PEM certificate.
    #[error("{0} holds no PEM certificate")]
    NoCertificate(&'static str),
    /// A cosign attestor with no trust of its own.
    #[error("the attestor has none of key, keyless or certificate")]
    NoKind,
    /// `ctlog` given without the Rekor URL it needs.
    #[error("rekor URL must be provided")]
    NoRekorUrl,
    /// A field the policy layer refuses (its diagnostic, starting with the
    /// field's path).
    #[error("{0}")]
    Spec(String),
    /// The `tuf` mirror did not hand out a trusted root.
    #[error("tuf mirror {mirror}: {source}")]
    Tuf {
        /// The mirror's URL.
        mirror: String,
        /// The TUF client's refusal.
        source: Box<VerifyError>,
    },
    /// The mirror's trusted root does not read.
    #[error("tuf mirror {mirror}: {}: {source}", crate::tuf::TRUSTED_ROOT_TARGET)]
    TufTrustedRoot {
        /// The mirror's URL.
        mirror: String,
        /// Why it does not read.
        source: Box<VerifyError>,
    },
}

impl AttestorError {
    /// The same error under the field `field`.
    pub(crate) fn at(self, field: impl Into<String>) -> AttestorError {
        AttestorError::Field {
            field: field.into(),
            source: Box::new(self),
        }
    }
}
