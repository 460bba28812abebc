//! The JWS envelope: flattened JSON serialization only.
//!
//! Specification: <https://github.com/notaryproject/specifications/blob/main/specs/signature-envelope-jws.md>

use base64::Engine;
use serde_json::{Map, Value};

use super::{
    check_scheme_headers, parse_rfc3339, Alg, Envelope, Extra, H_AUTHENTIC_SIGNING_TIME, H_EXPIRY,
    H_SIGNING_SCHEME, H_SIGNING_TIME,
};
use super::{EnvelopeError, IllegalBase64};
use ivpol_verify::encoding::b64decode;
use ivpol_verify::Result;

/// Headers with a meaning here; any other protected header is "extended".
const KNOWN: &[&str] = &[
    "alg",
    "cty",
    "crit",
    H_EXPIRY,
    H_SIGNING_TIME,
    H_SIGNING_SCHEME,
    H_AUTHENTIC_SIGNING_TIME,
];

/// Go's `base64.RawURLEncoding` (no padding, trailing bits tolerated), with
/// its error.
fn b64url(s: &str) -> Result<Vec<u8>, IllegalBase64> {
    const ENGINE: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireNone),
    );
    ENGINE.decode(s).map_err(|e| match e {
        base64::DecodeError::InvalidByte(at, _)
        | base64::DecodeError::InvalidLastSymbol(at, _)
        | base64::DecodeError::InvalidLength(at) => IllegalBase64(at),
        // Go reports the first '=' (RawURLEncoding has no padding).
        base64::DecodeError::InvalidPadding => IllegalBase64(s.find('=').unwrap_or(s.len())),
    })
}

fn str_field<'a>(
    obj: &'a Map<String, Value>,
    key: &'static str,
    what: &'static str,
) -> Result<&'a str, EnvelopeError> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(EnvelopeError::NotString { what, key }),
        None => Err(EnvelopeError::Missing { what, key }),
    }
}

fn time_field(obj: &Map<String, Value>, key: &'static str) -> Result<Option<i64>, EnvelopeError> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => {
            parse_rfc3339(s)
                .map(Some)
                .ok_or_else(|| EnvelopeError::TimeNotRfc3339 {
                    key,
                    value: s.clone(),
                })
        }
        Some(_) => Err(EnvelopeError::TimeNotString(key)),
    }
}

pub(crate) fn parse(bytes: &[u8]) -> Result<Envelope, EnvelopeError> {
    let top: Value =
        ivpol_refs::json::from_slice(bytes).map_err(|e| EnvelopeError::NotJson(e.into()))?;
    let Value::Object(top) = top else {
        return Err(EnvelopeError::NotObject);
    };
    if let Some(k) = top
        .keys()
        .find(|k| !matches!(k.as_str(), "payload" | "protected" | "header" | "signature"))
    {
        return Err(EnvelopeError::UnknownMember(k.clone()));
    }
    let what = "JWS envelope member";
    let payload_b64 = str_field(&top, "payload", what)?;
    let protected_b64 = str_field(&top, "protected", what)?;
    let signature_b64 = str_field(&top, "signature", what)?;
    let header = match top.get("header") {
        Some(Value::Object(h)) => h.clone(),
        None => Map::new(),
        Some(_) => return Err(EnvelopeError::UnprotectedNotObject),
    };

    // Unprotected header: x5c, signing agent, timestamp.
    let certs = match header.get("x5c") {
        Some(Value::Array(items)) => {
            if items.len() > super::MAX_CHAIN_CERTS {
                return Err(EnvelopeError::ChainTooLong(items.len()));
            }
            items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(b64decode("x5c certificate", s)?),
                    _ => Err(EnvelopeError::X5cEntryNotString),
                })
                .collect::<Result<Vec<_>, _>>()?
        }
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err(EnvelopeError::X5cNotArray),
    };
    let timestamp = match header.get("io.cncf.notary.timestampSignature") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(b64decode("io.cncf.notary.timestampSignature", s)?),
        Some(_) => return Err(EnvelopeError::TimestampNotString),
    };

    // notation's JWT check decodes header, payload and signature, in that
    // order, before anything else, and calls any failure an invalid
    // signature.
    b64url(protected_b64).map_err(EnvelopeError::InvalidSignature)?;
    let payload = b64url(payload_b64).map_err(EnvelopeError::InvalidSignature)?;
    let signature = b64url(signature_b64).map_err(EnvelopeError::InvalidSignature)?;
    if signature.is_empty() {
        return Err(EnvelopeError::NoJwsSignature);
    }

    let protected_raw = b64url(protected_b64).map_err(EnvelopeError::ProtectedHeaderBase64)?;
    let protected: Value = ivpol_refs::json::from_slice(&protected_raw)
        .map_err(|e| EnvelopeError::ProtectedHeader(e.into()))?;
    let Value::Object(protected) = protected else {
        return Err(EnvelopeError::ProtectedHeaderNotObject);
    };
    let what = "JWS protected header";
    let alg_name = str_field(&protected, "alg", what)?;
    let alg =
        Alg::from_jws(alg_name).ok_or_else(|| EnvelopeError::JwsAlgorithm(alg_name.to_string()))?;
    let cty = match protected.get("cty") {
        Some(Value::String(s)) => s.clone(),
        None => String::new(),
        Some(_) => return Err(EnvelopeError::CtyNotString),
    };
    let scheme = str_field(&protected, H_SIGNING_SCHEME, what)?.to_string();
    let crit: Vec<String> = match protected.get("crit") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or(EnvelopeError::CritEntryNotString)
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(EnvelopeError::CritNotArray),
    };
    let signing_time = time_field(&protected, H_SIGNING_TIME)?;
    let authentic_time = time_field(&protected, H_AUTHENTIC_SIGNING_TIME)?;
    let expiry = time_field(&protected, H_EXPIRY)?;
    let present: Vec<String> = protected.keys().cloned().collect();
    let signing_time = check_scheme_headers(
        &scheme,
        signing_time,
        authentic_time,
        expiry,
        &crit,
        &present,
    )?;
    let extended = protected
        .iter()
        .filter(|(k, _)| !KNOWN.contains(&k.as_str()))
        .map(|(k, v)| {
            let value = match v {
                Value::String(s) => Extra::Text(s.clone()),
                _ => Extra::Other,
            };
            (k.clone(), value, crit.contains(k))
        })
        .collect();
    Ok(Envelope {
        alg,
        cty,
        scheme,
        signing_time,
        expiry,
        extended,
        certs,
        signature,
        signed: format!("{protected_b64}.{payload_b64}").into_bytes(),
        payload,
        timestamp,
    })
}
