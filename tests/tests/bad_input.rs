//! Every bad input gets a clear JSON error, and the server keeps serving.

use ivpol_tests::policy::pod_policy;
use ivpol_tests::review::create_pod;
use ivpol_tests::Server;
use serde_json::json;

fn server() -> Server {
    let policy = pod_policy(
        "p",
        "\"CREATE\"",
        r#"  validationConfigurations: {mutateDigest: false, verifyDigest: false, required: false}
  attestors: []
  validations:
    - expression: "images.containers.all(i, i.startsWith('ghcr.io/'))"
      message: ghcr only
"#,
    );
    Server::start(&[("p.yaml", &policy)])
}

fn assert_error(s: &Server, path: &str, body: &str, status: u16, needle: &str) {
    let (got, resp) = s.post(path, body);
    assert_eq!(got, status, "{path} {resp}");
    let msg = resp["error"].as_str().unwrap_or_default();
    assert!(msg.contains(needle), "{msg:?} does not mention {needle:?}");
}

#[test]
fn malformed_reviews_are_400_with_a_reason() {
    let mut s = server();
    let path = "/ivpol/validate/p";
    assert_error(&s, path, "not json", 400, "not valid JSON");
    let mut review = create_pod(&["ghcr.io/a/b:1"]);
    review["apiVersion"] = json!("admission.k8s.io/v1beta1");
    assert_error(
        &s,
        path,
        &review.to_string(),
        400,
        "apiVersion must be admission.k8s.io/v1",
    );
    let mut review = create_pod(&["ghcr.io/a/b:1"]);
    review["kind"] = json!("Pod");
    assert_error(
        &s,
        path,
        &review.to_string(),
        400,
        "kind must be AdmissionReview",
    );
    assert_error(
        &s,
        path,
        r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#,
        400,
        "no request",
    );
    let mut review = create_pod(&["ghcr.io/a/b:1"]);
    review["request"]["operation"] = json!("PATCH");
    assert_error(&s, path, &review.to_string(), 400, "PATCH");
    let mut review = create_pod(&["ghcr.io/a/b:1"]);
    review["request"]["object"] = json!("a string");
    assert_error(&s, path, &review.to_string(), 400, "object");
    let huge = format!("{{\"pad\":\"{}\"}}", "x".repeat(3 << 20));
    assert_error(&s, path, &huge, 400, "larger than");
    // Still serving after all of that.
    assert!(s.alive());
    let ok = s.review(path, &create_pod(&["ghcr.io/a/b:1"]));
    assert_eq!(ok["allowed"], true);
}

#[test]
fn unknown_routes_are_404_and_wrong_methods_405() {
    let s = server();
    let (status, body) = s.get("/nope");
    assert_eq!(status, 404);
    assert!(body["error"].as_str().unwrap_or_default().contains("/nope"));
    assert_eq!(s.post("/ivpol/delete/p", "{}").0, 404);
    assert_eq!(s.get("/ivpol/validate/p").0, 405);
}
