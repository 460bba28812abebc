//! Admission semantics of the engine, driven only through the public API
//! (`PolicySet::load`, `admit`, `evaluate_json`, `diagnostics`) with Kyverno
//! ImageValidatingPolicy YAML and AdmissionRequest JSON. Expected messages are
//! Kyverno's (`docs/compatibility.md`), byte for byte where Kyverno's text does not
//! depend on the CEL implementation.

use super::{Phase, PolicySet, Scope, Status, Verdict};
use crate::oci::transport::Offline;
use crate::policy::SourceDocument;
use serde_json::{json, Value};

// ---------------------------------------------------------------- fixtures

const SIGNED: &str = "ghcr.io/kyverno/test-verify-image:signed";
const UNSIGNED: &str = "ghcr.io/kyverno/test-verify-image:unsigned";
const NGINX: &str = "docker.io/library/nginx:1.27";
const DIGEST: &str = "sha256:b31bfb4d0213f254d361e0079deaaebefa4f82ba7aa76ef82e90b4935ad5b105";

fn pinned() -> String {
    format!("ghcr.io/kyverno/test-verify-image@{DIGEST}")
}

/// Pods, CREATE and UPDATE.
const PODS: &str = "
matchConstraints:
  resourceRules:
    - apiGroups: ['']
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [pods]
";

/// All three validationConfigurations off, so a test sees only its validations.
const RELAXED: &str = "
validationConfigurations:
  mutateDigest: false
  verifyDigest: false
  required: false
";

const NO_ATTESTORS: &str = "attestors: []\n";

/// Removes the common leading indentation and surrounding blank lines.
fn dedent(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = String::new();
    for line in lines {
        if line.trim().is_empty() {
            continue;
        }
        out.push_str(&line[indent..]);
        out.push('\n');
    }
    out
}

/// A spec made of YAML fragments, each dedented on its own.
fn spec(parts: &[&str]) -> String {
    parts.iter().map(|p| dedent(p)).collect()
}

fn document(kind: &str, name: &str, namespace: Option<&str>, spec: &str) -> String {
    let mut out = format!(
        "apiVersion: policies.kyverno.io/v1beta1\nkind: {kind}\nmetadata:\n  name: {name}\n"
    );
    if let Some(ns) = namespace {
        out.push_str(&format!("  namespace: {ns}\n"));
    }
    out.push_str("spec:\n");
    for line in dedent(spec).lines() {
        out.push_str("  ");
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn ivp(name: &str, spec: &str) -> String {
    document("ImageValidatingPolicy", name, None, spec)
}

fn nivp(name: &str, namespace: &str, spec: &str) -> String {
    document(
        "NamespacedImageValidatingPolicy",
        name,
        Some(namespace),
        spec,
    )
}

/// A pods policy with no digest/required checks and the given extra fields
/// (which must include `validations`).
fn simple(name: &str, extra: &str) -> String {
    ivp(name, &spec(&[PODS, RELAXED, NO_ATTESTORS, extra]))
}

fn load(docs: &[String]) -> PolicySet {
    let set = PolicySet::load(&[SourceDocument {
        source: "policies.yaml".into(),
        content: docs.join("---\n"),
    }]);
    assert!(
        set.diagnostics().is_empty(),
        "unexpected diagnostics: {:?}",
        set.diagnostics()
    );
    set
}

fn containers(images: &[&str], prefix: &str) -> Value {
    Value::Array(
        images
            .iter()
            .enumerate()
            .map(|(i, image)| json!({"name": format!("{prefix}{i}"), "image": image}))
            .collect(),
    )
}

fn pod(name: &str, images: &[&str]) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"app": "web"}
        },
        "spec": {"containers": containers(images, "c"), "restartPolicy": "Always"}
    })
}

fn pod_template(labels: Value, images: &[&str]) -> Value {
    json!({
        "metadata": {"labels": labels},
        "spec": {"containers": containers(images, "c")}
    })
}

fn deployment(name: &str, labels: Value, template_labels: Value, images: &[&str]) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": pod_template(template_labels, images)
        }
    })
}

fn cronjob(name: &str, template_labels: Value, images: &[&str]) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {"spec": {"template": pod_template(template_labels, images)}}
        }
    })
}

/// (group, version, kind, resource) of an object.
fn gvkr(object: &Value) -> (&'static str, &'static str, &'static str, &'static str) {
    match object["kind"].as_str() {
        Some("Pod") => ("", "v1", "Pod", "pods"),
        Some("Deployment") => ("apps", "v1", "Deployment", "deployments"),
        Some("StatefulSet") => ("apps", "v1", "StatefulSet", "statefulsets"),
        Some("CronJob") => ("batch", "v1", "CronJob", "cronjobs"),
        Some("ConfigMap") => ("", "v1", "ConfigMap", "configmaps"),
        other => panic!("no fixture for kind {other:?}"),
    }
}

/// An AdmissionRequest for `object` (CREATE), `object` over `old` (UPDATE)
/// or of `old` (DELETE).
fn request_for(operation: &str, object: Option<&Value>, old: Option<&Value>) -> Value {
    let subject = object.or(old).expect("an object or an old object");
    let (group, version, kind, resource) = gvkr(subject);
    let options_kind = match operation {
        "CREATE" => "CreateOptions",
        "UPDATE" => "UpdateOptions",
        _ => "DeleteOptions",
    };
    json!({
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": resource},
        "requestKind": {"group": group, "version": version, "kind": kind},
        "requestResource": {"group": group, "version": version, "resource": resource},
        "name": subject["metadata"]["name"],
        "namespace": subject["metadata"]["namespace"],
        "operation": operation,
        "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]},
        "object": object.cloned().unwrap_or(Value::Null),
        "oldObject": old.cloned().unwrap_or(Value::Null),
        "dryRun": false,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": options_kind}
    })
}

fn create(object: &Value) -> Value {
    request_for("CREATE", Some(object), None)
}

fn namespace_object(name: &str, labels: Value) -> String {
    let mut labels = labels;
    labels["kubernetes.io/metadata.name"] = json!(name);
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": labels},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"}
    })
    .to_string()
}

fn admit_with(
    set: &PolicySet,
    phase: Phase,
    scope: &Scope,
    names: &[&str],
    request: &Value,
    namespace: Option<&str>,
) -> Verdict {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    set.admit(
        phase,
        scope,
        &names,
        &request.to_string(),
        namespace,
        std::sync::Arc::new(Offline),
    )
    .expect("a well-formed request is evaluated")
}

fn validate(set: &PolicySet, request: &Value) -> Verdict {
    admit_with(set, Phase::Validate, &Scope::Cluster, &[], request, None)
}

fn mutate(set: &PolicySet, request: &Value) -> Verdict {
    admit_with(set, Phase::Mutate, &Scope::Cluster, &[], request, None)
}

/// (policy, status, message) of every result.
fn outcomes(v: &Verdict) -> Vec<(String, Status, String)> {
    v.results
        .iter()
        .map(|r| (r.policy.clone(), r.status, r.message.clone()))
        .collect()
}

fn one(policy: &str, status: Status, message: &str) -> Vec<(String, Status, String)> {
    vec![(policy.to_string(), status, message.to_string())]
}

/// The only result's message; panics unless there is exactly one.
fn only_message(v: &Verdict) -> &str {
    assert_eq!(v.results.len(), 1, "{:?}", v.results);
    &v.results[0].message
}

fn assert_allowed_silently(v: &Verdict) {
    assert!(v.allowed, "{v:?}");
    assert_eq!(v.message, None);
    assert!(v.warnings.is_empty(), "{:?}", v.warnings);
    assert_eq!(v.patch, None);
}

fn assert_no_results(v: &Verdict) {
    assert_allowed_silently(v);
    assert!(v.results.is_empty(), "{:?}", v.results);
}

fn assert_denied(v: &Verdict, message: &str) {
    assert!(!v.allowed, "{v:?}");
    assert_eq!(v.message.as_deref(), Some(message));
    assert_eq!(v.patch, None);
}

/// A policy whose single validation always fails with a message rendering
/// `images` (and nothing else), to observe what the engine extracted.
fn images_probe(name: &str, extra: &str) -> String {
    simple(
        name,
        &format!(
            "{}{}",
            dedent(extra),
            dedent(
                r#"
                validations:
                  - expression: "false"
                    messageExpression: >-
                      images.containers.join(',') + '|' + images.initContainers.join(',') + '|' + images.ephemeralContainers.join(',')
                "#
            )
        ),
    )
}

const NAME_IS_NOT_BAD: &str = r#"
validations:
  - expression: "object.metadata.name != 'bad'"
    message: pod name must not be bad
"#;

fn with_actions(name: &str, actions: &str) -> String {
    simple(
        name,
        &format!("validationActions: {actions}\n{}", dedent(NAME_IS_NOT_BAD)),
    )
}

// ------------------------------------------------- actions and the verdict

