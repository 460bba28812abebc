//! `ivpol apply` end to end: the real binary, a real registry with a
//! cosign-signed and an unsigned image, policies and resources from files,
//! and Kyverno's `kyverno apply` text, reports and exit codes.

use ivpol_tests::cli::{pod_yaml, KeyImages, Workdir, NOT_SIGNED};
use ivpol_tests::policy::{indent, key_attestor, pod_policy};
use serde_json::Value;

/// `ivpol apply policy.yaml --resource resources.yaml` plus `extra`.
fn apply(w: &Workdir, imgs: &KeyImages, extra: &[&str]) -> ivpol_tests::cli::Run {
    let mut args = vec!["apply", "policy.yaml", "--resource", "resources.yaml"];
    args.extend(imgs.flags());
    args.extend(extra);
    w.ivpol(&args)
}

fn setup(resources: &str) -> (KeyImages, Workdir) {
    let imgs = KeyImages::new();
    let w = Workdir::new();
    w.write("policy.yaml", &imgs.policy("verify-key"));
    w.write("resources.yaml", resources);
    (imgs, w)
}

fn two_pods(imgs: &KeyImages) -> String {
    format!(
        "{}---\n{}",
        pod_yaml("good", "default", &imgs.signed),
        pod_yaml("bad", "default", &imgs.unsigned)
    )
}

#[test]
fn a_failure_prints_kyvernos_text_and_exits_1() {
    let imgs = KeyImages::new();
    let w = Workdir::new();
    w.write("policy.yaml", &imgs.policy("verify-key"));
    w.write("resources.yaml", &two_pods(&imgs));
    let run = apply(&w, &imgs, &[]);
    assert_eq!(run.code, 1, "{run}");
    assert_eq!(
        run.stdout,
        format!(
            "\nApplying 1 policy rule(s) to 2 resource(s)...\n\
             policy verify-key -> resource default/Pod/bad failed:\n\
             1 - verify-key {NOT_SIGNED}\n\n\
             pass: 1, fail: 1, warn: 0, error: 0, skip: 0 \n"
        ),
        "{run}"
    );
    assert!(run.stderr.contains("policy violations"), "{run}");
}

#[test]
fn only_passing_resources_exit_0() {
    let imgs = KeyImages::new();
    let w = Workdir::new();
    w.write("policy.yaml", &imgs.policy("verify-key"));
    w.write("resources.yaml", &pod_yaml("good", "default", &imgs.signed));
    // The policy given with --policy instead of positionally.
    let run = w.ivpol(&[
        "apply",
        "--policy",
        "policy.yaml",
        "--resource",
        "resources.yaml",
        imgs.flags()[0],
        imgs.flags()[1],
    ]);
    assert_eq!(run.code, 0, "{run}");
    assert!(
        run.stdout
            .ends_with("\npass: 1, fail: 0, warn: 0, error: 0, skip: 0 \n"),
        "{run}"
    );
}

#[test]
fn an_unreachable_registry_is_an_error_result_and_exits_1() {
    let imgs = KeyImages::new();
    let w = Workdir::new();
    w.write("policy.yaml", &imgs.policy("verify-key"));
    w.write("resources.yaml", &pod_yaml("good", "default", &imgs.signed));
    // Without --insecure-registry the loopback registry is refused.
    let run = w.ivpol(&["apply", "policy.yaml", "--resource", "resources.yaml"]);
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stdout
            .ends_with("\npass: 0, fail: 0, warn: 0, error: 1, skip: 0 \n"),
        "{run}"
    );
    assert!(
        run.stderr
            .contains("policy verify-key -> resource default/Pod/good error:\n1 - verify-key "),
        "{run}"
    );
    assert!(run.stderr.contains("policy errors"), "{run}");
}

#[test]
fn directories_and_multi_document_files_are_read_whole() {
    let imgs = KeyImages::new();
    let w = Workdir::new();
    w.write("policies/a/policy.yaml", &imgs.policy("verify-key"));
    w.write("res/pods.yaml", &two_pods(&imgs));
    w.write(
        "res/more/third.yaml",
        &format!("---\n{}\n---\n", pod_yaml("third", "team", &imgs.signed)),
    );
    let mut args = vec!["apply", "policies", "--resource", "res"];
    args.extend(imgs.flags());
    let run = w.ivpol(&args);
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stdout
            .starts_with("\nApplying 1 policy rule(s) to 3 resource(s)...\n"),
        "{run}"
    );
    assert!(run.stdout.contains("pass: 2, fail: 1,"), "{run}");
}

