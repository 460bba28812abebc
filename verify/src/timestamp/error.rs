//! Why an RFC 3161 timestamp, or one authority's check of it, was not
//! accepted.

use const_oid::ObjectIdentifier;

use super::MAX_TIMESTAMP_BYTES;
use crate::keys::KeyError;
use crate::x509::X509Error;
use crate::{joined, Reason};

crate::debug_as_display!(TimestampError);
/// Why an RFC 3161 timestamp was not accepted. All of these are
/// [`Reason::Malformed`] here; the timestamp stage classes them.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimestampError {
    /// A digest algorithm not supported.
    #[error("timestamp uses the unsupported digest algorithm {0}")]
    DigestAlgorithm(ObjectIdentifier),
    /// DER that does not parse (which part, the parser's error).
    #[error("malformed RFC 3161 timestamp: {what}: {source}")]
    Der {
        /// The structure being read.
        what: &'static str,
        /// The parser's error.
        source: der::Error,
    },
    /// A token over the size bound (its size).
    #[error("RFC 3161 timestamp is {0} bytes, more than the {MAX_TIMESTAMP_BYTES} allowed")]
    TooLarge(usize),
    /// A response whose status is not granted (the status INTEGER's bytes).
    #[error("RFC 3161 timestamp response status is not granted (status {0:?})")]
    NotGranted(Vec<u8>),
    /// A granted response without a token.
    #[error("RFC 3161 timestamp response has no timeStampToken")]
    NoToken,
    /// A ContentInfo of another type (the type).
    #[error("RFC 3161 timestamp token is a {0} ContentInfo, not SignedData")]
    NotSignedData(ObjectIdentifier),
    /// SignedData encapsulating something else (its type).
    #[error("RFC 3161 timestamp encapsulates {0}, not a TSTInfo")]
    NotTstInfo(ObjectIdentifier),
    /// SignedData without its content.
    #[error("RFC 3161 timestamp has no encapsulated TSTInfo")]
    NoTstInfo,
    /// Not exactly one signer (how many).
    #[error("RFC 3161 timestamp has {0} signers; exactly one is required")]
    Signers(usize),
    /// A signer without signed attributes.
    #[error("RFC 3161 timestamp signer has no signed attributes")]
    NoSignedAttributes,
    /// A content-type attribute without exactly one value.
    #[error("RFC 3161 content-type attribute must have one value")]
    ContentTypeValues,
    /// A signed content type other than id-ct-TSTInfo.
    #[error("RFC 3161 timestamp's signed content-type attribute is not id-ct-TSTInfo")]
    ContentType,
    /// A message-digest attribute without exactly one value.
    #[error("RFC 3161 message-digest attribute must have one value")]
    MessageDigestValues,
    /// The signed digest is not the TSTInfo's.
    #[error("RFC 3161 timestamp's signed message digest does not match its TSTInfo")]
    MessageDigest,
    /// A required signed attribute missing.
    #[error("RFC 3161 timestamp signer lacks the content-type or message-digest attribute")]
    MissingAttributes,
    /// No SigningCertificateV2 attribute (`v1_only`: the SHA-1 v1 one is there).
    #[error("failed to get SigningCertificateV2 from signed attributes: attribute not found{}", if *.v1_only { " (the token has only the SHA-1 signing-certificate v1 attribute, which is not accepted)" } else { "" })]
    NoSigningCertificateV2 {
        /// Whether the token has the v1 attribute instead.
        v1_only: bool,
    },
    /// Several SigningCertificateV2 attributes (how many).
    #[error(
        "the timestamp signer has {0} SigningCertificateV2 attributes; exactly one is allowed"
    )]
    SeveralSigningCertificateV2(usize),
    /// A SigningCertificateV2 attribute without exactly one value.
    #[error("the SigningCertificateV2 attribute must have exactly one value")]
    SigningCertificateV2Values,
    /// A SigningCertificateV2 value that does not parse (the parser's error).
    #[error("failed to get SigningCertificateV2 from signed attributes: {0}")]
    BadSigningCertificateV2(#[source] der::Error),
    /// A SigningCertificateV2 without certificates.
    #[error("signingCertificateV2 does not contain any certificate")]
    EmptySigningCertificateV2,
    /// A certificate hash algorithm not supported.
    #[error("unsupported certificate hash algorithm in SigningCertificateV2 attribute ({0})")]
    CertHashAlgorithm(ObjectIdentifier),
    /// An IssuerSerial without the issuer.
    #[error("issuer name is missing in IssuerSerial")]
    NoIssuerName,
    /// An IssuerSerial naming another certificate.
    #[error(
        "the SigningCertificateV2 IssuerSerial does not name the timestamp's signing certificate"
    )]
    IssuerSerial,
    /// The signing certificate's hash is not the attribute's.
    #[error("signing certificate hash does not match CertHash in signed attribute")]
    CertHash,
    /// The imprint is not the digest of the bundle's signature.
    #[error("RFC 3161 timestamp's message imprint is not the digest of the bundle's signature")]
    BundleImprint,
    /// No trusted authority verified it (what each said, or none).
    #[error("RFC 3161 timestamp is not verified by any trusted timestamp authority ({})", if .0.is_empty() { "the trust root has none".to_string() } else { joined(.0, "; ") })]
    NoAuthority(Vec<AuthorityProblem>),
    /// An imprint hashed with another algorithm than the signature's.
    #[error("invalid TSTInfo: the message imprint is a {imprint} digest, but the signature algorithm hashes with {signature} (the timestamp must hash the signature with the same algorithm)")]
    ImprintAlgorithm {
        /// The imprint's hash.
        imprint: &'static str,
        /// The signature's hash.
        signature: &'static str,
    },
    /// The imprint is not the digest of the signature.
    #[error("invalid TSTInfo: mismatched message (the timestamp's message imprint is not the digest of the signature)")]
    Imprint,
    /// No TSA certificates to check against.
    #[error("no trusted TSA certificate found in trust store")]
    NoTsaCertificates,
    /// The token does not hold its signer's certificate.
    #[error("signing certificate not found in the timestamp token")]
    NoSigningCertificate,
    /// The signer's certificate does not chain (why).
    #[error("timestamp signing certificate: {0}")]
    SigningCertificate(#[source] Box<X509Error>),
    /// The signer's certificate lacks timeStamping (its subject).
    #[error("timestamp signing certificate {0} does not have the timeStamping extended key usage")]
    NotTimeStamping(String),
    /// The signature over the signed attributes does not verify (why).
    #[error("timestamp signature: {0}")]
    Signature(#[source] KeyError),
    /// The signer's certificate, or its key, cannot be read.
    #[error(transparent)]
    Certificate(#[from] X509Error),
    /// A TSTInfo version other than 1 (the INTEGER's bytes).
    #[error("TSTInfo version {0:?} is not 1")]
    Version(Vec<u8>),
    /// genTime of another ASN.1 type.
    #[error("TSTInfo genTime is not a GeneralizedTime")]
    GenTimeType,
    /// genTime text that is not UTC GeneralizedTime.
    #[error("TSTInfo genTime {0:?} is not a UTC GeneralizedTime")]
    GenTime(String),
}

impl TimestampError {
    /// The class of this failure: [`Reason::Malformed`] until the
    /// timestamp stage classes it.
    pub fn reason(&self) -> Reason {
        match self {
            TimestampError::Certificate(e) => e.reason(),
            _ => Reason::Malformed,
        }
    }
}

crate::debug_as_display!(AuthorityProblem);
/// Why one trusted timestamp authority did not verify a Sigstore bundle's
/// timestamp.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthorityProblem {
    /// The authority's chain is a lone certificate.
    #[error("a trusted timestamp authority's chain has no root")]
    NoRoot,
    /// The token's signer is neither embedded nor the authority's leaf.
    #[error("the signer is not this authority's certificate")]
    NotSigner,
    /// The signer's certificate does not chain to the authority's root.
    #[error("signer certificate: {0}")]
    Chain(#[source] X509Error),
    /// The signer's certificate lacks the timeStamping extended key usage.
    #[error("signer certificate does not allow timestamping")]
    NotTimeStamping,
    /// The signer's key cannot be read.
    #[error(transparent)]
    Key(X509Error),
    /// The signature over the signed attributes does not verify.
    #[error("signature: {0}")]
    Signature(#[source] KeyError),
    /// `genTime` (unix seconds) is outside the authority's validity.
    #[error("genTime {0} is outside the authority's validity in the trust root")]
    OutsideValidity(i64),
}
