//! What cosign and Notary attestors share about signatures stored as OCI
//! artifacts: descriptors, single-layer referrers, and "first success wins".

use super::failure::{self, Failure};
use crate::oci::json_shape;
use serde_json::Value;
use std::collections::BTreeMap;

/// Characters of one candidate's failure kept for the joined reason: a
/// reason can quote what an unverified document holds, and up to
/// `MAX_REFERRERS` of them end up in one verdict.
pub(super) const MAX_REASON_CHARS: usize = 1024;

/// `reason`, cut to [`MAX_REASON_CHARS`].
pub(super) fn bounded_reason(reason: String) -> String {
    match reason.char_indices().nth(MAX_REASON_CHARS) {
        Some((end, _)) => format!("{}…", &reason[..end]),
        None => reason,
    }
}

/// `failure` with its message cut to [`MAX_REASON_CHARS`].
pub(super) fn bounded(mut failure: Failure) -> Failure {
    failure.message = bounded_reason(failure.message);
    failure
}

/// Verifies candidates in order until one passes; otherwise every reason,
/// each cut to [`MAX_REASON_CHARS`], joined (or "signatures not found" when
/// there was no candidate).
pub(super) fn first_success<T>(
    results: impl Iterator<Item = Result<T, Failure>>,
) -> Result<T, Failure> {
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(v) => return Ok(v),
            Err(e) => errors.push(bounded(e)),
        }
    }
    Err(failure::all_failed(errors))
}

/// A descriptor's fields the verifiers read.
pub(super) struct Descriptor {
    pub media_type: String,
    pub digest: String,
    pub annotations: BTreeMap<String, String>,
}

pub(super) fn descriptor(v: &Value) -> Descriptor {
    let text = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let annotations = v
        .get("annotations")
        .and_then(Value::as_object)
        .map(|m| {
            ivpol_refs::sort::map(
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string()))),
            )
        })
        .unwrap_or_default();
    Descriptor {
        media_type: text("mediaType"),
        digest: text("digest"),
        annotations,
    }
}

ivpol_verify::debug_as_display!(ShapeError);
/// A signature document refused before its verifier reads it.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ShapeError {
    /// A referrer manifest with no layer or several.
    #[error("a signature referrer must have exactly one layer")]
    NotOneLayer,
    /// The document is over the JSON limits (which one).
    #[error("{0}")]
    Document(String),
    /// The payload it carries is over the JSON limits (which one).
    #[error("envelope payload: {0}")]
    Payload(String),
    /// The evaluation's parsed-values budget is spent.
    #[error(transparent)]
    Budget(#[from] crate::oci::TransportError),
}

/// A shape refused is evidence that cannot be read.
impl From<ShapeError> for Failure {
    fn from(e: ShapeError) -> Failure {
        Failure::from(e.to_string())
    }
}

pub(super) fn single_layer(manifest: &Value) -> Result<Descriptor, ShapeError> {
    match manifest
        .get("layers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        Some([layer]) => Ok(descriptor(layer)),
        _ => Err(ShapeError::NotOneLayer),
    }
}

/// Bounds what parsing an unverified signature document costs before the
/// verifier parses it: the document itself (a bundle, a simple-signing
/// payload or a DSSE envelope) as a small signature document, and the
/// statement a DSSE envelope (or the payload a JWS envelope) carries base64-encoded at `payload_pointer`
/// (parsed before its signature is checked) as a payload.
pub(super) fn check_shape(
    client: &crate::oci::Client,
    document: &[u8],
    payload_pointer: &str,
) -> Result<(), ShapeError> {
    use base64::Engine;
    let values =
        json_shape::check(document, &json_shape::SIGNATURE).map_err(ShapeError::Document)?;
    // The document and its statement are parsed (and a verified statement
    // kept): both are charged to the evaluation's parsed-values budget.
    client.charge_parsed(values)?;
    let Ok(json) = ivpol_refs::json::from_slice::<Value>(document) else {
        return Ok(());
    };
    let Some(encoded) = json.pointer(payload_pointer).and_then(Value::as_str) else {
        return Ok(());
    };
    // Standard base64 (DSSE) or unpadded base64url (JWS).
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(encoded));
    let Ok(statement) = decoded else {
        return Ok(());
    };
    let values =
        json_shape::check(&statement, &json_shape::PAYLOAD).map_err(ShapeError::Payload)?;
    Ok(client.charge_parsed(values)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_cut_and_shapes_checked() {
        let huge = "x".repeat(1 << 20);
        let candidates = [
            Err(Failure::from(huge.clone())),
            Err(Failure::from("short")),
        ];
        let err = first_success::<()>(candidates.into_iter()).unwrap_err();
        assert_eq!(
            err.message.chars().count(),
            MAX_REASON_CHARS + 1 + "; short".len()
        );
        // A DSSE envelope whose statement is a flat array of millions.
        use base64::Engine;
        let statement = format!("[{}0]", "0,".repeat(300_000));
        let envelope = serde_json::json!({
            "payloadType": "application/vnd.in-toto+json",
            "payload": base64::engine::general_purpose::STANDARD.encode(statement),
            "signatures": [],
        });
        let offline = crate::oci::transport::Offline;
        let client = crate::oci::Client::new(&offline);
        let err = check_shape(&client, envelope.to_string().as_bytes(), "/payload").unwrap_err();
        assert!(
            matches!(&err, ShapeError::Payload(why) if why.starts_with("JSON holds more than")),
            "{err}"
        );
        let err = check_shape(
            &client,
            format!("[{}]", "1,".repeat(64) + "1").as_bytes(),
            "/payload",
        )
        .unwrap_err();
        assert!(
            matches!(&err, ShapeError::Document(why) if why.contains("more than 64 items")),
            "{err}"
        );
    }
}
