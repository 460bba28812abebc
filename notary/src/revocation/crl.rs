//! CRLs (RFC 5280 §5) as notation reads them: every distribution point of
//! the certificate is fetched (plain HTTP), its CRL must be signed by the
//! issuer (a CA allowed to sign CRLs), carry a `nextUpdate` still ahead
//! and no critical extension beyond the issuing distribution point and
//! delta indicator; an entry for the certificate's serial revokes it,
//! except a `removeFromCRL` that follows a hold, or an invalidity date
//! after the authentic signing time.
//!
//! Delta CRLs (a certificate naming a freshest CRL) are not fetched: such
//! a certificate's status is unknown, where notation would read the delta.

use super::{check_scheme, fetch_judged, unix, Answer, Context, SchemeProblem, StatusProblem};
use super::{MAX_CRL_BYTES, MAX_CRL_ENTRIES};
use der::asn1::{GeneralizedTime, ObjectIdentifier};
use der::Decode;
use ivpol_verify::x509::{fmt_time, signed_by, Certificate, Tlv, X509Error};
use x509_cert::crl::{CertificateList, RevokedCert};
use x509_cert::ext::pkix::name::DistributionPointName;
use x509_cert::ext::pkix::CrlDistributionPoints;

const ID_CE_FRESHEST_CRL: &str = "2.5.29.46";
const ID_CE_ISSUING_DISTRIBUTION_POINT: &str = "2.5.29.28";
const ID_CE_DELTA_CRL_INDICATOR: &str = "2.5.29.27";
const ID_CE_INVALIDITY_DATE: &str = "2.5.29.24";
const ID_CE_REASON_CODE: &str = "2.5.29.21";
const REASON_CERTIFICATE_HOLD: u8 = 6;
const REASON_REMOVE_FROM_CRL: u8 = 8;