#[test]
fn a_deployment_is_checked_through_autogen() {
    let (imgs, w) = setup("");
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n        - name: c\n          image: {}\n",
        imgs.unsigned
    );
    w.write("resources.yaml", &deployment);
    let run = apply(&w, &imgs, &[]);
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stdout.contains(&format!(
            "policy verify-key -> resource default/Deployment/web failed:\n1 - verify-key {NOT_SIGNED}\n"
        )),
        "{run}"
    );
}

#[test]
fn delete_evaluates_the_old_object() {
    let imgs = KeyImages::new();
    let w = Workdir::new();
    let tail = format!(
        "  validationConfigurations:\n    mutateDigest: false\n    verifyDigest: false\n  attestors:\n    {}\n  validations:\n    - expression: >-\n        images.containers.map(i, verifyImageSignatures(i, [attestors.cosign])).all(n, n > 0)\n      message: {NOT_SIGNED}\n",
        indent(&key_attestor("cosign", &imgs.public_pem), 4)
    );
    w.write("policy.yaml", &pod_policy("on-delete", "\"DELETE\"", &tail));
    w.write(
        "resources.yaml",
        &pod_yaml("bad", "default", &imgs.unsigned),
    );
    let run = apply(&w, &imgs, &["--operation", "DELETE"]);
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stdout
            .contains("policy on-delete -> resource default/Pod/bad failed:"),
        "{run}"
    );
    // On CREATE the policy does not match: no result at all.
    let run = apply(&w, &imgs, &[]);
    assert_eq!(run.code, 0, "{run}");
    assert!(
        run.stdout
            .contains("pass: 0, fail: 0, warn: 0, error: 0, skip: 0"),
        "{run}"
    );
}

