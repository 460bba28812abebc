//! `ivpol webhooks` against Kyverno's own chainsaw asserts: for each vendored
//! `webhook-configuration` case (and `force-failure-policy-ignore`), the
//! real binary runs on the case's policy files with Kyverno's Service
//! (`kyverno-svc` in `kyverno`), and every field the case's `webhooks.yaml`
//! names must be in the output with the same value. As in chainsaw, maps
//! match as subsets and lists element by element, with the same length.
//!
//! `caBundle` is the one field the asserts leave out (Kyverno generates its
//! own CA); it is checked against the file given.

use ivpol_tests::certs::ca_file;
use ivpol_tests::{ivpol_bin, precompile_cache_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn chainsaw(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/kyverno/test/conformance/chainsaw")
        .join(case)
}

/// Runs `ivpol webhooks` with `args` after the common ones, under
/// Kyverno's names (which its asserts name).
fn webhooks(policies: &[PathBuf], ca: Option<&Path>, extra: &[&str]) -> Output {
    let mut kyverno = vec!["--kyverno-names"];
    kyverno.extend_from_slice(extra);
    webhooks_named(policies, ca, &kyverno)
}

/// Runs `ivpol webhooks` with `args` after the common ones.
fn webhooks_named(policies: &[PathBuf], ca: Option<&Path>, extra: &[&str]) -> Output {
    let mut cmd = Command::new(ivpol_bin());
    cmd.arg("webhooks")
        .args(["--service", "kyverno-svc", "--namespace", "kyverno"])
        .arg("--cache-dir")
        .arg(precompile_cache_dir());
    for p in policies {
        cmd.arg("--policies").arg(p);
    }
    if let Some(ca) = ca {
        cmd.arg("--ca-bundle").arg(ca);
    }
    cmd.args(extra).env("NO_COLOR", "1");
    cmd.output().expect("run ivpol webhooks")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The objects of a multi-document YAML text.
fn yaml_docs(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).expect("YAML document"))
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// Chainsaw's assertion: `expected` is found in `actual`.
fn subset(expected: &Value, actual: &Value, path: &str) -> Result<(), String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, ev) in e {
                let Some(av) = a.get(k) else {
                    return Err(format!("{path}.{k}: missing (expected {ev})"));
                };
                subset(ev, av, &format!("{path}.{k}"))?;
            }
            Ok(())
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return Err(format!(
                    "{path}: {} items expected, {} found: {actual}",
                    e.len(),
                    a.len()
                ));
            }
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                subset(ev, av, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        (e, a) if e == a => Ok(()),
        (e, a) => Err(format!("{path}: expected {e}, found {a}")),
    }
}

