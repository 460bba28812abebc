//! Sigstore trust material: transparency-log and CT-log keys, Fulcio CAs and
//! timestamp authorities, read from a Sigstore `TrustedRoot` JSON
//! (`application/vnd.dev.sigstore.trustedroot+json;version=0.1` or
//! `application/vnd.dev.sigstore.trustedroot.v0.2+json`).

use serde::Deserialize;

use super::encoding::{b64decode, EncodingError};
use super::keys::{KeyError, PublicKey};
use super::x509::{Certificate, X509Error};
use super::{Reason, Result, Shared};

crate::debug_as_display!(TrustError);
/// Why a Sigstore trusted root was not accepted. Trust material that cannot
/// be read is [`Reason::Malformed`].
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustError {
    /// The document is over the 1 MiB bound (its size).
    #[error("trusted root is {0} bytes, more than the 1 MiB allowed")]
    TooLarge(usize),
    /// Not the trusted-root JSON (the parser's error).
    #[error("invalid trusted root JSON: {0}")]
    Json(#[source] Shared<serde_json::Error>),
    /// A base64 field that cannot be decoded.
    #[error(transparent)]
    Encoding(#[from] EncodingError),
    /// A log's key that is refused.
    #[error("{name}: {source}")]
    Key {
        /// The log (`tlog <url>`, `ctlog <url>`).
        name: String,
        /// Why its key is refused.
        source: KeyError,
    },
    /// An authority's certificate that cannot be read.
    #[error("{name}: {source}")]
    Certificate {
        /// The authority (`certificate authority <uri>`, ...).
        name: String,
        /// Why the certificate cannot be read.
        source: X509Error,
    },
    /// A mediaType other than the two supported.
    #[error("unsupported trusted root mediaType {0:?}")]
    MediaType(String),
    /// More entries of one kind than the bound.
    #[error("trusted root has {count} {what}, more than {MAX_ENTRIES}")]
    TooManyEntries {
        /// How many there are.
        count: usize,
        /// Of what (tlogs, ctlogs, ...).
        what: &'static str,
    },
    /// A log's public key without its bytes.
    #[error("{0}: publicKey has no rawBytes")]
    NoRawBytes(String),
    /// A log id that is not a SHA-256.
    #[error("{0}: logId.keyId is not 32 bytes")]
    LogIdLength(String),
    /// A log key without the start of its validity.
    #[error("{0}: publicKey.validFor.start is required")]
    NoValidityStart(String),
    /// An authority without certificates.
    #[error("{0}: empty certChain")]
    EmptyChain(String),
    /// An authority with more certificates than the bound.
    #[error("{0}: certChain longer than {MAX_CA_CHAIN}")]
    ChainTooLong(String),
    /// A validity time that is not RFC 3339.
    #[error("{name}: invalid validFor time {time:?}")]
    InvalidTime {
        /// The entry it belongs to.
        name: String,
        /// The text given.
        time: String,
    },
}

impl TrustError {
    /// The class of this failure: unreadable trust material.
    pub fn reason(&self) -> Reason {
        match self {
            TrustError::Encoding(e) => e.reason(),
            TrustError::Key { source, .. } => source.reason(),
            TrustError::Certificate { source, .. } => source.reason(),
            _ => Reason::Malformed,
        }
    }
}

/// Largest trusted root JSON accepted (Kyverno's cap).
pub const MAX_TRUSTED_ROOT: usize = 1 << 20;
/// Most entries of each kind in a trusted root.
const MAX_ENTRIES: usize = 64;
/// Most certificates in one CA's chain.
const MAX_CA_CHAIN: usize = 10;

const PUBLIC_GOOD: &str = include_str!("public-good-trusted-root.json");

/// A validity window in unix seconds; a missing end is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Validity {
    /// The first second of the window, if bounded.
    pub start: Option<i64>,
    /// The last second of the window, if bounded.
    pub end: Option<i64>,
}

impl Validity {
    /// Whether `t` lies in the window, both ends inclusive.
    pub fn contains(&self, t: i64) -> bool {
        self.start.is_none_or(|s| s <= t) && self.end.is_none_or(|e| t <= e)
    }
}

/// A transparency log's or CT log's key.
#[derive(Debug, Clone)]
pub struct LogKey {
    /// The log id: SHA-256 of the key's SPKI DER (as given by the trusted root).
    pub id: [u8; 32],
    /// The log's public key.
    pub key: PublicKey,
    /// When the key was in use.
    pub validity: Validity,
    /// The log's base URL (its checkpoints' origin), possibly empty.
    pub base_url: String,
}

impl LogKey {
    /// A log key whose id is its key's SPKI hash, valid forever.
    pub fn from_key(key: PublicKey) -> LogKey {
        LogKey {
            id: key.key_id(),
            key,
            validity: Validity::default(),
            base_url: String::new(),
        }
    }

    /// The key with log id `id`.
    pub fn find<'a>(keys: &'a [LogKey], id: &[u8]) -> Option<&'a LogKey> {
        keys.iter().find(|k| k.id.as_slice() == id)
    }
}

