//! Admission semantics of the engine, driven only through the public API
//! (`PolicySet::load`, `admit`, `evaluate_json`, `diagnostics`) with Kyverno
//! ImageValidatingPolicy YAML and AdmissionRequest JSON. Expected messages are
//! Kyverno's (`docs/compatibility.md`), byte for byte where Kyverno's text does not
//! depend on the CEL implementation.

use ivpol_engine::engine::{Phase, PolicySet, Scope, Status, Verdict};
use ivpol_oci::transport::Offline;
use ivpol_policy::policy::SourceDocument;
use serde_json::{json, Value};

// The shared fixtures are below; the tests are in one module per area
// (the list at the end), each named for what it covers.

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

/// Pods, CREATE only (the conformance autogen policies' rule).
const POD_CREATE: &str = "
matchConstraints:
  resourceRules:
    - apiGroups: ['']
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
";

const PROD_ONLY: &str = r#"
matchConditions:
  - name: check-prod-label
    expression: >-
      has(object.metadata.labels) && has(object.metadata.labels.prod) && object.metadata.labels.prod == 'true'
"#;

const PIN: &str =
    "validationConfigurations:\n  mutateDigest: true\n  verifyDigest: false\n  required: false\n";

fn prod_pod(name: &str) -> Value {
    let mut p = pod(name, &[SIGNED]);
    p["metadata"]["labels"]["prod"] = json!("true");
    p
}

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

fn not_verified(image: &str) -> String {
    format!(
        "image {image} is not verified: no policy performed a signature or attestation check on it"
    )
}

fn policies_of(v: &Verdict) -> Vec<String> {
    v.results.iter().map(|r| r.policy.clone()).collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

mod autogen;
mod bad_requests;
mod bounds;
mod cost;
mod diagnostics;
mod exceptions;
mod fields;
mod forged_annotations;
mod images;
mod json_mode;
mod kyverno_conformance;
mod match_conditions;
mod match_constraints;
mod mutate_phase;
mod outside_admission;
mod policy_review;
mod required;
mod resources;
mod review;
mod scope;
mod status;
mod tuf;
mod validations;
mod variables;
mod verdict;
mod verification;
mod verify_digest;