/// A NamespacedImageValidatingPolicy in `team` with the same check.
fn namespaced(imgs: &KeyImages, name: &str) -> String {
    imgs.policy(name).replace(
        &format!("kind: ImageValidatingPolicy\nmetadata:\n  name: {name}\n"),
        &format!(
            "kind: NamespacedImageValidatingPolicy\nmetadata:\n  name: {name}\n  namespace: team\n"
        ),
    )
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Audit annotations are a result's properties, and `passMessage`,
/// `failMessage` (or `message`) among them word the result's message in a
/// report, as Kyverno's reports do; the CLI text keeps the policy's.
#[test]
fn report_messages_come_from_pass_and_fail_message_annotations() {
    let imgs = KeyImages::new();
    let w = Workdir::new();
    let annotations = "  auditAnnotations:\n    - key: passMessage\n      valueExpression: \"'signed: ' + object.metadata.name\"\n    - key: failMessage\n      valueExpression: \"'unsigned: ' + object.metadata.name\"\n  validationConfigurations:\n";
    let policy = imgs
        .policy("worded")
        .replacen("  validationConfigurations:\n", annotations, 1);
    w.write("policy.yaml", &policy);
    w.write("resources.yaml", &two_pods(&imgs));
    let mut args = vec!["apply", "policy.yaml", "--resource", "resources.yaml"];
    args.extend(imgs.flags());
    args.extend(["-p", "-o", "json"]);
    let run = w.ivpol(&args);
    assert_eq!(run.code, 1, "{run}");
    let reports = json_lines(&run.stdout);
    let results = reports[0]["results"].as_array().expect("results");
    let message = |status: &str| {
        let r = results
            .iter()
            .find(|r| r["result"] == status)
            .expect(status);
        (r["message"].clone(), r["properties"].clone())
    };
    let (pass, properties) = message("pass");
    assert_eq!(pass, "signed: good", "{run}");
    assert_eq!(properties["failMessage"], "unsigned: good");
    assert_eq!(message("fail").0, "unsigned: bad", "{run}");
    let text = apply(&w, &imgs, &[]);
    assert!(
        text.stdout.contains(&format!("1 - worded {NOT_SIGNED}")),
        "{text}"
    );
}

#[test]
fn policy_reports_are_a_merged_cluster_report_and_a_report_per_namespaced_policy() {
    let imgs = KeyImages::new();
    let w = Workdir::new();
    w.write("policy.yaml", &imgs.policy("verify-key"));
    w.write("nivp.yaml", &namespaced(&imgs, "team-key"));
    let uid_pod = pod_yaml("bad", "team", &imgs.unsigned).replace(
        "  namespace: team\n",
        "  namespace: team\n  uid: 0b6a1c2e-0000-4000-8000-000000000001\n",
    );
    w.write(
        "resources.yaml",
        &format!(
            "{}---\n{uid_pod}",
            pod_yaml("good", "default", &imgs.signed)
        ),
    );
    let mut args = vec![
        "apply",
        "policy.yaml",
        "nivp.yaml",
        "--resource",
        "resources.yaml",
        "-p",
        "-o",
        "json",
    ];
    args.extend(imgs.flags());
    let run = w.ivpol(&args);
    assert_eq!(run.code, 1, "{run}");
    let reports = json_lines(&run.stdout);
    assert_eq!(reports.len(), 2, "{run}");
    let cluster = &reports[0];
    assert_eq!(cluster["apiVersion"], "openreports.io/v1alpha1");
    assert_eq!(cluster["kind"], "ClusterReport");
    assert_eq!(cluster["metadata"]["name"], "merged");
    assert_eq!(
        cluster["summary"],
        serde_json::json!({"pass": 1, "fail": 1, "warn": 0, "error": 0, "skip": 0})
    );
    let results = cluster["results"].as_array().expect("results");
    let fail = results
        .iter()
        .find(|r| r["result"] == "fail")
        .expect("a fail");
    assert_eq!(fail["source"], "KyvernoImageValidatingPolicy");
    assert_eq!(fail["policy"], "verify-key");
    assert_eq!(fail["rule"], "verify-key");
    assert_eq!(fail["message"], NOT_SIGNED);
    assert_eq!(fail["scored"], true);
    assert_eq!(fail["properties"]["process"], "background scan");
    assert!(fail["timestamp"]["seconds"].as_u64().unwrap_or(0) > 1_600_000_000);
    assert_eq!(fail["timestamp"]["nanos"], 0);
    assert_eq!(
        fail["resources"],
        serde_json::json!([{"apiVersion": "v1", "kind": "Pod", "name": "bad",
            "namespace": "team", "uid": "0b6a1c2e-0000-4000-8000-000000000001"}])
    );
    let pass = results
        .iter()
        .find(|r| r["result"] == "pass")
        .expect("a pass");
    assert_eq!(pass["message"], "success");
    assert_eq!(pass["resources"][0]["name"], "good");

    let team = &reports[1];
    assert_eq!(team["kind"], "Report");
    assert_eq!(team["metadata"]["name"], "team-key");
    assert_eq!(team["metadata"]["namespace"], "team");
    assert_eq!(team["results"][0]["policy"], "team/team-key");
    assert_eq!(team["results"][0]["result"], "fail");
    assert_eq!(team["summary"]["fail"], 1);

    // The default format is YAML, documents separated by `---`.
    let mut args = vec![
        "apply",
        "policy.yaml",
        "nivp.yaml",
        "--resource",
        "resources.yaml",
        "--policy-report",
    ];
    args.extend(imgs.flags());
    let run = w.ivpol(&args);
    assert!(
        run.stdout.starts_with("apiVersion: openreports.io/v1alpha1\nkind: ClusterReport\nmetadata:\n  creationTimestamp: null\n  name: merged\n"),
        "{run}"
    );
    assert!(
        run.stdout
            .contains("\n---\napiVersion: openreports.io/v1alpha1\nkind: Report\n"),
        "{run}"
    );
    assert!(!run.stdout.contains("Applying"), "{run}");
}

#[test]
fn output_json_lists_every_result_with_the_summary() {
    let imgs = KeyImages::new();
    let w = Workdir::new();
    w.write("policy.yaml", &imgs.policy("verify-key"));
    w.write("resources.yaml", &two_pods(&imgs));
    let run = apply(&w, &imgs, &["-o", "json"]);
    assert_eq!(run.code, 1, "{run}");
    let v: Value = serde_json::from_str(&run.stdout).expect("one JSON document");
    assert_eq!(v["summary"]["pass"], 1);
    assert_eq!(v["summary"]["fail"], 1);
    let results = v["results"].as_array().expect("results");
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["resources"][0]["name"], "good");
    assert_eq!(results[0]["result"], "pass");
    assert_eq!(results[1]["resources"][0]["name"], "bad");
    assert_eq!(results[1]["message"], NOT_SIGNED);
}