#[test]
fn deny_fail_denies_with_policy_name_and_message() {
    let set = load(&[with_actions("check-name", "[Deny]")]);
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert_denied(&v, "Policy check-name failed: pod name must not be bad");
    assert!(v.warnings.is_empty());
    assert_eq!(
        outcomes(&v),
        one("check-name", Status::Fail, "pod name must not be bad")
    );
    assert_eq!(v.results[0].actions, vec!["Deny".to_string()]);
}

#[test]
fn pass_is_allowed_with_success() {
    let set = load(&[with_actions("check-name", "[Deny]")]);
    let v = validate(&set, &create(&pod("good", &[SIGNED])));
    assert_allowed_silently(&v);
    assert_eq!(outcomes(&v), one("check-name", Status::Pass, "success"));
}

#[test]
fn unset_validation_actions_mean_deny() {
    let set = load(&[simple("check-name", NAME_IS_NOT_BAD)]);
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert_denied(&v, "Policy check-name failed: pod name must not be bad");
    assert_eq!(v.results[0].actions, vec!["Deny".to_string()]);
}

#[test]
fn warn_fail_admits_with_a_warning() {
    let set = load(&[with_actions("check-name", "[Warn]")]);
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert!(v.allowed);
    assert_eq!(v.message, None);
    assert_eq!(
        v.warnings,
        vec!["Policy check-name failed: pod name must not be bad".to_string()]
    );
    assert_eq!(
        outcomes(&v),
        one("check-name", Status::Fail, "pod name must not be bad")
    );
}

#[test]
fn audit_fail_admits_silently_but_keeps_the_result() {
    let set = load(&[with_actions("check-name", "[Audit]")]);
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert_allowed_silently(&v);
    assert_eq!(
        outcomes(&v),
        one("check-name", Status::Fail, "pod name must not be bad")
    );
}

#[test]
fn deny_and_warn_together_deny_and_warn() {
    let set = load(&[with_actions("check-name", "[Deny, Warn]")]);
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert_denied(&v, "Policy check-name failed: pod name must not be bad");
    assert_eq!(
        v.warnings,
        vec!["Policy check-name failed: pod name must not be bad".to_string()]
    );
}

#[test]
fn audit_and_warn_together_only_warn() {
    let set = load(&[with_actions("check-name", "[Audit, Warn]")]);
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert!(v.allowed);
    assert_eq!(v.message, None);
    assert_eq!(v.warnings.len(), 1);
}

