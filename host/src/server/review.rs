//! The AdmissionReview responses the host writes itself, for requests the
//! component gave no answer to: a denial of a body that cannot be judged,
//! and the fallback verdict after a trap. Every other response is the
//! component's (`wit::Answer::response`).

use crate::runtime::wit;
use serde_json::{json, Value};

/// A denial without evaluation: the request could not be judged (too
/// large, malformed) but its uid could be read, so the API server gets an
/// answer it applies instead of a 4xx that `failurePolicy: Ignore` admits.
pub(super) fn denied(uid: &str, message: &str) -> Value {
    envelope(json!({
        "uid": uid,
        "allowed": false,
        "status": { "status": "Failure", "message": message, "code": 400 }
    }))
}

/// The response of a fallback verdict (`fallback::verdict`): allowed or
/// denied with its message, and its warnings; it verified nothing and
/// patches nothing.
pub(super) fn response(uid: &str, verdict: &wit::Verdict) -> Value {
    let mut resp = json!({ "uid": uid, "allowed": verdict.allowed });
    if let Some(message) = &verdict.message {
        resp["status"] = json!({ "status": "Failure", "message": message });
    }
    if !verdict.warnings.is_empty() {
        resp["warnings"] = json!(verdict.warnings);
    }
    envelope(resp)
}

fn envelope(response: Value) -> Value {
    json!({ "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response })
}
