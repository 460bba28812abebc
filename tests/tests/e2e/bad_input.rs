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

/// One path rule: runs of `/` are one and a trailing `/` goes, so no
/// spelling of a route is served while another is not.
#[test]
fn every_spelling_of_a_route_is_the_same_route() {
    let s = server();
    let review = create_pod(&["docker.io/x:1"]).to_string();
    for path in [
        "/ivpol/validate/p",
        "//ivpol/validate/p",
        "/ivpol//validate/p",
        "/ivpol/validate//p/",
    ] {
        let (status, body) = s.post(path, &review);
        assert_eq!(status, 200, "{path}: {body}");
        assert_eq!(
            body["response"]["status"]["message"], "Policy p failed: ghcr only",
            "{path}: {body}"
        );
    }
}

/// HEAD on health and metrics answers as GET does, without a body.
#[test]
fn head_answers_on_health_and_metrics() {
    let s = server();
    let agent = ureq::agent();
    for path in ["/health/liveness", "/health/readiness", "/metrics"] {
        let resp = agent
            .head(&format!("{}{path}", s.base))
            .call()
            .unwrap_or_else(|e| panic!("HEAD {path}: {e}"));
        assert_eq!(resp.status(), 200, "{path}");
    }
}

/// A compressed body gets a clear 415 (the API server never compresses a
/// webhook's request), not a misleading "not valid JSON"; a UTF-8 byte
/// order mark before the JSON is accepted.
#[test]
fn a_compressed_body_is_415_and_a_byte_order_mark_is_accepted() {
    let s = server();
    let review = create_pod(&["docker.io/x:1"]).to_string();
    let url = format!("{}/ivpol/validate/p", s.base);
    let resp = ureq::post(&url)
        .set("Content-Encoding", "gzip")
        .send_string(&review);
    let Err(ureq::Error::Status(status, resp)) = resp else {
        panic!("a compressed body was accepted");
    };
    assert_eq!(status, 415);
    let body: serde_json::Value = resp.into_json().expect("JSON");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("Content-Encoding gzip is not supported"),
        "{body}"
    );
    let (status, body) = s.post("/ivpol/validate/p", &format!("\u{feff}{review}"));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["response"]["allowed"], false, "{body}");
}

/// Logs written to a pipe (a log collector) carry no ANSI colour codes.
#[test]
fn logs_off_a_terminal_have_no_colour_codes() {
    let s = server();
    let _ = s.post(
        "/ivpol/validate/p",
        &create_pod(&["docker.io/x:1"]).to_string(),
    );
    let log = s.log();
    assert!(!log.is_empty());
    assert!(!log.contains('\u{1b}'), "{log:?}");
}
