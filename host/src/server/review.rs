//! AdmissionReview responses (`admission.k8s.io/v1`): a verdict, an
//! admission without evaluation, and a denial of a request that could not
//! be judged. Reading requests is `envelope.rs`.

use crate::runtime::wit;
use base64::Engine as _;
use serde_json::{json, Value};

/// The AdmissionReview response for a verdict.
pub fn response(uid: &str, verdict: &wit::Verdict) -> Value {
    let mut resp = json!({ "uid": uid, "allowed": verdict.allowed });
    if let Some(message) = &verdict.message {
        resp["status"] = json!({ "status": "Failure", "message": message });
    }
    if !verdict.warnings.is_empty() {
        resp["warnings"] = json!(verdict.warnings);
    }
    let annotations = super::decision::audit_annotations(verdict);
    if !annotations.is_empty() {
        resp["auditAnnotations"] = serde_json::Value::Object(annotations);
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

/// A denial without evaluation: the request could not be judged (too
/// large, malformed) but its uid could be read, so the API server gets an
/// answer it applies instead of a 4xx that `failurePolicy: Ignore` admits.
pub fn denied(uid: &str, message: &str) -> Value {
    envelope(json!({
        "uid": uid,
        "allowed": false,
        "status": { "status": "Failure", "message": message, "code": 400 }
    }))
}

fn envelope(response: Value) -> Value {
    json!({ "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response })
}
