//! The one AdmissionReview response the host writes itself: a denial of a
//! body the component gave no answer for (it cannot be judged, or not even
//! the component's failure answer came). Every other response is the
//! component's (`wit::Answer::response`).

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

fn envelope(response: Value) -> Value {
    json!({ "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response })
}
