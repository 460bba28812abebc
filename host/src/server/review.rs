//! The AdmissionReview codec (`admission.k8s.io/v1`). The host checks the
//! envelope and echoes the uid; the `request` itself goes to the component
//! untouched.

use crate::runtime::wit;
use base64::Engine as _;
use serde_json::{json, Value};

/// The parts of an AdmissionReview the host needs.
pub struct Review {
    pub uid: String,
    pub operation: String,
    pub namespace: String,
    /// The `request` object, re-serialised for the component.
    pub request: String,
}

/// Parses and checks an AdmissionReview body; the error names the problem.
pub fn parse(body: &[u8]) -> Result<Review, String> {
    let doc: Value =
        serde_json::from_slice(body).map_err(|e| format!("body is not valid JSON: {e}"))?;
    let api_version = doc
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
    if kind != "AdmissionReview" {
        return Err(format!("kind must be AdmissionReview, got {kind:?}"));
    }
    if api_version != "admission.k8s.io/v1" {
        return Err(format!(
            "apiVersion must be admission.k8s.io/v1, got {api_version:?}"
        ));
    }
    let request = doc
        .get("request")
        .filter(|r| r.is_object())
        .ok_or("AdmissionReview has no request")?;
    let field = |name: &str| {
        request
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let uid = field("uid");
    if uid.is_empty() {
        return Err("request.uid is required".into());
    }
    Ok(Review {
        uid,
        operation: field("operation"),
        namespace: field("namespace"),
        request: request.to_string(),
    })
}

/// The AdmissionReview response for a verdict.
pub fn response(uid: &str, verdict: &wit::Verdict) -> Value {
    let mut resp = json!({ "uid": uid, "allowed": verdict.allowed });
    if let Some(message) = &verdict.message {
        resp["status"] = json!({ "status": "Failure", "message": message });
    }
    if !verdict.warnings.is_empty() {
        resp["warnings"] = json!(verdict.warnings);
    }
    if let Some(patch) = &verdict.patch {
        resp["patchType"] = json!("JSONPatch");
        resp["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(patch));
    }
    envelope(resp)
}

/// An allowed response without evaluation (e.g. DELETE on a mutate route).
pub fn allowed(uid: &str) -> Value {
    envelope(json!({ "uid": uid, "allowed": true }))
}

fn envelope(response: Value) -> Value {
    json!({ "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response })
}
