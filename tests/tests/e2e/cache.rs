//! The verification cache end to end: what a repeated, an edited, a
//! re-pushed or a concurrent request costs in registry calls, counted by
//! the host (`ivpol_registry_requests` at `/metrics`), and that a trap in
//! the component costs only that request.

use ivpol_tests::fixtures::OCI_MANIFEST;
use ivpol_tests::policy::{key_attestor, verifying_policy};
use ivpol_tests::review::create_pod;
use ivpol_tests::sign::{KeyKind, SignOpts, Signer};
use ivpol_tests::verifying::{assert_admitted, assert_denied, validate, Setup};
use ivpol_tests::{metric_sum, post_with, Server};

const MESSAGE: &str = "image is not signed";
const CALLS: &str = "ivpol_registry_requests_total";

fn signature_policy(name: &str, signer: &Signer, message: &str) -> (String, String) {
    let check =
        "images.containers.map(i, verifyImageSignatures(i, [attestors.cosign])).all(n, n > 0)";
    let attestor = key_attestor("cosign", &signer.public_pem());
    (
        name.to_string(),
        verifying_policy(name, &attestor, "", check, message),
    )
}

/// Registry calls made while `f` runs.
fn calls(s: &Server, f: impl FnOnce()) -> f64 {
    let before = s.metric(CALLS);
    f();
    s.metric(CALLS) - before
}

/// A signed `repo:v1`; returns (tag reference, digest reference).
fn signed(setup: &Setup, signer: &Signer, repo: &str) -> (String, String) {
    let (image, digest) = setup.image(repo);
    signer.sign_image(&setup.pusher(), repo, &digest, &SignOpts::default());
    let pinned = format!("{}/{repo}@{digest}", setup.reg.addr);
    (image, pinned)
}

#[test]
fn a_repeated_request_makes_no_registry_call_and_an_edited_policy_misses() {
    let setup = Setup::new();
    let signer = Signer::keyed(KeyKind::P256);
    let (tag, pinned) = signed(&setup, &signer, "app");
    let (unsigned, _) = setup.image("unsigned");
    let s = setup.serve(&[
        signature_policy("original", &signer, MESSAGE),
        // The same policy with another message: other content, other key.
        signature_policy("edited", &signer, "edited message"),
    ]);
    for image in [&pinned, &tag] {
        let cold = calls(&s, || assert_admitted(&s, "original", image));
        assert!(cold > 0.0, "{image}: the first request verifies");
        let warm = calls(&s, || assert_admitted(&s, "original", image));
        assert_eq!(warm, 0.0, "{image}: a repeat is answered from the caches");
    }
    let edited = calls(&s, || assert_admitted(&s, "edited", &pinned));
    assert!(edited > 0.0, "another policy content verifies again");
    assert!(s.metric("ivpol_verification_cache_hits_total") >= 2.0);

    // Failures are never stored: every request for an unsigned image verifies.
    for _ in 0..2 {
        let n = calls(&s, || assert_denied(&s, "original", &unsigned, MESSAGE));
        assert!(n > 0.0, "a failed verification is not cached");
    }
    assert_metrics(&s);
}

/// `/metrics` has every family the issue names, with this server's counts.
fn assert_metrics(s: &Server) {
    let text = s.metrics_text();
    for series in [
        "ivpol_admission_requests_total{route=\"ivpol\",phase=\"validate\",verdict=\"allowed\"}",
        "ivpol_admission_requests_total{route=\"ivpol\",phase=\"validate\",verdict=\"denied\"}",
        "ivpol_admission_request_duration_seconds_bucket{",
        "ivpol_verification_cache_evictions_total",
        "ivpol_digest_cache_hits_total",
        "ivpol_registry_requests_total{host=",
        "ivpol_instances_idle",
        "ivpol_instance_acquire_seconds_count",
    ] {
        assert!(text.contains(series), "no {series} in:\n{text}");
    }
    assert_eq!(metric_sum(&text, "ivpol_policies_loaded"), 2.0);
    assert_eq!(metric_sum(&text, "ivpol_policy_load_errors"), 0.0);
}

/// A tag is resolved again once the digest TTL has passed, so a re-pushed
/// tag is judged by its new image; the verification of the old digest is
/// never applied to it.
#[test]
fn a_re_pushed_tag_misses_after_the_digest_ttl() {
    let setup = Setup::new();
    let signer = Signer::keyed(KeyKind::P256);
    let (tag, _) = signed(&setup, &signer, "app");
    let s = setup.serve_with(
        &[signature_policy("verify", &signer, MESSAGE)],
        &["--digest-ttl", "2s"],
    );
    assert_admitted(&s, "verify", &tag);
    // Re-push the tag with another (unsigned) image.
    setup.pusher().image("app", "v1", OCI_MANIFEST, "arm64");
    std::thread::sleep(std::time::Duration::from_millis(2500));
    assert_denied(&s, "verify", &tag, MESSAGE);
    // With --digest-ttl 0 every request resolves the tag.
    let s = setup.serve_with(
        &[signature_policy("verify", &signer, MESSAGE)],
        &["--digest-ttl", "0"],
    );
    assert_denied(&s, "verify", &tag, MESSAGE);
    let n = calls(&s, || assert_denied(&s, "verify", &tag, MESSAGE));
    assert!(n > 0.0);
}

