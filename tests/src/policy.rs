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

/// The message of Kyverno's own Notary test policy.
pub const NOTARY_NOT_SIGNED: &str = "failed to verify image with notary cert";

/// A Notary attestor trusting `root` (and timestamps from `tsa_root`).
pub fn notary_attestor(name: &str, root: &str, tsa_root: Option<&str>) -> String {
    let mut a = format!(
        "- name: {name}\n  notary:\n    certs:\n      value: |\n        {}",
        indent(root, 8)
    );
    if let Some(tsa) = tsa_root {
        a.push_str(&format!(
            "\n    tsaCerts:\n      value: |\n        {}",
            indent(tsa, 8)
        ));
    }
    a
}

/// Policy `name`: every container's image has a Notary signature that
/// `attestor` (named `notary`) verifies, else [`NOTARY_NOT_SIGNED`].
pub fn notary_signatures_policy(name: &str, attestor: &str) -> (String, String) {
    let check =
        "images.containers.map(i, verifyImageSignatures(i, [attestors.notary])).all(n, n > 0)";
    (
        name.to_string(),
        verifying_policy(name, attestor, "", check, NOTARY_NOT_SIGNED),
    )
}
