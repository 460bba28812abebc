//! Bounds end to end: no registry data and no CEL
//! expression can exhaust a component instance. Each case must come back
//! as a denying AdmissionReview (HTTP 200) that names the cause, and the
//! server must answer the next request: a trap would be an HTTP 500, which
//! `failurePolicy: Ignore` turns into an admission.

use ivpol_tests::fixtures::OCI_MANIFEST;
use ivpol_tests::policy::{key_attestor, pod_policy, verifying_policy};
use ivpol_tests::review::{create_pod, pod, review};
use ivpol_tests::sign::bundle::{push_referrer, record_referrer};
use ivpol_tests::sign::{KeyKind, SignOpts, Signer};
use ivpol_tests::verifying::{assert_admitted, Setup};
use serde_json::{Map, Value};

const BUNDLE_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

/// The registry data budget of one evaluation (guest `oci::budget`).
const BUDGET: usize = 64 << 20;

/// A distinct fake bundle of exactly `size` bytes: JSON, padded.
fn fake_bundle(i: usize, size: usize) -> Vec<u8> {
    let head = format!("{{\"mediaType\":\"{BUNDLE_TYPE}\",\"n\":{i},\"pad\":\"");
    let mut bytes = head.into_bytes();
    bytes.resize(size - 2, b'A');
    bytes.extend_from_slice(b"\"}");
    bytes
}

/// POSTs a review of `object` to `path`; returns (HTTP status, response).
fn post(s: &ivpol_tests::Server, path: &str, object: &Value) -> (u16, Value) {
    let (status, body) = s.post(path, &review("CREATE", "default", object).to_string());
    (status, body["response"].clone())
}

/// 30 distinct 10 MiB fake bundle referrers on an unsigned image (found
/// through the `sha256-<hex>` tag schema, as the test registry has no
/// referrers API): the component reads at most its budget, answers a
/// denial naming it, and the server serves the next request.
#[test]
fn thirty_ten_mib_bundle_referrers_are_a_denial_not_a_trap() {
    let setup = Setup::new();
    let p = setup.pusher();
    let (_, digest) = setup.image("hostile/app");
    let (signed, signed_digest) = setup.image("hostile/signed");
    let signer = Signer::keyed(KeyKind::P256);
    signer.sign_image(&p, "hostile/signed", &signed_digest, &SignOpts::default());
    let subject_size = ivpol_tests::sign::oci::get_manifest(&p, "hostile/app", &digest)
        .expect("image manifest")
        .1
        .len();
    for i in 0..30 {
        let referrer = push_referrer(
            &p,
            "hostile/app",
            &digest,
            OCI_MANIFEST,
            subject_size,
            BUNDLE_TYPE,
            BUNDLE_TYPE,
            &fake_bundle(i, 10 << 20),
            &Map::new(),
        );
        record_referrer(
            &p,
            "hostile/app",
            &digest,
            &referrer,
            BUNDLE_TYPE,
            &Map::new(),
        );
    }
    let policy = verifying_policy(
        "bounded",
        &key_attestor("cosign", &signer.public_pem()),
        "",
        "images.containers.map(i, verifyImageSignatures(i, [attestors.cosign])).all(n, n > 0)",
        "not signed",
    );
    let s = setup.serve(&[("bounded".to_string(), policy)]);
    let pinned = format!("{}/hostile/app@{digest}", setup.reg.addr);
    for attempt in 0..2 {
        let (status, response) = post(&s, "/ivpol/validate/bounded", &pod("p", &[&pinned]));
        assert_eq!(status, 200, "attempt {attempt}: {response}\n{}", s.log());
        assert_eq!(response["allowed"], false, "{response}");
        assert_eq!(
            response["status"]["message"],
            format!(
                "Policy bounded error: failed to evaluate policy: registry data budget of {BUDGET} bytes exceeded"
            ),
            "{response}"
        );
    }
    // The next request, an ordinary one, is served as usual.
    assert_admitted(&s, "bounded", &signed);
}

/// A pod with `n` containers (each image on the test registry's host name,
/// which no policy here verifies).
fn wide_pod(n: usize) -> Value {
    let images: Vec<String> = (0..n).map(|i| format!("example.test/app{i}:1")).collect();
    let refs: Vec<&str> = images.iter().map(String::as_str).collect();
    pod("wide", &refs)
}