/// Runs the case and checks the output against its `webhooks.yaml`.
fn check_case(case: &str, policy_files: &[&str], extra: &[&str]) {
    let dir = chainsaw(case);
    let tmp = tempfile::tempdir().expect("temp dir");
    let ca = ca_file(tmp.path());
    let policies: Vec<PathBuf> = policy_files.iter().map(|f| dir.join(f)).collect();
    let mut args = vec!["-o", "json"];
    args.extend_from_slice(extra);
    let out = webhooks(&policies, Some(&ca), &args);
    assert!(out.status.success(), "{case}: {}", stderr(&out));
    let list: Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    assert_eq!(list["kind"], "List");
    let items = list["items"].as_array().expect("items");
    let expected = std::fs::read_to_string(dir.join("webhooks.yaml")).expect("webhooks.yaml");
    let expected = yaml_docs(&expected);
    assert!(!expected.is_empty(), "{case}: no assert documents");
    for want in &expected {
        let kind = &want["kind"];
        let got = items
            .iter()
            .find(|i| &i["kind"] == kind)
            .unwrap_or_else(|| panic!("{case}: no {kind} in the output"));
        if let Err(why) = subset(want, got, &kind.to_string()) {
            panic!("{case}: {why}\n\noutput:\n{got:#}");
        }
    }
    let bundle = base64_encode(&std::fs::read(&ca).expect("CA"));
    for item in items {
        for w in item["webhooks"].as_array().into_iter().flatten() {
            assert_eq!(w["clientConfig"]["caBundle"], bundle.as_str(), "{case}");
        }
    }
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn basic_single() {
    check_case(
        "image-validating-policies/webhook-configuration/basic/single",
        &["policy.yaml"],
        &[],
    );
}

#[test]
fn combined_basic_and_fine_grained() {
    check_case(
        "image-validating-policies/webhook-configuration/combined",
        &["policy1-finegrained.yaml", "policy2-basic.yaml"],
        &[],
    );
}

#[test]
fn ephemeral_containers_single() {
    check_case(
        "image-validating-policies/webhook-configuration/ephemeral-containers/single",
        &["policy.yaml"],
        &[],
    );
}

#[test]
fn fine_grained_match_conditions() {
    check_case(
        "image-validating-policies/webhook-configuration/fine-grained/match-conditions",
        &["policy.yaml"],
        &[],
    );
}

#[test]
fn fine_grained_match_constraints() {
    check_case(
        "image-validating-policies/webhook-configuration/fine-grained/match-constraints",
        &["policy.yaml"],
        &[],
    );
}

#[test]
fn fine_grained_timeout() {
    check_case(
        "image-validating-policies/webhook-configuration/fine-grained/timeout",
        &["policy.yaml"],
        &[],
    );
}

/// The case's chainsaw-test.yaml only creates the policy: the Kyverno it
/// runs against is installed with `forceFailurePolicyIgnore` (its
/// README), which `--force-failure-policy-ignore` stands for.
#[test]
fn force_failure_policy_ignore() {
    check_case(
        "force-failure-policy-ignore/image-validating-policy/fail",
        &["policy.yaml"],
        &["--force-failure-policy-ignore"],
    );
    // Without the flag the same policy is Fail.
    let dir = chainsaw("force-failure-policy-ignore/image-validating-policy/fail");
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = webhooks(
        &[dir.join("policy.yaml")],
        Some(&ca_file(tmp.path())),
        &["-o", "json"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let list: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(list["items"][1]["webhooks"][0]["failurePolicy"], "Fail");
}

/// The default YAML output is the same two objects, for `kubectl apply -f -`.
#[test]
fn yaml_output_is_the_two_objects() {
    let dir = chainsaw("image-validating-policies/webhook-configuration/combined");
    let tmp = tempfile::tempdir().expect("temp dir");
    let ca = ca_file(tmp.path());
    let policies = [
        dir.join("policy1-finegrained.yaml"),
        dir.join("policy2-basic.yaml"),
    ];
    let json = webhooks(&policies, Some(&ca), &["-o", "json"]);
    let yaml = webhooks(&policies, Some(&ca), &[]);
    assert!(yaml.status.success(), "{}", stderr(&yaml));
    let list: Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let docs = yaml_docs(&String::from_utf8_lossy(&yaml.stdout));
    assert_eq!(Value::Array(docs), list["items"]);
}

#[test]
fn a_missing_ca_bundle_is_a_clear_error() {
    let dir = chainsaw("image-validating-policies/webhook-configuration/basic/single");
    let tmp = tempfile::tempdir().expect("temp dir");
    let missing = tmp.path().join("nope.crt");
    let out = webhooks(&[dir.join("policy.yaml")], Some(&missing), &[]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("reading the CA bundle") && err.contains("nope.crt"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    // A file that is no PEM certificate.
    let garbage = tmp.path().join("garbage.crt");
    std::fs::write(&garbage, "not a certificate").expect("write");
    let out = webhooks(&[dir.join("policy.yaml")], Some(&garbage), &[]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("is not PEM certificates"),
        "{}",
        stderr(&out)
    );
    // A leaf certificate, not the CA that signed it: the same check as
    // `serve --register-webhooks`, since the API server would then trust
    // exactly one key and break at the first rotation.
    let (_, leaf) = ivpol_tests::certs::ca_and_leaf(tmp.path());
    let out = webhooks(&[dir.join("policy.yaml")], Some(&leaf), &[]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("is not a CA"), "{}", stderr(&out));
    // And none at all: clap names the flag.
    let out = webhooks(&[dir.join("policy.yaml")], None, &[]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--ca-bundle"), "{}", stderr(&out));
}

#[test]
fn no_policies_is_a_clear_error() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let ca = ca_file(tmp.path());
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).expect("dir");
    let out = webhooks(std::slice::from_ref(&empty), Some(&ca), &[]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no policy files"), "{}", stderr(&out));
    // Files, but none loads: each is reported, then the refusal.
    std::fs::write(
        empty.join("bad.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    )
    .expect("write");
    let out = webhooks(&[empty], Some(&ca), &[]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("bad.yaml") && err.contains("gets no webhook"),
        "{err}"
    );
    assert!(err.contains("no policy loaded"), "{err}");
}

#[test]
fn a_policy_that_fails_to_load_is_reported_and_left_out() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let ca = ca_file(tmp.path());
    let dir = tmp.path().join("p");
    std::fs::create_dir(&dir).expect("dir");
    let good = chainsaw("image-validating-policies/webhook-configuration/basic/single/policy.yaml");
    std::fs::copy(good, dir.join("good.yaml")).expect("copy");
    std::fs::write(
        dir.join("broken.yaml"),
        "apiVersion: policies.kyverno.io/v1\nkind: ImageValidatingPolicy\nmetadata: {name: broken}\nspec: {bogus: 1}\n",
    )
    .expect("write");
    let out = webhooks(&[dir], Some(&ca), &["-o", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("broken.yaml") && err.contains("policy broken"),
        "{err}"
    );
    let list: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let text = list.to_string();
    assert!(
        text.contains("/ivpol/validate/check-signed-images\""),
        "{text}"
    );
    assert!(!text.contains("broken"), "{text}");
}

/// An NIVP in `namespace` named `name`, fine-grained (it has a
/// matchCondition) with `condition`.
fn fine_grained_nivp(namespace: &str, name: &str, condition: &str) -> String {
    format!(
        r#"apiVersion: policies.kyverno.io/v1beta1
kind: NamespacedImageValidatingPolicy
metadata:
  name: {name}
  namespace: {namespace}
spec:
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["pods"]
  matchConditions:
    - name: c
      expression: "{condition}"
  attestors: []
  validations:
    - expression: "true"
"#
    )
}

/// What the API server takes as a webhook name: a lower-case DNS subdomain
/// of at most 253 characters, with at least three labels.
fn valid_webhook_name(name: &str) -> bool {
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    name.len() <= 253 && name.split('.').count() >= 3 && name.split('.').all(label_ok)
}

/// A tenant's hostile NIVP names must not break webhook registration for
/// the cluster: every name valid and unique, under ivpol's own names (not
/// Kyverno's, so that the two can run side by side), and a matchCondition
/// the API server cannot evaluate stays out of the configuration.
#[test]
fn hostile_policy_names_still_give_valid_unique_webhooks_under_ivpols_names() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let ca = ca_file(tmp.path());
    let dir = tmp.path().join("p");
    std::fs::create_dir(&dir).expect("dir");
    let long = "x".repeat(220);
    for (file, doc) in [
        ("long.yaml", fine_grained_nivp("team", &long, "true")),
        // `<namespace>-<name>` spells `a-b-c` for both.
        ("c.yaml", fine_grained_nivp("a-b", "c", "true")),
        ("bc.yaml", fine_grained_nivp("a", "b-c", "true")),
        (
            "ns.yaml",
            fine_grained_nivp(
                "team",
                "reads-namespace",
                "namespaceObject.metadata.name == 'team' && object.metadata.name != ''",
            ),
        ),
    ] {
        std::fs::write(dir.join(file), doc).expect("write");
    }
    let out = webhooks_named(&[dir], Some(&ca), &["-o", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let list: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let items = list["items"].as_array().expect("items");
    assert_eq!(
        items[0]["metadata"]["name"],
        "ivpol-resource-mutating-webhook-cfg"
    );
    assert_eq!(
        items[1]["metadata"]["name"],
        "ivpol-resource-validating-webhook-cfg"
    );
    assert_eq!(
        items[1]["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "ivpol"
    );
    // The policy-validation webhook comes third, failing closed.
    assert_eq!(
        items[2]["metadata"]["name"],
        "ivpol-policy-validating-webhook-cfg"
    );
    let policy_hook = &items[2]["webhooks"][0];
    assert_eq!(policy_hook["failurePolicy"], "Fail");
    assert_eq!(
        policy_hook["clientConfig"]["service"]["path"],
        "/ivpol/policy-validate"
    );
    for config in &items[..2] {
        let hooks = config["webhooks"].as_array().expect("webhooks");
        assert_eq!(hooks.len(), 4, "{config}");
        let names: Vec<&str> = hooks.iter().filter_map(|w| w["name"].as_str()).collect();
        for name in &names {
            assert!(valid_webhook_name(name), "invalid webhook name {name:?}");
        }
        let unique: std::collections::BTreeSet<&&str> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        // The readable part stays readable.
        assert!(
            names.iter().any(|n| n.contains("-finegrained-a-b-c-")),
            "{names:?}"
        );
        let reads_ns = hooks
            .iter()
            .find(|w| {
                w["clientConfig"]["service"]["path"]
                    .as_str()
                    .is_some_and(|p| p.ends_with("/reads-namespace"))
            })
            .expect("the namespaceObject policy's webhook");
        let text = reads_ns.to_string();
        assert!(!text.contains("namespaceObject"), "{text}");
    }
}

/// `--inject-ca-from` leaves caBundle to cert-manager's injector: no CA file,
/// the annotation on both configurations, no caBundle; a malformed
/// Certificate reference is refused.
#[test]
fn the_ca_can_be_left_to_cert_managers_injector() {
    let dir = chainsaw("image-validating-policies/webhook-configuration/basic/single");
    let out = webhooks(
        &[dir.join("policy.yaml")],
        None,
        &["-o", "json", "--inject-ca-from", "kyverno/kyverno-tls"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let list: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let items = list["items"].as_array().expect("items");
    assert!(items.len() >= 2, "{list}");
    for item in items {
        assert_eq!(
            item["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
            "kyverno/kyverno-tls"
        );
        for w in item["webhooks"].as_array().into_iter().flatten() {
            assert!(w["clientConfig"].get("caBundle").is_none(), "{w}");
        }
    }
    let out = webhooks(
        &[dir.join("policy.yaml")],
        None,
        &["--inject-ca-from", "kyverno-tls"],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("is not NAMESPACE/CERTIFICATE"),
        "{}",
        stderr(&out)
    );
}
