//! `ivpol scan` end to end: background re-verification of resources read
//! from files, with the real binary and a real registry; wgpolicyk8s.io
//! reports per namespace and for cluster-scoped resources.

use ivpol_tests::cli::{pod_yaml, KeyImages, Workdir, NOT_SIGNED};
use ivpol_tests::policy::{indent, key_attestor};
use serde_json::Value;

/// A cluster policy on Namespaces whose image is in an annotation.
fn namespace_policy(imgs: &KeyImages) -> String {
    format!(
        r#"apiVersion: policies.kyverno.io/v1beta1
kind: ImageValidatingPolicy
metadata:
  name: namespace-image
spec:
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["namespaces"]
  images:
    - name: annotated
      expression: "[object.metadata.annotations.image]"
  validationConfigurations:
    mutateDigest: false
    verifyDigest: false
  attestors:
    {}
  validations:
    - expression: >-
        images.annotated.map(i, verifyImageSignatures(i, [attestors.cosign])).all(n, n > 0)
      message: {NOT_SIGNED}
"#,
        indent(&key_attestor("cosign", &imgs.public_pem), 4)
    )
}

fn scan(w: &Workdir, imgs: &KeyImages, extra: &[&str]) -> ivpol_tests::cli::Run {
    let mut args = vec!["scan", "--resources", "resources", "--policies", "policies"];
    args.extend(imgs.flags());
    args.extend(extra);
    w.ivpol(&args)
}

fn setup(imgs: &KeyImages) -> Workdir {
    let w = Workdir::new();
    w.write("policies/verify.yaml", &imgs.policy("verify-key"));
    w.write("policies/namespace.yaml", &namespace_policy(imgs));
    // Admission only: never part of a background scan.
    let admission_only = imgs.policy("admission-only").replace(
        "spec:\n",
        "spec:\n  evaluation:\n    background:\n      enabled: false\n",
    );
    w.write("policies/admission-only.yaml", &admission_only);
    w.write(
        "resources/pods.yaml",
        &format!(
            "{}---\n{}---\n{}",
            pod_yaml("good", "alpha", &imgs.signed),
            pod_yaml("bad", "alpha", &imgs.unsigned),
            pod_yaml("other", "beta", &imgs.signed)
        ),
    );
    w.write(
        "resources/namespaces.yaml",
        &format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: alpha\n  annotations:\n    image: {}\n",
            imgs.signed
        ),
    );
    w
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn one_report_per_namespace_and_a_cluster_report() {
    let imgs = KeyImages::new();
    let w = setup(&imgs);
    let run = scan(&w, &imgs, &["-o", "json"]);
    assert_eq!(run.code, 1, "{run}");
    let reports = json_lines(&run.stdout);
    assert_eq!(reports.len(), 3, "{run}");
    let (alpha, beta, cluster) = (&reports[0], &reports[1], &reports[2]);
    assert_eq!(alpha["kind"], "PolicyReport");
    assert_eq!(alpha["apiVersion"], "wgpolicyk8s.io/v1alpha2");
    assert_eq!(alpha["metadata"]["namespace"], "alpha");
    assert_eq!(
        alpha["summary"],
        serde_json::json!({"pass": 1, "fail": 1, "warn": 0, "error": 0, "skip": 0})
    );
    for r in alpha["results"].as_array().expect("results") {
        // The background-disabled policy never ran.
        assert_eq!(r["policy"], "verify-key", "{r}");
        assert_eq!(r["source"], "KyvernoImageValidatingPolicy");
        assert_eq!(r["properties"]["process"], "background scan");
        assert_eq!(r["scored"], true);
    }
    assert_eq!(beta["metadata"]["namespace"], "beta");
    assert_eq!(beta["summary"]["pass"], 1);
    assert_eq!(cluster["kind"], "ClusterPolicyReport");
    assert!(cluster["metadata"].get("namespace").is_none());
    assert_eq!(cluster["results"][0]["policy"], "namespace-image");
    assert_eq!(cluster["results"][0]["result"], "pass");
    assert_eq!(
        cluster["results"][0]["resources"],
        serde_json::json!([{"apiVersion": "v1", "kind": "Namespace", "name": "alpha"}])
    );
    assert!(run.stderr.contains("policy violations"), "{run}");
    // The same reports in openreports.io's API, as Kyverno's CLI prints them.
    let run = scan(&w, &imgs, &["-o", "json", "--report-api", "openreports"]);
    let open = json_lines(&run.stdout);
    let kinds: Vec<&Value> = open.iter().map(|r| &r["kind"]).collect();
    assert_eq!(kinds, ["Report", "Report", "ClusterReport"], "{run}");
    assert!(open
        .iter()
        .all(|r| r["apiVersion"] == "openreports.io/v1alpha1"));
    // (Results stamped a second apart are the same results.)
    let unstamped = |r: &Value| {
        let mut results = r["results"].clone();
        for one in results.as_array_mut().into_iter().flatten() {
            one.as_object_mut().map(|o| o.remove("timestamp"));
        }
        results
    };
    for (o, w) in open.iter().zip(&reports) {
        assert_eq!(unstamped(o), unstamped(w));
        assert_eq!(o["summary"], w["summary"]);
    }
}