ivpol_verify::debug_as_display!(CrlProblem);
/// Why a CRL distribution point gave no status, in notation's words.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum CrlProblem {
    /// A URL notation does not fetch.
    #[error(transparent)]
    Scheme(#[from] SchemeProblem),
    /// The CRL could not be fetched (the fetcher's words).
    #[error("{0}")]
    Fetch(String),
    /// The body is not a CRL.
    #[error("unreadable CRL: {0}")]
    Unreadable(#[source] der::Error),
    /// More entries than are read.
    #[error("the CRL lists {0} certificates, more than the {MAX_CRL_ENTRIES} allowed")]
    TooManyEntries(usize),
    /// The CRL is not the issuer's (its subject), or cannot be checked.
    #[error("CRL is not signed by CA {issuer}: {why}")]
    NotSignedBy {
        /// The issuer's subject.
        issuer: String,
        /// Why.
        why: NotSigned,
    },
    /// No `nextUpdate`.
    #[error("CRL NextUpdate is not set")]
    NoNextUpdate,
    /// `nextUpdate` has passed (both unix seconds, shown in RFC 3339).
    #[error("expired CRL. Current time {} is after CRL NextUpdate {}", fmt_time(*.now), fmt_time(*.next_update))]
    Expired {
        /// The time of the check.
        now: i64,
        /// The CRL's `nextUpdate`.
        next_update: i64,
    },
    /// A critical extension (of the CRL or of an entry) notation does not
    /// process.
    #[error("unsupported critical extension found in CRL: {0}")]
    CriticalExtension(ObjectIdentifier),
    /// An entry's invalidity date that does not parse.
    #[error("failed to parse invalidity date: {0}")]
    InvalidityDate(#[source] der::Error),
    /// An entry's reason code that is not a one-byte ENUMERATED.
    #[error("unreadable CRL reason code")]
    ReasonCode,
}

ivpol_verify::debug_as_display!(NotSigned);
/// Why a CRL is not taken as its issuer's.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotSigned {
    /// The issuer is not a CA.
    #[error("the issuer is not a CA")]
    NotCa,
    /// The issuer's key usage does not allow signing CRLs.
    #[error("the issuer's key usage does not allow cRLSign")]
    NoCrlSign,
    /// The issuer's signature does not verify.
    #[error("the signature does not verify")]
    Signature,
    /// The issuer's key usage or key, or the CRL's DER or signature
    /// algorithm, cannot be read.
    #[error(transparent)]
    Unreadable(X509Error),
}

/// The full-name URIs of `cert`'s CRL distribution points.
pub(super) fn distribution_points(cert: &Certificate) -> Result<Vec<String>, StatusProblem> {
    let Some(points) = super::extension::<CrlDistributionPoints>(cert, "CRL distribution points")?
    else {
        return Ok(Vec::new());
    };
    let names: Vec<_> = points
        .0
        .into_iter()
        .filter_map(|p| match p.distribution_point {
            Some(DistributionPointName::FullName(names)) => Some(names),
            _ => None,
        })
        .flatten()
        .collect();
    Ok(super::uris(&names))
}

/// The status the CRLs at `urls` give `cert`: revoked as soon as one
/// revokes it, unknown when one cannot be fetched or does not pass.
pub(super) fn check(
    cert: &Certificate,
    issuer: &Certificate,
    urls: &[String],
    ctx: &Context<'_>,
) -> Answer {
    if cert.extension(ID_CE_FRESHEST_CRL).is_some() {
        return Answer::Unknown(vec![StatusProblem::DeltaCrl]);
    }
    for url in urls {
        let answer = check_scheme(url, "CRL")
            .map_err(CrlProblem::from)
            .and_then(|()| {
                fetch_judged(ctx, url, issuer, MAX_CRL_BYTES, CrlProblem::Fetch, |body| {
                    judge(body, cert, issuer, ctx)
                })
            });
        match answer {
            Ok(true) => return Answer::Revoked,
            Ok(false) => {}
            Err(problem) => {
                return Answer::Unknown(vec![StatusProblem::Crl {
                    url: url.clone(),
                    problem,
                }])
            }
        }
    }
    Answer::Good
}

/// Whether the CRL `body` revokes `cert`, once it passes as a CRL of
/// `issuer` that is current.
fn judge(
    body: &[u8],
    cert: &Certificate,
    issuer: &Certificate,
    ctx: &Context<'_>,
) -> Result<bool, CrlProblem> {
    let crl = CertificateList::from_der(body).map_err(CrlProblem::Unreadable)?;
    validate(&crl, body, issuer, ctx.now)?;
    let serial = cert.inner().tbs_certificate().serial_number();
    let entries = crl.tbs_cert_list.revoked_certificates.iter().flatten();
    let mut hold: Option<(i64, u8)> = None;
    for entry in entries.filter(|e| &e.serial_number == serial) {
        let ext = EntryExtensions::of(entry)?;
        if let (Some(signed), Some(invalid)) = (ctx.signing_time, ext.invalidity_date) {
            if signed < invalid {
                return Ok(false);
            }
        }
        let when = unix(entry.revocation_date.to_unix_duration());
        match ext.reason {
            Some(r @ (REASON_CERTIFICATE_HOLD | REASON_REMOVE_FROM_CRL)) => {
                if hold.is_none_or(|(t, _)| t < when) {
                    hold = Some((when, r));
                }
            }
            _ => return Ok(true),
        }
    }
    Ok(hold.is_some_and(|(_, r)| r == REASON_CERTIFICATE_HOLD))
}

/// notation's checks of a CRL before its entries count.
fn validate(
    crl: &CertificateList,
    der: &[u8],
    issuer: &Certificate,
    now: i64,
) -> Result<(), CrlProblem> {
    let entries = crl
        .tbs_cert_list
        .revoked_certificates
        .as_ref()
        .map_or(0, Vec::len);
    if entries > MAX_CRL_ENTRIES {
        return Err(CrlProblem::TooManyEntries(entries));
    }
    check_issuer(crl, der, issuer).map_err(|why| CrlProblem::NotSignedBy {
        issuer: issuer.subject(),
        why,
    })?;
    let next_update = crl
        .tbs_cert_list
        .next_update
        .map(|t| unix(t.to_unix_duration()))
        .ok_or(CrlProblem::NoNextUpdate)?;
    if now > next_update {
        return Err(CrlProblem::Expired { now, next_update });
    }
    for ext in crl.tbs_cert_list.crl_extensions.iter().flatten() {
        let oid = ext.extn_id.to_string();
        let allowed = [ID_CE_ISSUING_DISTRIBUTION_POINT, ID_CE_DELTA_CRL_INDICATOR];
        if ext.critical && !allowed.contains(&oid.as_str()) {
            return Err(CrlProblem::CriticalExtension(ext.extn_id));
        }
    }
    Ok(())
}

/// Go's `RevocationList.CheckSignatureFrom`: the issuer is a CA allowed to
/// sign CRLs, and its key signed the CRL's exact `tbsCertList`.
fn check_issuer(crl: &CertificateList, der: &[u8], issuer: &Certificate) -> Result<(), NotSigned> {
    if !issuer.is_ca() {
        return Err(NotSigned::NotCa);
    }
    let key_usage = issuer.key_usage().map_err(NotSigned::Unreadable)?;
    if key_usage.is_some_and(|ku| !ku.crl_sign()) {
        return Err(NotSigned::NoCrlSign);
    }
    let outer = Tlv::read(der).map_err(NotSigned::Unreadable)?;
    let tbs = Tlv::read(outer.contents).map_err(NotSigned::Unreadable)?;
    let key = issuer.subject_key().map_err(NotSigned::Unreadable)?;
    match signed_by(&crl.signature_algorithm, &crl.signature, &key, tbs.whole) {
        Ok(true) => Ok(()),
        Ok(false) => Err(NotSigned::Signature),
        Err(e) => Err(NotSigned::Unreadable(e)),
    }
}

/// The entry extensions notation reads; any other critical one fails.
struct EntryExtensions {
    invalidity_date: Option<i64>,
    reason: Option<u8>,
}

impl EntryExtensions {
    fn of(entry: &RevokedCert) -> Result<EntryExtensions, CrlProblem> {
        let mut out = EntryExtensions {
            invalidity_date: None,
            reason: None,
        };
        for ext in entry.crl_entry_extensions.iter().flatten() {
            let value = ext.extn_value.as_bytes();
            match ext.extn_id.to_string().as_str() {
                ID_CE_INVALIDITY_DATE => {
                    let t = GeneralizedTime::from_der(value).map_err(CrlProblem::InvalidityDate)?;
                    out.invalidity_date = Some(unix(t.to_unix_duration()));
                }
                ID_CE_REASON_CODE => out.reason = Some(reason_code(value)?),
                _ if ext.critical => return Err(CrlProblem::CriticalExtension(ext.extn_id)),
                _ => {}
            }
        }
        Ok(out)
    }
}

/// A `CRLReason` (an ENUMERATED of one byte).
fn reason_code(value: &[u8]) -> Result<u8, CrlProblem> {
    match value {
        [0x0a, 0x01, code] => Ok(*code),
        _ => Err(CrlProblem::ReasonCode),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_codes_are_one_byte_enumerations() {
        assert_eq!(reason_code(&[0x0a, 0x01, 6]), Ok(6));
        let unreadable = Err(CrlProblem::ReasonCode);
        // an INTEGER, not an ENUMERATED
        assert_eq!(reason_code(&[0x02, 0x01, 6]), unreadable);
        // two bytes long
        assert_eq!(reason_code(&[0x0a, 0x02, 0, 6]), unreadable);
    }
}
