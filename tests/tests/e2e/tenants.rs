//! Tenant boundaries in `ivpol serve`, tried as a hostile namespace tenant
//! would: a slow registry of one namespace's images must not starve the
//! others of policy instances, and a PolicyException may exempt requests
//! from a cluster policy only from the namespaces the operator names.

use ivpol_tests::faulty::{Answer, Faulty};
use ivpol_tests::policy::pod_policy;
use ivpol_tests::review::{pod, review};
use ivpol_tests::{Options, Server};
use serde_json::Value;
use std::time::Duration;

/// No digests required or pinned, no attestors: the policies here judge
/// names and image data, not signatures.
const RELAXED: &str =
    "  validationConfigurations:\n    mutateDigest: false\n    verifyDigest: false\n    required: false\n  attestors: []\n";

/// A cluster policy that reads every Pod's image data: its requests wait on
/// the registry for as long as the registry makes them.
fn slow_policy() -> String {
    pod_policy(
        "slow",
        "\"CREATE\"",
        &format!("{RELAXED}  validations:\n    - expression: \"getImageData(object.spec.containers[0].image).digest != ''\"\n      message: no digest\n"),
    )
}

/// A CEL-only cluster policy that denies Pods named `blocked`.
fn gate() -> String {
    pod_policy(
        "gate",
        "\"CREATE\"",
        &format!("{RELAXED}  validations:\n    - expression: \"object.metadata.name != 'blocked'\"\n      message: gate blocks blocked\n"),
    )
}

fn post_in_thread(s: &Server, path: &str, body: Value) -> std::thread::JoinHandle<(u16, Value)> {
    let url = format!("{}{path}", s.base);
    let body = body.to_string();
    std::thread::spawn(move || ivpol_tests::post_with(&ureq::agent(), &url, &body))
}

/// The hostile tenant's scenario: Pods in `attacker` whose image sits on a
/// registry that answers after longer than the webhook deadline, sent many
/// at once. A request in `victim` for an unrelated CEL-only policy must
/// still get an instance and its own verdict, not `no policy instance
/// became free`. (With one shared queue it waited behind every attacker.)
#[test]
fn a_slow_registry_in_one_namespace_does_not_starve_another() {
    let faulty = Faulty::start();
    faulty.on(
        "/v2/app/manifests/v1",
        Answer::Slow(Duration::from_secs(15)),
    );
    let s = Server::start_with(
        &[("slow.yaml", &slow_policy()), ("gate.yaml", &gate())],
        Options {
            extra_args: [
                "--insecure-registry",
                &faulty.addr,
                "--instances",
                "1",
                "--max-instances",
                "2",
                "--namespace-instances",
                "1",
            ]
            .iter()
            .map(|a| a.to_string())
            .collect(),
            ..Options::default()
        },
    );
    let image = format!("{}/app:v1", faulty.addr);
    let attackers: Vec<_> = (0..4)
        .map(|i| {
            let body = review("CREATE", "attacker", &pod(&format!("a{i}"), &[&image]));
            post_in_thread(&s, "/ivpol/validate/slow", body)
        })
        .collect();
    // The attackers are queued or waiting on the registry by now.
    std::thread::sleep(Duration::from_millis(800));
    let victim = s.review(
        "/ivpol/validate/gate",
        &review("CREATE", "victim", &pod("web", &["nginx"])),
    );
    assert_eq!(victim["allowed"], true, "{victim}\n{}", s.log());
    let blocked = s.review(
        "/ivpol/validate/gate",
        &review("CREATE", "victim", &pod("blocked", &["nginx"])),
    );
    assert_eq!(
        blocked["status"]["message"], "Policy gate failed: gate blocks blocked",
        "{blocked}"
    );
    // The attacker's requests are denied: the first when the registry
    // call runs out of time, the rest either so (on what is left of their
    // deadline after waiting for the namespace's one turn) or because the
    // namespace held its share for their whole deadline.
    for t in attackers {
        let (_, answer) = t.join().expect("attacker thread");
        let response = &answer["response"];
        assert_eq!(response["allowed"], false, "{answer}");
        let message = response["status"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("namespace \"attacker\" already has 1 requests being judged")
                || message.contains("timed out"),
            "{message}"
        );
    }
    let waits = s.metrics_text();
    assert!(
        waits.contains("ivpol_instance_wait_seconds_count{namespace=\"victim\"}"),
        "{waits}"
    );
}

/// A PolicyException in a namespace that may not exempt the cluster
/// policy, with `matchConditions: [true]`.
fn exception_in(namespace: &str) -> String {
    format!(
        "apiVersion: policies.kyverno.io/v1beta1\nkind: PolicyException\nmetadata:\n  name: open\n  namespace: {namespace}\nspec:\n  policyRefs:\n    - name: gate\n      kind: ImageValidatingPolicy\n  matchConditions:\n    - name: always\n      expression: \"true\"\n"
    )
}

fn blocked_allowed(s: &Server) -> bool {
    let r = s.review(
        "/ivpol/validate/gate",
        &review("CREATE", "victim", &pod("blocked", &["nginx"])),
    );
    r["allowed"] == true
}