/// The CEL runtime cost limit: an expression quadratic in the containers
/// of a 3000-container pod ends as the policy's error (Kubernetes' words),
/// both under Deny and under `failurePolicy: Ignore` in a matchCondition;
/// the same policies pass an ordinary pod, and the server stays up.
#[test]
fn an_expression_over_the_cost_limit_is_a_denial() {
    let nested =
        "object.spec.containers.all(c, object.spec.containers.exists(d, d.name == c.name))";
    let validating = pod_policy(
        "costly",
        "CREATE",
        &format!(
            "  validationConfigurations:\n    mutateDigest: false\n    verifyDigest: false\n    required: false\n  attestors: []\n  validations:\n    - expression: >-\n        {nested}\n      message: never\n"
        ),
    );
    let matching = pod_policy(
        "costly-match",
        "CREATE",
        &format!(
            "  failurePolicy: Ignore\n  matchConditions:\n    - name: nested\n      expression: >-\n        {nested}\n  validationConfigurations:\n    mutateDigest: false\n    verifyDigest: false\n    required: false\n  attestors: []\n  validations:\n    - expression: \"true\"\n"
        ),
    );
    let s = ivpol_tests::Server::start(&[
        ("costly.yaml", &validating),
        ("costly-match.yaml", &matching),
    ]);
    let (_, ready) = s.get("/health/readiness");
    assert_eq!(ready["rejected"], 0, "{}", s.log());
    let big = wide_pod(3000);
    for name in ["costly", "costly-match"] {
        let (status, response) = post(&s, &format!("/ivpol/validate/{name}"), &big);
        assert_eq!(status, 200, "{name}: {response}\n{}", s.log());
        assert_eq!(response["allowed"], false, "{name}: {response}");
        let message = response["status"]["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with(&format!("Policy {name} error: "))
                && message.ends_with("operation cancelled: actual cost limit exceeded"),
            "{name}: {message}"
        );
    }
    let small = create_pod(&["example.test/app:1"]);
    for name in ["costly", "costly-match"] {
        let response = s.review(&format!("/ivpol/validate/{name}"), &small);
        assert_eq!(response["allowed"], true, "{name}: {response}");
    }
}

/// Memory is bounded by design, not by the node's free memory: the server
/// runs with transparent huge pages off (host `main.rs`). With them on,
/// mimalloc's arenas, which it marks `MADV_HUGEPAGE`, counted every touched
/// 2 MiB in full whenever the kernel had huge pages to give, and the bench's
/// RSS went from about 75 MB to over 300 MB (docs/performance.md, "Memory").
#[test]
fn the_server_runs_without_transparent_huge_pages() {
    let s = ivpol_tests::Server::start(&[]);
    let status = std::fs::read_to_string(format!("/proc/{}/status", s.pid()))
        .expect("the server's /proc status");
    let thp = status
        .lines()
        .find_map(|l| l.strip_prefix("THP_enabled:"))
        .map(str::trim);
    assert_eq!(thp, Some("0"), "{status}");
}

/// A server that finds no precompiled component compiles it in a child
/// process (`ivpol compile-component`) and maps the artifact the child
/// wrote, into its cache directory or, under `--no-precompile-cache` or
/// when the cache directory cannot be made, a private scratch directory
/// (a failing cache costs the cache, not the child): cranelift's ~200 MB
/// of working memory ends
/// with the child. When the server compiled in its own process, its RSS
/// stayed at 264 MB after start-up, against 35-42 MB with the artifact
/// loaded.
#[test]
fn a_server_compiles_the_component_in_a_child_and_keeps_none_of_its_memory() {
    let policy = pod_policy(
        "plain",
        "CREATE",
        "  validationConfigurations:\n    mutateDigest: false\n    verifyDigest: false\n    required: false\n  attestors: []\n  validations:\n    - expression: \"true\"\n",
    );
    let cache = tempfile::tempdir().expect("temp dir");
    // A cache directory under a file cannot be made.
    let file = cache.path().join("a-file");
    std::fs::write(&file, "").expect("a file");
    let blocked = file.join("cache");
    for (dir, no_precompile_cache) in [
        (cache.path(), false),
        (cache.path(), true),
        (&*blocked, false),
    ] {
        let s = ivpol_tests::Server::start_with(
            &[("plain.yaml", &policy)],
            ivpol_tests::Options {
                cache_dir: Some(dir),
                no_precompile_cache,
                ..Default::default()
            },
        );
        let log = s.log();
        assert_eq!(dir == &*blocked, log.contains("cannot cache"), "{log}");
        assert!(
            log.contains("compiling the policy component in a child process"),
            "{log}"
        );
        assert!(!log.contains("compiling here"), "the child failed:\n{log}");
        let status = std::fs::read_to_string(format!("/proc/{}/status", s.pid()))
            .expect("the server's /proc status");
        let high_water_kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM");
        assert!(high_water_kib < 150 << 10, "{status}");
        let response = s.review(
            "/ivpol/validate/plain",
            &create_pod(&["example.test/app:1"]),
        );
        assert_eq!(response["allowed"], true, "{response}");
    }
    // The first server's child wrote the cache entry; the others, with no
    // cache, left nothing there.
    let artifacts = std::fs::read_dir(cache.path())
        .expect("the cache dir")
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
        .count();
    assert_eq!(artifacts, 1);
}