#[test]
fn failure_policy_ignore_does_not_soften_an_error_under_deny() {
    let set = load(&[simple(
        "ivpol-sample",
        r#"
        failurePolicy: Ignore
        validationActions: [Deny]
        validations:
          - expression: "object.spec.nothing.here == 'x'"
            message: never reached
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert!(!v.allowed);
    let message = v.message.as_deref().unwrap_or_default();
    assert!(
        message.starts_with("Policy ivpol-sample error: failed to evaluate policy: "),
        "{message}"
    );
    assert_eq!(v.results[0].status, Status::Error);
    assert_eq!(
        message,
        format!("Policy ivpol-sample error: {}", v.results[0].message)
    );
}

#[test]
fn an_error_under_warn_is_a_warning() {
    let set = load(&[simple(
        "warn-only",
        r#"
        validationActions: [Warn]
        validations:
          - expression: "object.spec.nothing.here == 'x'"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert!(v.allowed);
    assert_eq!(v.warnings.len(), 1);
    assert!(
        v.warnings[0].starts_with("Policy warn-only error: failed to evaluate policy: "),
        "{:?}",
        v.warnings
    );
}

#[test]
fn several_failing_policies_are_joined_by_semicolons_in_name_order() {
    let zeta = simple(
        "zeta",
        "validations:\n  - expression: \"false\"\n    message: z failed\n",
    );
    let alpha = simple(
        "alpha",
        "validations:\n  - expression: \"false\"\n    message: a failed\n",
    );
    let middle = simple(
        "middle",
        "validationActions: [Warn]\nvalidations:\n  - expression: \"false\"\n    message: m failed\n",
    );
    let passing = simple("beta", "validations:\n  - expression: \"true\"\n");
    let set = load(&[zeta, middle, passing, alpha]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_denied(
        &v,
        "Policy alpha failed: a failed; Policy zeta failed: z failed",
    );
    assert_eq!(
        v.warnings,
        vec!["Policy middle failed: m failed".to_string()]
    );
    assert_eq!(
        outcomes(&v),
        vec![
            ("alpha".into(), Status::Fail, "a failed".into()),
            ("beta".into(), Status::Pass, "success".into()),
            ("middle".into(), Status::Fail, "m failed".into()),
            ("zeta".into(), Status::Fail, "z failed".into()),
        ]
    );
}

// ------------------------------------------------------- matchConditions

const PROD_ONLY: &str = r#"
matchConditions:
  - name: check-prod-label
    expression: >-
      has(object.metadata.labels) && has(object.metadata.labels.prod) && object.metadata.labels.prod == 'true'
"#;

fn prod_pod(name: &str) -> Value {
    let mut p = pod(name, &[SIGNED]);
    p["metadata"]["labels"]["prod"] = json!("true");
    p
}

#[test]
fn false_match_condition_gives_no_result() {
    let set = load(&[simple(
        "prod-only",
        &format!("{}{}", dedent(PROD_ONLY), dedent(NAME_IS_NOT_BAD)),
    )]);
    assert_no_results(&validate(&set, &create(&pod("bad", &[SIGNED]))));
    let v = validate(&set, &create(&prod_pod("bad")));
    assert_eq!(
        outcomes(&v),
        one("prod-only", Status::Fail, "pod name must not be bad")
    );
}

const ERRORING_CONDITION: &str = r#"
matchConditions:
  - name: boom
    expression: "object.metadata.labels.missing == 'x'"
"#;

#[test]
fn match_condition_error_under_fail_is_an_error_result() {
    let set = load(&[simple(
        "strict",
        &format!(
            "failurePolicy: Fail\n{}{}",
            dedent(ERRORING_CONDITION),
            dedent(NAME_IS_NOT_BAD)
        ),
    )]);
    let v = validate(&set, &create(&pod("good", &[SIGNED])));
    assert!(!v.allowed);
    assert_eq!(v.results[0].status, Status::Error);
    let message = only_message(&v);
    assert!(
        message.starts_with("failed to evaluate policy: matchCondition boom: "),
        "{message}"
    );
    assert_eq!(
        v.message.as_deref(),
        Some(format!("Policy strict error: {message}").as_str())
    );
}

#[test]
fn match_condition_error_under_default_failure_policy_is_an_error_result() {
    let set = load(&[simple(
        "strict",
        &format!("{}{}", dedent(ERRORING_CONDITION), dedent(NAME_IS_NOT_BAD)),
    )]);
    let v = validate(&set, &create(&pod("good", &[SIGNED])));
    assert!(!v.allowed);
    assert_eq!(v.results[0].status, Status::Error);
}

#[test]
fn match_condition_error_under_ignore_is_not_matched() {
    let set = load(&[simple(
        "lenient",
        &format!(
            "failurePolicy: Ignore\n{}{}",
            dedent(ERRORING_CONDITION),
            dedent(NAME_IS_NOT_BAD)
        ),
    )]);
    assert_no_results(&validate(&set, &create(&pod("bad", &[SIGNED]))));
}

#[test]
fn a_false_match_condition_wins_over_an_erroring_one() {
    // Kyverno collects condition errors and still returns "not matched" when
    // any condition is false, whatever the order.
    let set = load(&[simple(
        "strict",
        r#"
        matchConditions:
          - name: boom
            expression: "object.metadata.labels.missing == 'x'"
          - name: never
            expression: "false"
        validations:
          - expression: "false"
        "#,
    )]);
    assert_no_results(&validate(&set, &create(&pod("p", &[SIGNED]))));
}

#[test]
fn a_non_bool_match_condition_is_an_error() {
    let set = load(&[simple(
        "strict",
        r#"
        matchConditions:
          - name: not-bool
            expression: "object.metadata.name"
        validations:
          - expression: "true"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Error);
    assert!(
        only_message(&v).starts_with("failed to evaluate policy: matchCondition not-bool: "),
        "{}",
        only_message(&v)
    );
}

#[test]
fn match_conditions_see_request_and_namespace_object() {
    let set = load(&[simple(
        "create-in-prod",
        r#"
        matchConditions:
          - name: create
            expression: "request.operation == 'CREATE' && request.userInfo.username == 'kubernetes-admin'"
          - name: prod-namespace
            expression: "namespaceObject.metadata.labels.env == 'prod'"
        validations:
          - expression: "false"
            message: matched
        "#,
    )]);
    let request = create(&pod("p", &[SIGNED]));
    let prod = namespace_object("default", json!({"env": "prod"}));
    let dev = namespace_object("default", json!({"env": "dev"}));
    let v = admit_with(
        &set,
        Phase::Validate,
        &Scope::Cluster,
        &[],
        &request,
        Some(&prod),
    );
    assert_eq!(outcomes(&v), one("create-in-prod", Status::Fail, "matched"));
    let v = admit_with(
        &set,
        Phase::Validate,
        &Scope::Cluster,
        &[],
        &request,
        Some(&dev),
    );
    assert_no_results(&v);
}

// ----------------------------------------------------------- validations

#[test]
fn the_first_false_validation_wins() {
    let set = load(&[simple(
        "ordered",
        r#"
        validations:
          - expression: "true"
            message: first
          - expression: "object.metadata.name == 'other'"
            message: second
          - expression: "false"
            message: third
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(outcomes(&v), one("ordered", Status::Fail, "second"));
}

#[test]
fn message_expression_is_used_and_wins_over_message() {
    let set = load(&[simple(
        "dynamic",
        r#"
        validations:
          - expression: "object.metadata.name != 'bad'"
            message: static message
            messageExpression: "'pod ' + object.metadata.name + ' uses ' + images.containers[0]"
        "#,
    )]);
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert_denied(
        &v,
        "Policy dynamic failed: pod bad uses ghcr.io/kyverno/test-verify-image:signed",
    );
}

#[test]
fn message_expression_errors_become_the_message() {
    let set = load(&[simple(
        "dynamic",
        r#"
        validations:
          - expression: "false"
            message: static message
            messageExpression: "object.metadata.nothing.here"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Fail);
    assert!(
        only_message(&v).starts_with("failed to evaluate message expression: "),
        "{}",
        only_message(&v)
    );
}

#[test]
fn message_expression_must_be_a_string() {
    let set = load(&[simple(
        "dynamic",
        "validations:\n  - expression: \"false\"\n    messageExpression: \"42\"\n",
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Fail);
    assert!(
        only_message(&v).starts_with("failed to convert message expression to string: "),
        "{}",
        only_message(&v)
    );
}

#[test]
fn an_empty_message_names_the_validation_index() {
    let set = load(&[simple(
        "silent",
        r#"
        validations:
          - expression: "true"
          - expression: "false"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_denied(
        &v,
        "Policy silent failed: CEL expression validation failed at index 1",
    );
    // An empty messageExpression result falls back the same way.
    let set = load(&[simple(
        "silent",
        "validations:\n  - expression: \"false\"\n    messageExpression: \"''\"\n",
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(
        only_message(&v),
        "CEL expression validation failed at index 0"
    );
}

#[test]
fn a_non_bool_validation_is_an_error() {
    let set = load(&[simple(
        "not-bool",
        "validations:\n  - expression: \"object.metadata.name\"\n    message: never\n",
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Error);
    assert_eq!(
        only_message(&v),
        "error: expression `object.metadata.name` must return bool, got string"
    );
    assert_denied(
        &v,
        "Policy not-bool error: error: expression `object.metadata.name` must return bool, got string",
    );
}

#[test]
fn a_validation_runtime_error_is_an_error() {
    let set = load(&[simple(
        "runtime",
        r#"
        validations:
          - expression: "true"
          - expression: "object.spec.containers[5].image == 'x'"
            message: never
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Error);
    assert!(
        only_message(&v).starts_with("failed to evaluate policy: "),
        "{}",
        only_message(&v)
    );
}

const AUDIT_ANNOTATIONS: &str = r#"
auditAnnotations:
  - key: image-count
    valueExpression: "string(images.containers.size())"
  - key: empty
    valueExpression: "''"
  - key: pod
    valueExpression: "object.metadata.name"
"#;

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn audit_annotations_are_set_on_pass_and_fail_without_empty_values() {
    let set = load(&[simple(
        "annotated",
        &format!("{}{}", dedent(AUDIT_ANNOTATIONS), dedent(NAME_IS_NOT_BAD)),
    )]);
    let v = validate(&set, &create(&pod("good", &[SIGNED, NGINX])));
    assert_eq!(v.results[0].status, Status::Pass);
    assert_eq!(
        v.results[0].audit_annotations,
        pairs(&[("image-count", "2"), ("pod", "good")])
    );
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Fail);
    assert_eq!(
        v.results[0].audit_annotations,
        pairs(&[("image-count", "1"), ("pod", "bad")])
    );
}

#[test]
fn a_failing_audit_annotation_is_an_error() {
    let set = load(&[simple(
        "annotated",
        r#"
        auditAnnotations:
          - key: broken
            valueExpression: "object.metadata.nothing.here"
        validations:
          - expression: "true"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Error);
    assert!(
        only_message(&v).starts_with(
            "failed to evaluate policy: failed to evaluate auditAnnotation 'broken': "
        ),
        "{}",
        only_message(&v)
    );
    let set = load(&[simple(
        "annotated",
        r#"
        auditAnnotations:
          - key: number
            valueExpression: "1"
        validations:
          - expression: "true"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Error);
    assert!(
        only_message(&v).starts_with(
            "failed to evaluate policy: failed to convert auditAnnotation 'number' expression: "
        ),
        "{}",
        only_message(&v)
    );
}

// ------------------------------------------------------------- variables

#[test]
fn an_unused_erroring_variable_does_not_fail_the_policy() {
    let set = load(&[simple(
        "lazy",
        r#"
        variables:
          - name: broken
            expression: "object.spec.nothing.here"
          - name: podName
            expression: "object.metadata.name"
        validations:
          - expression: "variables.podName != 'bad'"
            message: bad pod
        "#,
    )]);
    let v = validate(&set, &create(&pod("good", &[SIGNED])));
    assert_eq!(outcomes(&v), one("lazy", Status::Pass, "success"));
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert_eq!(outcomes(&v), one("lazy", Status::Fail, "bad pod"));
}

#[test]
fn a_used_erroring_variable_fails_the_validation_reading_it() {
    let set = load(&[simple(
        "lazy",
        r#"
        variables:
          - name: broken
            expression: "object.spec.nothing.here"
        validations:
          - expression: "variables.broken == 'x'"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Error);
}

#[test]
fn variables_can_use_images_and_each_other() {
    let set = load(&[simple(
        "image-vars",
        r#"
        matchImageReferences:
          - glob: "ghcr.io/*"
        variables:
          - name: first
            expression: "images.containers[0]"
          - name: fromGhcr
            expression: "variables.first.startsWith('ghcr.io/')"
        validations:
          - expression: "variables.fromGhcr && images.containers.size() == 1"
            messageExpression: "'unexpected images: ' + images.containers.join(',')"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[NGINX, SIGNED])));
    assert_eq!(outcomes(&v), one("image-vars", Status::Pass, "success"));
    let v = validate(&set, &create(&pod("p", &[SIGNED, UNSIGNED])));
    assert_eq!(
        outcomes(&v),
        one(
            "image-vars",
            Status::Fail,
            &format!("unexpected images: {SIGNED},{UNSIGNED}")
        )
    );
}

// ---------------------------------------------------------------- images

#[test]
fn pod_images_by_category() {
    let set = load(&[images_probe("probe", "")]);
    let mut p = pod("p", &[SIGNED, NGINX]);
    p["spec"]["initContainers"] = containers(&["busybox:1.36"], "i");
    p["spec"]["ephemeralContainers"] = containers(&["ghcr.io/debug/tools:1"], "e");
    let v = validate(&set, &create(&p));
    assert_eq!(
        only_message(&v),
        format!("{SIGNED},{NGINX}|busybox:1.36|ghcr.io/debug/tools:1")
    );
    // Every category is present even when the pod spec lacks it.
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(only_message(&v), format!("{SIGNED}||"));
}

fn probe_for(resources: &str, group: &str) -> String {
    let mut out = images_probe("probe", "");
    out = out.replace("apiGroups: ['']", &format!("apiGroups: ['{group}']"));
    out.replace("resources: [pods]", &format!("resources: [{resources}]"))
}

#[test]
fn deployment_images_come_from_the_pod_template() {
    let set = load(&[probe_for("deployments", "apps")]);
    let mut d = deployment("web", json!({}), json!({"app": "web"}), &[SIGNED]);
    d["spec"]["template"]["spec"]["initContainers"] = containers(&[NGINX], "i");
    let v = validate(&set, &create(&d));
    assert_eq!(only_message(&v), format!("{SIGNED}|{NGINX}|"));
}

#[test]
fn cronjob_images_come_from_the_job_template() {
    let set = load(&[probe_for("cronjobs", "batch")]);
    let v = validate(
        &set,
        &create(&cronjob("nightly", json!({}), &[UNSIGNED, NGINX])),
    );
    assert_eq!(only_message(&v), format!("{UNSIGNED},{NGINX}||"));
}

#[test]
fn resources_without_a_pod_spec_have_no_builtin_images() {
    let set = load(&[ivp(
        "configmaps",
        &spec(&[
            r#"
            matchConstraints:
              resourceRules:
                - apiGroups: ['']
                  apiVersions: [v1]
                  operations: [CREATE]
                  resources: [configmaps]
            "#,
            RELAXED,
            NO_ATTESTORS,
            r#"
            validations:
              - expression: "!has(images.containers) && images.size() == 0"
                message: unexpected images
            "#,
        ]),
    )]);
    let cm = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "default"},
        "data": {"image": SIGNED}
    });
    let v = validate(&set, &create(&cm));
    assert_eq!(outcomes(&v), one("configmaps", Status::Pass, "success"));
}

#[test]
fn custom_image_extractors_are_filtered_too() {
    let set = load(&[simple(
        "custom",
        r#"
        matchImageReferences:
          - glob: "ghcr.io/*"
        images:
          - name: annotated
            expression: "object.metadata.annotations['images'].split(',')"
        validations:
          - expression: "false"
            messageExpression: "images.annotated.join(',') + '|' + images.containers.join(',')"
        "#,
    )]);
    let mut p = pod("p", &[NGINX]);
    p["metadata"]["annotations"] = json!({"images": format!("{SIGNED},{NGINX},{UNSIGNED}")});
    let v = validate(&set, &create(&p));
    assert_eq!(only_message(&v), format!("{SIGNED},{UNSIGNED}|"));
}

#[test]
fn a_custom_extractor_that_is_not_a_string_list_is_an_error() {
    let set = load(&[simple(
        "custom",
        r#"
        images:
          - name: wrong
            expression: "object.metadata.name"
        validations:
          - expression: "true"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Error);
    assert!(only_message(&v).starts_with("failed to evaluate policy: "));
}

#[test]
fn glob_star_crosses_slashes_and_unmatched_images_are_left_out() {
    let set = load(&[images_probe(
        "probe",
        "matchImageReferences:\n  - glob: \"ghcr.io/*\"\n",
    )]);
    let mut p = pod("p", &[NGINX, SIGNED, "ghcr.io/a/b/c/d:1"]);
    p["spec"]["initContainers"] = containers(&["quay.io/ghcr.io/x:1"], "i");
    let v = validate(&set, &create(&p));
    assert_eq!(only_message(&v), format!("{SIGNED},ghcr.io/a/b/c/d:1||"));
}

#[test]
fn several_references_match_if_any_matches() {
    let set = load(&[images_probe(
        "probe",
        r#"
        matchImageReferences:
          - glob: "docker.io/*"
          - expression: "ref.endsWith(':unsigned')"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED, NGINX, UNSIGNED])));
    assert_eq!(only_message(&v), format!("{NGINX},{UNSIGNED}||"));
}

#[test]
fn expression_references_see_ref_and_the_image_library() {
    let set = load(&[images_probe(
        "probe",
        r#"
        matchImageReferences:
          - expression: "parseImageReference(ref).registry() == 'ghcr.io'"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED, NGINX])));
    assert_eq!(only_message(&v), format!("{SIGNED}||"));
}

#[test]
fn a_non_bool_reference_expression_is_an_error() {
    let set = load(&[images_probe(
        "probe",
        "matchImageReferences:\n  - expression: \"ref\"\n",
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Error);
    assert!(only_message(&v).starts_with("failed to evaluate policy: "));
}

// ---------------------------------------------------------- verifyDigest

fn digest_policy(config: &str) -> String {
    ivp(
        "require-digests",
        &spec(&[
            PODS,
            config,
            "matchImageReferences:\n  - glob: \"ghcr.io/*\"\n",
            NO_ATTESTORS,
            "validations:\n  - expression: \"false\"\n    message: validations ran\n",
        ]),
    )
}

#[test]
fn verify_digest_defaults_to_true_and_fails_before_validations() {
    let set = load(&[digest_policy(
        "validationConfigurations:\n  required: false\n",
    )]);
    let image = pinned();
    let v = validate(&set, &create(&pod("p", &[NGINX, &image, UNSIGNED, SIGNED])));
    assert_denied(
        &v,
        "Policy require-digests failed: image ghcr.io/kyverno/test-verify-image:unsigned does not have a digest",
    );
    assert!(v.results[0].audit_annotations.is_empty());
}

#[test]
fn verify_digest_passes_pinned_images_to_the_validations() {
    let set = load(&[digest_policy(
        "validationConfigurations:\n  required: false\n",
    )]);
    let image = pinned();
    let v = validate(&set, &create(&pod("p", &[NGINX, &image])));
    // Only the unmatched NGINX is unpinned: the validations run.
    assert_eq!(
        outcomes(&v),
        one("require-digests", Status::Fail, "validations ran")
    );
    let tagged_and_pinned = format!("{SIGNED}@{DIGEST}");
    let v = validate(&set, &create(&pod("p", &[&tagged_and_pinned])));
    assert_eq!(only_message(&v), "validations ran");
}

#[test]
fn verify_digest_false_skips_the_check() {
    let set = load(&[digest_policy(
        "validationConfigurations:\n  verifyDigest: false\n  required: false\n",
    )]);
    let v = validate(&set, &create(&pod("p", &[UNSIGNED])));
    assert_eq!(only_message(&v), "validations ran");
}

#[test]
fn an_unparsable_matched_image_is_an_evaluation_error() {
    let set = load(&[digest_policy(
        "validationConfigurations:\n  required: false\n",
    )]);
    let v = validate(&set, &create(&pod("p", &["ghcr.io/Kyverno/App:1"])));
    assert_eq!(
        outcomes(&v),
        one(
            "require-digests",
            Status::Error,
            "failed to evaluate policy: failed to parse image reference ghcr.io/Kyverno/App:1: could not parse reference: ghcr.io/Kyverno/App:1"
        )
    );
}

// -------------------------------------------------------------- required

fn required_policy(name: &str, config: &str, extra: &str) -> String {
    ivp(
        name,
        &spec(&[
            PODS,
            config,
            "matchImageReferences:\n  - glob: \"ghcr.io/*\"\n",
            NO_ATTESTORS,
            extra,
            "validations:\n  - expression: \"true\"\n",
        ]),
    )
}

fn not_verified(image: &str) -> String {
    format!(
        "image {image} is not verified: no policy performed a signature or attestation check on it"
    )
}

#[test]
fn required_defaults_to_true_and_fails_unverified_matched_images() {
    let set = load(&[required_policy(
        "catch-all",
        "validationConfigurations:\n  verifyDigest: false\n",
        "",
    )]);
    let v = validate(&set, &create(&pod("p", &[NGINX, SIGNED])));
    assert_denied(
        &v,
        &format!("Policy catch-all failed: {}", not_verified(SIGNED)),
    );
    assert_eq!(
        outcomes(&v),
        one("catch-all", Status::Fail, &not_verified(SIGNED))
    );
}

#[test]
fn required_applies_with_every_default_to_pinned_images() {
    let set = load(&[required_policy("defaults", "", "")]);
    let image = pinned();
    let v = validate(&set, &create(&pod("p", &[&image])));
    assert_eq!(
        outcomes(&v),
        one("defaults", Status::Fail, &not_verified(&image))
    );
}

#[test]
fn required_failure_keeps_audit_annotations_and_follows_actions() {
    let set = load(&[required_policy(
        "catch-all",
        "validationConfigurations:\n  verifyDigest: false\n",
        "validationActions: [Warn]\nauditAnnotations:\n  - key: images\n    valueExpression: \"images.containers.join(',')\"\n",
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert!(v.allowed);
    assert_eq!(
        v.warnings,
        vec![format!("Policy catch-all failed: {}", not_verified(SIGNED))]
    );
    assert_eq!(v.results[0].audit_annotations, pairs(&[("images", SIGNED)]));
}

#[test]
fn required_false_keeps_the_pass() {
    let set = load(&[required_policy(
        "optional",
        "validationConfigurations:\n  verifyDigest: false\n  required: false\n",
        "",
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(outcomes(&v), one("optional", Status::Pass, "success"));
}

#[test]
fn a_policy_matching_no_images_passes_required() {
    let set = load(&[required_policy("catch-all", "", "")]);
    let v = validate(&set, &create(&pod("p", &[NGINX])));
    assert_eq!(outcomes(&v), one("catch-all", Status::Pass, "success"));
}

#[test]
fn a_failing_policy_is_not_rewritten_by_required() {
    let set = load(&[ivp(
        "fails-first",
        &spec(&[
            PODS,
            "validationConfigurations:\n  verifyDigest: false\n",
            NO_ATTESTORS,
            "validations:\n  - expression: \"false\"\n    message: own failure\n",
        ]),
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(
        outcomes(&v),
        one("fails-first", Status::Fail, "own failure")
    );
}

// ------------------------------------------------------ matchConstraints

#[test]
fn resource_rule_operations_are_respected() {
    let set = load(&[ivp(
        "create-only",
        &spec(&[POD_CREATE, RELAXED, NO_ATTESTORS, NAME_IS_NOT_BAD]),
    )]);
    let bad = pod("bad", &[SIGNED]);
    let update = request_for("UPDATE", Some(&bad), Some(&pod("bad", &[SIGNED])));
    assert_no_results(&validate(&set, &update));
    assert!(!validate(&set, &create(&bad)).allowed);
}

#[test]
fn delete_requests_read_images_from_the_old_object() {
    let set = load(&[ivp(
        "on-delete",
        &spec(&[
            &PODS.replace("[CREATE, UPDATE]", "[DELETE]"),
            RELAXED,
            NO_ATTESTORS,
            r#"
            validations:
              - expression: "object == null && oldObject.metadata.name == 'p'"
                message: unexpected objects
              - expression: "false"
                messageExpression: "images.containers.join(',')"
            "#,
        ]),
    )]);
    let v = validate(
        &set,
        &request_for("DELETE", None, Some(&pod("p", &[SIGNED, NGINX]))),
    );
    assert_eq!(only_message(&v), format!("{SIGNED},{NGINX}"));
}

#[test]
fn exclude_resource_rules_exclude() {
    let set = load(&[ivp(
        "exclude-system",
        &spec(&[
            r#"
            matchConstraints:
              resourceRules:
                - apiGroups: ['']
                  apiVersions: [v1]
                  operations: [CREATE]
                  resources: [pods]
              excludeResourceRules:
                - apiGroups: ['']
                  apiVersions: [v1]
                  operations: [CREATE]
                  resources: [pods]
                  resourceNames: [bad]
            "#,
            RELAXED,
            NO_ATTESTORS,
            "validations:\n  - expression: \"false\"\n    message: checked\n",
        ]),
    )]);
    assert_no_results(&validate(&set, &create(&pod("bad", &[SIGNED]))));
    let v = validate(&set, &create(&pod("other", &[SIGNED])));
    assert_eq!(outcomes(&v), one("exclude-system", Status::Fail, "checked"));
}

#[test]
fn namespace_selector_uses_the_namespace_object_labels() {
    let policy = ivp(
        "selected",
        &spec(&[
            r#"
            matchConstraints:
              namespaceSelector:
                matchLabels:
                  env: prod
              resourceRules:
                - apiGroups: ['']
                  apiVersions: [v1]
                  operations: [CREATE]
                  resources: [pods]
            "#,
            RELAXED,
            NO_ATTESTORS,
            "validations:\n  - expression: \"false\"\n    message: checked\n",
        ]),
    );
    let set = load(&[policy]);
    let request = create(&pod("p", &[SIGNED]));
    let prod = namespace_object("default", json!({"env": "prod"}));
    let dev = namespace_object("default", json!({"env": "dev"}));
    let v = admit_with(
        &set,
        Phase::Validate,
        &Scope::Cluster,
        &[],
        &request,
        Some(&prod),
    );
    assert_eq!(outcomes(&v), one("selected", Status::Fail, "checked"));
    let v = admit_with(
        &set,
        Phase::Validate,
        &Scope::Cluster,
        &[],
        &request,
        Some(&dev),
    );
    assert_no_results(&v);
    // Unknown namespace: its labels are needed, so an error that denies
    // (Kyverno's stand-in namespace would not match, admitting the pod).
    let v = validate(&set, &request);
    assert!(!v.allowed, "{v:?}");
    assert_eq!(v.results[0].status, Status::Error);
    assert!(
        only_message(&v).contains("namespace \"default\" is not known to ivpol"),
        "{v:?}"
    );
}

#[test]
fn an_unknown_namespace_still_carries_its_name_label() {
    // Kyverno stands in a namespace labelled only `kubernetes.io/metadata.name`.
    let policy = ivp(
        "by-name",
        &spec(&[
            r#"
            matchConstraints:
              namespaceSelector:
                matchExpressions:
                  - key: kubernetes.io/metadata.name
                    operator: In
                    values: [default]
              resourceRules:
                - apiGroups: ['']
                  apiVersions: [v1]
                  operations: [CREATE]
                  resources: [pods]
            "#,
            RELAXED,
            NO_ATTESTORS,
            "validations:\n  - expression: \"false\"\n    message: checked\n",
        ]),
    );
    let set = load(&[policy]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(outcomes(&v), one("by-name", Status::Fail, "checked"));
    let mut elsewhere = pod("p", &[SIGNED]);
    elsewhere["metadata"]["namespace"] = json!("kube-system");
    assert_no_results(&validate(&set, &create(&elsewhere)));
}

#[test]
fn object_selector_uses_the_object_labels() {
    let policy = ivp(
        "labelled",
        &spec(&[
            r#"
            matchConstraints:
              objectSelector:
                matchExpressions:
                  - key: app
                    operator: In
                    values: [web]
              resourceRules:
                - apiGroups: ['']
                  apiVersions: [v1]
                  operations: [CREATE, UPDATE]
                  resources: [pods]
            "#,
            RELAXED,
            NO_ATTESTORS,
            "validations:\n  - expression: \"false\"\n    message: checked\n",
        ]),
    );
    let set = load(&[policy]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(outcomes(&v), one("labelled", Status::Fail, "checked"));
    let mut other = pod("p", &[SIGNED]);
    other["metadata"]["labels"] = json!({"app": "db"});
    assert_no_results(&validate(&set, &create(&other)));
    // UPDATE: the old object's labels count too.
    let update = request_for("UPDATE", Some(&other), Some(&pod("p", &[SIGNED])));
    assert_eq!(validate(&set, &update).results.len(), 1);
}

fn ephemeral_request(resources: &str) -> (PolicySet, Value) {
    let policy = ivp(
        "block-ephemeral-containers",
        &spec(&[
            &PODS.replace("[pods]", resources),
            "matchImageReferences:\n  - glob: \"*\"\n",
            RELAXED,
            NO_ATTESTORS,
            r#"
            validations:
              - expression: >-
                  object.spec.?ephemeralContainers.orValue([]).size() == 0
                message: "Ephemeral (debug) containers are not permitted."
            "#,
        ]),
    );
    let set = load(&[policy]);
    let old = pod("p", &[SIGNED]);
    let mut new = old.clone();
    new["spec"]["ephemeralContainers"] = json!([
        {"name": "debugger", "image": "busybox:1.36", "targetContainerName": "c0"}
    ]);
    let mut request = request_for("UPDATE", Some(&new), Some(&old));
    request["subResource"] = json!("ephemeralcontainers");
    request["requestSubResource"] = json!("ephemeralcontainers");
    (set, request)
}

#[test]
fn the_ephemeral_containers_subresource_must_be_listed() {
    let (set, request) = ephemeral_request("[pods, pods/ephemeralcontainers]");
    let v = validate(&set, &request);
    assert_denied(
        &v,
        "Policy block-ephemeral-containers failed: Ephemeral (debug) containers are not permitted.",
    );
    let (set, request) = ephemeral_request("[pods]");
    assert_no_results(&validate(&set, &request));
}

// --------------------------------------------------------------- autogen

/// Pods, CREATE only (the conformance autogen policies' rule).
const POD_CREATE: &str = "
matchConstraints:
  resourceRules:
    - apiGroups: ['']
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
";

fn autogen_policy(name: &str, extra: &str) -> String {
    autogen_policy_with(name, POD_CREATE, extra)
}

fn autogen_policy_with(name: &str, constraints: &str, extra: &str) -> String {
    ivp(
        name,
        &spec(&[
            constraints,
            extra,
            PROD_ONLY,
            "matchImageReferences:\n  - glob: \"ghcr.io/*\"\n",
            RELAXED,
            NO_ATTESTORS,
            r#"
            validations:
              - expression: "object.spec.containers.all(c, c.image.endsWith(':signed'))"
                messageExpression: "'unsigned: ' + images.containers.filter(i, !i.endsWith(':signed')).join(',')"
            "#,
        ]),
    )
}

#[test]
fn a_pods_policy_also_checks_deployment_templates() {
    let set = load(&[autogen_policy("check-signed-images", "")]);
    let prod = json!({"prod": "true"});
    let bad = deployment("web", json!({}), prod.clone(), &[SIGNED, UNSIGNED, NGINX]);
    let v = validate(&set, &create(&bad));
    assert_denied(
        &v,
        &format!("Policy check-signed-images failed: unsigned: {UNSIGNED}"),
    );
    let good = deployment("web", json!({}), prod.clone(), &[SIGNED]);
    let v = validate(&set, &create(&good));
    assert_eq!(
        outcomes(&v),
        one("check-signed-images", Status::Pass, "success")
    );
    // The condition reads the template's labels, not the Deployment's.
    let unlabelled = deployment("web", prod, json!({"app": "web"}), &[UNSIGNED]);
    assert_no_results(&validate(&set, &create(&unlabelled)));
}

#[test]
fn a_pods_policy_also_checks_cronjob_templates() {
    let set = load(&[autogen_policy("check-signed-images", "")]);
    let v = validate(
        &set,
        &create(&cronjob("nightly", json!({"prod": "true"}), &[UNSIGNED])),
    );
    assert_denied(
        &v,
        &format!("Policy check-signed-images failed: unsigned: {UNSIGNED}"),
    );
    assert_no_results(&validate(
        &set,
        &create(&cronjob("nightly", json!({}), &[UNSIGNED])),
    ));
}

#[test]
fn autogen_keeps_the_operations_of_the_pods_rule() {
    let set = load(&[autogen_policy("check-signed-images", "")]);
    let d = deployment("web", json!({}), json!({"prod": "true"}), &[UNSIGNED]);
    let update = request_for("UPDATE", Some(&d), Some(&d));
    assert_no_results(&validate(&set, &update));
}

#[test]
fn autogen_can_be_disabled_or_limited() {
    let none = autogen_policy(
        "ivpol-autogen-none-sample",
        "autogen:\n  podControllers:\n    controllers: []\n",
    );
    let set = load(&[none]);
    let prod = json!({"prod": "true"});
    let d = deployment("web", json!({}), prod.clone(), &[UNSIGNED]);
    assert_no_results(&validate(&set, &create(&d)));
    assert_no_results(&validate(
        &set,
        &create(&cronjob("nightly", prod.clone(), &[UNSIGNED])),
    ));
    // The Pod itself is still checked.
    let mut p = prod_pod("p");
    p["spec"]["containers"] = containers(&[UNSIGNED], "c");
    assert!(!validate(&set, &create(&p)).allowed);

    let deployments_only = autogen_policy(
        "deployments-only",
        "autogen:\n  podControllers:\n    controllers: [deployments]\n",
    );
    let set = load(&[deployments_only]);
    assert!(!validate(&set, &create(&d)).allowed);
    assert_no_results(&validate(
        &set,
        &create(&cronjob("nightly", prod, &[UNSIGNED])),
    ));
}

#[test]
fn a_policy_with_a_deployments_rule_is_not_autogenerated() {
    // The should-not-autogen conformance policy: its deployments rule names
    // the core group, so nothing matches an apps/v1 Deployment.
    let policy = autogen_policy_with(
        "ivpol-autogen-sample",
        r#"
        matchConstraints:
          resourceRules:
            - apiGroups: ['']
              apiVersions: [v1]
              operations: [CREATE]
              resources: [pods]
            - apiGroups: ['']
              apiVersions: [v1]
              operations: [CREATE]
              resources: [deployments]
        "#,
        "",
    );
    let set = load(&[policy]);
    let d = deployment("web", json!({}), json!({"prod": "true"}), &[UNSIGNED]);
    assert_no_results(&validate(&set, &create(&d)));
    assert_no_results(&validate(
        &set,
        &create(&cronjob("nightly", json!({"prod": "true"}), &[UNSIGNED])),
    ));
}

#[test]
fn exclusions_or_an_object_selector_prevent_autogen() {
    // Kyverno's CanAutoGen refuses both rather than dropping them.
    let excluded = autogen_policy_with(
        "with-exclusions",
        r#"
        matchConstraints:
          resourceRules:
            - apiGroups: ['']
              apiVersions: [v1]
              operations: [CREATE]
              resources: [pods]
          excludeResourceRules:
            - apiGroups: ['']
              apiVersions: [v1]
              operations: [CREATE]
              resources: [pods]
              resourceNames: [skip]
        "#,
        "",
    );
    let selected = autogen_policy_with(
        "with-selector",
        r#"
        matchConstraints:
          objectSelector:
            matchLabels:
              app: web
          resourceRules:
            - apiGroups: ['']
              apiVersions: [v1]
              operations: [CREATE]
              resources: [pods]
        "#,
        "",
    );
    let d = deployment(
        "web",
        json!({"app": "web"}),
        json!({"prod": "true", "app": "web"}),
        &[UNSIGNED],
    );
    for policy in [excluded, selected] {
        let set = load(&[policy]);
        assert_no_results(&validate(&set, &create(&d)));
        let mut p = prod_pod("p");
        p["spec"]["containers"] = containers(&[UNSIGNED], "c");
        assert!(!validate(&set, &create(&p)).allowed);
    }
}

#[test]
fn autogen_leaves_object_metadata_namespace_alone() {
    let set = load(&[ivp(
        "namespaced-check",
        &spec(&[
            POD_CREATE,
            r#"
            matchConditions:
              - name: in-default
                expression: "object.metadata.namespace == 'default'"
            "#,
            RELAXED,
            NO_ATTESTORS,
            "validations:\n  - expression: \"object.metadata.name != 'bad'\"\n    message: bad template\n",
        ]),
    )]);
    let mut d = deployment("web", json!({}), json!({}), &[SIGNED]);
    d["spec"]["template"]["metadata"]["name"] = json!("bad");
    let v = validate(&set, &create(&d));
    assert_eq!(
        outcomes(&v),
        one("namespaced-check", Status::Fail, "bad template")
    );
}

// ----------------------------------------------------------------- scope

fn scoped_set() -> PolicySet {
    let body = spec(&[
        PODS,
        RELAXED,
        NO_ATTESTORS,
        "validations:\n  - expression: \"false\"\n    message: checked\n",
    ]);
    load(&[
        ivp("cluster-a", &body),
        ivp("cluster-b", &body),
        nivp("team-a-policy", "team-a", &body),
        nivp("team-b-policy", "team-b", &body),
    ])
}

fn policies_of(v: &Verdict) -> Vec<String> {
    v.results.iter().map(|r| r.policy.clone()).collect()
}

#[test]
fn cluster_scope_sees_only_cluster_policies() {
    let set = scoped_set();
    let mut p = pod("p", &[SIGNED]);
    p["metadata"]["namespace"] = json!("team-a");
    let v = admit_with(
        &set,
        Phase::Validate,
        &Scope::Cluster,
        &[],
        &create(&p),
        None,
    );
    assert_eq!(policies_of(&v), vec!["cluster-a", "cluster-b"]);
    assert_eq!(v.results[0].namespace, None);
}

#[test]
fn namespaced_scope_sees_only_that_namespaces_policies() {
    let set = scoped_set();
    let mut p = pod("p", &[SIGNED]);
    p["metadata"]["namespace"] = json!("team-a");
    let scope = Scope::Namespaced("team-a".into());
    let v = admit_with(&set, Phase::Validate, &scope, &[], &create(&p), None);
    assert_eq!(policies_of(&v), vec!["team-a-policy"]);
    assert_eq!(v.results[0].namespace.as_deref(), Some("team-a"));
    assert_denied(&v, "Policy team-a-policy failed: checked");
    let scope = Scope::Namespaced("team-c".into());
    assert_no_results(&admit_with(
        &set,
        Phase::Validate,
        &scope,
        &[],
        &create(&p),
        None,
    ));
}

#[test]
fn url_names_filter_policies() {
    let set = scoped_set();
    let request = create(&pod("p", &[SIGNED]));
    let v = admit_with(
        &set,
        Phase::Validate,
        &Scope::Cluster,
        &["cluster-b"],
        &request,
        None,
    );
    assert_eq!(policies_of(&v), vec!["cluster-b"]);
    // A namespaced policy's name on the cluster route selects nothing.
    let v = admit_with(
        &set,
        Phase::Validate,
        &Scope::Cluster,
        &["team-a-policy", "no-such-policy"],
        &request,
        None,
    );
    assert_no_results(&v);
}

#[test]
fn disabled_admission_is_not_evaluated() {
    let set = load(&[simple(
        "background-only",
        "evaluation:\n  admission:\n    enabled: false\nvalidations:\n  - expression: \"false\"\n",
    )]);
    assert_no_results(&validate(&set, &create(&pod("p", &[SIGNED]))));
}

// ---------------------------------------------------- outside admission

fn evaluate(set: &PolicySet, resource: &Value, operation: &str, mode: super::Mode) -> Verdict {
    set.evaluate(
        &resource.to_string(),
        operation,
        None,
        mode,
        std::sync::Arc::new(Offline),
    )
    .expect("a well-formed resource is evaluated")
}

#[test]
fn the_cli_runs_admission_disabled_policies_and_the_scan_only_background_ones() {
    let set = load(&[
        simple(
            "background-only",
            "evaluation:\n  admission:\n    enabled: false\nvalidations:\n  - expression: \"false\"\n",
        ),
        simple(
            "admission-only",
            "evaluation:\n  background:\n    enabled: false\nvalidations:\n  - expression: \"true\"\n",
        ),
    ]);
    let p = pod("p", &[SIGNED]);
    let cli = evaluate(&set, &p, "CREATE", super::Mode::Cli);
    assert_eq!(
        outcomes(&cli),
        vec![
            ("admission-only".into(), Status::Pass, "success".into()),
            (
                "background-only".into(),
                Status::Fail,
                "CEL expression validation failed at index 0".into()
            ),
        ]
    );
    let scan = evaluate(&set, &p, "CREATE", super::Mode::Background);
    assert_eq!(
        outcomes(&scan),
        one(
            "background-only",
            Status::Fail,
            "CEL expression validation failed at index 0"
        )
    );
}

#[test]
fn outside_admission_namespaced_policies_see_only_their_namespace() {
    let check = spec(&[
        PODS,
        RELAXED,
        NO_ATTESTORS,
        "validations:\n  - expression: \"true\"\n",
    ]);
    let set = load(&[
        nivp("team-a-policy", "team-a", &check),
        ivp("cluster-policy", &check),
    ]);
    let mut p = pod("p", &[SIGNED]);
    let in_default = evaluate(&set, &p, "CREATE", super::Mode::Cli);
    assert_eq!(policies_of(&in_default), vec!["cluster-policy"]);
    p["metadata"]["namespace"] = json!("team-a");
    let in_team = evaluate(&set, &p, "CREATE", super::Mode::Cli);
    assert_eq!(
        policies_of(&in_team),
        vec!["cluster-policy", "team-a-policy"]
    );
}

#[test]
fn outside_admission_the_operation_picks_the_matching_rules() {
    // PODS matches CREATE and UPDATE only; DELETE sees no policy.
    let set = load(&[simple("p", "validations:\n  - expression: \"true\"\n")]);
    let p = pod("p", &[SIGNED]);
    assert_eq!(
        policies_of(&evaluate(&set, &p, "UPDATE", super::Mode::Cli)),
        vec!["p"]
    );
    assert_no_results(&evaluate(&set, &p, "DELETE", super::Mode::Cli));
    let err = set
        .evaluate(
            &p.to_string(),
            "PATCH",
            None,
            super::Mode::Cli,
            std::sync::Arc::new(Offline),
        )
        .expect_err("PATCH is not an operation");
    assert!(err.contains("PATCH"), "{err}");
}

// ---------------------------------------------------- forged annotations

#[test]
fn a_forged_outcome_annotation_changes_nothing() {
    let policy = ivp(
        "check-signed-images-forged-annotation",
        &spec(&[
            PODS,
            "matchImageReferences:\n  - glob: \"ghcr.io/*\"\n",
            "validationConfigurations:\n  mutateDigest: false\n",
            NO_ATTESTORS,
            r#"
            validations:
              - expression: "images.containers.all(i, i.endsWith(':signed'))"
                message: failed to verify image with notary cert
            "#,
        ]),
    );
    let set = load(&[policy]);
    for image in [UNSIGNED.to_string(), pinned()] {
        let plain = pod("forged", &[&image]);
        let mut forged = plain.clone();
        forged["metadata"]["annotations"] = json!({
            "kyverno.io/image-verification-outcomes":
                r#"{"check-signed-images-forged-annotation":{"status":"pass","message":"success"}}"#
        });
        let expected = validate(&set, &create(&plain));
        assert!(!expected.allowed, "{expected:?}");
        assert_eq!(validate(&set, &create(&forged)), expected);
        let update = request_for("UPDATE", Some(&forged), Some(&forged));
        assert_eq!(
            validate(&set, &update),
            validate(&set, &request_for("UPDATE", Some(&plain), Some(&plain)))
        );
        assert_eq!(
            mutate(&set, &create(&forged)),
            mutate(&set, &create(&plain))
        );
    }
}

// ------------------------------------------------------------- JSON mode

fn json_policy(name: &str, config: &str) -> String {
    ivp(
        name,
        &spec(&[
            "evaluation:\n  mode: JSON\n",
            PODS,
            "matchImageReferences:\n  - glob: \"ghcr.io/*\"\n",
            config,
            NO_ATTESTORS,
            r#"
            images:
              - name: bar
                expression: "[object.foo.bar]"
            validations:
              - expression: "images.bar.all(i, !i.contains(':unsigned'))"
                messageExpression: "'unsigned: ' + images.bar.join(',')"
            "#,
        ]),
    )
}

fn payload(image: &str) -> String {
    json!({"foo": {"bar": image}}).to_string()
}

#[test]
fn json_mode_passes_and_fails_on_custom_images() {
    let set = load(&[json_policy("check-json", RELAXED)]);
    let v = set
        .evaluate_json_offline(&payload(SIGNED))
        .expect("evaluates");
    assert_allowed_silently(&v);
    assert_eq!(outcomes(&v), one("check-json", Status::Pass, "success"));
    let v = set
        .evaluate_json_offline(&payload(UNSIGNED))
        .expect("evaluates");
    assert_denied(
        &v,
        &format!("Policy check-json failed: unsigned: {UNSIGNED}"),
    );
    // An image outside matchImageReferences is not in `images.bar`.
    let v = set
        .evaluate_json_offline(&payload(NGINX))
        .expect("evaluates");
    assert_eq!(outcomes(&v), one("check-json", Status::Pass, "success"));
}

#[test]
fn json_mode_applies_verify_digest_and_required_by_default() {
    let set = load(&[json_policy("check-json", "")]);
    let v = set
        .evaluate_json_offline(&payload(SIGNED))
        .expect("evaluates");
    assert_eq!(
        outcomes(&v),
        one(
            "check-json",
            Status::Fail,
            &format!("image {SIGNED} does not have a digest")
        )
    );
    let image = format!("{SIGNED}@{DIGEST}");
    let v = set
        .evaluate_json_offline(&payload(&image))
        .expect("evaluates");
    assert_eq!(
        outcomes(&v),
        one("check-json", Status::Fail, &not_verified(&image))
    );
}

#[test]
fn json_mode_match_conditions_read_the_payload() {
    let policy = json_policy("check-json", RELAXED).replace(
        "  images:\n",
        "  matchConditions:\n    - name: has-foo\n      expression: \"has(object.foo.enabled) && object.foo.enabled\"\n  images:\n",
    );
    let set = load(&[policy]);
    assert_no_results(
        &set.evaluate_json_offline(&payload(UNSIGNED))
            .expect("evaluates"),
    );
    let enabled = json!({"foo": {"bar": UNSIGNED, "enabled": true}}).to_string();
    assert!(
        !set.evaluate_json_offline(&enabled)
            .expect("evaluates")
            .allowed
    );
}

#[test]
fn json_and_kubernetes_policies_never_mix() {
    let kubernetes = simple(
        "kubernetes-mode",
        "validations:\n  - expression: \"false\"\n    message: k8s\n",
    );
    let set = load(&[json_policy("check-json", RELAXED), kubernetes]);
    let v = set
        .evaluate_json_offline(&payload(UNSIGNED))
        .expect("evaluates");
    assert_eq!(policies_of(&v), vec!["check-json"]);
    let mut p = pod("p", &[UNSIGNED]);
    p["foo"] = json!({"bar": UNSIGNED});
    let v = validate(&set, &create(&p));
    assert_eq!(policies_of(&v), vec!["kubernetes-mode"]);
    let v = mutate(&set, &create(&p));
    assert_no_results(&v);
}

#[test]
fn json_mode_needs_no_match_constraints() {
    // As Kyverno's own check-json CLI case writes it.
    let policy = ivp(
        "check-json",
        &spec(&[
            "evaluation:\n  mode: JSON\n",
            RELAXED,
            NO_ATTESTORS,
            "images:\n  - name: bar\n    expression: \"[object.foo.bar]\"\n",
            "validations:\n  - expression: \"images.bar.all(i, !i.contains(':unsigned'))\"\n",
        ]),
    );
    assert!(!policy.contains("matchConstraints"), "{policy}");
    let set = load(&[policy]);
    let v = set
        .evaluate_json_offline(r#"{"foo":{"bar":"ghcr.io/kyverno/test-verify-image:unsigned"}}"#)
        .expect("evaluates");
    assert_eq!(v.results.len(), 1, "{v:?}");
    assert_eq!(v.results[0].status, Status::Fail);
    // A Kubernetes-mode policy still needs them.
    let k8s = ivp(
        "k",
        &spec(&[
            RELAXED,
            NO_ATTESTORS,
            "validations:\n  - expression: \"true\"\n",
        ]),
    );
    let set = PolicySet::load(&[SourceDocument {
        source: "k.yaml".into(),
        content: k8s,
    }]);
    assert!(set.diagnostics()[0].message.contains("matchConstraints"));
}

#[test]
fn json_mode_rejects_a_payload_that_is_not_json() {
    let set = load(&[json_policy("check-json", RELAXED)]);
    assert!(set.evaluate_json_offline("{not json").is_err());
}

// ---------------------------------------------------------- mutate phase

fn mutate_policy(name: &str, config: &str, actions: &str) -> String {
    ivp(
        name,
        &spec(&[
            "failurePolicy: Fail\n",
            &format!("validationActions: {actions}\n"),
            POD_CREATE,
            "matchImageReferences:\n  - glob: \"ghcr.io/**\"\n",
            config,
            NO_ATTESTORS,
            "validations:\n  - expression: \"true\"\n",
        ]),
    )
}

const PIN: &str =
    "validationConfigurations:\n  mutateDigest: true\n  verifyDigest: false\n  required: false\n";

fn unresolved(image: &str) -> String {
    format!("failed to update digest: failed to resolve digest for image {image}: ")
}

#[test]
fn mutate_digest_false_gives_no_results() {
    let set = load(&[mutate_policy(
        "ivpol-mutate-digest-disabled",
        RELAXED,
        "[Deny]",
    )]);
    assert_no_results(&mutate(&set, &create(&pod("p", &[SIGNED]))));
}

#[test]
fn an_unpinned_matched_image_is_an_error_that_denies_under_deny() {
    let set = load(&[mutate_policy("ivpol-mutate-digest", PIN, "[Deny]")]);
    let image = "ghcr.io/kyverno/test-verify-image:signed-keyless";
    let v = mutate(&set, &create(&pod("p", &[image])));
    assert!(!v.allowed);
    assert_eq!(v.patch, None);
    assert_eq!(v.results.len(), 1);
    assert_eq!(v.results[0].status, Status::Error);
    assert!(
        v.results[0].message.starts_with(&unresolved(image)),
        "{}",
        v.results[0].message
    );
    assert_eq!(
        v.message.as_deref(),
        Some(format!("Policy ivpol-mutate-digest error: {}", v.results[0].message).as_str())
    );
}

#[test]
fn mutate_digest_is_the_default_and_warns_under_warn() {
    let set = load(&[mutate_policy("pin-warn", "", "[Warn]")]);
    let v = mutate(&set, &create(&pod("p", &[SIGNED])));
    assert!(v.allowed);
    assert_eq!(v.message, None);
    assert_eq!(v.warnings.len(), 1);
    assert!(
        v.warnings[0].starts_with(&format!("Policy pin-warn error: {}", unresolved(SIGNED))),
        "{:?}",
        v.warnings
    );
}

#[test]
fn every_unresolved_image_is_reported() {
    let set = load(&[mutate_policy("ivpol-mutate-digest", PIN, "[Deny]")]);
    let mut p = pod("p", &[SIGNED]);
    p["spec"]["initContainers"] = containers(&[UNSIGNED], "i");
    let v = mutate(&set, &create(&p));
    let message = only_message(&v);
    assert!(message.starts_with(&unresolved(SIGNED)), "{message}");
    assert!(
        message.contains(&format!(
            "; failed to resolve digest for image {UNSIGNED}: "
        )),
        "{message}"
    );
}

#[test]
fn pinned_or_unmatched_images_need_no_mutation() {
    let set = load(&[mutate_policy("ivpol-mutate-digest", PIN, "[Deny]")]);
    let image = pinned();
    let v = mutate(&set, &create(&pod("p", &[&image, NGINX])));
    assert_no_results(&v);
}

#[test]
fn mutation_follows_match_constraints_and_conditions() {
    let policy = mutate_policy("ivpol-mutate-digest", PIN, "[Deny]").replace(
        "  validations:\n",
        "  matchConditions:\n    - name: prod\n      expression: \"has(object.metadata.labels.prod)\"\n  validations:\n",
    );
    let set = load(&[policy]);
    assert_no_results(&mutate(&set, &create(&pod("p", &[SIGNED]))));
    let p = prod_pod("p");
    assert!(!mutate(&set, &create(&p)).allowed);
    let update = request_for("UPDATE", Some(&p), Some(&p));
    assert_no_results(&mutate(&set, &update));
}

#[test]
fn a_match_condition_error_under_fail_is_a_mutation_error() {
    let policy = mutate_policy("ivpol-mutate-digest", PIN, "[Deny]").replace(
        "  validations:\n",
        "  matchConditions:\n    - name: boom\n      expression: \"object.metadata.labels.missing == 'x'\"\n  validations:\n",
    );
    let set = load(std::slice::from_ref(&policy));
    let v = mutate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Error);
    assert!(
        only_message(&v).starts_with("failed to update digest: matchCondition boom: "),
        "{}",
        only_message(&v)
    );
    let lenient = policy.replace("failurePolicy: Fail", "failurePolicy: Ignore");
    let set = load(&[lenient]);
    assert_no_results(&mutate(&set, &create(&pod("p", &[SIGNED]))));
}

#[test]
fn the_validate_phase_does_not_pin_digests() {
    let set = load(&[mutate_policy("ivpol-mutate-digest", PIN, "[Deny]")]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(
        outcomes(&v),
        one("ivpol-mutate-digest", Status::Pass, "success")
    );
}

// ---------------------------------------------------------- bad requests

#[test]
fn malformed_requests_are_errors() {
    let set = load(&[simple("check-name", NAME_IS_NOT_BAD)]);
    let run = |request: &str, namespace: Option<&str>| {
        set.admit(
            Phase::Validate,
            &Scope::Cluster,
            &[],
            request,
            namespace,
            std::sync::Arc::new(Offline),
        )
    };
    assert!(run("{not json", None).is_err());
    let mut missing_resource = create(&pod("p", &[SIGNED]));
    missing_resource
        .as_object_mut()
        .map(|o| o.remove("resource"));
    assert!(run(&missing_resource.to_string(), None).is_err());
    let mut bad_operation = create(&pod("p", &[SIGNED]));
    bad_operation["operation"] = json!("PATCH");
    assert!(run(&bad_operation.to_string(), None).is_err());
    let mut missing_operation = create(&pod("p", &[SIGNED]));
    missing_operation
        .as_object_mut()
        .map(|o| o.remove("operation"));
    assert!(run(&missing_operation.to_string(), None).is_err());
    let good = create(&pod("p", &[SIGNED])).to_string();
    // The namespace object is only read for a policy that needs it.
    assert!(run(&good, Some("{not json")).is_ok());
    let selecting = load(&[ivp(
        "selected",
        &spec(&[
            "matchConstraints:\n  namespaceSelector:\n    matchLabels:\n      env: prod\n  resourceRules:\n    - apiGroups: ['']\n      apiVersions: [v1]\n      operations: [CREATE]\n      resources: [pods]\n",
            RELAXED,
            NO_ATTESTORS,
            "validations:\n  - expression: \"false\"\n    message: checked\n",
        ]),
    )]);
    let bad_namespace = selecting.admit(
        Phase::Validate,
        &Scope::Cluster,
        &[],
        &good,
        Some("{not json"),
        std::sync::Arc::new(Offline),
    );
    assert!(bad_namespace.is_err());
    assert!(set
        .admit(
            Phase::Mutate,
            &Scope::Cluster,
            &[],
            "[]",
            None,
            std::sync::Arc::new(Offline)
        )
        .is_err());
    assert!(run(&good, None).is_ok());
}

// ------------------------------------------------------------ diagnostics

#[test]
fn a_broken_policy_is_a_diagnostic_and_the_others_still_apply() {
    let broken = simple("broken", "validations:\n  - expression: \"object.(\"\n");
    let good = with_actions("check-name", "[Deny]");
    let set = PolicySet::load(&[
        SourceDocument {
            source: "broken.yaml".into(),
            content: broken,
        },
        SourceDocument {
            source: "good.yaml".into(),
            content: good,
        },
    ]);
    assert_eq!(set.diagnostics().len(), 1);
    let d = &set.diagnostics()[0];
    assert_eq!(d.source, "broken.yaml");
    assert_eq!(d.policy.as_deref(), Some("broken"));
    assert!(
        d.message.starts_with("spec.validations[0].expression"),
        "{}",
        d.message
    );
    // The broken policy still judges: it denies on the unnamed route
    // (ivpol cannot know what it would have matched); the good one runs.
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert_eq!(policies_of(&v), vec!["broken", "check-name"]);
    let broken = &v.results[0];
    assert_eq!(broken.status, Status::Error);
    assert!(
        broken
            .message
            .starts_with("policy failed to load: spec.validations[0].expression"),
        "{}",
        broken.message
    );
    assert!(!v.allowed);
}

/// JSON mode without a network.
trait OfflineJson {
    fn evaluate_json_offline(&self, payload: &str) -> Result<Verdict, String>;
}

impl OfflineJson for PolicySet {
    fn evaluate_json_offline(&self, payload: &str) -> Result<Verdict, String> {
        self.evaluate_json(payload, std::sync::Arc::new(Offline))
    }
}

mod bounds;
mod cost;
mod exceptions;
mod fields;
mod kyverno_conformance;
mod resources;
mod review;
mod tuf;
mod verification;
