//! Notary Project (notation) signature envelopes, verified offline:
//! JWS (`application/jose+json`) and COSE_Sign1
//! (`application/cose`), their certificate chains (`certs`), and the
//! revocation of those chains (`revocation`).
//!
//! It owns Notary alone and builds on ivpol-verify for the pieces every
//! verifier shares: keys, encodings, X.509, RFC 3161 timestamps, RFC 3339
//! times and [`VerifyError`](ivpol_verify::VerifyError), which carries its
//! errors. It may import ivpol-verify and ivpol-refs only, never a crate
//! above them (no policies, no Kubernetes, no network: the OCSP and CRL
//! answers come in through [`revocation::Fetch`]), and ivpol-verify may
//! not import it. It is its own crate so that the verifier stays small
//! and a change to Notary rebuilds only what uses it.
//!
//! [`verify`] applies the trust policy Kyverno builds in code (level
//! `strict`, trusted identities `*`, trust store `ca:kyverno`, plus
//! `tsa:kyverno` when TSA certificates are given), in notation-go's order:
//!
//! 1. integrity: the envelope parses, its protected headers are valid
//!    (`crit`, signing scheme, signing time, expiry, `cty`), the signature
//!    verifies with the leaf key, `alg` matches the leaf key, and the `x5c`
//!    chain meets the Notary certificate rules ([`certs`]);
//! 2. the payload's `targetArtifact` equals the target descriptor;
//! 3. a verification plugin, or any other critical header this verifier
//!    does not understand, fails the signature (there is no plugin support);
//! 4. authenticity: a certificate of the chain is in the trust store
//!    (`ca` for `notary.x509`, `signingAuthority` for
//!    `notary.x509.signingAuthority`);
//! 5. expiry: `io.cncf.notary.expiry`, when present, is after `now`;
//! 6. authentic timestamp: for `notary.x509` with TSA roots configured an
//!    RFC 3161 countersignature is required, verified against them (its
//!    message imprint hashes the signature with the signature algorithm's
//!    hash, and signing-certificate-v2 binds the TSA signer), and
//!    every certificate must be valid at its `genTime`; without TSA roots
//!    every certificate must be valid at `now`. For
//!    `notary.x509.signingAuthority` every certificate must be valid at the
//!    signed `authenticSigningTime`.
//!
//! 7. revocation ([`check_revocation`], a separate step because it needs
//!    answers from the network): the timestamping chain, then the signing
//!    chain, by OCSP and CRL under notation's rules ([`revocation`]).
//!
//! Error texts follow notation's where it has one.
//!
//! Specification: <https://github.com/notaryproject/specifications/tree/main/specs>

// Nothing here needs unsafe code.
#![forbid(unsafe_code)]
// Every public item says what it is: the engine, the guest and the bench
// read this crate's API from its docs.
#![deny(missing_docs)]
// Public items are the ones the engine, the guest and the bench reach;
// the rest is `pub(crate)`, and the lint keeps it that way.
#![warn(unreachable_pub)]

pub mod certs;
mod cose;
mod error;
mod jws;
pub mod revocation;
pub mod standalone;
#[cfg(test)]
mod tests;

pub use error::{EnvelopeError, IllegalBase64, NotaryError, SignedTarget};
use ivpol_verify::timestamp::{self, TimeStampToken};
use ivpol_verify::x509::Certificate;
use ivpol_verify::{Classify, Reason, Result};

/// The media type of a JWS signature envelope.
pub const MEDIA_TYPE_JWS: &str = "application/jose+json";
/// The media type of a COSE_Sign1 signature envelope.
pub const MEDIA_TYPE_COSE: &str = "application/cose";
/// The content type of the signed Notary payload.
pub const MEDIA_TYPE_PAYLOAD: &str = "application/vnd.cncf.notary.payload.v1+json";
/// Largest envelope accepted.
pub const MAX_ENVELOPE_BYTES: usize = 4 << 20;
/// Most certificates in an envelope's chain.
pub const MAX_CHAIN_CERTS: usize = 10;

const SCHEME_X509: &str = "notary.x509";
const SCHEME_SIGNING_AUTHORITY: &str = "notary.x509.signingAuthority";

pub(crate) const H_SIGNING_SCHEME: &str = "io.cncf.notary.signingScheme";
pub(crate) const H_SIGNING_TIME: &str = "io.cncf.notary.signingTime";
pub(crate) const H_AUTHENTIC_SIGNING_TIME: &str = "io.cncf.notary.authenticSigningTime";
pub(crate) const H_EXPIRY: &str = "io.cncf.notary.expiry";
pub(crate) const H_PLUGIN: &str = "io.cncf.notary.verificationPlugin";
pub(crate) const H_PLUGIN_MIN_VERSION: &str = "io.cncf.notary.verificationPluginMinVersion";

