//! Why a Notary Project signature is not accepted. The texts follow
//! notation's where it has one, since users compare them with notation's
//! and Kyverno's output.

use super::{fmt_rfc1123z, Alg, Target, H_AUTHENTIC_SIGNING_TIME, H_PLUGIN, H_SIGNING_TIME};
use super::{MAX_CHAIN_CERTS, MAX_ENVELOPE_BYTES, MEDIA_TYPE_COSE, MEDIA_TYPE_JWS};
use super::{SCHEME_SIGNING_AUTHORITY, SCHEME_X509};
use ivpol_verify::encoding::EncodingError;
use ivpol_verify::timestamp::TimestampError;
use ivpol_verify::x509::X509Error;
use ivpol_verify::{Reason, Shared};

ivpol_verify::debug_as_display!(EnvelopeError);
/// A JWS or COSE envelope that cannot be read, or whose protected headers
/// break the Notary rules.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// The JWS envelope is not JSON (the parser's error).
    #[error("unable to parse the digital signature, error : {0}")]
    NotJson(#[source] Shared<serde_json::Error>),
    /// The JWS envelope is JSON but not an object.
    #[error(
        "unable to parse the digital signature, error : the JWS envelope is not a JSON object"
    )]
    NotObject,
    /// A JWS member outside the flattened serialization.
    #[error("unable to parse the digital signature, error : the JWS envelope has the member {0:?}; only payload, protected, header and signature are allowed")]
    UnknownMember(String),
    /// A JWS member or header that must be a string and is not.
    #[error("{what} {key:?} is not a string")]
    NotString {
        /// Where the field is.
        what: &'static str,
        /// Its name.
        key: &'static str,
    },
    /// A JWS member or header that is missing.
    #[error("{what} {key:?} is missing")]
    Missing {
        /// Where the field should be.
        what: &'static str,
        /// Its name.
        key: &'static str,
    },
    /// The JWS unprotected header is not an object.
    #[error("JWS unprotected header is not an object")]
    UnprotectedNotObject,
    /// `x5c` is not an array.
    #[error("x5c is not an array")]
    X5cNotArray,
    /// An `x5c` entry is not a string.
    #[error("x5c entry is not a string")]
    X5cEntryNotString,
    /// More certificates than [`MAX_CHAIN_CERTS`].
    #[error("certificate chain has {0} certificates, more than the {MAX_CHAIN_CERTS} allowed")]
    ChainTooLong(usize),
    /// The JWS timestamp countersignature is not a string.
    #[error("io.cncf.notary.timestampSignature is not a string")]
    TimestampNotString,
    /// A JWS part that is not base64url: notation calls it an invalid
    /// signature.
    #[error("signature is invalid. Error: {0}")]
    InvalidSignature(#[source] IllegalBase64),
    /// An empty JWS signature: notation calls it an invalid signature.
    #[error("signature is invalid. Error: signature missing in jws-json envelope")]
    NoJwsSignature,
    /// The JWS protected header is not base64url.
    #[error("jws envelope protected header can't be decoded: {0}")]
    ProtectedHeaderBase64(#[source] IllegalBase64),
    /// The JWS protected header is not JSON (the parser's error).
    #[error("jws envelope protected header can't be decoded: {0}")]
    ProtectedHeader(#[source] Shared<serde_json::Error>),
    /// The JWS protected header is JSON but not an object.
    #[error("jws envelope protected header can't be decoded: not a JSON object")]
    ProtectedHeaderNotObject,
    /// A JWS time header that is not an RFC 3339 string.
    #[error(
        "jws envelope protected header can't be decoded: {key} {value:?} is not an RFC 3339 time"
    )]
    TimeNotRfc3339 {
        /// The header.
        key: &'static str,
        /// Its value.
        value: String,
    },
    /// A JWS time header that is not a string.
    #[error("jws envelope protected header can't be decoded: {0} is not a string")]
    TimeNotString(&'static str),
    /// An `x5c` certificate or the timestamp countersignature that is not
    /// base64.
    #[error(transparent)]
    Encoding(#[from] EncodingError),
    /// A JWS `alg` outside the Notary algorithms.
    #[error("signature algorithm {0:?} is not supported")]
    JwsAlgorithm(String),
    /// The JWS `cty` header is not a string.
    #[error("JWS protected header \"cty\" is not a string")]
    CtyNotString,
    /// The JWS `crit` header is not an array.
    #[error("JWS protected header \"crit\" is not an array")]
    CritNotArray,
    /// A JWS `crit` entry is not a string.
    #[error("JWS protected header \"crit\" has a non-string entry")]
    CritEntryNotString,
    /// The bytes are not a tagged COSE_Sign1 message (the decoder's error).
    #[error("unable to parse the digital signature, error : not a COSE_Sign1_Tagged message: {0}")]
    NotCoseSign1(#[source] Shared<coset::CoseError>),
    /// The COSE `x5chain` is not certificates.
    #[error("certificate chain is not present")]
    NoChain,
    /// The COSE timestamp countersignature is not a byte string.
    #[error("io.cncf.notary.timestampSignature is not a bstr")]
    TimestampNotBytes,
    /// The COSE signature is empty.
    #[error("signature missing in COSE envelope")]
    NoCoseSignature,
    /// A COSE `alg` outside the Notary algorithms (or none).
    #[error("signature algorithm not supported: {0:?}")]
    CoseAlgorithm(Option<coset::Algorithm>),
    /// A COSE content type given as a number.
    #[error("content type should be of 'tstr' type")]
    ContentTypeNotText,
    /// No COSE content type.
    #[error("missing content type")]
    NoContentType,
    /// A critical COSE header this verifier does not know.
    #[error("signature has the critical header {0}, which this verifier does not understand")]
    UnknownCriticalLabel(i64),
    /// The COSE signing scheme is missing or not text.
    #[error("invalid signingScheme")]
    SigningScheme,
    /// A COSE time that is not an integer.
    #[error("invalid {0}: the tag-1 time is not an integer")]
    TimeNotInteger(&'static str),
    /// A COSE time out of range.
    #[error("invalid {0}: out of range")]
    TimeOutOfRange(&'static str),
    /// A COSE time with another tag.
    #[error("invalid {0}: only Tag `1` Datetime CBOR object is supported")]
    TimeTag(&'static str),
    /// A COSE time with no tag.
    #[error("invalid {0}: header {0} time value does not have a tag")]
    TimeUntagged(&'static str),
    /// The COSE protected header is absent.
    #[error("COSE protected header is missing")]
    NoProtectedHeader,
    /// A COSE envelope whose payload is elsewhere.
    #[error("COSE envelope has a detached payload")]
    DetachedPayload,
    /// `authenticSigningTime` under `notary.x509`.
    #[error(
        "{H_AUTHENTIC_SIGNING_TIME:?} header must not be present for {SCHEME_X509} signing scheme"
    )]
    AuthenticTimeForX509,
    /// No `signingTime` under `notary.x509`.
    #[error("signing-time not present")]
    NoSigningTime,
    /// `signingTime` under `notary.x509.signingAuthority`.
    #[error("{H_SIGNING_TIME:?} header must not be present for {SCHEME_SIGNING_AUTHORITY} signing scheme")]
    SigningTimeForAuthority,
    /// No `authenticSigningTime` under `notary.x509.signingAuthority`.
    #[error("{H_AUTHENTIC_SIGNING_TIME:?} header must be present for {SCHEME_SIGNING_AUTHORITY} signing scheme")]
    NoAuthenticTime,
    /// A signing scheme other than the two of the Notary Project.
    #[error("unsupported SigningScheme: `{0}`")]
    UnsupportedScheme(String),
    /// No `crit` header.
    #[error("missing \"crit\" header")]
    NoCrit,
    /// Headers that must be critical and are not.
    #[error("these required headers are not marked as critical: [{}]", .0.join(" "))]
    NotCritical(Vec<&'static str>),
    /// A header marked critical that is absent.
    #[error("{0:?} header is marked critical but not present")]
    CriticalAbsent(String),
    /// An expiry at or before the signing time.
    #[error("expiry cannot be equal or before the signing time")]
    ExpiryBeforeSigning,
}

impl EnvelopeError {
    /// The class of this failure: [`Reason::Malformed`] until the integrity
    /// stage classes it.
    pub fn reason(&self) -> Reason {
        match self {
            EnvelopeError::Encoding(e) => e.reason(),
            _ => Reason::Malformed,
        }
    }
}

// Carried by a `VerifyError`, which cannot name it, with its class.
impl ivpol_verify::Failure for EnvelopeError {
    fn reason(&self) -> ivpol_verify::Reason {
        EnvelopeError::reason(self)
    }
}

ivpol_verify::debug_as_display!(IllegalBase64);
/// Base64url text that Go's `base64.RawURLEncoding` refuses, in Go's words:
/// the offset of the first byte it cannot use.
#[derive(Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("illegal base64 data at input byte {0}")]
pub struct IllegalBase64(pub usize);

ivpol_verify::debug_as_display!(NotaryError);
/// A readable envelope that does not verify for the target under Kyverno's
/// trust policy.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotaryError {
    /// More than [`MAX_ENVELOPE_BYTES`].
    #[error("signature envelope is {0} bytes, more than the {MAX_ENVELOPE_BYTES} allowed")]
    TooLarge(usize),
    /// No bytes at all.
    #[error("signature envelope is empty")]
    Empty,
    /// A media type other than JWS or COSE.
    #[error("signature envelope type {0:?} is not supported (want {MEDIA_TYPE_JWS} or {MEDIA_TYPE_COSE})")]
    EnvelopeType(String),
    /// The signature does not verify with the leaf's key.
    #[error("signature is invalid. Error: {} signature does not verify with the signing certificate's key", .0.name())]
    BadSignature(Alg),
    /// The envelope's `alg` is not the one the leaf's key implies.
    #[error("mismatch between signature algorithm derived from signing certificate ({}) and signing algorithm specified ({})", .leaf.name(), .envelope.name())]
    AlgorithmMismatch {
        /// What the leaf's key implies.
        leaf: Alg,
        /// What the envelope says.
        envelope: Alg,
    },
    /// A payload content type other than Notary's.
    #[error("payload content type {0:?} not supported")]
    ContentType(String),
    /// An empty payload.
    #[error("content not present")]
    NoContent,
    /// A payload that is not JSON (the parser's error).
    #[error("signature payload is not JSON: {0}")]
    PayloadNotJson(#[source] Shared<serde_json::Error>),
    /// A payload without `targetArtifact`.
    #[error("signature payload has no targetArtifact")]
    NoTargetArtifact,
    /// The signature is for another artifact.
    #[error("integrity check failed. signature does not match the given artifact: the signature is for {} ({}, {} bytes), the artifact is {} ({}, {} bytes)",
        .signed.digest, .signed.media_type, .signed.size, .artifact.digest, .artifact.media_type, .artifact.size)]
    TargetMismatch {
        /// What the payload names, `no digest`, `no mediaType` or `?` where
        /// it names nothing.
        signed: Box<SignedTarget>,
        /// The artifact.
        artifact: Box<Target>,
    },
    /// `verificationPlugin` that is not a string.
    #[error("{H_PLUGIN} from extended attribute is not a string")]
    PluginNotString,
    /// A signature that needs a verification plugin.
    #[error("error while locating the verification plugin {0:?}, make sure the plugin is installed successfully before verifying the signature. error: plugin not found")]
    PluginNotFound(String),
    /// A critical header this verifier does not understand.
    #[error("signature has the critical header {0:?}, which this verifier does not understand (verification plugins are not supported)")]
    UnknownCritical(String),
    /// An empty trust store.
    #[error("no trusted certificates are found to verify authenticity")]
    NoTrustedCertificates,
    /// No certificate of the chain is in the trust store.
    #[error("the signature's certificate chain does not contain any trusted certificate")]
    NotTrusted,
    /// The signature's expiry has passed.
    #[error("digital signature has expired on \"{}\"", fmt_rfc1123z(*.0))]
    Expired(i64),
    /// A certificate not valid at the signed authentic signing time.
    #[error("certificate {subject:?} was not valid when the digital signature was produced at {:?}", fmt_rfc1123z(*.time))]
    NotValidWhenSigned {
        /// The certificate's subject, as Go prints it.
        subject: String,
        /// The signing time.
        time: i64,
    },
    /// Now is before a certificate's validity.
    #[error("verification time is before certificate {subject:?} validity period, it will be valid from {:?}", fmt_rfc1123z(*.not_before))]
    NotYetValid {
        /// The certificate's subject, as Go prints it.
        subject: String,
        /// Its notBefore.
        not_before: i64,
    },
    /// Now is after a certificate's validity.
    #[error("verification time is after certificate {subject:?} validity period, it was expired at {:?}", fmt_rfc1123z(*.not_after))]
    CertificateExpired {
        /// The certificate's subject, as Go prints it.
        subject: String,
        /// Its notAfter.
        not_after: i64,
    },
    /// TSA roots are configured and the envelope has no countersignature.
    #[error("no timestamp countersignature was found in the signature envelope")]
    NoCountersignature,
    /// The countersignature cannot be read.
    #[error("failed to parse timestamp countersignature with error: {0}")]
    CountersignatureUnreadable(#[source] Box<TimestampError>),
    /// The countersignature does not verify.
    #[error("failed to verify the timestamp countersignature with error: {0}")]
    CountersignatureInvalid(#[source] Box<TimestampError>),
    /// The timestamp is before a certificate's validity.
    #[error("timestamp can be before certificate {subject:?} validity period, it will be valid from {:?}", fmt_rfc1123z(*.not_before))]
    TimestampBeforeValidity {
        /// The certificate's subject, as Go prints it.
        subject: String,
        /// Its notBefore.
        not_before: i64,
    },
    /// The timestamp is after a certificate's validity.
    #[error("timestamp can be after certificate {subject:?} validity period, it was expired at {:?}", fmt_rfc1123z(*.not_after))]
    TimestampAfterValidity {
        /// The certificate's subject, as Go prints it.
        subject: String,
        /// Its notAfter.
        not_after: i64,
    },
    /// The envelope's chain is empty or too long.
    #[error(transparent)]
    Envelope(#[from] EnvelopeError),
    /// A certificate of the envelope's chain that cannot be read.
    #[error(transparent)]
    Certificate(#[from] X509Error),
    /// The envelope's chain breaks the Notary certificate rules.
    #[error(transparent)]
    Chain(#[from] super::certs::ChainError),
}

/// What a payload's `targetArtifact` names, as the mismatch message shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedTarget {
    /// Its digest, or `no digest`.
    pub digest: String,
    /// Its media type, or `no mediaType`.
    pub media_type: String,
    /// Its size, or `?`.
    pub size: String,
}

impl NotaryError {
    /// The class of this failure.
    pub fn reason(&self) -> Reason {
        use NotaryError::*;
        match self {
            BadSignature(_) | AlgorithmMismatch { .. } => Reason::BadSignature,
            TargetMismatch { .. } => Reason::PayloadMismatch,
            NoTrustedCertificates | NotTrusted => Reason::UntrustedChain,
            Expired(_)
            | NotValidWhenSigned { .. }
            | NotYetValid { .. }
            | CertificateExpired { .. }
            | NoCountersignature
            | CountersignatureUnreadable(_)
            | CountersignatureInvalid(_)
            | TimestampBeforeValidity { .. }
            | TimestampAfterValidity { .. } => Reason::Timestamp,
            Envelope(e) => e.reason(),
            Certificate(e) => e.reason(),
            Chain(e) => e.reason(),
            _ => Reason::Malformed,
        }
    }
}

// Carried by a `VerifyError`, which cannot name it, with its class.
impl ivpol_verify::Failure for NotaryError {
    fn reason(&self) -> ivpol_verify::Reason {
        NotaryError::reason(self)
    }
}