/// `--no-cache` verifies every request.
#[test]
fn no_cache_verifies_every_request() {
    let setup = Setup::new();
    let signer = Signer::keyed(KeyKind::P256);
    let (_, pinned) = signed(&setup, &signer, "app");
    let s = setup.serve_with(
        &[signature_policy("verify", &signer, MESSAGE)],
        &["--no-cache"],
    );
    for _ in 0..2 {
        let n = calls(&s, || assert_admitted(&s, "verify", &pinned));
        assert!(n > 0.0);
    }
}

/// Identical verifications at the same time run once: eight concurrent
/// requests cost the registry calls of one.
#[test]
fn concurrent_identical_verifications_run_once() {
    let setup = Setup::new();
    let signer = Signer::keyed(KeyKind::P256);
    let (_, pinned) = signed(&setup, &signer, "app");
    let s = setup.serve(&[
        signature_policy("once", &signer, MESSAGE),
        signature_policy("concurrent", &signer, "other content"),
    ]);
    let one = calls(&s, || assert_admitted(&s, "once", &pinned));
    assert!(one > 0.0);
    let waits_before = s.metric("ivpol_verification_cache_waits_total");
    let url = format!("{}/ivpol/validate/concurrent", s.base);
    let review = create_pod(&[&pinned]).to_string();
    let many = calls(&s, || {
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    let (status, body) = post_with(&ureq::agent(), &url, &review);
                    assert_eq!(status, 200, "{body}");
                    assert_eq!(body["response"]["allowed"], true, "{body}");
                });
            }
        });
    });
    assert_eq!(
        many, one,
        "eight concurrent verifications, one registry round"
    );
    let waited = s.metric("ivpol_verification_cache_waits_total") - waits_before;
    let hits = s.metric("ivpol_verification_cache_hits_total");
    assert!(waited + hits >= 7.0, "waits {waited}, hits {hits}");
}

/// A request that traps the component (here: the memory limit, which the
/// request's object exhausts when a policy reads it whole; a runaway
/// expression now ends earlier, at
/// the CEL cost limit, as an ordinary error) is answered as the policy's
/// `error` result: a denying AdmissionReview naming the cause, never a 500
/// (which `failurePolicy: Ignore` would admit). That instance is dropped
/// and the next request is served by a fresh one.
#[test]
fn a_trap_drops_the_instance_and_the_next_request_succeeds() {
    let setup = Setup::new();
    let (image, _) = setup.image("app");
    let policy = |name: &str| {
        ivpol_tests::policy::pod_policy(
            name,
            "\"CREATE\"",
            "  validationConfigurations:\n    mutateDigest: false\n    verifyDigest: false\n    required: false\n  attestors: []\n  validations:\n    - expression: \"has(object.metadata)\"\n",
        )
    };
    let mut s = setup.serve_with(
        &[
            ("hungry".into(), policy("hungry")),
            ("quick".into(), policy("quick")),
        ],
        &["--instance-memory-mib", "32"],
    );
    let created = s.metric("ivpol_instances_created_total");
    // 3.5 million zeros: 7 MiB on the wire, far more as parsed values.
    let review = create_pod(&[&image]);
    let zeros = vec!["0"; 3_500_000].join(",");
    let body = review.to_string().replacen(
        "\"metadata\":{",
        &format!("\"pad\":[{zeros}],\"metadata\":{{"),
        1,
    );
    let (status, body) = s.post("/ivpol/validate/hungry", &body);
    assert_eq!(status, 200, "{body}");
    let r = &body["response"];
    assert_eq!(r["uid"], review["request"]["uid"], "{body}");
    assert_eq!(r["allowed"], false, "{body}");
    let message = r["status"]["message"].as_str().unwrap_or_default();
    assert_eq!(
        message,
        "Policy hungry error: internal error: evaluation ran out of memory (limit 32 MiB per instance)"
    );
    let r = validate(&s, "quick", &image);
    assert_eq!(r["allowed"], true, "{r}\n{}", s.log());
    assert!(s.alive());
    assert!(
        s.metric("ivpol_instances_created_total") > created,
        "the trapped instance was replaced"
    );
}