/// Trust material: Kyverno's `notary.certs` and `notary.tsaCerts`.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// The `ca` trust store (signatures with scheme `notary.x509`).
    pub roots: Vec<Certificate>,
    /// The `tsa` trust store. When non-empty a `notary.x509` signature must
    /// carry a timestamp countersignature (notation's `verifyTimestamp:
    /// always`, the default).
    pub tsa_roots: Vec<Certificate>,
    /// The `signingAuthority` trust store (scheme
    /// `notary.x509.signingAuthority`). Kyverno configures none, so such
    /// signatures fail there, as they do in Kyverno.
    pub signing_authority_roots: Vec<Certificate>,
}

/// The artifact the signature must be for (the resolved descriptor).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The artifact's digest (`sha256:<hex>`).
    pub digest: String,
    /// The artifact's media type.
    pub media_type: String,
    /// The artifact's size in bytes.
    pub size: u64,
}

/// What a verified signature established.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The authenticated signing time: the timestamp's `genTime` (scheme
    /// `notary.x509` with a verified countersignature) or the signed
    /// `authenticSigningTime` (`notary.x509.signingAuthority`); `None` when
    /// only the signer's own claimed `signingTime` is known.
    pub signing_time: Option<i64>,
    /// The envelope's certificate chain, leaf first.
    pub chain: Vec<Certificate>,
    /// The timestamp authority's chain, signer first, when a
    /// countersignature was verified.
    pub tsa_chain: Vec<Certificate>,
    /// The signed `authenticSigningTime` (scheme
    /// `notary.x509.signingAuthority`), which revocation weighs against an
    /// invalidity date.
    pub authentic_signing_time: Option<i64>,
    /// The signed payload (`{"targetArtifact": …}`).
    pub payload: serde_json::Value,
}

/// Signature algorithms of the Notary Project.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(clippy::upper_case_acronyms)]
pub enum Alg {
    /// RSASSA-PSS with SHA-256.
    PS256,
    /// RSASSA-PSS with SHA-384.
    PS384,
    /// RSASSA-PSS with SHA-512.
    PS512,
    /// ECDSA P-256 with SHA-256.
    ES256,
    /// ECDSA P-384 with SHA-384.
    ES384,
    /// ECDSA P-521 with SHA-512.
    ES512,
}

impl Alg {
    fn from_jws(name: &str) -> Option<Alg> {
        Some(match name {
            "PS256" => Alg::PS256,
            "PS384" => Alg::PS384,
            "PS512" => Alg::PS512,
            "ES256" => Alg::ES256,
            "ES384" => Alg::ES384,
            "ES512" => Alg::ES512,
            _ => return None,
        })
    }

    fn from_cose(id: i64) -> Option<Alg> {
        Some(match id {
            -37 => Alg::PS256,
            -38 => Alg::PS384,
            -39 => Alg::PS512,
            -7 => Alg::ES256,
            -35 => Alg::ES384,
            -36 => Alg::ES512,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Alg::PS256 => "PS256",
            Alg::PS384 => "PS384",
            Alg::PS512 => "PS512",
            Alg::ES256 => "ES256",
            Alg::ES384 => "ES384",
            Alg::ES512 => "ES512",
        }
    }

    /// The hash of the signature algorithm, which the timestamp's message
    /// imprint must use too.
    fn hash(self) -> ivpol_verify::keys::HashAlgorithm {
        use ivpol_verify::keys::HashAlgorithm as H;
        match self {
            Alg::PS256 | Alg::ES256 => H::Sha256,
            Alg::PS384 | Alg::ES384 => H::Sha384,
            Alg::PS512 | Alg::ES512 => H::Sha512,
        }
    }

    fn scheme(self) -> ivpol_verify::keys::Scheme {
        use ivpol_verify::keys::{HashAlgorithm as H, Scheme};
        match self {
            Alg::PS256 => Scheme::RsaPssSaltHashLen(H::Sha256),
            Alg::PS384 => Scheme::RsaPssSaltHashLen(H::Sha384),
            Alg::PS512 => Scheme::RsaPssSaltHashLen(H::Sha512),
            Alg::ES256 => Scheme::EcdsaRaw(H::Sha256),
            Alg::ES384 => Scheme::EcdsaRaw(H::Sha384),
            Alg::ES512 => Scheme::EcdsaRaw(H::Sha512),
        }
    }
}

/// A value of a protected header this verifier does not interpret.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Extra {
    Text(String),
    Other,
}

