//! The AdmissionReview response the host writes itself: a denial of a
//! request the component could not judge. Every other response is the
//! component's (`wit::Answer::response`).

use serde_json::{json, Value};

/// A denial without evaluation: the request could not be judged (too
/// large, malformed, the component trapped or ran out of time) but its uid
/// could be read, so the API server gets an answer it applies instead of a
/// 4xx that `failurePolicy: Ignore` admits.
pub fn denied(uid: &str, message: &str) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {
            "uid": uid,
            "allowed": false,
            "status": { "status": "Failure", "message": message, "code": 400 }
        }
    })
}
