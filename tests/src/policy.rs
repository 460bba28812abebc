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

/// `text` with every line but the first indented by `n` spaces (to splice
/// PEM or YAML under a key).
pub fn indent(text: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    text.trim_end()
        .lines()
        .collect::<Vec<_>>()
        .join(&format!("\n{pad}"))
}

/// A pods policy that verifies: `attestors` and `attestations` (YAML list
/// items at column 0; `attestations` may be empty), one validation with
/// its message, digests neither pinned nor required.
pub fn verifying_policy(
    name: &str,
    attestors: &str,
    attestations: &str,
    validation: &str,
    message: &str,
) -> String {
    let attestations = match attestations {
        "" => String::new(),
        a => format!("  attestations:\n    {}\n", indent(a, 4)),
    };
    let tail = format!(
        "  validationConfigurations:\n    mutateDigest: false\n    verifyDigest: false\n  attestors:\n    {}\n{attestations}  validations:\n    - expression: >-\n        {validation}\n      message: {message}\n",
        indent(attestors, 4)
    );
    pod_policy(name, "\"CREATE\"", &tail)
}

/// A cosign attestor `name` whose key the host reads from `kms` (a
/// `key.kms` URI), without a transparency log.
pub fn kms_attestor(name: &str, kms: &str) -> String {
    format!(
        "- name: {name}\n  cosign:\n    key:\n      kms: {kms}\n    ctlog:\n      insecureIgnoreTlog: true"
    )
}

/// A cosign key attestor without a transparency log (the air-gapped path).
pub fn key_attestor(name: &str, pem: &str) -> String {
    format!(
        "- name: {name}\n  cosign:\n    key:\n      data: |\n        {}\n    ctlog:\n      insecureIgnoreTlog: true",
        indent(pem, 8)
    )
}