/// An envelope's content, whatever its format.
#[derive(Debug)]
pub(crate) struct Envelope {
    pub alg: Alg,
    pub cty: String,
    pub scheme: String,
    /// `signingTime` or `authenticSigningTime`, unix seconds.
    pub signing_time: i64,
    pub expiry: Option<i64>,
    /// Protected headers other than the ones above, and whether critical.
    pub extended: Vec<(String, Extra, bool)>,
    pub certs: Vec<Vec<u8>>,
    pub signature: Vec<u8>,
    /// The bytes the signature covers.
    pub signed: Vec<u8>,
    pub payload: Vec<u8>,
    pub timestamp: Option<Vec<u8>>,
}

/// The checks both formats share on the parsed protected headers (the
/// scheme's time header, `crit` coverage, expiry after signing):
/// `present` lists the header names present, `crit` the critical ones.
/// Returns the signing time the scheme's header gives.
pub(crate) fn check_scheme_headers(
    scheme: &str,
    signing_time: Option<i64>,
    authentic_time: Option<i64>,
    expiry: Option<i64>,
    crit: &[String],
    present: &[String],
) -> Result<i64, EnvelopeError> {
    let (has_signing_time, has_authentic_time) = (signing_time.is_some(), authentic_time.is_some());
    let has_expiry = expiry.is_some();
    match scheme {
        SCHEME_X509 => {
            if has_authentic_time {
                return Err(EnvelopeError::AuthenticTimeForX509);
            }
            if !has_signing_time {
                return Err(EnvelopeError::NoSigningTime);
            }
        }
        SCHEME_SIGNING_AUTHORITY => {
            if has_signing_time {
                return Err(EnvelopeError::SigningTimeForAuthority);
            }
            if !has_authentic_time {
                return Err(EnvelopeError::NoAuthenticTime);
            }
        }
        other => return Err(EnvelopeError::UnsupportedScheme(other.to_string())),
    }
    if crit.is_empty() {
        return Err(EnvelopeError::NoCrit);
    }
    let mut required = vec![H_SIGNING_SCHEME];
    if has_expiry {
        required.push(H_EXPIRY);
    }
    if scheme == SCHEME_SIGNING_AUTHORITY {
        required.push(H_AUTHENTIC_SIGNING_TIME);
    }
    let missing: Vec<&'static str> = required
        .into_iter()
        .filter(|r| !crit.iter().any(|c| c == r))
        .collect();
    if !missing.is_empty() {
        return Err(EnvelopeError::NotCritical(missing));
    }
    for c in crit {
        if !present.iter().any(|p| p == c) {
            return Err(EnvelopeError::CriticalAbsent(c.clone()));
        }
    }
    let signing_time = signing_time.or(authentic_time).unwrap_or_default();
    if expiry.is_some_and(|e| e <= signing_time) {
        return Err(EnvelopeError::ExpiryBeforeSigning);
    }
    Ok(signing_time)
}

/// Verifies one Notary Project signature envelope (`media_type`
/// `application/jose+json` or `application/cose`) for `target` under
/// Kyverno's strict trust policy with `trust`, at `now` (unix seconds).
pub fn verify(
    envelope: &[u8],
    media_type: &str,
    target: &Target,
    trust: &Trust,
    now: i64,
) -> Result<Verified> {
    if envelope.len() > MAX_ENVELOPE_BYTES {
        return Err(NotaryError::TooLarge(envelope.len()).into());
    }
    if envelope.is_empty() {
        return Err(NotaryError::Empty.into());
    }
    let env = match media_type {
        MEDIA_TYPE_JWS => jws::parse(envelope),
        MEDIA_TYPE_COSE => cose::parse(envelope),
        other => return Err(NotaryError::EnvelopeType(other.to_string()).into()),
    }?;
    // Integrity: the chain is well formed and signed the payload.
    let (chain, payload) = integrity(&env).class(Reason::BadSignature)?;
    check_target(&payload, target)?;
    check_extended(&env)?;
    let trusted = if env.scheme == SCHEME_SIGNING_AUTHORITY {
        &trust.signing_authority_roots
    } else {
        &trust.roots
    };
    authenticity(&chain, trusted).class(Reason::UntrustedChain)?;
    if let Some(expiry) = env.expiry {
        if now >= expiry {
            return Err(NotaryError::Expired(expiry).into());
        }
    }
    let (signing_time, tsa_chain) =
        authentic_timestamp(&env, &chain, &trust.tsa_roots, now).class(Reason::Timestamp)?;
    let authentic_signing_time =
        (env.scheme == SCHEME_SIGNING_AUTHORITY).then_some(env.signing_time);
    Ok(Verified {
        signing_time,
        chain,
        tsa_chain,
        authentic_signing_time,
        payload,
    })
}