#[test]
fn json_payloads_run_json_mode_policies() {
    let imgs = KeyImages::new();
    let w = Workdir::new();
    let policy = format!(
        r#"apiVersion: policies.kyverno.io/v1beta1
kind: ImageValidatingPolicy
metadata:
  name: ivpol-json
spec:
  evaluation:
    mode: JSON
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["pods"]
  images:
    - name: bar
      expression: "[object.foo.bar]"
  validationConfigurations:
    mutateDigest: false
    verifyDigest: false
  attestors:
    {}
  validations:
    - expression: >-
        images.bar.map(i, verifyImageSignatures(i, [attestors.cosign])).all(n, n > 0)
      message: {NOT_SIGNED}
"#,
        indent(&key_attestor("cosign", &imgs.public_pem), 4)
    );
    w.write("ivpol-json.yaml", &policy);
    w.write(
        "pass.json",
        &serde_json::json!({"foo": {"bar": imgs.signed}}).to_string(),
    );
    w.write(
        "fail.json",
        &serde_json::json!({"foo": {"bar": imgs.unsigned}}).to_string(),
    );
    let mut args = vec![
        "apply",
        "ivpol-json.yaml",
        "--json",
        "pass.json",
        "--json",
        "fail.json",
    ];
    args.extend(imgs.flags());
    let run = w.ivpol(&args);
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stdout
            .starts_with("\nApplying 1 policy rule(s) to 2 resource(s)...\n"),
        "{run}"
    );
    assert!(
        run.stdout.contains(&format!(
            "policy ivpol-json -> resource JSON payload failed:\n1 - ivpol-json {NOT_SIGNED}\n"
        )),
        "{run}"
    );
    assert!(
        run.stdout
            .contains("pass: 1, fail: 1, warn: 0, error: 0, skip: 0"),
        "{run}"
    );
    // The report has the summary Kyverno's check-json case expects.
    args.push("-p");
    args.extend(["-o", "json"]);
    let run = w.ivpol(&args);
    let report: Value = serde_json::from_str(run.stdout.trim()).expect("report");
    assert_eq!(report["summary"]["pass"], 1, "{run}");
    assert_eq!(report["summary"]["fail"], 1, "{run}");
}

#[test]
fn bad_input_is_named_and_exits_2() {
    let (imgs, w) = setup("");
    let flags = imgs.flags();
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (
            vec!["missing.yaml", "--resource", "resources.yaml"],
            "",
            "missing.yaml",
        ),
        (
            vec!["policy.yaml", "--resource", "nope.yaml"],
            "",
            "nope.yaml",
        ),
        (
            vec!["policy.yaml", "--resource", "resources.yaml"],
            "apiVersion: v1\nkind: [Pod\n",
            "not valid YAML",
        ),
        (
            vec!["policy.yaml", "--resource", "resources.yaml"],
            "apiVersion: v1\nmetadata:\n  name: p\n",
            "resource has no kind",
        ),
        (
            vec!["policy.yaml", "--resource", "resources.yaml"],
            "apiVersion: v1\nkind: Pod\nmetadata: {}\n",
            "Pod resource has no metadata.name",
        ),
        (
            vec![
                "policy.yaml",
                "--resource",
                "resources.yaml",
                "--operation",
                "PATCH",
            ],
            "",
            "PATCH",
        ),
        (vec!["--resource", "resources.yaml"], "", "require policy"),
        (vec!["policy.yaml"], "", "resource file(s) required"),
    ];
    for (args, resources, message) in cases {
        w.write("resources.yaml", resources);
        let mut full = vec!["apply"];
        full.extend(&args);
        full.extend(flags);
        let run = w.ivpol(&full);
        assert_eq!(run.code, 2, "{args:?}: {run}");
        assert!(run.stderr.contains(message), "{args:?}: {run}");
    }
}

#[test]
fn a_policy_that_does_not_load_is_listed_and_exits_2() {
    let (imgs, w) = setup("");
    w.write("resources.yaml", &pod_yaml("good", "default", &imgs.signed));
    w.write(
        "broken.yaml",
        &imgs.policy("broken").replace(
            "  attestors:\n",
            "  validationActions: [Sometimes]\n  attestors:\n",
        ),
    );
    let mut args = vec![
        "apply",
        "policy.yaml",
        "broken.yaml",
        "--resource",
        "resources.yaml",
    ];
    args.extend(imgs.flags());
    let run = w.ivpol(&args);
    assert_eq!(run.code, 2, "{run}");
    assert!(run.stderr.contains("policy not loaded"), "{run}");
    assert!(run.stderr.contains("broken.yaml"), "{run}");
    // The policy that loaded still ran.
    assert!(run.stdout.contains("pass: 1, fail: 0"), "{run}");
}