/// Policy files are the operator's, so their exceptions apply from any
/// namespace by default; `--exception-namespace` narrows that, and
/// `--no-policy-exceptions` turns exceptions off. A refused exception is a
/// load diagnostic, in the log and readiness, and exempts nothing.
#[test]
fn exception_namespaces_decide_which_exceptions_exempt_cluster_policies() {
    let files = [
        ("gate.yaml", gate()),
        ("exception.yaml", exception_in("attacker")),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(n, c)| (*n, c.as_str())).collect();
    let start = |args: &[&str]| {
        Server::start_with(
            &files,
            Options {
                extra_args: args.iter().map(|a| a.to_string()).collect(),
                ..Options::default()
            },
        )
    };
    let s = start(&[]);
    assert!(blocked_allowed(&s), "files: any namespace by default");
    drop(s);
    let s = start(&["--exception-namespace", "ivpol"]);
    assert!(!blocked_allowed(&s), "{}", s.log());
    assert!(
        s.log()
            .contains("an exception in namespace \\\"attacker\\\" may not exempt a cluster policy")
            || s.log()
                .contains("an exception in namespace \"attacker\" may not exempt a cluster policy"),
        "{}",
        s.log()
    );
    drop(s);
    let s = start(&["--exception-namespace", "attacker"]);
    assert!(blocked_allowed(&s));
    drop(s);
    let s = start(&["--no-policy-exceptions"]);
    assert!(!blocked_allowed(&s));
    assert!(
        s.log().contains("policy exceptions are disabled"),
        "{}",
        s.log()
    );
}

/// The AdmissionReview the API server sends the policy-validation webhook
/// for `operation` on the policy `yaml` in `namespace`.
fn policy_admission(operation: &str, namespace: &str, yaml: &str) -> Value {
    let object: Value = serde_yaml_ng::from_str(yaml).expect("YAML");
    serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "policy-1",
            "kind": {"group": "policies.kyverno.io", "version": "v1", "kind": object["kind"]},
            "resource": {"group": "policies.kyverno.io", "version": "v1", "resource": "imagevalidatingpolicies"},
            "name": object["metadata"]["name"],
            "namespace": namespace,
            "operation": operation,
            "object": object,
        },
    })
}

/// `POST /ivpol/policy-validate`: a policy that would not load is refused
/// when it is written, with the diagnostics `serve` would log, so that it
/// never replaces a working one; a tenant's exception to a cluster policy
/// is refused there too. A policy that loads passes.
#[test]
fn the_policy_validation_webhook_refuses_what_would_not_load() {
    let s = Server::start_with(
        &[("gate.yaml", &gate())],
        Options {
            extra_args: vec!["--exception-namespace".into(), "ivpol".into()],
            ..Options::default()
        },
    );
    let good = s.review(
        "/ivpol/policy-validate",
        &policy_admission("UPDATE", "", &gate()),
    );
    assert_eq!(good["allowed"], true, "{good}");
    assert_eq!(good["uid"], "policy-1");
    let broken = gate().replace("object.metadata.name != 'blocked'", "object.((");
    let refused = s.review(
        "/ivpol/policy-validate",
        &policy_admission("UPDATE", "", &broken),
    );
    assert_eq!(refused["allowed"], false, "{refused}");
    let message = refused["status"]["message"].as_str().unwrap_or_default();
    assert!(
        message
            .starts_with("ImageValidatingPolicy gate is invalid: spec.validations[0].expression"),
        "{message}"
    );
    let hostile = s.review(
        "/ivpol/policy-validate",
        &policy_admission("CREATE", "attacker", &exception_in("attacker")),
    );
    assert_eq!(hostile["allowed"], false, "{hostile}");
    // The server still judges with the policy it had.
    assert!(!blocked_allowed(&s));
}

/// The hostile tenant's exception from the report: a condition that calls
/// `getImageData` on a private image, which would have sent the cluster
/// policy's registry credentials and put the image's config in a denial.
/// It is refused at load, exempts nothing, and no request reaches the
/// registry for it.
#[test]
fn an_exception_that_reads_image_data_is_refused_and_reaches_no_registry() {
    let faulty = Faulty::start();
    let private = format!("{}/private/app:1", faulty.addr);
    let exception = format!(
        "apiVersion: policies.kyverno.io/v1beta1\nkind: PolicyException\nmetadata:\n  name: peek\nspec:\n  policyRefs:\n    - name: gate\n      kind: ImageValidatingPolicy\n  matchConditions:\n    - name: peek\n      expression: \"string(getImageData('{private}').config) == 'x'\"\n"
    );
    let s = Server::start_with(
        &[("gate.yaml", &gate()), ("peek.yaml", &exception)],
        Options {
            extra_args: vec!["--insecure-registry".into(), faulty.addr.clone()],
            ..Options::default()
        },
    );
    let (_, ready) = s.get("/health/readiness");
    assert_eq!(ready["rejected"], 1, "{ready}");
    assert!(
        s.log().contains("getImageData is not available here"),
        "{}",
        s.log()
    );
    assert!(!blocked_allowed(&s));
    let seen = faulty.seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert!(seen.is_empty(), "the registry was asked: {seen:?}");
}