/// The revocation step of a [`verify`]d signature, at `now`: the
/// timestamping chain (when a countersignature was verified), then the
/// signing chain, with answers from `fetch`.
pub fn check_revocation(
    verified: &Verified,
    now: i64,
    fetch: &dyn revocation::Fetch,
) -> Result<()> {
    use revocation::{check_chain, Context, Purpose};
    let tsa = Context {
        now,
        signing_time: None,
        fetch,
    };
    if !verified.tsa_chain.is_empty() {
        check_chain(&verified.tsa_chain, Purpose::Timestamping, &tsa)?;
    }
    let signing = Context {
        signing_time: verified.authentic_signing_time,
        ..tsa
    };
    Ok(check_chain(
        &verified.chain,
        Purpose::CodeSigning,
        &signing,
    )?)
}

/// Signature, chain and algorithm checks; returns the chain and the
/// payload JSON.
fn integrity(env: &Envelope) -> Result<(Vec<Certificate>, serde_json::Value), NotaryError> {
    if env.certs.is_empty() {
        return Err(EnvelopeError::NoChain.into());
    }
    if env.certs.len() > MAX_CHAIN_CERTS {
        return Err(EnvelopeError::ChainTooLong(env.certs.len()).into());
    }
    let chain = env
        .certs
        .iter()
        .map(|d| Certificate::from_der(d))
        .collect::<Result<Vec<_>, _>>()?;
    let leaf = &chain[0];
    let key = leaf.subject_key()?;
    if !key.verify_scheme(env.alg.scheme(), &env.signed, &env.signature) {
        return Err(NotaryError::BadSignature(env.alg));
    }
    certs::validate_chain(&chain)?;
    let leaf_alg = certs::signing_algorithm(leaf)?;
    if leaf_alg != env.alg {
        return Err(NotaryError::AlgorithmMismatch {
            leaf: leaf_alg,
            envelope: env.alg,
        });
    }
    if env.cty != MEDIA_TYPE_PAYLOAD {
        return Err(NotaryError::ContentType(env.cty.clone()));
    }
    if env.payload.is_empty() {
        return Err(NotaryError::NoContent);
    }
    let payload: serde_json::Value = ivpol_refs::json::from_slice(&env.payload)
        .map_err(|e| NotaryError::PayloadNotJson(e.into()))?;
    Ok((chain, payload))
}

fn check_target(payload: &serde_json::Value, target: &Target) -> Result<(), NotaryError> {
    let t = payload
        .get("targetArtifact")
        .and_then(|t| t.as_object())
        .ok_or(NotaryError::NoTargetArtifact)?;
    let digest = t.get("digest").and_then(|v| v.as_str());
    let media_type = t.get("mediaType").and_then(|v| v.as_str());
    let size = t.get("size").and_then(|v| v.as_u64());
    if digest != Some(target.digest.as_str())
        || size != Some(target.size)
        || media_type != Some(target.media_type.as_str())
    {
        return Err(NotaryError::TargetMismatch {
            signed: Box::new(SignedTarget {
                digest: digest.unwrap_or("no digest").to_string(),
                media_type: media_type.unwrap_or("no mediaType").to_string(),
                size: size.map_or_else(|| "?".to_string(), |s| s.to_string()),
            }),
            artifact: Box::new(target.clone()),
        });
    }
    Ok(())
}

/// No plugins here: a signature that names one, or has any other critical
/// header beyond the Notary ones, is refused.
fn check_extended(env: &Envelope) -> Result<(), NotaryError> {
    if let Some((_, value, _)) = env.extended.iter().find(|(k, _, _)| k == H_PLUGIN) {
        let Extra::Text(name) = value else {
            return Err(NotaryError::PluginNotString);
        };
        return Err(NotaryError::PluginNotFound(name.clone()));
    }
    if let Some((k, _, _)) = env
        .extended
        .iter()
        .find(|(k, _, critical)| *critical || k == H_PLUGIN_MIN_VERSION)
    {
        return Err(NotaryError::UnknownCritical(k.clone()));
    }
    Ok(())
}

