//! Certificate revocation under notation's rules (notation-core-go
//! `revocation`, which Kyverno's `strict` trust policy enforces for the
//! signing chain and the timestamping chain).
//!
//! Every certificate of a chain but the root is checked against its
//! issuer, the next certificate:
//! - with OCSP when it names OCSP servers (RFC 6960; the servers in order,
//!   until one answers good, revoked or unknown); an unknown status there
//!   falls back to the certificate's CRLs, when it names any;
//! - else with its CRLs (RFC 5280: every distribution point must answer,
//!   and none may revoke);
//! - a certificate that names neither is not revocable, and passes.
//!
//! A revoked certificate fails; so does a status that cannot be learnt
//! (a server unreachable or refused, an answer unsigned, stale or for
//! another certificate), naming each endpoint and what went wrong.
//!
//! Pure like the rest of this crate: the caller fetches ([`Fetch`]), over
//! the URL's own scheme, which notation requires to be plain HTTP (the
//! answers are signed). A fetcher may cache: an answer is checked on
//! every use, and a cached one that no longer passes is fetched afresh.

mod crl;
mod ocsp;

pub use crl::CrlProblem;
pub use ocsp::OcspProblem;

use ivpol_verify::joined;
use ivpol_verify::x509::Certificate;

/// Largest OCSP response read (notation's bound).
pub const MAX_OCSP_RESPONSE_BYTES: usize = 20 * 1024;
/// Largest CRL read: CRLs of public CAs run to a few megabytes.
pub const MAX_CRL_BYTES: usize = 8 << 20;
/// Most entries one CRL may list.
pub const MAX_CRL_ENTRIES: usize = 200_000;

/// What a chain is for: it names the certificates in messages, as
/// notation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// The envelope's signing chain.
    CodeSigning,
    /// The timestamp authority's chain.
    Timestamping,
}

impl Purpose {
    fn role(self) -> &'static str {
        match self {
            Purpose::CodeSigning => "signing",
            Purpose::Timestamping => "timestamping",
        }
    }
}

/// An answer from a revocation endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The response body (status 200).
    pub body: Vec<u8>,
    /// Whether it came from a cache rather than from the endpoint now.
    pub cached: bool,
}

/// How revocation answers are fetched: an HTTP GET of an OCSP or CRL URL.
pub trait Fetch {
    /// The body of a 200 answer to `GET url`, at most `max` bytes, or why
    /// there is none. `issuer` must have signed the answer; a cache keys
    /// it with `url`. `fresh` asks for the endpoint's answer now, never a
    /// cached one.
    fn get(
        &self,
        url: &str,
        issuer: &Certificate,
        max: usize,
        fresh: bool,
    ) -> Result<Fetched, String>;

    /// `body`, fetched from `url` for `issuer`, passed every check: a
    /// cache may keep it.
    fn passed(&self, url: &str, issuer: &Certificate, body: &[u8]);
}

ivpol_verify::debug_as_display!(RevocationError);
/// Why a chain's revocation check fails, in notation's words.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum RevocationError {
    /// A certificate of the chain is revoked.
    #[error("{role} certificate with subject {subject:?} is revoked")]
    Revoked {
        /// `signing` or `timestamping`.
        role: &'static str,
        /// The certificate's subject, as notation prints it.
        subject: String,
    },
    /// A certificate's status could not be learnt.
    #[error("{role} certificate with subject {subject:?} revocation status is unknown: {}", joined(.why, "; "))]
    Unknown {
        /// `signing` or `timestamping`.
        role: &'static str,
        /// The certificate's subject, as notation prints it.
        subject: String,
        /// Each endpoint asked and what went wrong there.
        why: Vec<StatusProblem>,
    },
}

ivpol_verify::debug_as_display!(StatusProblem);
/// Why one way of learning a certificate's status gave none.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatusProblem {
    /// An extension naming the endpoints (named) that cannot be read.
    #[error("unreadable {what}: {source}")]
    Extension {
        /// The extension.
        what: &'static str,
        /// The parser's error.
        source: der::Error,
    },
    /// An OCSP server that gave no status.
    #[error("OCSP {server}: {problem}")]
    Ocsp {
        /// The server's URL.
        server: String,
        /// What went wrong there.
        problem: OcspProblem,
    },
    /// A certificate naming a freshest CRL, which is not fetched.
    #[error("CRL: freshest CRL (delta CRLs) from the certificate extension is not supported")]
    DeltaCrl,
    /// A CRL distribution point that gave no status.
    #[error("CRL {url}: {problem}")]
    Crl {
        /// The CRL's URL.
        url: String,
        /// What went wrong there.
        problem: CrlProblem,
    },
}

ivpol_verify::debug_as_display!(SchemeProblem);
/// An endpoint URL of a scheme notation does not fetch.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemeProblem {
    /// A scheme other than plain HTTP.
    #[error("{what} protocol {scheme} is not supported; only HTTP")]
    Unsupported {
        /// `CRL` or `OCSPServer`.
        what: &'static str,
        /// The URL's scheme.
        scheme: String,
    },
    /// A URL without a scheme.
    #[error("{what} URL {url:?} has no scheme")]
    NoScheme {
        /// `CRL` or `OCSPServer`.
        what: &'static str,
        /// The URL.
        url: String,
    },
}

impl RevocationError {
    /// Always [`ivpol_verify::Reason::Revocation`].
    pub fn reason(&self) -> ivpol_verify::Reason {
        ivpol_verify::Reason::Revocation
    }
}

// Carried by a `VerifyError`, which cannot name it, with its class.
impl ivpol_verify::Failure for RevocationError {
    fn reason(&self) -> ivpol_verify::Reason {
        RevocationError::reason(self)
    }
}