/// A certificate authority (Fulcio) or timestamp authority.
#[derive(Debug, Clone)]
pub struct CertificateAuthority {
    /// As in the trusted root: intermediates first, root last.
    pub certs: Vec<Certificate>,
    /// When the authority issued.
    pub validity: Validity,
    /// The authority's URI.
    pub uri: String,
}

/// Everything a Sigstore verification trusts.
#[derive(Debug, Clone, Default)]
pub struct TrustMaterial {
    /// Rekor logs' keys.
    pub tlogs: Vec<LogKey>,
    /// Certificate Transparency logs' keys (for SCTs).
    pub ctlogs: Vec<LogKey>,
    /// Fulcio certificate authorities.
    pub cas: Vec<CertificateAuthority>,
    /// RFC 3161 timestamp authorities.
    pub tsas: Vec<CertificateAuthority>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RootJson {
    media_type: String,
    #[serde(default)]
    tlogs: Vec<LogJson>,
    #[serde(default)]
    ctlogs: Vec<LogJson>,
    #[serde(default)]
    certificate_authorities: Vec<CaJson>,
    #[serde(default)]
    timestamp_authorities: Vec<CaJson>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogJson {
    #[serde(default)]
    base_url: String,
    public_key: PublicKeyJson,
    log_id: LogIdJson,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PublicKeyJson {
    raw_bytes: Option<String>,
    #[serde(default)]
    key_details: String,
    valid_for: Option<ValidForJson>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogIdJson {
    key_id: String,
}

#[derive(Deserialize)]
struct ValidForJson {
    start: Option<String>,
    end: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CaJson {
    #[serde(default)]
    uri: String,
    cert_chain: Option<CertChainJson>,
    valid_for: Option<ValidForJson>,
}

#[derive(Deserialize)]
struct CertChainJson {
    #[serde(default)]
    certificates: Vec<RawBytesJson>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawBytesJson {
    raw_bytes: String,
}

const MEDIA_TYPES: &[&str] = &[
    "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
    "application/vnd.dev.sigstore.trustedroot.v0.1+json",
    "application/vnd.dev.sigstore.trustedroot.v0.2+json",
    "application/vnd.dev.sigstore.trustedroot+json;version=0.2",
];

impl TrustMaterial {
    /// Parses a Sigstore TrustedRoot JSON document (at most 1 MiB). The
    /// attestors' entry point; [`TrustMaterial::read_trusted_root`] says
    /// why as a [`TrustError`].
    pub fn from_trusted_root_json(json: &str) -> Result<TrustMaterial> {
        Ok(TrustMaterial::read_trusted_root(json)?)
    }

    /// As [`TrustMaterial::from_trusted_root_json`].
    pub fn read_trusted_root(json: &str) -> Result<TrustMaterial, TrustError> {
        if json.len() > MAX_TRUSTED_ROOT {
            return Err(TrustError::TooLarge(json.len()));
        }
        let root: RootJson = serde_json::from_str(json).map_err(|e| TrustError::Json(e.into()))?;
        if !MEDIA_TYPES.contains(&root.media_type.as_str()) {
            return Err(TrustError::MediaType(root.media_type.clone()));
        }
        for (what, n) in [
            ("tlogs", root.tlogs.len()),
            ("ctlogs", root.ctlogs.len()),
            ("certificateAuthorities", root.certificate_authorities.len()),
            ("timestampAuthorities", root.timestamp_authorities.len()),
        ] {
            if n > MAX_ENTRIES {
                return Err(TrustError::TooManyEntries { count: n, what });
            }
        }
        Ok(TrustMaterial {
            tlogs: logs("tlog", &root.tlogs)?,
            ctlogs: logs("ctlog", &root.ctlogs)?,
            cas: cas("certificate authority", &root.certificate_authorities)?,
            tsas: cas("timestamp authority", &root.timestamp_authorities)?,
        })
    }

    /// The Sigstore public-good instance's trusted root, embedded; parsed
    /// once per instance (every attestor without its own root starts from
    /// it, and parsing its certificates is a large part of a verification).
    pub fn public_good() -> Result<TrustMaterial> {
        static PARSED: std::sync::OnceLock<Result<TrustMaterial>> = std::sync::OnceLock::new();
        PARSED
            .get_or_init(|| TrustMaterial::from_trusted_root_json(PUBLIC_GOOD))
            .clone()
    }

    /// All CA certificates (intermediates and roots) of every CA.
    pub fn ca_certificates(&self) -> Vec<Certificate> {
        self.cas
            .iter()
            .flat_map(|ca| ca.certs.iter().cloned())
            .collect()
    }
}

fn logs(what: &str, entries: &[LogJson]) -> Result<Vec<LogKey>, TrustError> {
    entries
        .iter()
        .map(|e| {
            let name = format!("{what} {}", e.base_url);
            let raw = e
                .public_key
                .raw_bytes
                .as_deref()
                .ok_or_else(|| TrustError::NoRawBytes(name.clone()))?;
            let der = b64decode(&name, raw)?;
            // PKCS1_* key details carry a bare PKCS#1 RSAPublicKey.
            let key = if e.public_key.key_details.starts_with("PKCS1_") {
                PublicKey::from_pkcs1_der(&der)
            } else {
                PublicKey::from_spki_der(&der)
            }
            .map_err(|source| TrustError::Key {
                name: name.clone(),
                source,
            })?;
            let id_bytes = b64decode(&format!("{name} logId"), &e.log_id.key_id)?;
            let id: [u8; 32] = id_bytes
                .as_slice()
                .try_into()
                .map_err(|_| TrustError::LogIdLength(name.clone()))?;
            let validity = validity(&name, e.public_key.valid_for.as_ref())?;
            if validity.start.is_none() {
                return Err(TrustError::NoValidityStart(name));
            }
            Ok(LogKey {
                id,
                key,
                validity,
                base_url: e.base_url.clone(),
            })
        })
        .collect()
}

fn cas(what: &str, entries: &[CaJson]) -> Result<Vec<CertificateAuthority>, TrustError> {
    entries
        .iter()
        .map(|e| {
            let name = format!("{what} {}", e.uri);
            let chain = e
                .cert_chain
                .as_ref()
                .map(|c| c.certificates.as_slice())
                .unwrap_or_default();
            if chain.is_empty() {
                return Err(TrustError::EmptyChain(name));
            }
            if chain.len() > MAX_CA_CHAIN {
                return Err(TrustError::ChainTooLong(name));
            }
            let certs = chain
                .iter()
                .map(|c| {
                    Certificate::from_der(&b64decode(&name, &c.raw_bytes)?).map_err(|source| {
                        TrustError::Certificate {
                            name: name.clone(),
                            source,
                        }
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(CertificateAuthority {
                certs,
                validity: validity(&name, e.valid_for.as_ref())?,
                uri: e.uri.clone(),
            })
        })
        .collect()
}

fn validity(name: &str, v: Option<&ValidForJson>) -> Result<Validity, TrustError> {
    let Some(v) = v else {
        return Ok(Validity::default());
    };
    let parse = |s: &Option<String>| -> Result<Option<i64>, TrustError> {
        s.as_deref()
            .map(|t| {
                parse_rfc3339(t).ok_or_else(|| TrustError::InvalidTime {
                    name: name.to_string(),
                    time: t.to_string(),
                })
            })
            .transpose()
    };
    Ok(Validity {
        start: parse(&v.start)?,
        end: parse(&v.end)?,
    })
}

/// Unix seconds of an RFC 3339 time (`Z` or `±hh:mm`; fractions truncated).
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(r)?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    if b.len() < 20
        || b.get(4) != Some(&b'-')
        || b.get(7) != Some(&b'-')
        || !matches!(b.get(10), Some(b'T' | b't'))
        || b.get(13) != Some(&b':')
        || b.get(16) != Some(&b':')
    {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, min, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || min > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    let offset = match b.get(i)? {
        b'Z' | b'z' if i + 1 == b.len() => 0,
        sign @ (b'+' | b'-') if i + 6 == b.len() && b.get(i + 3) == Some(&b':') => {
            let o = num(i + 1..i + 3)? * 3600 + num(i + 4..i + 6)? * 60;
            if *sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    Some(super::x509::unix_time(year, month, day, hour, min, sec)? - offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../conformance/sigstore/");

    #[test]
    fn times() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2021-01-12T11:53:27Z"), Some(1610452407));
        assert_eq!(parse_rfc3339("2022-12-31T23:59:59.999Z"), Some(1672531199));
        assert_eq!(parse_rfc3339("2021-01-12T12:53:27+01:00"), Some(1610452407));
        for bad in [
            "",
            "2021-01-12",
            "2021-13-01T00:00:00Z",
            "2021-01-12T11:53:27",
            "x021-01-12T11:53:27Z",
            "2021-01-12T11:53:27.Z",
            // Go's time.RFC3339 layout refuses these, which chrono (linked
            // through cel) accepts: a space for the `T`, a leap second, and
            // years before 1970 that no certificate or trust root holds.
            "2022-07-29 23:59:00Z",
            "2016-12-31T23:59:60Z",
            "0000-01-01T00:00:00Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
        let v = Validity {
            start: Some(10),
            end: Some(20),
        };
        assert!(v.contains(10) && v.contains(20) && !v.contains(9) && !v.contains(21));
        assert!(Validity::default().contains(i64::MIN));
    }

    #[test]
    fn public_good() {
        let t = TrustMaterial::public_good().unwrap();
        assert_eq!(t.tlogs.len(), 2);
        assert_eq!(t.ctlogs.len(), 2);
        assert_eq!(t.cas.len(), 2);
        assert_eq!(t.tsas.len(), 1);
        // v1 logs' ids are their SPKI hash; Rekor v2 (log2025-1) ids are
        // C2SP signed-note key ids, taken from the trusted root as given.
        for log in t.tlogs.iter().chain(&t.ctlogs).filter(|l| l.key.is_ecdsa()) {
            assert_eq!(log.id, log.key.key_id(), "{}", log.base_url);
        }
        assert_ne!(t.tlogs[1].id, t.tlogs[1].key.key_id());
        let rekor = LogKey::find(&t.tlogs, &t.tlogs[0].id).unwrap();
        assert_eq!(rekor.base_url, "https://rekor.sigstore.dev");
        assert!(LogKey::find(&t.tlogs, &[0; 32]).is_none());
        assert_eq!(t.ctlogs[0].validity.end, Some(1667260799));
        assert_eq!(t.cas[1].certs.len(), 2);
        assert!(t.cas[1].certs[1].is_ca());
        assert_eq!(t.ca_certificates().len(), 3);
    }

    use crate::VerifyError;

    #[test]
    fn rejects() {
        let good =
            std::fs::read_to_string(format!("{DIR}_public-good-trusted_root.sigstore.dev.json"))
                .unwrap();
        let bad_media = good.replace("trustedroot+json;version=0.1", "trustedroot+json;version=9");
        assert!(matches!(
            TrustMaterial::from_trusted_root_json(&bad_media),
            Err(VerifyError::Trust(TrustError::MediaType(_)))
        ));
        let v2 = good.replace("trustedroot+json;version=0.1", "trustedroot.v0.2+json");
        TrustMaterial::from_trusted_root_json(&v2).unwrap();
        let no_start = std::fs::read_to_string(format!(
            "{DIR}trust-root-tlog-missing-validity-start_fail/trusted_root.json"
        ))
        .unwrap();
        assert!(matches!(
            TrustMaterial::from_trusted_root_json(&no_start),
            Err(VerifyError::Trust(TrustError::NoValidityStart(_)))
        ));
        let bad_key = good.replacen("MFkwEwYHKoZIzj0CAQYI", "MFkwEwYHKoZIzj0CAQYA", 1);
        // The first key is Rekor's; its curve OID is now empty, so the DER
        // ends early and the SPKI has trailing bytes.
        let e = TrustMaterial::read_trusted_root(&bad_key).unwrap_err();
        assert!(
            matches!(
                &e,
                TrustError::Key { name, source: KeyError::Spki(_) }
                    if name == "tlog https://rekor.sigstore.dev"
            ),
            "{e:?}"
        );
        assert_eq!(e.reason(), Reason::Malformed);
        let big = format!("{good}{}", " ".repeat(MAX_TRUSTED_ROOT));
        assert!(matches!(
            TrustMaterial::from_trusted_root_json(&big),
            Err(VerifyError::Trust(TrustError::TooLarge(_)))
        ));
        assert!(matches!(
            TrustMaterial::from_trusted_root_json("{"),
            Err(VerifyError::Trust(TrustError::Json(_)))
        ));
    }
}