/// The key policy `name` with `spec.validationActions: [actions]`.
fn with_actions(imgs: &KeyImages, name: &str, actions: &str) -> String {
    imgs.policy(name).replace(
        "  attestors:\n",
        &format!("  validationActions: [{actions}]\n  attestors:\n"),
    )
}

#[test]
fn audit_warn_reports_an_audit_policys_failures_as_warnings_and_exits_0() {
    let imgs = KeyImages::new();
    let w = Workdir::new();
    w.write("policy.yaml", &with_actions(&imgs, "audit-key", "Audit"));
    w.write("resources.yaml", &two_pods(&imgs));
    // Without the flag the failure is a failure, as in Kyverno.
    let run = apply(&w, &imgs, &[]);
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stdout
            .contains("policy audit-key -> resource default/Pod/bad failed:\n"),
        "{run}"
    );
    let run = apply(&w, &imgs, &["--audit-warn"]);
    assert_eq!(run.code, 0, "{run}");
    assert_eq!(
        run.stdout,
        format!(
            "\nApplying 1 policy rule(s) to 2 resource(s)...\n\
             policy audit-key -> resource default/Pod/bad failed as audit warning:\n\
             1 - audit-key {NOT_SIGNED}\n\n\
             pass: 1, fail: 0, warn: 1, error: 0, skip: 0 \n"
        ),
        "{run}"
    );
    // The results and reports say warn too.
    let run = apply(&w, &imgs, &["--audit-warn", "-o", "json"]);
    assert_eq!(run.code, 0, "{run}");
    let v: Value = serde_json::from_str(&run.stdout).expect("one JSON document");
    assert_eq!(v["summary"]["warn"], 1, "{run}");
    assert_eq!(v["summary"]["fail"], 0, "{run}");
    assert_eq!(v["results"][1]["result"], "warn", "{run}");
    assert_eq!(v["results"][1]["message"], NOT_SIGNED, "{run}");
    let run = apply(&w, &imgs, &["--audit-warn", "-p", "-o", "json"]);
    assert_eq!(run.code, 0, "{run}");
    let report: Value = serde_json::from_str(run.stdout.trim()).expect("report");
    assert_eq!(
        report["summary"],
        serde_json::json!({"pass": 1, "fail": 0, "warn": 1, "error": 0, "skip": 0}),
        "{run}"
    );
}

#[test]
fn audit_warn_leaves_the_failures_of_policies_that_deny() {
    let imgs = KeyImages::new();
    let w = Workdir::new();
    // (policy, validationActions, whether --audit-warn makes its failure a warning)
    let cases = [
        ("audit", "Audit", true),
        ("warn", "Warn", true),
        ("warn-audit", "Warn, Audit", true),
        ("deny", "Deny", false),
        ("deny-audit", "Deny, Audit", false),
    ];
    let mut policies = Vec::new();
    for (name, actions, _) in cases {
        policies.push(with_actions(&imgs, name, actions));
    }
    // The default (no validationActions) is Deny.
    policies.push(imgs.policy("default"));
    w.write("policy.yaml", &policies.join("---\n"));
    w.write(
        "resources.yaml",
        &pod_yaml("bad", "default", &imgs.unsigned),
    );
    let run = apply(&w, &imgs, &["--audit-warn"]);
    assert_eq!(run.code, 1, "{run}");
    for (name, _, warned) in cases.iter().copied().chain([("default", "", false)]) {
        let verb = match warned {
            true => "failed as audit warning",
            false => "failed",
        };
        assert!(
            run.stdout.contains(&format!(
                "policy {name} -> resource default/Pod/bad {verb}:\n1 - {name} {NOT_SIGNED}\n"
            )),
            "{name}: {run}"
        );
    }
    assert!(
        run.stdout
            .contains("pass: 0, fail: 3, warn: 3, error: 0, skip: 0 "),
        "{run}"
    );
    assert!(run.stderr.contains("policy violations"), "{run}");
}

