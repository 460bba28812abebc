//! Metadata files as read: the `{signed, signatures}` envelope, the
//! fields every role shares and each role's own, the OLPC canonical JSON
//! that signatures cover, and expiry.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use super::{TufError, MAX_METADATA};
use ivpol_verify::trust::parse_rfc3339;

/// A metadata file: its `signed` part, the canonical bytes signed, and the
/// signatures.
pub(crate) struct Envelope {
    /// The file name, for errors.
    pub(crate) file: String,
    signed: Value,
    pub(crate) canonical: Vec<u8>,
    pub(crate) signatures: Vec<SignatureJson>,
}

#[derive(Deserialize)]
pub(crate) struct SignatureJson {
    pub(crate) keyid: String,
    pub(crate) sig: String,
}

#[derive(Deserialize)]
struct EnvelopeJson {
    signatures: Vec<SignatureJson>,
    signed: Value,
}

/// What every role's `signed` has.
#[derive(Deserialize)]
pub(crate) struct Common {
    #[serde(rename = "_type")]
    kind: String,
    spec_version: String,
    pub(crate) version: u64,
    pub(crate) expires: String,
}

#[derive(Deserialize)]
pub(crate) struct RootJson {
    pub(crate) keys: BTreeMap<String, KeyJson>,
    pub(crate) roles: BTreeMap<String, RoleJson>,
    #[serde(default)]
    pub(crate) consistent_snapshot: bool,
}

#[derive(Deserialize)]
pub(crate) struct KeyJson {
    pub(crate) keytype: String,
    pub(crate) scheme: String,
    pub(crate) keyval: KeyValJson,
}

#[derive(Deserialize)]
pub(crate) struct KeyValJson {
    pub(crate) public: String,
}

#[derive(Deserialize, Clone)]
pub(crate) struct RoleJson {
    pub(crate) keyids: Vec<String>,
    pub(crate) threshold: u64,
}

#[derive(Deserialize)]
pub(crate) struct MetaJson {
    pub(crate) meta: BTreeMap<String, MetaFile>,
}

#[derive(Deserialize, Clone)]
pub(crate) struct MetaFile {
    pub(crate) version: u64,
    pub(crate) length: Option<u64>,
    pub(crate) hashes: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
pub(crate) struct TargetsJson {
    pub(crate) targets: BTreeMap<String, TargetFile>,
    pub(crate) delegations: Option<DelegationsJson>,
}

#[derive(Deserialize)]
pub(crate) struct TargetFile {
    pub(crate) length: u64,
    pub(crate) hashes: BTreeMap<String, String>,
}

#[derive(Deserialize)]
pub(crate) struct DelegationsJson {
    #[serde(default)]
    pub(crate) roles: Vec<Value>,
}

impl Envelope {
    pub(crate) fn parse(file: &str, bytes: &[u8]) -> Result<Envelope, TufError> {
        if bytes.len() > MAX_METADATA {
            return Err(TufError::TooLarge {
                file: file.to_string(),
                size: bytes.len(),
                max: MAX_METADATA,
            });
        }
        let json: EnvelopeJson =
            ivpol_refs::json::from_slice(bytes).map_err(|e| TufError::NotMetadata {
                file: file.to_string(),
                source: e.into(),
            })?;
        if !json.signed.is_object() {
            return Err(TufError::SignedNotObject(file.to_string()));
        }
        let mut canonical = Vec::new();
        canonical_json(&json.signed, &mut canonical).map_err(|number| TufError::NotCanonical {
            file: file.to_string(),
            number,
        })?;
        Ok(Envelope {
            file: file.to_string(),
            signed: json.signed,
            canonical,
            signatures: json.signatures,
        })
    }

    /// `signed` as `T`.
    pub(crate) fn decode<T: DeserializeOwned>(&self) -> Result<T, TufError> {
        T::deserialize(&self.signed).map_err(|e| TufError::InvalidSigned {
            file: self.file.clone(),
            source: e.into(),
        })
    }

    /// The common fields, checked: `_type` is `kind`, the spec version is
    /// 1.x, the version positive and `expires` a time.
    pub(crate) fn common(&self, kind: &'static str) -> Result<(Common, i64), TufError> {
        let c: Common = self.decode()?;
        if c.kind != kind {
            return Err(TufError::WrongType {
                file: self.file.clone(),
                found: c.kind,
                expected: kind,
            });
        }
        if c.spec_version.split('.').next() != Some("1") {
            return Err(TufError::SpecVersion {
                file: self.file.clone(),
                version: c.spec_version,
            });
        }
        if c.version == 0 {
            return Err(TufError::ZeroVersion(self.file.clone()));
        }
        let expires = parse_rfc3339(&c.expires).ok_or_else(|| TufError::ExpiresNotTime {
            file: self.file.clone(),
            value: c.expires.clone(),
        })?;
        Ok((c, expires))
    }
}

/// Fails when metadata expiring at `expires` is expired at `now` (an
/// expiry equal to now is expired, as in the specification).
pub(crate) fn check_expiry(
    file: &str,
    version: u64,
    expires: i64,
    text: &str,
    now: i64,
) -> Result<(), TufError> {
    if expires <= now {
        return Err(TufError::Expired {
            file: file.to_string(),
            version,
            at: text.to_string(),
        });
    }
    Ok(())
}

/// OLPC canonical JSON as securesystemslib writes it: objects with keys
/// sorted by their UTF-8 bytes, no whitespace, strings with only `"` and
/// `\` escaped, integers only: a number that is not an integer is the
/// error.
pub(crate) fn canonical_json(v: &Value, out: &mut Vec<u8>) -> Result<(), serde_json::Number> {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            if n.is_i64() || n.is_u64() {
                out.extend_from_slice(n.to_string().as_bytes());
            } else {
                return Err(n.clone());
            }
        }
        Value::String(s) => canonical_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical_json(item, out)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            ivpol_refs::sort::sort_by(&mut entries, |a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical_string(k, out);
                out.push(b':');
                canonical_json(v, out)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

fn canonical_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    for b in s.bytes() {
        if b == b'"' || b == b'\\' {
            out.push(b'\\');
        }
        out.push(b);
    }
    out.push(b'"');
}