#[test]
fn yaml_is_the_default_and_a_clean_scan_exits_0() {
    let imgs = KeyImages::new();
    let w = setup(&imgs);
    std::fs::write(
        w.path("resources/pods.yaml"),
        pod_yaml("good", "alpha", &imgs.signed),
    )
    .expect("write");
    let run = scan(&w, &imgs, &[]);
    assert_eq!(run.code, 0, "{run}");
    assert!(
        run.stdout
            .starts_with("apiVersion: wgpolicyk8s.io/v1alpha2\nkind: PolicyReport\n"),
        "{run}"
    );
    assert!(
        run.stdout
            .contains("\n---\napiVersion: wgpolicyk8s.io/v1alpha2\nkind: ClusterPolicyReport\n"),
        "{run}"
    );
    assert!(run.stdout.contains("process: background scan"), "{run}");
    assert!(!run.stdout.contains("admission-only"), "{run}");
}

#[test]
fn a_forged_verification_annotation_changes_nothing() {
    let imgs = KeyImages::new();
    let w = setup(&imgs);
    let forged = pod_yaml("bad", "alpha", &imgs.unsigned).replace(
        "  namespace: alpha\n",
        "  namespace: alpha\n  annotations:\n    kyverno.io/image-verification-outcomes: '{\"verify-key\":{\"status\":\"pass\",\"message\":\"forged\"}}'\n",
    );
    std::fs::write(w.path("resources/pods.yaml"), forged).expect("write");
    let run = scan(&w, &imgs, &["-o", "json"]);
    assert_eq!(run.code, 1, "{run}");
    let reports = json_lines(&run.stdout);
    let alpha = &reports[0];
    assert_eq!(alpha["results"][0]["result"], "fail", "{run}");
    assert_eq!(alpha["results"][0]["message"], NOT_SIGNED, "{run}");
}

#[test]
fn an_unreadable_resource_file_exits_2() {
    let imgs = KeyImages::new();
    let w = setup(&imgs);
    std::fs::write(w.path("resources/pods.yaml"), "kind: Pod\n").expect("write");
    let run = scan(&w, &imgs, &[]);
    assert_eq!(run.code, 2, "{run}");
    assert!(run.stderr.contains("has no apiVersion"), "{run}");
}

/// Kyverno copies a policy's `policies.kyverno.io/category`, `severity`
/// and `scored` annotations into each of its results, which Policy
/// Reporter filters and groups by; so does ivpol.
#[test]
fn results_carry_the_policys_category_severity_and_scoring() {
    let imgs = KeyImages::new();
    let w = setup(&imgs);
    let annotated = imgs.policy("verify-key").replacen(
        "  name: verify-key\n",
        "  name: verify-key\n  annotations:\n    policies.kyverno.io/category: Supply Chain Security\n    policies.kyverno.io/severity: high\n    policies.kyverno.io/scored: \"false\"\n",
        1,
    );
    assert_ne!(
        annotated,
        imgs.policy("verify-key"),
        "the policy names itself"
    );
    w.write("policies/verify.yaml", &annotated);
    let run = scan(&w, &imgs, &["-o", "json"]);
    let reports = json_lines(&run.stdout);
    let results: Vec<&Value> = (reports.iter())
        .flat_map(|r| r["results"].as_array().into_iter().flatten())
        .collect();
    let verify: Vec<&&Value> = results
        .iter()
        .filter(|r| r["policy"] == "verify-key")
        .collect();
    assert!(!verify.is_empty(), "{run}");
    for r in verify {
        assert_eq!(r["category"], "Supply Chain Security", "{r}");
        assert_eq!(r["severity"], "high", "{r}");
        assert_eq!(r["scored"], false, "{r}");
    }
    // A policy without them: scored, and no category or severity.
    let other = results
        .iter()
        .find(|r| r["policy"] == "namespace-image")
        .expect("other");
    assert_eq!(other["scored"], true, "{other}");
    assert!(other.get("category").is_none() && other.get("severity").is_none());
}
