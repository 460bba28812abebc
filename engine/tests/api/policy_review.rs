//! `PolicySet::review_policy`, the policy-validation webhook: a policy
//! object is refused at admission with the diagnostics `serve` would log,
//! under the set's own exception scope.

use super::*;
use ivpol_policy::policy::exception::ExceptionScope;

/// The AdmissionReview of `operation` on the policy object `yaml` (in
/// `namespace`, empty for a cluster-scoped one).
fn policy_review(operation: &str, namespace: &str, yaml: &str) -> Vec<u8> {
    let object: Value = serde_yaml_ng::from_str(yaml).expect("YAML");
    let kind = object["kind"].as_str().unwrap_or_default().to_string();
    let name = object["metadata"]["name"].clone();
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": {"group": "policies.kyverno.io", "version": "v1beta1", "kind": kind},
            "resource": {"group": "policies.kyverno.io", "version": "v1beta1", "resource": "x"},
            "name": name,
            "namespace": namespace,
            "operation": operation,
            "object": object,
        },
    })
    .to_string()
    .into_bytes()
}

fn judged(set: &PolicySet, body: &[u8]) -> Value {
    let answer = set.review_policy(body).expect("judged");
    serde_json::from_slice(&answer.response).expect("JSON")
}

fn empty_set(scope: ExceptionScope) -> PolicySet {
    PolicySet::load_scoped(&[], scope)
}

#[test]
fn a_policy_that_loads_is_admitted() {
    let good = simple("p", "validations:\n  - expression: 'true'\n");
    let out = judged(
        &empty_set(ExceptionScope::Any),
        &policy_review("CREATE", "", &good),
    );
    assert_eq!(out["response"]["allowed"], true, "{out}");
    assert_eq!(out["response"]["uid"], "u-1");
}

#[test]
fn a_broken_policy_is_refused_with_its_diagnostics() {
    let broken = simple(
        "p",
        "validations:\n  - expression: 'object.(('\n  - expression: 'frobnicate(1)'\n",
    );
    let out = judged(
        &empty_set(ExceptionScope::Any),
        &policy_review("UPDATE", "", &broken),
    );
    assert_eq!(out["response"]["allowed"], false, "{out}");
    let message = out["response"]["status"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.starts_with("ImageValidatingPolicy p is invalid: spec.validations[0].expression"),
        "{message}"
    );
    // DELETE never blocks removing a policy.
    let out = judged(
        &empty_set(ExceptionScope::Any),
        &policy_review("DELETE", "", &broken),
    );
    assert_eq!(out["response"]["allowed"], true, "{out}");
}

/// A tenant's exception naming a cluster policy is refused when it is
/// written, under the scope the server runs with.
#[test]
fn an_exception_outside_the_scope_is_refused_when_written() {
    let exception = "apiVersion: policies.kyverno.io/v1beta1\nkind: PolicyException\nmetadata:\n  name: open\nspec:\n  policyRefs:\n    - name: gate\n      kind: ImageValidatingPolicy\n  matchConditions:\n    - name: always\n      expression: 'true'\n";
    let scoped = empty_set(ExceptionScope::Namespaces(vec!["ivpol".into()]));
    let out = judged(&scoped, &policy_review("CREATE", "attacker", exception));
    assert_eq!(out["response"]["allowed"], false, "{out}");
    let message = out["response"]["status"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("an exception in namespace \"attacker\" may not exempt a cluster policy"),
        "{message}"
    );
    let out = judged(&scoped, &policy_review("CREATE", "ivpol", exception));
    assert_eq!(out["response"]["allowed"], true, "{out}");
}

#[test]
fn other_kinds_pass_and_a_body_that_is_no_review_is_unjudgeable() {
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n";
    let out = judged(
        &empty_set(ExceptionScope::Any),
        &policy_review("CREATE", "team", cm),
    );
    assert_eq!(out["response"]["allowed"], true, "{out}");
    assert_eq!(
        empty_set(ExceptionScope::Any)
            .review_policy(b"{\"kind\":\"Pod\"}")
            .unwrap_err(),
        ivpol_engine::engine::review::Unjudgeable::NotAdmissionReview(
            "kind must be AdmissionReview, got \"Pod\"".into()
        )
    );
}