/// `--explain` says why each verification ended as it did, on stderr,
/// leaving Kyverno's stdout untouched.
#[test]
fn explain_names_each_verifications_reason() {
    let imgs = KeyImages::new();
    let w = Workdir::new();
    w.write("policy.yaml", &imgs.policy("verify-key"));
    w.write("resources.yaml", &two_pods(&imgs));
    let plain = apply(&w, &imgs, &[]);
    let run = apply(&w, &imgs, &["--explain"]);
    assert_eq!(run.code, 1, "{run}");
    assert_eq!(
        run.stdout, plain.stdout,
        "stdout is Kyverno's, with or without --explain"
    );
    assert!(
        run.stderr
            .contains("why: policy verify-key -> resource default/Pod/bad: fail"),
        "{run}"
    );
    let unsigned = run
        .stderr
        .lines()
        .find(|l| l.contains(&format!("{}@sha256:", imgs.unsigned)))
        .unwrap_or_default();
    assert!(
        unsigned.ends_with(" cosign: not-found: signatures not found"),
        "{run}"
    );
    assert!(
        run.stderr
            .contains("why: policy verify-key -> resource default/Pod/good: pass")
            && run.stderr.contains("cosign: verified (cache miss)"),
        "{run}"
    );
    assert!(!plain.stderr.contains("why: "), "{plain}");
}

/// A JSON-mode policy that checks `object.word` with `expression` (its
/// attestor, which a policy must have, goes unused).
fn word_policy(imgs: &KeyImages, name: &str, expression: &str) -> String {
    format!(
        r#"apiVersion: policies.kyverno.io/v1beta1
kind: ImageValidatingPolicy
metadata:
  name: {name}
spec:
  evaluation:
    mode: JSON
  attestors:
    {}
  validations:
    - expression: >-
        {expression}
      message: not one word
"#,
        indent(&key_attestor("cosign", &imgs.public_pem), 4)
    )
}

/// Patterns are RE2's, as Go's regexp reads them in Kyverno: Unicode
/// scripts and categories match in the component, and the binary
/// properties Go has no syntax for (`\p{Alphabetic}`) are an error there,
/// not a match.
#[test]
fn patterns_take_re2s_unicode_classes_and_refuse_what_go_refuses() {
    let imgs = KeyImages::new();
    let w = Workdir::new();
    w.write(
        "greek.yaml",
        &word_policy(&imgs, "greek", r"object.word.matches('^\\p{Greek}+$')"),
    );
    w.write(
        "alphabetic.yaml",
        &word_policy(
            &imgs,
            "alphabetic",
            r"object.word.matches('^\\p{Alphabetic}+$')",
        ),
    );
    w.write("greek.json", r#"{"word": "αβγ"}"#);
    w.write("latin.json", r#"{"word": "abc"}"#);
    let run = w.ivpol(&[
        "apply",
        "greek.yaml",
        "alphabetic.yaml",
        "--json",
        "greek.json",
        "--json",
        "latin.json",
    ]);
    assert!(
        run.stdout
            .contains("pass: 1, fail: 1, warn: 0, error: 2, skip: 0"),
        "{run}"
    );
    assert!(run.stderr.contains("Unicode property not found"), "{run}");
}

/// A replay judges as of the moment it is told (`--replay-time`): a
/// PolicyException that expires in 2030 exempts a pod in 2029 and not in
/// 2031, whatever today is, with the signatures checked from the recording.
#[test]
fn a_replay_judges_at_the_time_it_is_given() {
    let imgs = KeyImages::new();
    let w = Workdir::new();
    w.write("policy.yaml", &imgs.policy("verify-key"));
    w.write(
        "resources.yaml",
        &pod_yaml("bad", "default", &imgs.unsigned),
    );
    w.write(
        "exception.yaml",
        "apiVersion: policies.kyverno.io/v1alpha1\nkind: PolicyException\nmetadata:\n  name: until-2030\nspec:\n  policyRefs:\n    - name: verify-key\n      kind: ImageValidatingPolicy\n  matchConditions:\n    - name: all\n      expression: \"true\"\n  expiresAt: \"2030-01-01T00:00:00Z\"\n",
    );
    let recording = w.path("recording.json");
    let recording = recording.to_str().expect("a UTF-8 path");
    let recorded = apply(&w, &imgs, &["--record", recording]);
    assert!(
        recorded
            .stdout
            .contains("fail: 1, warn: 0, error: 0, skip: 0"),
        "{recorded}"
    );
    drop(imgs); // stops the registry
    let at = |time: &str| {
        w.ivpol(&[
            "apply",
            "policy.yaml",
            "--resource",
            "resources.yaml",
            "--exception",
            "exception.yaml",
            "--replay",
            recording,
            "--replay-time",
            time,
        ])
    };
    let before = at("2029-06-01T00:00:00Z");
    assert!(
        before
            .stdout
            .contains("fail: 0, warn: 0, error: 0, skip: 1"),
        "{before}"
    );
    let after = at("2031-06-01T00:00:00Z");
    assert!(
        after.stdout.contains("fail: 1, warn: 0, error: 0, skip: 0"),
        "{after}"
    );
}