fn authenticity(chain: &[Certificate], trusted: &[Certificate]) -> Result<(), NotaryError> {
    if trusted.is_empty() {
        return Err(NotaryError::NoTrustedCertificates);
    }
    if chain.iter().any(|c| trusted.contains(c)) {
        Ok(())
    } else {
        Err(NotaryError::NotTrusted)
    }
}

fn authentic_timestamp(
    env: &Envelope,
    chain: &[Certificate],
    tsa_roots: &[Certificate],
    now: i64,
) -> Result<(Option<i64>, Vec<Certificate>), NotaryError> {
    if env.scheme == SCHEME_SIGNING_AUTHORITY {
        let t = env.signing_time;
        for cert in chain {
            if t < cert.not_before() || t > cert.not_after() {
                return Err(NotaryError::NotValidWhenSigned {
                    subject: go_subject(cert),
                    time: t,
                });
            }
        }
        return Ok((Some(t), Vec::new()));
    }
    if tsa_roots.is_empty() {
        for cert in chain {
            if now < cert.not_before() {
                return Err(NotaryError::NotYetValid {
                    subject: go_subject(cert),
                    not_before: cert.not_before(),
                });
            }
            if now > cert.not_after() {
                return Err(NotaryError::CertificateExpired {
                    subject: go_subject(cert),
                    not_after: cert.not_after(),
                });
            }
        }
        return Ok((None, Vec::new()));
    }
    let Some(token) = &env.timestamp else {
        return Err(NotaryError::NoCountersignature);
    };
    let token = TimeStampToken::parse_token(token)
        .map_err(|e| NotaryError::CountersignatureUnreadable(Box::new(e)))?;
    let (gen_time, tsa_chain) =
        timestamp::verify_with_roots(&token, &env.signature, env.alg.hash(), tsa_roots)
            .map_err(|e| NotaryError::CountersignatureInvalid(Box::new(e)))?;
    for cert in chain {
        if gen_time < cert.not_before() {
            return Err(NotaryError::TimestampBeforeValidity {
                subject: go_subject(cert),
                not_before: cert.not_before(),
            });
        }
        if gen_time > cert.not_after() {
            return Err(NotaryError::TimestampAfterValidity {
                subject: go_subject(cert),
                not_after: cert.not_after(),
            });
        }
    }
    Ok((Some(gen_time), tsa_chain))
}

/// The subject as Go's `pkix.Name.String()` prints it, which notation's
/// messages show: the standard attributes in Go's fixed order (CN, OU, O,
/// POSTALCODE, STREET, L, ST, C, as `ToRDNSequence` then reversed), others
/// first, whatever the DER order.
pub(crate) fn go_subject(cert: &Certificate) -> String {
    // Go's ToRDNSequence order, before reversal.
    const ORDER: &[&str] = &[
        "2.5.4.6", "2.5.4.8", "2.5.4.7", "2.5.4.9", "2.5.4.17", "2.5.4.10", "2.5.4.11", "2.5.4.3",
        "2.5.4.5",
    ];
    let subject = cert.inner().tbs_certificate().subject();
    let mut seq: Vec<String> = Vec::new();
    for oid in ORDER {
        let values: Vec<String> = subject
            .iter()
            .filter(|atv| atv.oid.to_string() == *oid)
            .map(|atv| atv.to_string())
            .collect();
        if !values.is_empty() {
            seq.push(values.join("+"));
        }
    }
    for atv in subject.iter() {
        if !ORDER.contains(&atv.oid.to_string().as_str()) {
            seq.push(atv.to_string());
        }
    }
    seq.reverse();
    seq.join(",")
}

/// Go's `time.RFC1123Z` layout in UTC: `Fri, 29 Jul 2022 23:59:00 +0000`.
pub fn fmt_rfc1123z(t: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = t.max(0) as u64;
    match der::DateTime::from_unix_duration(std::time::Duration::from_secs(secs)) {
        Ok(dt) => format!(
            "{}, {:02} {} {:04} {:02}:{:02}:{:02} +0000",
            DAYS[((secs / 86_400) % 7) as usize],
            dt.day(),
            MONTHS[usize::from(dt.month().clamp(1, 12)) - 1],
            dt.year(),
            dt.hour(),
            dt.minutes(),
            dt.seconds()
        ),
        Err(_) => format!("{t} (unix)"),
    }
}

/// RFC 3339 date-times (`2022-07-29T23:59:00Z`, `2023-06-27T13:30:33+08:00`,
/// fractions allowed) as unix seconds: one parser for every format.
pub use ivpol_verify::trust::parse_rfc3339;
