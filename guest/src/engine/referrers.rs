//! What cosign and Notary attestors share about signatures stored as OCI
//! artifacts: descriptors, single-layer referrers, and "first success wins".

use serde_json::Value;
use std::collections::BTreeMap;

/// Verifies candidates in order until one passes; otherwise every reason,
/// joined (or "signatures not found" when there was no candidate).
pub fn first_success<T>(results: impl Iterator<Item = Result<T, String>>) -> Result<T, String> {
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(v) => return Ok(v),
            Err(e) => errors.push(e),
        }
    }
    Err(match errors.is_empty() {
        true => "signatures not found".into(),
        false => errors.join("; "),
    })
}

/// A descriptor's fields the verifiers read.
pub struct Descriptor {
    pub media_type: String,
    pub digest: String,
    pub annotations: BTreeMap<String, String>,
}

pub fn descriptor(v: &Value) -> Descriptor {
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
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                .collect()
        })
        .unwrap_or_default();
    Descriptor {
        media_type: text("mediaType"),
        digest: text("digest"),
        annotations,
    }
}

pub fn single_layer(manifest: &Value) -> Result<Descriptor, String> {
    match manifest
        .get("layers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        Some([layer]) => Ok(descriptor(layer)),
        _ => Err("a signature referrer must have exactly one layer".into()),
    }
}
