//! Every decision says why: one decision line per admission
//! request, with each verification's outcome and typed reason, the same
//! reasons in the AdmissionResponse's `auditAnnotations`, Kyverno's
//! messages unchanged, and per-policy metrics.

use ivpol_tests::faulty::{Answer, Faulty};
use ivpol_tests::policy::{key_attestor, verifying_policy};
use ivpol_tests::sign::{KeyKind, KeyPair, SignOpts, Signer};
use ivpol_tests::verifying::{validate, Setup};
use ivpol_tests::{Options, Server};
use serde_json::Value;
use std::time::Duration;

const CHECK: &str = "images.containers.all(i, verifyImageSignatures(i, [attestors.key]) > 0)";

fn signed_policy(pem: &str) -> (String, String) {
    let policy = verifying_policy("signed", &key_attestor("key", pem), "", CHECK, "not signed");
    ("signed".to_string(), policy)
}

/// The decision lines logged since the last call (JSON, `--log-format
/// json`; `Server::log` hands each line out once).
fn decisions(s: &Server) -> Vec<Value> {
    s.log()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["target"] == "ivpol::decision")
        .collect()
}

/// The decision line of the one request since the last call (exactly one
/// must have been written), and its first verification.
fn last_verification(s: &Server) -> (Value, Value) {
    std::thread::sleep(Duration::from_millis(200));
    let all = decisions(s);
    assert_eq!(all.len(), 1, "one decision line per request: {all:?}");
    let last = all.last().cloned().unwrap_or(Value::Null);
    let verifications: Value =
        serde_json::from_str(last["verifications"].as_str().unwrap_or("[]")).unwrap_or_default();
    (last, verifications[0].clone())
}

#[test]
fn each_request_logs_one_decision_with_the_reason_of_each_verification() {
    let setup = Setup::new();
    let signer = Signer::keyed(KeyKind::P256);
    let (signed, digest) = setup.image("why/signed");
    signer.sign_image(&setup.pusher(), "why/signed", &digest, &SignOpts::default());
    let (unsigned, _) = setup.image("why/unsigned");
    let other = KeyPair::from_seed(KeyKind::P256, "a key that signed nothing");
    let s = setup.serve_with(
        &[signed_policy(&signer.public_pem()), {
            let p = verifying_policy(
                "wrong",
                &key_attestor("key", &other.public_pem()),
                "",
                CHECK,
                "not signed",
            );
            ("wrong".to_string(), p)
        }],
        &["--log-format", "json"],
    );

    // Verified, then verified from the cache.
    assert_eq!(validate(&s, "signed", &signed)["allowed"], true);
    let (line, v) = last_verification(&s);
    assert_eq!(
        (line["allowed"].as_bool(), line["phase"].as_str()),
        (Some(true), Some("validate"))
    );
    assert_eq!(
        (v["outcome"].as_str(), v["cache"].as_str()),
        (Some("verified"), Some("miss")),
        "{line}"
    );
    assert_eq!(v["digest"], digest.as_str());
    assert_eq!(v["attestorKind"], "cosign");
    let again = validate(&s, "signed", &signed);
    assert_eq!(again["allowed"], true);
    let (_, v) = last_verification(&s);
    assert_eq!(v["cache"], "hit");
    assert!(
        again["auditAnnotations"]["verification.signed"]
            .as_str()
            .unwrap_or_default()
            .contains("key: verified (cache hit)"),
        "{again}"
    );

    // No signature at all.
    let r = validate(&s, "signed", &unsigned);
    assert_eq!(
        r["status"]["message"], "Policy signed failed: not signed",
        "Kyverno's message is unchanged"
    );
    let (line, v) = last_verification(&s);
    assert_eq!(line["allowed"], false);
    assert_eq!(v["reason"], "not-found", "{line}");
    let annotation = r["auditAnnotations"]["verification.signed"]
        .as_str()
        .unwrap_or_default();
    assert!(annotation.contains("not-found"), "{r}");

    // A signature the key does not verify.
    let r = validate(&s, "wrong", &signed);
    assert_eq!(r["allowed"], false);
    let (line, v) = last_verification(&s);
    assert_eq!(v["reason"], "bad-signature", "{line}");
    let policies: Value =
        serde_json::from_str(line["policies"].as_str().unwrap_or("[]")).unwrap_or_default();
    assert_eq!(policies[0]["result"], "fail", "{line}");
    assert_eq!(policies[0]["message"], "not signed");

    let metrics = s.metrics_text();
    for series in [
        "ivpol_policy_results_total{policy=\"signed\",kind=\"ImageValidatingPolicy\",phase=\"validate\",result=\"pass\"} 2",
        "ivpol_policy_results_total{policy=\"signed\",kind=\"ImageValidatingPolicy\",phase=\"validate\",result=\"fail\"} 1",
        "ivpol_verification_duration_seconds_count{attestor=\"cosign\",cache=\"hit\"} 1",
    ] {
        assert!(metrics.contains(series), "{series} missing:\n{metrics}");
    }
    assert!(
        metrics.contains("ivpol_registry_request_duration_seconds_count{host="),
        "{metrics}"
    );
}

/// Registry failures carry the host and status; a registry the network
/// policy refuses says so.
#[test]
fn registry_errors_and_refusals_are_reasons_of_their_own() {
    let faulty = Faulty::start();
    let digest = format!("sha256:{}", "a".repeat(64));
    faulty.on(
        &format!("/v2/app/manifests/sha256-{}.sig", "a".repeat(64)),
        Answer::Status(503, "{}".into()),
    );
    let key = KeyPair::from_seed(KeyKind::P256, "any key");
    let (name, policy) = signed_policy(&key.public_pem());
    let s = Server::start_with(
        &[(&format!("{name}.yaml"), &policy)],
        Options {
            extra_args: vec![
                "--insecure-registry".into(),
                faulty.addr.clone(),
                "--log-format".into(),
                "json".into(),
            ],
            ..Options::default()
        },
    );
    let image = format!("{}/app@{digest}", faulty.addr);
    assert_eq!(validate(&s, "signed", &image)["allowed"], false);
    let (line, v) = last_verification(&s);
    assert_eq!(v["reason"], "registry", "{line}");
    assert_eq!(v["status"], 503, "{line}");
    assert_eq!(v["registry"], faulty.addr.as_str(), "{line}");

    // Without --insecure-registry a loopback registry is refused.
    let refusing = Server::start_with(
        &[(&format!("{name}.yaml"), &policy)],
        Options {
            extra_args: vec!["--log-format".into(), "json".into()],
            ..Options::default()
        },
    );
    assert_eq!(validate(&refusing, "signed", &image)["allowed"], false);
    let (line, v) = last_verification(&refusing);
    assert_eq!(v["reason"], "registry-refused", "{line}");
}
