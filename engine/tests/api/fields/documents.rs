//! The policy documents the field tables are built from: small relaxed
//! pods policies, each differing in one field.

use super::*;

/// A pods policy named `f` failing every request it evaluates.
pub(super) const FAILS: &str = "validations:\n  - expression: 'false'\n    message: failed\n";
pub(super) const PASSES: &str = "validations:\n  - expression: 'true'\n";

/// A relaxed pods policy with `extra` (which must hold `validations`).
pub(super) fn pol(extra: &str) -> String {
    ivp("f", &spec(&[PODS, RELAXED, NO_ATTESTORS, extra]))
}

/// A relaxed policy without `matchConstraints`, which `extra` gives.
pub(super) fn pol_mc(extra: &str) -> String {
    ivp("f", &spec(&[RELAXED, NO_ATTESTORS, FAILS, extra]))
}

/// `matchConstraints` with one resource rule (`rule` lines added to the
/// pods rule) and `rest` under matchConstraints.
pub(super) fn rule(field: &str, rest: &str) -> String {
    format!(
        "matchConstraints:\n  resourceRules:\n    - apiGroups: ['']\n      apiVersions: [v1]\n      operations: [CREATE]\n      resources: [pods]\n{field}{rest}"
    )
}

/// The same pods rule excluded again, narrowed by `field`.
pub(super) fn excluded(field: &str) -> String {
    rule(
        "",
        &format!("  excludeResourceRules:\n    - apiGroups: ['']\n      apiVersions: [v1]\n      operations: [CREATE]\n      resources: [pods]\n{field}"),
    )
}

pub(super) fn pod_request() -> Value {
    create(&pod("p", &[NGINX]))
}

pub(super) fn verdict(a: String, b: String) -> Proof {
    Decides {
        a,
        b,
        request: pod_request(),
    }
}

/// A relaxed policy whose single validation is `expression`.
pub(super) fn checks(expression: &str, extra: &str) -> String {
    pol(&format!(
        "{extra}validations:\n  - expression: {}\n    message: failed\n",
        serde_json::json!(expression)
    ))
}

pub(super) const KEY_PEM: &str = "-----BEGIN PUBLIC KEY-----\n  MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE+lmmxGvQwZYNU1scQBJ4FiWWgOWU\n  9xE+0y7rYzP/31bDkonjc08sMX1Qxz7SQev9+mREk+3y03toB/gjxLYQSQ==\n  -----END PUBLIC KEY-----";

/// A policy with one cosign attestor `c` whose YAML under `cosign` is
/// `cosign` (indented by the caller), and a validation using it.
pub(super) fn with_cosign(cosign: &str) -> String {
    ivp(
        "f",
        &spec(&[
            PODS,
            RELAXED,
            &format!("attestors:\n  - name: c\n    cosign:\n{cosign}"),
            "validations:\n  - expression: \"images.containers.all(i, verifyImageSignatures(i, [attestors.c]) > 0)\"\n",
        ]),
    )
}

/// `with_cosign` with a key attestor and `extra` cosign lines.
pub(super) fn key_with(extra: &str) -> String {
    with_cosign(&format!(
        "      key:\n        data: |\n          {}\n{extra}",
        KEY_PEM.replace("\n  ", "\n          ")
    ))
}

pub(super) fn exception(extra: &str) -> String {
    format!(
        "apiVersion: policies.kyverno.io/v1alpha1\nkind: PolicyException\nmetadata:\n  name: e\nspec:\n  policyRefs:\n    - name: f\n      kind: ImageValidatingPolicy\n{extra}"
    )
}

pub(super) fn with_exception(extra: &str) -> String {
    format!("{}---\n{}", pol(FAILS), exception(extra))
}

/// Helpers that write attestor YAML for the end-to-end tests: (the file
/// defining it, its name). A test calling one sets what the helper writes.
pub(super) const HELPERS: &[(&str, &str)] = &[
    (COSIGN_E2E, "keyless_attestor"),
    (COSIGN_E2E, "key_attestor_with_rekor"),
    ("tests/src/policy.rs", "key_attestor"),
    (FIELDS_E2E, "keyless"),
    (FIELDS_E2E, "extensions"),
    ("tests/src/policy.rs", "notary_attestor"),
];

pub(super) const COSIGN_E2E: &str = "tests/tests/e2e/cosign.rs";
pub(super) const FIELDS_E2E: &str = "tests/tests/e2e/attestor_fields.rs";
pub(super) const NOTARY_E2E: &str = "tests/tests/e2e/notary.rs";
