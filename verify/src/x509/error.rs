//! Why a certificate or a certificate path was not accepted.

use der::asn1::ObjectIdentifier;

use super::{fmt_time, MAX_PATH_LEN};
use crate::encoding::EncodingError;
use crate::keys::KeyError;
use crate::Reason;

crate::debug_as_display!(X509Error);
/// Why a certificate or a certificate path was not accepted. A chain that
/// does not reach a trusted root is [`Reason::UntrustedChain`] (or
/// [`Reason::Timestamp`] when time was why); a certificate used outside its
/// validity is [`Reason::Timestamp`]; the rest is malformed until the stage
/// that checked it classes it.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum X509Error {
    /// A DER certificate over 64 KiB.
    #[error("certificate larger than 64 KiB")]
    TooLarge,
    /// DER that is not an X.509 certificate.
    #[error("invalid X.509 certificate: {0}")]
    Invalid(#[source] der::Error),
    /// PEM text without a CERTIFICATE block.
    #[error("no CERTIFICATE PEM block found")]
    NoPemBlock,
    /// PEM text that cannot be decoded.
    #[error(transparent)]
    Pem(#[from] EncodingError),
    /// The certificate's key could not be encoded again.
    #[error("certificate key: {0}")]
    KeyEncoding(#[source] der::Error),
    /// The certificate's key is refused.
    #[error("certificate {subject}: {source}")]
    Key {
        /// The certificate's subject.
        subject: String,
        /// Why its key is refused.
        source: Box<KeyError>,
    },
    /// An extension that does not parse.
    #[error("certificate {subject}: invalid {extension} extension: {source}")]
    BadExtension {
        /// The certificate's subject.
        subject: String,
        /// The extension's name.
        extension: &'static str,
        /// The parser's error.
        source: Box<der::Error>,
    },
    /// A critical extension this verifier does not process.
    #[error("certificate {subject} has an unsupported critical extension {oid}")]
    UnknownCritical {
        /// The certificate's subject.
        subject: String,
        /// The extension's OID.
        oid: ObjectIdentifier,
    },
    /// A signature BIT STRING with unused bits.
    #[error("certificate signature has unused bits")]
    SignatureUnusedBits,
    /// The issuer's key did not sign the certificate.
    #[error("certificate {subject} is not signed by {issuer}")]
    NotSignedBy {
        /// The certificate's subject.
        subject: String,
        /// The candidate issuer's subject.
        issuer: String,
    },
    /// Used outside its validity window (unix seconds, shown in RFC 3339).
    #[error("certificate {subject} is not valid at {} (valid {} to {})", fmt_time(*.at), fmt_time(*.not_before), fmt_time(*.not_after))]
    NotValidAt {
        /// The certificate's subject.
        subject: String,
        /// The time it was checked at.
        at: i64,
        /// Its notBefore.
        not_before: i64,
        /// Its notAfter.
        not_after: i64,
    },
    /// RSASSA-PSS without its parameters.
    #[error("RSASSA-PSS certificate without parameters")]
    PssWithoutParameters,
    /// RSASSA-PSS parameters that do not parse.
    #[error("RSASSA-PSS parameters: {0}")]
    PssParameters(#[source] der::Error),
    /// RSASSA-PSS over SHA-1.
    #[error("certificate signed with RSASSA-PSS over SHA-1, which is refused")]
    PssSha1,
    /// RSASSA-PSS over a hash not supported.
    #[error("RSASSA-PSS with unsupported hash {0}")]
    PssHash(ObjectIdentifier),
    /// A SHA-1 signature.
    #[error("certificate signed with SHA-1, which is refused")]
    Sha1,
    /// A signature algorithm not supported.
    #[error("unsupported certificate signature algorithm {0}")]
    SignatureAlgorithm(ObjectIdentifier),
    /// No roots to build a path to.
    #[error("no trusted root certificates configured")]
    NoRoots,
    /// Path building found candidates, and the last one failed so.
    #[error("certificate {subject} does not chain to a trusted root: {source}")]
    NoChain {
        /// The leaf's subject.
        subject: String,
        /// Why the last candidate path failed.
        source: Box<X509Error>,
    },
    /// No certificate named the leaf's issuer.
    #[error("certificate {subject} does not chain to a trusted root (no issuer {issuer} found)")]
    NoIssuer {
        /// The leaf's subject.
        subject: String,
        /// The issuer it names.
        issuer: String,
    },
    /// A leaf without the codeSigning extended key usage.
    #[error("certificate {0} is not for code signing (extended key usage lacks codeSigning)")]
    NotCodeSigning(String),
    /// A leaf whose key usage lacks digitalSignature.
    #[error("certificate {0} key usage lacks digitalSignature")]
    NoDigitalSignature(String),
    /// A CA's path length constraint exceeded.
    #[error("certificate {subject} allows {max} intermediate(s) below it, path has {below}")]
    PathLength {
        /// The CA's subject.
        subject: String,
        /// Its pathLenConstraint.
        max: u8,
        /// Intermediates below it in the path.
        below: usize,
    },
    /// An issuer that is not a CA.
    #[error("certificate {0} is not a CA (basicConstraints cA is not true)")]
    NotCa(String),
    /// A CA whose key usage lacks keyCertSign.
    #[error("CA certificate {0} key usage lacks keyCertSign")]
    NoKeyCertSign(String),
    /// A CA whose extended key usage excludes code signing.
    #[error("CA certificate {0} extended key usage does not allow code signing")]
    CaNotCodeSigning(String),
    /// Path building's candidate budget ran out.
    #[error("path building gave up (too many candidates)")]
    Budget,
    /// A path over the length bound.
    #[error("certificate path longer than {MAX_PATH_LEN}")]
    PathTooLong,
    /// DER structure that does not parse.
    #[error("malformed DER")]
    MalformedDer,
}

impl X509Error {
    /// The class of this failure (see the type's documentation).
    pub fn reason(&self) -> Reason {
        match self {
            X509Error::NotValidAt { .. } => Reason::Timestamp,
            X509Error::NoChain { source, .. } if source.reason() == Reason::Timestamp => {
                Reason::Timestamp
            }
            X509Error::NoChain { .. } | X509Error::NoIssuer { .. } => Reason::UntrustedChain,
            X509Error::Pem(e) => e.reason(),
            X509Error::Key { source, .. } => source.reason(),
            _ => Reason::Malformed,
        }
    }
}
