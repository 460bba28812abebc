//! OCSP (RFC 6960) as notation asks it: a GET of
//! `<server>/<url-escaped base64 request>` with a SHA-1 `CertID` (what
//! RFC 5019 responders expect), a response of at most 20 KiB, signed by
//! the issuer or by a responder certificate the issuer delegated OCSP
//! signing to, current (`nextUpdate` ahead), and naming the certificate.
//!
//! A delegated responder must carry `id-kp-OCSPSigning` (RFC 6960
//! §4.2.2.2; Go's parser does not insist on it, so a responder without it
//! leaves the status unknown here where notation would accept it).

use super::MAX_OCSP_RESPONSE_BYTES;
use super::{check_scheme, fetch_judged, unix, Answer, Context, SchemeProblem, StatusProblem};
use base64::Engine;
use der::asn1::{BitString, GeneralizedTime, Null, ObjectIdentifier, OctetString};
use der::{Any, Choice, Decode, Encode, Enumerated, Sequence};
use ivpol_verify::x509::{signed_by, Certificate, X509Error};
use sha1::Sha1;
use sha2::{Digest, Sha256};
use spki::AlgorithmIdentifierOwned;
use x509_cert::ext::pkix::AuthorityInfoAccessSyntax;
use x509_cert::ext::Extensions;
use x509_cert::serial_number::SerialNumber;

const ID_AD_OCSP: &str = "1.3.6.1.5.5.7.48.1";
const ID_PKIX_OCSP_BASIC: &str = "1.3.6.1.5.5.7.48.1.1";
const ID_KP_OCSP_SIGNING: &str = "1.3.6.1.5.5.7.3.9";
const ID_SHA1: &str = "1.3.14.3.2.26";
const ID_SHA256: &str = "2.16.840.1.101.3.4.2.1";
const ID_CE_INVALIDITY_DATE: &str = "2.5.29.24";
/// Go falls back to POST from this length of the escaped request; the
/// host lets the component GET only, and a SHA-1 `CertID` with an RFC 5280
/// serial (at most 20 bytes) never comes near it.
const MAX_GET_REQUEST: usize = 255;

