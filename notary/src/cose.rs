//! The COSE envelope: `COSE_Sign1_Tagged`.
//!
//! Specification: <https://github.com/notaryproject/specifications/blob/main/specs/signature-envelope-cose.md>

use coset::cbor::value::Value;
use coset::iana::EnumI64;
use coset::{
    Algorithm, ContentType, CoseSign1, Label, RegisteredLabelWithPrivate, TaggedCborSerializable,
};

use super::EnvelopeError;
use super::{
    check_scheme_headers, Alg, Envelope, Extra, H_AUTHENTIC_SIGNING_TIME, H_EXPIRY,
    H_SIGNING_SCHEME, H_SIGNING_TIME,
};
use ivpol_verify::Result;

const LABEL_X5CHAIN: i64 = 33;
const H_SIGNING_AGENT: &str = "io.cncf.notary.signingAgent";
const H_TIMESTAMP: &str = "io.cncf.notary.timestampSignature";

fn label_name(l: &Label) -> String {
    match l {
        Label::Int(i) => i.to_string(),
        Label::Text(t) => t.clone(),
    }
}

/// A tag-1 epoch time (integer seconds).
fn epoch(what: &'static str, v: &Value) -> Result<i64, EnvelopeError> {
    match v {
        Value::Tag(1, inner) => match inner.as_ref() {
            Value::Integer(i) => {
                i64::try_from(i128::from(*i)).map_err(|_| EnvelopeError::TimeOutOfRange(what))
            }
            _ => Err(EnvelopeError::TimeNotInteger(what)),
        },
        Value::Tag(_, _) => Err(EnvelopeError::TimeTag(what)),
        _ => Err(EnvelopeError::TimeUntagged(what)),
    }
}

pub(crate) fn parse(bytes: &[u8]) -> Result<Envelope, EnvelopeError> {
    let sign1 =
        CoseSign1::from_tagged_slice(bytes).map_err(|e| EnvelopeError::NotCoseSign1(e.into()))?;
    let p = &sign1.protected.header;

    // Unprotected: x5chain, signing agent, timestamp. The chain is read
    // from the unprotected header only, as notation-core-go does (an
    // x5chain in the protected header is not used); RFC 9360 allows it as
    // an array of bstr or, for one certificate, a single bstr.
    let mut certs = Vec::new();
    let mut timestamp = None;
    for (label, value) in &sign1.unprotected.rest {
        match label {
            Label::Int(LABEL_X5CHAIN) => {
                let items: Vec<&Value> = match value {
                    Value::Array(items) => items.iter().collect(),
                    Value::Bytes(_) => vec![value],
                    _ => return Err(EnvelopeError::NoChain),
                };
                if items.len() > super::MAX_CHAIN_CERTS {
                    return Err(EnvelopeError::ChainTooLong(items.len()));
                }
                for item in items {
                    match item {
                        Value::Bytes(b) => certs.push(b.clone()),
                        _ => return Err(EnvelopeError::NoChain),
                    }
                }
            }
            Label::Text(t) if t == H_TIMESTAMP => match value {
                Value::Bytes(b) => timestamp = Some(b.clone()),
                _ => return Err(EnvelopeError::TimestampNotBytes),
            },
            Label::Text(t) if t == H_SIGNING_AGENT => {}
            _ => {}
        }
    }

    let signature = sign1.signature.clone();
    if signature.is_empty() {
        return Err(EnvelopeError::NoCoseSignature);
    }

    // Protected headers.
    let alg = match &p.alg {
        Some(Algorithm::Assigned(a)) => Alg::from_cose(a.to_i64()),
        Some(Algorithm::PrivateUse(i)) => Alg::from_cose(*i),
        _ => None,
    }
    .ok_or_else(|| EnvelopeError::CoseAlgorithm(p.alg.clone()))?;
    let cty = match &p.content_type {
        Some(ContentType::Text(t)) => t.clone(),
        Some(ContentType::Assigned(_)) => return Err(EnvelopeError::ContentTypeNotText),
        None => return Err(EnvelopeError::NoContentType),
    };
    let mut crit = Vec::new();
    for c in &p.crit {
        match c {
            RegisteredLabelWithPrivate::Text(t) => crit.push(t.clone()),
            // Integer labels (alg, crit, …) are understood by COSE itself;
            // any other marked critical is unknown here.
            RegisteredLabelWithPrivate::Assigned(a) => {
                let known = [1, 2, 3];
                if !known.contains(&a.to_i64()) {
                    return Err(EnvelopeError::UnknownCriticalLabel(a.to_i64()));
                }
            }
            RegisteredLabelWithPrivate::PrivateUse(i) => {
                return Err(EnvelopeError::UnknownCriticalLabel(*i))
            }
        }
    }
    let mut scheme = None;
    let mut signing_time = None;
    let mut authentic_time = None;
    let mut expiry = None;
    let mut extended = Vec::new();
    let mut present = Vec::new();
    for (label, value) in &p.rest {
        let name = label_name(label);
        present.push(name.clone());
        match label {
            Label::Text(t) if t == H_SIGNING_SCHEME => match value {
                Value::Text(s) => scheme = Some(s.clone()),
                _ => return Err(EnvelopeError::SigningScheme),
            },
            Label::Text(t) if t == H_SIGNING_TIME => {
                signing_time = Some(epoch("signingTime", value)?)
            }
            Label::Text(t) if t == H_AUTHENTIC_SIGNING_TIME => {
                authentic_time = Some(epoch("signingTime", value)?)
            }
            Label::Text(t) if t == H_EXPIRY => expiry = Some(epoch("expiry", value)?),
            _ => {
                let v = match value {
                    Value::Text(s) => Extra::Text(s.clone()),
                    _ => Extra::Other,
                };
                let critical = crit.contains(&name);
                extended.push((name, v, critical));
            }
        }
    }
    let scheme = scheme.ok_or(EnvelopeError::SigningScheme)?;
    let signing_time = check_scheme_headers(
        &scheme,
        signing_time,
        authentic_time,
        expiry,
        &crit,
        &present,
    )?;
    if sign1.protected.original_data.is_none() {
        return Err(EnvelopeError::NoProtectedHeader);
    }
    let payload = sign1
        .payload
        .clone()
        .ok_or(EnvelopeError::DetachedPayload)?;
    let signed = sign1.tbs_data(b"");
    Ok(Envelope {
        alg,
        cty,
        scheme,
        signing_time,
        expiry,
        extended,
        certs,
        signature,
        signed,
        payload,
        timestamp,
    })
}
