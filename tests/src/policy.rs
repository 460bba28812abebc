//! Kyverno policy YAML for the tests: the common head of an
//! ImageValidatingPolicy that matches Pods, with the rest of `spec` given.

/// An ImageValidatingPolicy matching Pod `operations` (e.g. `"CREATE", "UPDATE"`),
/// with `spec_tail` (YAML indented by two spaces) appended to its spec.
pub fn pod_policy(name: &str, operations: &str, spec_tail: &str) -> String {
    format!(
        r#"apiVersion: policies.kyverno.io/v1beta1
kind: ImageValidatingPolicy
metadata:
  name: {name}
spec:
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        operations: [{operations}]
        resources: ["pods"]
{spec_tail}"#
    )
}
