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

/// A body that cannot be judged but whose uid can be read is denied with
/// the reason (HTTP 200, the uid echoed): a 400 would let the API server
/// admit it under `failurePolicy: Ignore`.
fn assert_denied_unjudged(s: &Server, path: &str, body: &str, needle: &str) {
    let (got, resp) = s.post(path, body);
    assert_eq!(got, 200, "{path} {resp}");
    let r = &resp["response"];
    assert_eq!(r["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002", "{resp}");
    assert_eq!(r["allowed"], false, "{resp}");
    let msg = r["status"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.starts_with("the admission request cannot be evaluated: ") && msg.contains(needle),
        "{msg:?} does not mention {needle:?}"
    );
}

#[test]
fn malformed_reviews_with_a_uid_are_denied_and_without_one_are_400() {
    let mut s = server();
    let path = "/ivpol/validate/p";
    assert_error(&s, path, "not json", 400, "not valid JSON");
    assert_error(
        &s,
        path,
        r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#,
        400,
        "no request",
    );
    let huge = format!("{{\"pad\":\"{}\"}}", "x".repeat(9 << 20));
    assert_error(&s, path, &huge, 400, "larger than");
    let mut review = create_pod(&["ghcr.io/a/b:1"]);
    review["apiVersion"] = json!("admission.k8s.io/v1beta1");
    let body = review.to_string();
    assert_denied_unjudged(&s, path, &body, "apiVersion must be admission.k8s.io/v1");
    let mut review = create_pod(&["ghcr.io/a/b:1"]);
    review["kind"] = json!("Pod");
    let body = review.to_string();
    assert_denied_unjudged(&s, path, &body, "kind must be AdmissionReview");
    let mut review = create_pod(&["ghcr.io/a/b:1"]);
    review["request"]["operation"] = json!("PATCH");
    assert_denied_unjudged(&s, path, &review.to_string(), "PATCH");
    let mut review = create_pod(&["ghcr.io/a/b:1"]);
    review["request"]["object"] = json!("a string");
    assert_denied_unjudged(&s, path, &review.to_string(), "object");
    // Valid JSON up to just past the uid (serde_json sorts the keys, so
    // `userInfo` follows it), then cut off.
    let body = create_pod(&["ghcr.io/a/b:1"]).to_string();
    let cut = &body[..body.find("\"userInfo\"").expect("userInfo")];
    assert_denied_unjudged(&s, path, cut, "not valid JSON");
    // Too large for the limit: the uid at its start is still answered.
    let mut review = create_pod(&["ghcr.io/a/b:1"]);
    review["request"]["object"]["metadata"]["annotations"] = json!({"pad": "x".repeat(9 << 20)});
    let body = review.to_string().replacen(
        "\"request\":{",
        "\"request\":{\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\",",
        1,
    );
    assert_denied_unjudged(&s, path, &body, "larger than");
    // An UPDATE with a 3 MiB object and oldObject fits the limit.
    let mut pod = ivpol_tests::review::pod("big", &["ghcr.io/a/b:1"]);
    pod["metadata"]["annotations"] = json!({"pad": "x".repeat(3 << 20)});
    let update = ivpol_tests::review::review("UPDATE", "default", &pod);
    let ok = s.review(path, &update);
    assert_eq!(ok["allowed"], true, "{ok}");
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