ivpol_verify::debug_as_display!(OcspProblem);
/// Why an OCSP server gave no status, in notation's words.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum OcspProblem {
    /// A URL notation does not fetch.
    #[error(transparent)]
    Scheme(#[from] SchemeProblem),
    /// The response could not be fetched (the fetcher's words).
    #[error("{0}")]
    Fetch(String),
    /// The responder answered unknown.
    #[error("the responder does not know the certificate")]
    NotKnown,
    /// A CertID hash that is not SHA-1 or SHA-256.
    #[error("unsupported CertID hash {0}")]
    CertIdHash(ObjectIdentifier),
    /// DER that could not be encoded again.
    #[error(transparent)]
    Der(der::Error),
    /// The request could not be encoded.
    #[error("encoding the request: {0}")]
    Request(#[source] der::Error),
    /// The request is too long to send as a GET.
    #[error("the OCSP request is too long for a GET")]
    RequestTooLong,
    /// The body is not an OCSP response.
    #[error("unreadable OCSP response: {0}")]
    Unreadable(#[source] der::Error),
    /// A successful response without its body.
    #[error("OCSP response without a body")]
    NoBody,
    /// The responder refused (notation's text for its status).
    #[error("{0}")]
    Refused(&'static str),
    /// A response type other than the basic one.
    #[error("unsupported OCSP response type {0}")]
    ResponseType(ObjectIdentifier),
    /// The basic response does not read.
    #[error("unreadable basic OCSP response: {0}")]
    UnreadableBasic(#[source] der::Error),
    /// The response data do not read.
    #[error("unreadable OCSP response data: {0}")]
    UnreadableData(#[source] der::Error),
    /// The signer's key or extensions cannot be read.
    #[error(transparent)]
    Certificate(X509Error),
    /// The signature's algorithm is refused.
    #[error("bad OCSP signature: {0}")]
    SignatureAlgorithm(#[source] X509Error),
    /// The signature does not verify.
    #[error("bad OCSP signature")]
    Signature,
    /// The response does not name the certificate.
    #[error("no response matching the certificate")]
    NoMatchingResponse,
    /// `nextUpdate` is missing or has passed.
    #[error("expired OCSP response")]
    Expired,
    /// The responder certificate does not read.
    #[error("responder certificate: {0}")]
    Responder(#[source] X509Error),
    /// The issuer did not sign the responder certificate.
    #[error("bad signature on the responder certificate: {0}")]
    ResponderSignature(#[source] X509Error),
    /// The responder certificate (its subject) lacks OCSP signing.
    #[error("responder certificate {0} is not authorized for OCSP signing")]
    ResponderNotOcspSigning(String),
    /// The responder certificate (its subject) is not valid now.
    #[error("responder certificate {0} is not valid now")]
    ResponderNotValid(String),
}

#[derive(Clone, Debug, Sequence)]
struct CertId {
    hash_algorithm: AlgorithmIdentifierOwned,
    issuer_name_hash: OctetString,
    issuer_key_hash: OctetString,
    serial_number: SerialNumber,
}

#[derive(Sequence)]
struct OcspRequest {
    tbs_request: TbsRequest,
}

#[derive(Sequence)]
struct TbsRequest {
    request_list: Vec<Request>,
}

#[derive(Sequence)]
struct Request {
    req_cert: CertId,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Enumerated)]
#[repr(u32)]
enum ResponseStatus {
    Successful = 0,
    MalformedRequest = 1,
    InternalError = 2,
    TryLater = 3,
    SigRequired = 5,
    Unauthorized = 6,
}

#[derive(Sequence)]
struct OcspResponse {
    status: ResponseStatus,
    #[asn1(context_specific = "0", optional = "true", tag_mode = "EXPLICIT")]
    bytes: Option<ResponseBytes>,
}

#[derive(Sequence)]
struct ResponseBytes {
    response_type: ObjectIdentifier,
    response: OctetString,
}

#[derive(Sequence)]
struct BasicOcspResponse {
    /// `ResponseData`, decoded from its own bytes: they are what is signed.
    tbs_response_data: Any,
    signature_algorithm: AlgorithmIdentifierOwned,
    signature: BitString,
    #[asn1(context_specific = "0", optional = "true", tag_mode = "EXPLICIT")]
    certs: Option<Vec<Any>>,
}

#[derive(Sequence)]
struct ResponseData {
    #[asn1(
        context_specific = "0",
        default = "Default::default",
        tag_mode = "EXPLICIT"
    )]
    version: x509_cert::certificate::Version,
    /// Who signed (by name or key hash); the signature itself decides.
    responder_id: Any,
    produced_at: GeneralizedTime,
    responses: Vec<SingleResponse>,
    #[asn1(context_specific = "1", optional = "true", tag_mode = "EXPLICIT")]
    response_extensions: Option<Extensions>,
}

#[derive(Sequence)]
struct SingleResponse {
    cert_id: CertId,
    cert_status: CertStatus,
    this_update: GeneralizedTime,
    #[asn1(context_specific = "0", optional = "true", tag_mode = "EXPLICIT")]
    next_update: Option<GeneralizedTime>,
    #[asn1(context_specific = "1", optional = "true", tag_mode = "EXPLICIT")]
    single_extensions: Option<Extensions>,
}

#[derive(Choice)]
enum CertStatus {
    #[asn1(context_specific = "0", tag_mode = "IMPLICIT")]
    Good(Null),
    #[asn1(context_specific = "1", tag_mode = "IMPLICIT", constructed = "true")]
    Revoked(RevokedInfo),
    #[asn1(context_specific = "2", tag_mode = "IMPLICIT")]
    Unknown(Null),
}

#[derive(Sequence)]
struct RevokedInfo {
    revocation_time: GeneralizedTime,
    #[asn1(context_specific = "0", optional = "true", tag_mode = "EXPLICIT")]
    revocation_reason: Option<Any>,
}

/// The OCSP servers `cert` names (its Authority Information Access).
pub(super) fn servers(cert: &Certificate) -> Result<Vec<String>, StatusProblem> {
    let Some(aia) =
        super::extension::<AuthorityInfoAccessSyntax>(cert, "authority information access")?
    else {
        return Ok(Vec::new());
    };
    let names: Vec<_> = aia
        .0
        .into_iter()
        .filter(|d| d.access_method.to_string() == ID_AD_OCSP)
        .map(|d| d.access_location)
        .collect();
    Ok(super::uris(&names))
}

/// The status `servers` give `cert`, asked in order: the first good,
/// revoked or unknown status decides; other failures try the next server.
pub(super) fn check(
    cert: &Certificate,
    issuer: &Certificate,
    servers: &[String],
    ctx: &Context<'_>,
) -> Answer {
    let mut failures = Vec::new();
    for server in servers {
        let at = |problem| StatusProblem::Ocsp {
            server: server.clone(),
            problem,
        };
        match ask(cert, issuer, server, ctx) {
            Ok(Status::Good) => return Answer::Good,
            Ok(Status::Revoked) => return Answer::Revoked,
            Ok(Status::Unknown) => return Answer::Unknown(vec![at(OcspProblem::NotKnown)]),
            Err(problem) => failures.push(at(problem)),
        }
    }
    Answer::Unknown(failures)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Good,
    Revoked,
    Unknown,
}

fn ask(
    cert: &Certificate,
    issuer: &Certificate,
    server: &str,
    ctx: &Context<'_>,
) -> Result<Status, OcspProblem> {
    check_scheme(server, "OCSPServer")?;
    let id = cert_id(cert, issuer)?;
    let request = OcspRequest {
        tbs_request: TbsRequest {
            request_list: vec![Request {
                req_cert: id.clone(),
            }],
        },
    }
    .to_der()
    .map_err(OcspProblem::Request)?;
    let escaped = query_escape(&base64::engine::general_purpose::STANDARD.encode(request));
    if escaped.len() >= MAX_GET_REQUEST {
        return Err(OcspProblem::RequestTooLong);
    }
    let url = format!("{}/{escaped}", server.trim_end_matches('/'));
    fetch_judged(
        ctx,
        &url,
        issuer,
        MAX_OCSP_RESPONSE_BYTES,
        OcspProblem::Fetch,
        |body| judge(body, &id, issuer, ctx),
    )
}

/// The SHA-1 `CertID` of `cert` under `issuer`.
fn cert_id(cert: &Certificate, issuer: &Certificate) -> Result<CertId, OcspProblem> {
    let (name_hash, key_hash) = issuer_hashes(issuer, &ObjectIdentifier::new_unwrap(ID_SHA1))?;
    Ok(CertId {
        hash_algorithm: AlgorithmIdentifierOwned {
            oid: ObjectIdentifier::new_unwrap(ID_SHA1),
            parameters: Some(Any::from(Null)),
        },
        issuer_name_hash: octets(name_hash)?,
        issuer_key_hash: octets(key_hash)?,
        serial_number: cert.inner().tbs_certificate().serial_number().clone(),
    })
}

/// The hashes of `issuer`'s name and key under the hash `oid` (SHA-1 or
/// SHA-256, the ones responders use).
fn issuer_hashes(
    issuer: &Certificate,
    oid: &ObjectIdentifier,
) -> Result<(Vec<u8>, Vec<u8>), OcspProblem> {
    let name = issuer.subject_der();
    let key = issuer
        .inner()
        .tbs_certificate()
        .subject_public_key_info()
        .subject_public_key
        .raw_bytes()
        .to_vec();
    match oid.to_string().as_str() {
        ID_SHA1 => Ok((Sha1::digest(&name).to_vec(), Sha1::digest(&key).to_vec())),
        ID_SHA256 => Ok((
            Sha256::digest(&name).to_vec(),
            Sha256::digest(&key).to_vec(),
        )),
        _ => Err(OcspProblem::CertIdHash(*oid)),
    }
}

fn octets(bytes: Vec<u8>) -> Result<OctetString, OcspProblem> {
    OctetString::new(bytes).map_err(OcspProblem::Der)
}

/// Go's `url.QueryEscape` of base64 text: all but `A-Za-z0-9-_.~` escaped.
fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3 / 2);
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b))
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The status a response body gives the certificate `id` names, once the
/// response is signed by the issuer (or its delegated responder), names
/// the certificate and is current.
fn judge(
    body: &[u8],
    id: &CertId,
    issuer: &Certificate,
    ctx: &Context<'_>,
) -> Result<Status, OcspProblem> {
    let response = OcspResponse::from_der(body).map_err(OcspProblem::Unreadable)?;
    let basic = match (response.status, response.bytes) {
        (ResponseStatus::Successful, Some(bytes)) => basic_response(&bytes)?,
        (ResponseStatus::Successful, None) => return Err(OcspProblem::NoBody),
        (status, _) => return Err(OcspProblem::Refused(refusal(status))),
    };
    let tbs = basic.tbs_response_data.to_der().map_err(OcspProblem::Der)?;
    let data = ResponseData::from_der(&tbs).map_err(OcspProblem::UnreadableData)?;
    let signer = signer(&basic, issuer, ctx.now)?;
    let key = signer.subject_key().map_err(OcspProblem::Certificate)?;
    let signed = signed_by(&basic.signature_algorithm, &basic.signature, &key, &tbs)
        .map_err(OcspProblem::SignatureAlgorithm)?;
    if !signed {
        return Err(OcspProblem::Signature);
    }
    let single = data
        .responses
        .iter()
        .find(|r| names(r, id, issuer))
        .ok_or(OcspProblem::NoMatchingResponse)?;
    let next_update = single.next_update.map(|t| unix(t.to_unix_duration()));
    if next_update.is_none_or(|next| ctx.now > next) {
        return Err(OcspProblem::Expired);
    }
    Ok(match &single.cert_status {
        CertStatus::Good(_) => Status::Good,
        CertStatus::Unknown(_) => Status::Unknown,
        CertStatus::Revoked(_) if invalid_after_signing(single, ctx.signing_time) => Status::Good,
        CertStatus::Revoked(_) => Status::Revoked,
    })
}

/// notation's texts for a responder's refusal.
fn refusal(status: ResponseStatus) -> &'static str {
    match status {
        ResponseStatus::MalformedRequest => "OCSP malformed",
        ResponseStatus::InternalError => "OCSP internal error",
        ResponseStatus::TryLater => "OCSP try later",
        ResponseStatus::SigRequired => "OCSP signature required",
        ResponseStatus::Unauthorized => "OCSP unauthorized",
        ResponseStatus::Successful => "OCSP successful",
    }
}

fn basic_response(bytes: &ResponseBytes) -> Result<BasicOcspResponse, OcspProblem> {
    if bytes.response_type.to_string() != ID_PKIX_OCSP_BASIC {
        return Err(OcspProblem::ResponseType(bytes.response_type));
    }
    BasicOcspResponse::from_der(bytes.response.as_bytes()).map_err(OcspProblem::UnreadableBasic)
}

/// Who must have signed: the issuer, or the responder certificate the
/// response carries, which the issuer signed for OCSP signing and which is
/// valid now. Only the first certificate counts (as in Go).
fn signer(
    basic: &BasicOcspResponse,
    issuer: &Certificate,
    now: i64,
) -> Result<Certificate, OcspProblem> {
    let Some(first) = basic.certs.as_ref().and_then(|c| c.first()) else {
        return Ok(issuer.clone());
    };
    let der = first.to_der().map_err(OcspProblem::Der)?;
    if der == issuer.der() {
        return Ok(issuer.clone());
    }
    let responder = Certificate::from_der(&der).map_err(OcspProblem::Responder)?;
    responder
        .verify_signed_by(issuer)
        .map_err(OcspProblem::ResponderSignature)?;
    let ekus = responder
        .ext_key_usage()
        .map_err(OcspProblem::Certificate)?;
    if !ekus.is_some_and(|ekus| ekus.iter().any(|e| e == ID_KP_OCSP_SIGNING)) {
        return Err(OcspProblem::ResponderNotOcspSigning(responder.subject()));
    }
    if now < responder.not_before() || now > responder.not_after() {
        return Err(OcspProblem::ResponderNotValid(responder.subject()));
    }
    Ok(responder)
}

/// Whether `single` is about the certificate `id` names: the same serial
/// under the same issuer name and key, by the hash the responder chose.
fn names(single: &SingleResponse, id: &CertId, issuer: &Certificate) -> bool {
    let theirs = &single.cert_id;
    if theirs.serial_number != id.serial_number {
        return false;
    }
    let Ok((name, key)) = issuer_hashes(issuer, &theirs.hash_algorithm.oid) else {
        return false;
    };
    theirs.issuer_name_hash.as_bytes() == name && theirs.issuer_key_hash.as_bytes() == key
}

/// notation: a revoked certificate whose invalidity date is after the
/// authentic signing time still signed validly.
fn invalid_after_signing(single: &SingleResponse, signing_time: Option<i64>) -> bool {
    let Some(signed) = signing_time else {
        return false;
    };
    let invalidity = single
        .single_extensions
        .iter()
        .flatten()
        .find(|e| e.extn_id.to_string() == ID_CE_INVALIDITY_DATE)
        .and_then(|e| GeneralizedTime::from_der(e.extn_value.as_bytes()).ok());
    invalidity.is_some_and(|t| signed < unix(t.to_unix_duration()))
}