/// What one endpoint said about one certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    Good,
    Revoked,
    /// No status: why, with the method and the endpoint.
    Unknown(Vec<StatusProblem>),
}

/// When and where a chain is checked.
pub struct Context<'a> {
    /// Unix seconds now: an answer past its `nextUpdate` is stale.
    pub now: i64,
    /// The authentic signing time (scheme `notary.x509.signingAuthority`
    /// only, as notation): a certificate revoked with an invalidity date
    /// after it still passes.
    pub signing_time: Option<i64>,
    /// Where answers come from.
    pub fetch: &'a dyn Fetch,
}

/// Checks every certificate of `chain` (leaf first, root last) but the
/// root, as notation does: the failure names the revoked certificate
/// nearest the leaf, else the unknown one nearest the leaf.
pub fn check_chain(
    chain: &[Certificate],
    purpose: Purpose,
    ctx: &Context<'_>,
) -> Result<(), RevocationError> {
    let mut unknown = None;
    for (cert, issuer) in chain.iter().zip(chain.iter().skip(1)) {
        let subject = || super::go_subject(cert);
        match check_certificate(cert, issuer, ctx) {
            Answer::Good => {}
            Answer::Revoked => {
                return Err(RevocationError::Revoked {
                    role: purpose.role(),
                    subject: subject(),
                })
            }
            Answer::Unknown(why) => {
                unknown.get_or_insert(RevocationError::Unknown {
                    role: purpose.role(),
                    subject: subject(),
                    why,
                });
            }
        }
    }
    unknown.map_or(Ok(()), Err)
}

/// One certificate's status: OCSP, falling back to CRLs on an unknown
/// status; not revocable (good) when it names neither.
fn check_certificate(cert: &Certificate, issuer: &Certificate, ctx: &Context<'_>) -> Answer {
    let ocsp_urls = match ocsp::servers(cert) {
        Ok(urls) => urls,
        Err(e) => return Answer::Unknown(vec![e]),
    };
    let crl_urls = match crl::distribution_points(cert) {
        Ok(urls) => urls,
        Err(e) => return Answer::Unknown(vec![e]),
    };
    if ocsp_urls.is_empty() {
        return match crl_urls.is_empty() {
            true => Answer::Good,
            false => crl::check(cert, issuer, &crl_urls, ctx),
        };
    }
    match ocsp::check(cert, issuer, &ocsp_urls, ctx) {
        Answer::Unknown(mut why) if !crl_urls.is_empty() => {
            match crl::check(cert, issuer, &crl_urls, ctx) {
                Answer::Unknown(crl_why) => {
                    why.extend(crl_why);
                    Answer::Unknown(why)
                }
                answer => answer,
            }
        }
        answer => answer,
    }
}

/// Fetches `url` and judges the body with `judge`; when a cached body
/// does not pass (stale by now, say), the endpoint is asked afresh. A body
/// that passes is offered to the cache. The fetcher's refusal becomes `E`
/// through `fetch_failed`.
fn fetch_judged<T, E>(
    ctx: &Context<'_>,
    url: &str,
    issuer: &Certificate,
    max: usize,
    fetch_failed: impl Fn(String) -> E,
    judge: impl Fn(&[u8]) -> Result<T, E>,
) -> Result<T, E> {
    let first = ctx
        .fetch
        .get(url, issuer, max, false)
        .map_err(&fetch_failed)?;
    let fetched = match judge(&first.body) {
        Ok(verdict) if first.cached => return Ok(verdict),
        Ok(verdict) => (verdict, first.body),
        Err(_) if first.cached => {
            let fresh = ctx
                .fetch
                .get(url, issuer, max, true)
                .map_err(&fetch_failed)?;
            (judge(&fresh.body)?, fresh.body)
        }
        Err(e) => return Err(e),
    };
    // Only a body fetched now is offered to the cache: a cached one that
    // passed is there already.
    let (verdict, body) = fetched;
    ctx.fetch.passed(url, issuer, &body);
    Ok(verdict)
}

/// The extension `T` of `cert`, if present; `what` names it when it
/// cannot be read.
fn extension<T>(cert: &Certificate, what: &'static str) -> Result<Option<T>, StatusProblem>
where
    T: for<'a> der::Decode<'a, Error = der::Error> + der::oid::AssociatedOid,
{
    match cert.inner().tbs_certificate().get_extension::<T>() {
        Ok(found) => Ok(found.map(|(_, value)| value)),
        Err(source) => Err(StatusProblem::Extension { what, source }),
    }
}

/// The URIs among `names` (other general names are not endpoints).
fn uris(names: &[x509_cert::ext::pkix::name::GeneralName]) -> Vec<String> {
    names
        .iter()
        .filter_map(|n| match n {
            x509_cert::ext::pkix::name::GeneralName::UniformResourceIdentifier(uri) => {
                Some(uri.to_string())
            }
            _ => None,
        })
        .collect()
}

/// Only plain HTTP, as notation: the answers are signed, and an HTTPS
/// endpoint would need a revocation check of its own.
fn check_scheme(url: &str, what: &'static str) -> Result<(), SchemeProblem> {
    match url.split_once("://") {
        Some((scheme, _)) if scheme.eq_ignore_ascii_case("http") => Ok(()),
        Some((scheme, _)) => Err(SchemeProblem::Unsupported {
            what,
            scheme: scheme.to_string(),
        }),
        None => Err(SchemeProblem::NoScheme {
            what,
            url: url.to_string(),
        }),
    }
}

/// Unix seconds of an ASN.1 time.
fn unix(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}
