//! End to end: the real `ivpol serve`, with the embedded component, answering
//! AdmissionReviews over HTTP as the Kubernetes API server would send them.

use ivpol_tests::policy::pod_policy;
use ivpol_tests::review::{self, create_pod, cronjob, deployment, pod};
use ivpol_tests::{Options, Server};
use serde_json::json;

/// An ImageValidatingPolicy for Pod CREATE/UPDATE with `spec` lines appended.
fn ivpol(name: &str, spec: &str) -> String {
    pod_policy(
        name,
        "\"CREATE\", \"UPDATE\"",
        &format!("  attestors: []\n{spec}"),
    )
}

/// The registry allow-list rule with the given validationActions.
fn registry_policy(name: &str, actions: &str) -> String {
    ivpol(
        name,
        &format!(
            r#"  validationActions: {actions}
  validationConfigurations:
    mutateDigest: false
    verifyDigest: false
    required: false
  validations:
    - expression: "images.containers.all(i, parseImageReference(i).registry() == 'ghcr.io')"
      message: images must come from ghcr.io
"#
        ),
    )
}

const BAD: &str = "docker.io/library/nginx:1.27";
const GOOD: &str = "ghcr.io/kyverno/test-verify-image:signed";

#[test]
fn deny_rejects_with_kyvernos_message() {
    let s = Server::start(&[("p.yaml", &registry_policy("registry-deny", "[Deny]"))]);
    let r = s.review("/ivpol/validate/registry-deny", &create_pod(&[BAD]));
    assert_eq!(r["allowed"], false);
    assert_eq!(r["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
    assert_eq!(
        r["status"]["message"],
        "Policy registry-deny failed: images must come from ghcr.io"
    );
    assert_eq!(r["status"]["status"], "Failure");
    let ok = s.review("/ivpol/validate/registry-deny", &create_pod(&[GOOD]));
    assert_eq!(ok["allowed"], true);
    assert!(
        ok.get("warnings").is_none() && ok.get("status").is_none(),
        "{ok}"
    );
}

#[test]
fn warn_admits_with_a_warning_and_audit_only_reports() {
    let s = Server::start(&[
        ("w.yaml", &registry_policy("registry-warn", "[Warn]")),
        ("a.yaml", &registry_policy("registry-audit", "[Audit]")),
    ]);
    let r = s.review("/ivpol/validate/registry-warn", &create_pod(&[BAD]));
    assert_eq!(r["allowed"], true);
    assert_eq!(
        r["warnings"],
        json!(["Policy registry-warn failed: images must come from ghcr.io"])
    );
    let r = s.review("/ivpol/validate/registry-audit", &create_pod(&[BAD]));
    assert_eq!(r["allowed"], true);
    assert!(r.get("warnings").is_none(), "{r}");
    // Both on one route: still admitted, one warning.
    let r = s.review(
        "/ivpol/validate/registry-warn/registry-audit",
        &create_pod(&[BAD]),
    );
    assert_eq!(r["allowed"], true);
    assert_eq!(r["warnings"].as_array().map(Vec::len), Some(1));
}

#[test]
fn match_conditions_false_means_no_result() {
    let policy = registry_policy("prod-only", "[Deny]").replace(
        "  validationActions",
        "  matchConditions:\n    - name: prod\n      expression: \"has(object.metadata.labels) && object.metadata.labels.?prod.orValue('') == 'true'\"\n  validationActions",
    );
    let s = Server::start(&[("p.yaml", &policy)]);
    let r = s.review("/ivpol/validate/prod-only", &create_pod(&[BAD]));
    assert_eq!(r["allowed"], true, "{r}");
    let mut prod = pod("prod-pod", &[BAD]);
    prod["metadata"]["labels"] = json!({"prod": "true"});
    let r = s.review(
        "/ivpol/validate/prod-only",
        &review::review("CREATE", "default", &prod),
    );
    assert_eq!(r["allowed"], false, "{r}");
}

#[test]
fn exclude_rules_skip_matching_requests() {
    let policy = registry_policy("no-updates", "[Deny]").replace(
        "  attestors: []",
        "    excludeResourceRules:\n      - apiGroups: [\"\"]\n        apiVersions: [\"v1\"]\n        operations: [\"UPDATE\"]\n        resources: [\"pods\"]\n  attestors: []",
    );
    let s = Server::start(&[("p.yaml", &policy)]);
    let create = s.review("/ivpol/validate/no-updates", &create_pod(&[BAD]));
    assert_eq!(create["allowed"], false);
    let update = s.review(
        "/ivpol/validate/no-updates",
        &review::review("UPDATE", "default", &pod("p", &[BAD])),
    );
    assert_eq!(update["allowed"], true, "{update}");
}

#[test]
fn namespace_and_object_selectors() {
    let ns_policy = registry_policy("team-a-only", "[Deny]").replace(
        "  attestors: []",
        "    namespaceSelector:\n      matchLabels:\n        team: a\n  attestors: []",
    );
    let obj_policy = registry_policy("critical-only", "[Deny]").replace(
        "  attestors: []",
        "    objectSelector:\n      matchExpressions:\n        - {key: tier, operator: In, values: [critical]}\n  attestors: []",
    );
    let namespaces = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n  labels: {team: a}\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-b\n  labels: {team: b}\n";
    let s = Server::start_with(
        &[("ns.yaml", &ns_policy), ("obj.yaml", &obj_policy)],
        Options {
            namespaces: Some(namespaces),
            ..Options::default()
        },
    );
    let in_ns = |ns: &str| review::review("CREATE", ns, &pod("p", &[BAD]));
    assert_eq!(
        s.review("/ivpol/validate/team-a-only", &in_ns("team-a"))["allowed"],
        false
    );
    assert_eq!(
        s.review("/ivpol/validate/team-a-only", &in_ns("team-b"))["allowed"],
        true
    );
    // A namespace `--namespaces` does not describe: its labels are
    // needed, so the policy errors and denies (never a silent
    // mismatch that admits unverified).
    let unknown = s.review("/ivpol/validate/team-a-only", &in_ns("unknown"));
    assert_eq!(unknown["allowed"], false, "{unknown}");
    assert!(
        unknown["status"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("namespace \"unknown\" is not known to ivpol")),
        "{unknown}"
    );
    let mut critical = pod("p", &[BAD]);
    critical["metadata"]["labels"] = json!({"tier": "critical"});
    assert_eq!(
        s.review(
            "/ivpol/validate/critical-only",
            &review::review("CREATE", "default", &critical)
        )["allowed"],
        false
    );
    assert_eq!(
        s.review("/ivpol/validate/critical-only", &in_ns("default"))["allowed"],
        true
    );
}

#[test]
fn autogen_checks_deployments_and_cronjobs() {
    let policy = registry_policy("autogen-registry", "[Deny]").replace(
        "  validationActions",
        "  matchConditions:\n    - name: prod\n      expression: \"has(object.metadata.labels) && has(object.metadata.labels.prod) && object.metadata.labels.prod == 'true'\"\n  validationActions",
    );
    let s = Server::start(&[("p.yaml", &policy)]);
    let prod = json!({"prod": "true", "app": "web"});
    let dep = review::review(
        "CREATE",
        "default",
        &deployment("web", prod.clone(), &[BAD]),
    );
    let r = s.review("/ivpol/validate/autogen-registry", &dep);
    assert_eq!(
        r["status"]["message"], "Policy autogen-registry failed: images must come from ghcr.io",
        "{r}"
    );
    let good = review::review(
        "CREATE",
        "default",
        &deployment("web", prod.clone(), &[GOOD]),
    );
    assert_eq!(
        s.review("/ivpol/validate/autogen-registry", &good)["allowed"],
        true
    );
    // The rewritten matchCondition reads the template's labels.
    let dev = review::review(
        "CREATE",
        "default",
        &deployment("web", json!({"app": "web"}), &[BAD]),
    );
    assert_eq!(
        s.review("/ivpol/validate/autogen-registry", &dev)["allowed"],
        true
    );
    let cj = review::review("CREATE", "default", &cronjob("nightly", prod, &[BAD]));
    assert_eq!(
        s.review("/ivpol/validate/autogen-registry", &cj)["allowed"],
        false
    );
}

#[test]
fn verify_digest_requires_a_digest() {
    let policy = ivpol(
        "pinned",
        "  matchImageReferences:\n    - glob: \"ghcr.io/*\"\n  validationConfigurations:\n    mutateDigest: false\n    required: false\n  validations:\n    - expression: \"true\"\n",
    );
    let s = Server::start(&[("p.yaml", &policy)]);
    let r = s.review("/ivpol/validate/pinned", &create_pod(&[GOOD]));
    assert_eq!(
        r["status"]["message"],
        format!("Policy pinned failed: image {GOOD} does not have a digest")
    );
    let pinned = format!("{GOOD}@sha256:{}", "b".repeat(64));
    assert_eq!(
        s.review("/ivpol/validate/pinned", &create_pod(&[&pinned]))["allowed"],
        true
    );
    // Not matched by matchImageReferences: not checked.
    assert_eq!(
        s.review("/ivpol/validate/pinned", &create_pod(&[BAD]))["allowed"],
        true
    );
}

#[test]
fn required_without_a_signature_check_fails() {
    let policy = ivpol(
        "needs-verification",
        "  validationConfigurations:\n    mutateDigest: false\n    verifyDigest: false\n  validations:\n    - expression: \"true\"\n",
    );
    let s = Server::start(&[("p.yaml", &policy)]);
    let r = s.review("/ivpol/validate/needs-verification", &create_pod(&[GOOD]));
    assert_eq!(
        r["status"]["message"],
        format!("Policy needs-verification failed: image {GOOD} is not verified: no policy performed a signature or attestation check on it")
    );
}

/// Kyverno #16336: a verdict never rests on what the request carries. The
/// policy verifies a real signature, so trusting the forged "pass" would
/// admit the unsigned image; the signed one shows the policy does admit.
#[test]
fn a_forged_verification_annotation_changes_nothing() {
    use ivpol_tests::policy::{key_attestor, verifying_policy};
    use ivpol_tests::sign::{KeyKind, SignOpts, Signer};
    use ivpol_tests::verifying::{assert_admitted, Setup};
    const NAME: &str = "check-signed-images-forged-annotation";
    let setup = Setup::new();
    let signer = Signer::keyed(KeyKind::P256);
    let (signed, digest) = setup.image("forged/signed");
    signer.sign_image(
        &setup.pusher(),
        "forged/signed",
        &digest,
        &SignOpts::default(),
    );
    let (unsigned, _) = setup.image("forged/unsigned");
    let policy = verifying_policy(
        NAME,
        &key_attestor("key", &signer.public_pem()),
        "",
        "images.containers.all(i, verifyImageSignatures(i, [attestors.key]) > 0)",
        "not signed",
    );
    let s = setup.serve(&[(NAME.to_string(), policy)]);
    assert_admitted(&s, NAME, &signed);
    let route = format!("/ivpol/validate/{NAME}");
    let plain = s.review(&route, &create_pod(&[unsigned.as_str()]));
    let mut forged_pod = pod("test-pod", &[unsigned.as_str()]);
    forged_pod["metadata"]["annotations"] = json!({
        "kyverno.io/image-verification-outcomes":
            format!(r#"{{"{NAME}":{{"status":"pass","message":"verified"}}}}"#)
    });
    let forged = s.review(&route, &review::review("CREATE", "default", &forged_pod));
    assert_eq!(forged["allowed"], false, "{forged}");
    assert_eq!(forged["status"], plain["status"]);
}

#[test]
fn cluster_and_namespaced_policies_are_scoped_by_route() {
    let cluster = registry_policy("same-name", "[Deny]");
    let namespaced = registry_policy("same-name", "[Warn]")
        .replace(
            "kind: ImageValidatingPolicy",
            "kind: NamespacedImageValidatingPolicy",
        )
        .replace(
            "  name: same-name",
            "  name: same-name\n  namespace: team-a",
        );
    let s = Server::start(&[("c.yaml", &cluster), ("n.yaml", &namespaced)]);
    let req = |ns: &str| review::review("CREATE", ns, &pod("p", &[BAD]));
    // /ivpol sees the cluster policy only (Deny).
    assert_eq!(
        s.review("/ivpol/validate/same-name", &req("team-a"))["allowed"],
        false
    );
    // /nivpol sees the namespaced policy of the request's namespace only (Warn).
    let r = s.review("/nivpol/validate/same-name", &req("team-a"));
    assert_eq!(r["allowed"], true);
    assert_eq!(
        r["warnings"],
        json!(["Policy same-name failed: images must come from ghcr.io"])
    );
    let r = s.review("/nivpol/validate/same-name", &req("team-b"));
    assert_eq!(r["allowed"], true);
    assert!(r.get("warnings").is_none(), "{r}");
}

#[test]
fn json_mode_policies_are_not_admission_policies() {
    let policy = registry_policy("json-only", "[Deny]").replace(
        "  validationActions",
        "  evaluation:\n    mode: JSON\n  validationActions",
    );
    let s = Server::start(&[("p.yaml", &policy)]);
    let r = s.review("/ivpol/validate/json-only", &create_pod(&[BAD]));
    assert_eq!(r["allowed"], true, "{r}");
}

#[test]
fn mutate_acts_on_create_update_connect_only_and_never_verifies() {
    let policy = ivpol(
        "pin",
        "  matchImageReferences:\n    - glob: \"ghcr.io/*\"\n  validations:\n    - expression: \"false\"\n",
    );
    let off = ivpol(
        "pin-off",
        "  validationConfigurations:\n    mutateDigest: false\n    verifyDigest: false\n  validations:\n    - expression: \"false\"\n",
    );
    let s = Server::start(&[("p.yaml", &policy), ("off.yaml", &off)]);
    // Already pinned: nothing to resolve, and validations are not run here.
    let pinned = format!("{GOOD}@sha256:{}", "c".repeat(64));
    let r = s.review("/ivpol/mutate/pin", &create_pod(&[&pinned]));
    assert_eq!(r["allowed"], true, "{r}");
    assert!(r.get("patch").is_none());
    // mutateDigest and verifyDigest false: untouched.
    assert_eq!(
        s.review("/ivpol/mutate/pin-off", &create_pod(&[GOOD]))["allowed"],
        true
    );
    // DELETE is not a mutate operation.
    let del = review::review("DELETE", "default", &pod("p", &[GOOD]));
    assert_eq!(s.review("/ivpol/mutate/pin", &del)["allowed"], true);
    // A tag that would need resolving fails closed until the registry client exists.
    let r = s.review("/ivpol/mutate/pin", &create_pod(&[GOOD]));
    assert_eq!(r["allowed"], false);
    let msg = r["status"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.starts_with(&format!("Policy pin error: failed to update digest: failed to resolve digest for image {GOOD}: ")),
        "{msg}"
    );
}

#[test]
fn health_and_readiness_report_loaded_policies() {
    let broken = ivpol(
        "broken",
        "  validationActions: [test]\n  validations:\n    - expression: \"true\"\n",
    );
    let s = Server::start(&[
        ("good.yaml", &registry_policy("good", "[Deny]")),
        ("broken.yaml", &broken),
    ]);
    assert_eq!(s.get("/health/liveness"), (200, json!({"status": "ok"})));
    let (status, body) = s.get("/health/readiness");
    assert_eq!(status, 200);
    assert_eq!(
        (body["policies"].clone(), body["rejected"].clone()),
        (json!(1), json!(1))
    );
    let log = s.log();
    assert!(
        log.contains("policy not loaded")
            && log.contains("spec.validationActions[0]: Unsupported value"),
        "{log}"
    );
}
