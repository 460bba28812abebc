//! Every `spec` field of the vendored CRDs is either read or refused
//! (`docs/security.md`, issue 13): a field that is parsed and ignored is a bypass.
//!
//! The test walks every property path under `spec` of Kyverno's
//! ImageValidatingPolicy, NamespacedImageValidatingPolicy and
//! PolicyException CRDs (`conformance/kyverno/config/crds`, every served
//! version) and holds them against one table, an entry per path. Each entry
//! proves one of:
//! - `Decides` / `Background` / `Webhook` / `Timeout`: the engine reads the
//!   field: the admission verdict (or the background scan, the generated
//!   webhook configurations, the deadline) differs between two policy sets
//!   that differ only in that field;
//! - `Refused`: a policy setting the field is rejected at load with a
//!   diagnostic naming the field's path;
//! - `Elsewhere`: the proof needs real signatures and lives in the named
//!   test, which must exist and name the field;
//! - `Parent`: an object or list whose every child has its own proof.
//!
//! A CRD path missing from the table, or a table path the CRDs lack, fails
//! the test: a new Kyverno field cannot arrive unnoticed.

use super::*;
use std::collections::{BTreeMap, BTreeSet};

const CRDS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../conformance/kyverno/config/crds/policies.kyverno.io/"
);

/// Every property path under `spec`, `[]` marking list items, over all
/// versions of the CRD in `file`.
fn crd_paths(file: &str) -> BTreeSet<String> {
    fn walk(schema: &serde_yaml_ng::Value, path: &str, out: &mut BTreeSet<String>) {
        if let Some(props) = schema.get("properties").and_then(|p| p.as_mapping()) {
            for (k, v) in props {
                let k = k.as_str().expect("property names are strings");
                let p = format!("{path}.{k}");
                out.insert(p.clone());
                walk(v, &p, out);
            }
        }
        if let Some(items) = schema.get("items") {
            walk(items, &format!("{path}[]"), out);
        }
        if let Some(extra) = schema.get("additionalProperties") {
            if extra.is_mapping() {
                walk(extra, &format!("{path}{{}}"), out);
            }
        }
    }
    let text = std::fs::read_to_string(format!("{CRDS}{file}")).expect("vendored CRD");
    let crd: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).expect("CRD YAML");
    let mut out = BTreeSet::new();
    let versions = crd["spec"]["versions"].as_sequence().expect("versions");
    assert!(!versions.is_empty());
    for v in versions {
        let spec = &v["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert!(spec.is_mapping(), "{file}: no spec schema");
        walk(spec, "spec", &mut out);
    }
    out
}

enum Proof {
    /// Validate-phase verdicts of `request` differ between `a` and `b`.
    Decides {
        a: String,
        b: String,
        request: Value,
    },
    /// Verdicts differ with this phase, request and namespace object.
    DecidesWith {
        a: String,
        b: String,
        phase: Phase,
        request: Value,
        namespace: Option<String>,
    },
    /// The background scan of `resource` differs.
    Background {
        a: String,
        b: String,
        resource: Value,
    },
    /// The generated webhook configurations differ.
    Webhook { a: String, b: String },
    /// `PolicySet::max_timeout_seconds` (the deadline) differs.
    Timeout { a: String, b: String },
    /// `doc` is refused with a diagnostic naming the field.
    Refused(String),
    /// Proven by `test` in `file` (relative to the workspace).
    Elsewhere {
        file: &'static str,
        test: &'static str,
    },
    /// Each child has its own proof.
    Parent,
}

use Proof::*;

/// A pods policy named `f` failing every request it evaluates.
const FAILS: &str = "validations:\n  - expression: 'false'\n    message: failed\n";
const PASSES: &str = "validations:\n  - expression: 'true'\n";

/// A relaxed pods policy with `extra` (which must hold `validations`).
fn pol(extra: &str) -> String {
    ivp("f", &spec(&[PODS, RELAXED, NO_ATTESTORS, extra]))
}

/// A relaxed policy without `matchConstraints`, which `extra` gives.
fn pol_mc(extra: &str) -> String {
    ivp("f", &spec(&[RELAXED, NO_ATTESTORS, FAILS, extra]))
}

/// `matchConstraints` with one resource rule (`rule` lines added to the
/// pods rule) and `rest` under matchConstraints.
fn rule(field: &str, rest: &str) -> String {
    format!(
        "matchConstraints:\n  resourceRules:\n    - apiGroups: ['']\n      apiVersions: [v1]\n      operations: [CREATE]\n      resources: [pods]\n{field}{rest}"
    )
}

/// The same pods rule excluded again, narrowed by `field`.
fn excluded(field: &str) -> String {
    rule(
        "",
        &format!("  excludeResourceRules:\n    - apiGroups: ['']\n      apiVersions: [v1]\n      operations: [CREATE]\n      resources: [pods]\n{field}"),
    )
}

fn pod_request() -> Value {
    create(&pod("p", &[NGINX]))
}

fn verdict(a: String, b: String) -> Proof {
    Decides {
        a,
        b,
        request: pod_request(),
    }
}

/// A relaxed policy whose single validation is `expression`.
fn checks(expression: &str, extra: &str) -> String {
    pol(&format!(
        "{extra}validations:\n  - expression: {}\n    message: failed\n",
        serde_json::json!(expression)
    ))
}

const KEY_PEM: &str = "-----BEGIN PUBLIC KEY-----\n  MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE+lmmxGvQwZYNU1scQBJ4FiWWgOWU\n  9xE+0y7rYzP/31bDkonjc08sMX1Qxz7SQev9+mREk+3y03toB/gjxLYQSQ==\n  -----END PUBLIC KEY-----";

/// A policy with one cosign attestor `c` whose YAML under `cosign` is
/// `cosign` (indented by the caller), and a validation using it.
fn with_cosign(cosign: &str) -> String {
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
fn key_with(extra: &str) -> String {
    with_cosign(&format!(
        "      key:\n        data: |\n          {}\n{extra}",
        KEY_PEM.replace("\n  ", "\n          ")
    ))
}

/// `with_cosign` with a keyless attestor: `identity` under identities[0], `extra` under keyless.
fn keyless_with(identity: &str, extra: &str) -> String {
    with_cosign(&format!(
        "      keyless:\n        identities:\n          - issuer: https://issuer.example\n            {identity}\n{extra}"
    ))
}

fn exception(extra: &str) -> String {
    format!(
        "apiVersion: policies.kyverno.io/v1alpha1\nkind: PolicyException\nmetadata:\n  name: e\nspec:\n  policyRefs:\n    - name: f\n      kind: ImageValidatingPolicy\n{extra}"
    )
}

fn with_exception(extra: &str) -> String {
    format!("{}---\n{}", pol(FAILS), exception(extra))
}

/// Helpers that write attestor YAML for the end-to-end tests: (the file
/// defining it, its name). A test calling one sets what the helper writes.
const HELPERS: &[(&str, &str)] = &[
    (COSIGN_E2E, "keyless_attestor"),
    (COSIGN_E2E, "key_attestor_with_rekor"),
    ("tests/src/policy.rs", "key_attestor"),
    (FIELDS_E2E, "keyless"),
    (FIELDS_E2E, "extensions"),
    (NOTARY_E2E, "attestor"),
];

const COSIGN_E2E: &str = "tests/tests/e2e/cosign.rs";
const FIELDS_E2E: &str = "tests/tests/e2e/attestor_fields.rs";
const NOTARY_E2E: &str = "tests/tests/e2e/notary.rs";

/// The policy table: one entry per IVP/NIVP `spec` path.
fn policy_table() -> BTreeMap<&'static str, Proof> {
    let mut t: BTreeMap<&'static str, Proof> = BTreeMap::new();
    let mut add = |path: &'static str, proof: Proof| {
        assert!(t.insert(path, proof).is_none(), "{path} twice in the table");
    };
    // --- matchConstraints
    add("spec.matchConstraints", Parent);
    add("spec.matchConstraints.resourceRules", Parent);
    add("spec.matchConstraints.excludeResourceRules", Parent);
    for (field, a, b) in [
        ("apiGroups", "['']", "[apps]"),
        ("apiVersions", "[v1]", "[v2]"),
        ("operations", "[CREATE]", "[UPDATE]"),
        ("resources", "[pods]", "[deployments]"),
    ] {
        let swap = |v: &str| {
            rule("", "").replacen(&format!("{field}: {}", a), &format!("{field}: {v}"), 1)
        };
        let path: &'static str =
            Box::leak(format!("spec.matchConstraints.resourceRules[].{field}").into_boxed_str());
        add(path, verdict(pol_mc(&swap(a)), pol_mc(&swap(b))));
        let path: &'static str = Box::leak(
            format!("spec.matchConstraints.excludeResourceRules[].{field}").into_boxed_str(),
        );
        // Change the field in the excluded rule only (its second occurrence).
        let ex = |v: &str| {
            let base = excluded("");
            let needle = format!("{field}: {a}");
            let first = base.find(&needle).expect("field in rule") + needle.len();
            let second = first + base[first..].find(&needle).expect("field in exclusion");
            format!(
                "{}{field}: {v}{}",
                &base[..second],
                &base[second + needle.len()..]
            )
        };
        add(path, verdict(pol_mc(&ex(a)), pol_mc(&ex(b))));
    }
    add(
        "spec.matchConstraints.resourceRules[].resourceNames",
        verdict(
            pol_mc(&rule("      resourceNames: [p]\n", "")),
            pol_mc(&rule("      resourceNames: [q]\n", "")),
        ),
    );
    add(
        "spec.matchConstraints.resourceRules[].scope",
        verdict(
            pol_mc(&rule("      scope: Namespaced\n", "")),
            pol_mc(&rule("      scope: Cluster\n", "")),
        ),
    );
    add(
        "spec.matchConstraints.excludeResourceRules[].resourceNames",
        verdict(
            pol_mc(&excluded("      resourceNames: [p]\n")),
            pol_mc(&excluded("      resourceNames: [q]\n")),
        ),
    );
    add(
        "spec.matchConstraints.excludeResourceRules[].scope",
        verdict(
            pol_mc(&excluded("      scope: Namespaced\n")),
            pol_mc(&excluded("      scope: Cluster\n")),
        ),
    );
    add(
        "spec.matchConstraints.matchPolicy",
        Webhook {
            a: pol_mc(&rule("", "  matchPolicy: Equivalent\n")),
            b: pol_mc(&rule("", "  matchPolicy: Exact\n")),
        },
    );
    // Selectors: the pod is labelled app=web, its namespace env=prod.
    for (selector, labels) in [("namespaceSelector", true), ("objectSelector", false)] {
        let prefix = format!("spec.matchConstraints.{selector}");
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        let (key, value) = if labels {
            ("env", "prod")
        } else {
            ("app", "web")
        };
        let proof = |sel_a: String, sel_b: String| DecidesWith {
            a: pol_mc(&rule("", &format!("  {selector}:\n{sel_a}"))),
            b: pol_mc(&rule("", &format!("  {selector}:\n{sel_b}"))),
            phase: Phase::Validate,
            request: pod_request(),
            namespace: Some(namespace_object("default", json!({"env": "prod"}))),
        };
        add(leak(prefix.clone()), Parent);
        add(leak(format!("{prefix}.matchExpressions")), Parent);
        add(
            leak(format!("{prefix}.matchLabels")),
            proof(
                format!("    matchLabels: {{{key}: {value}}}\n"),
                format!("    matchLabels: {{{key}: other}}\n"),
            ),
        );
        let expr = |k: &str, op: &str, v: &str| {
            format!("    matchExpressions:\n      - key: {k}\n        operator: {op}\n        values: [{v}]\n")
        };
        add(
            leak(format!("{prefix}.matchExpressions[].key")),
            proof(expr(key, "In", value), expr("nope", "In", value)),
        );
        add(
            leak(format!("{prefix}.matchExpressions[].operator")),
            proof(expr(key, "In", value), expr(key, "NotIn", value)),
        );
        add(
            leak(format!("{prefix}.matchExpressions[].values")),
            proof(expr(key, "In", value), expr(key, "In", "other")),
        );
    }
    // --- top-level behaviour
    add(
        "spec.failurePolicy",
        verdict(
            pol(&format!("failurePolicy: Ignore\nmatchConditions:\n  - name: c\n    expression: \"object.nope == 1\"\n{FAILS}")),
            pol(&format!("failurePolicy: Fail\nmatchConditions:\n  - name: c\n    expression: \"object.nope == 1\"\n{FAILS}")),
        ),
    );
    add("spec.auditAnnotations", Parent);
    add(
        "spec.auditAnnotations[].key",
        verdict(
            pol(&format!(
                "auditAnnotations:\n  - key: a\n    valueExpression: \"'v'\"\n{PASSES}"
            )),
            pol(&format!(
                "auditAnnotations:\n  - key: b\n    valueExpression: \"'v'\"\n{PASSES}"
            )),
        ),
    );
    add(
        "spec.auditAnnotations[].valueExpression",
        verdict(
            pol(&format!(
                "auditAnnotations:\n  - key: a\n    valueExpression: \"'v'\"\n{PASSES}"
            )),
            pol(&format!(
                "auditAnnotations:\n  - key: a\n    valueExpression: \"'w'\"\n{PASSES}"
            )),
        ),
    );
    add(
        "spec.validationActions",
        verdict(
            pol(&format!("validationActions: [Deny]\n{FAILS}")),
            pol(&format!("validationActions: [Warn]\n{FAILS}")),
        ),
    );
    add("spec.matchConditions", Parent);
    add(
        "spec.matchConditions[].expression",
        verdict(
            pol(&format!(
                "matchConditions:\n  - name: c\n    expression: 'true'\n{FAILS}"
            )),
            pol(&format!(
                "matchConditions:\n  - name: c\n    expression: 'false'\n{FAILS}"
            )),
        ),
    );
    // The name is what the fine-grained webhook's matchConditions carry.
    add(
        "spec.matchConditions[].name",
        Webhook {
            a: pol(&format!(
                "matchConditions:\n  - name: c\n    expression: 'true'\n{FAILS}"
            )),
            b: pol(&format!(
                "matchConditions:\n  - name: d\n    expression: 'true'\n{FAILS}"
            )),
        },
    );
    add("spec.variables", Parent);
    add(
        "spec.variables[].expression",
        verdict(
            checks(
                "variables.v",
                "variables:\n  - name: v\n    expression: 'true'\n",
            ),
            checks(
                "variables.v",
                "variables:\n  - name: v\n    expression: 'false'\n",
            ),
        ),
    );
    add(
        "spec.variables[].name",
        verdict(
            checks(
                "variables.v",
                "variables:\n  - name: v\n    expression: 'true'\n",
            ),
            checks(
                "variables.v",
                "variables:\n  - name: w\n    expression: 'true'\n",
            ),
        ),
    );
    add("spec.validationConfigurations", Parent);
    add(
        "spec.validationConfigurations.mutateDigest",
        DecidesWith {
            a: ivp(
                "f",
                &spec(&[
                    PODS,
                    NO_ATTESTORS,
                    PASSES,
                    "validationConfigurations:\n  mutateDigest: true\n",
                ]),
            ),
            b: ivp(
                "f",
                &spec(&[
                    PODS,
                    NO_ATTESTORS,
                    PASSES,
                    "validationConfigurations:\n  mutateDigest: false\n",
                ]),
            ),
            phase: Phase::Mutate,
            request: pod_request(),
            namespace: None,
        },
    );
    add(
        "spec.validationConfigurations.verifyDigest",
        verdict(
            ivp(
                "f",
                &spec(&[
                    PODS,
                    NO_ATTESTORS,
                    PASSES,
                    "validationConfigurations:\n  required: false\n  verifyDigest: true\n",
                ]),
            ),
            ivp(
                "f",
                &spec(&[
                    PODS,
                    NO_ATTESTORS,
                    PASSES,
                    "validationConfigurations:\n  required: false\n  verifyDigest: false\n",
                ]),
            ),
        ),
    );
    add(
        "spec.validationConfigurations.required",
        verdict(
            ivp(
                "f",
                &spec(&[
                    PODS,
                    NO_ATTESTORS,
                    PASSES,
                    "validationConfigurations:\n  verifyDigest: false\n  required: true\n",
                ]),
            ),
            ivp(
                "f",
                &spec(&[
                    PODS,
                    NO_ATTESTORS,
                    PASSES,
                    "validationConfigurations:\n  verifyDigest: false\n  required: false\n",
                ]),
            ),
        ),
    );
    // With verifyDigest on, only a matched image needs a digest.
    let digest_checked = |refs: &str| {
        ivp(
            "f",
            &spec(&[
                PODS,
                NO_ATTESTORS,
                PASSES,
                "validationConfigurations:\n  required: false\n",
                refs,
            ]),
        )
    };
    add("spec.matchImageReferences", Parent);
    add(
        "spec.matchImageReferences[].glob",
        verdict(
            digest_checked("matchImageReferences:\n  - glob: 'docker.io/*'\n"),
            digest_checked("matchImageReferences:\n  - glob: 'ghcr.io/*'\n"),
        ),
    );
    add(
        "spec.matchImageReferences[].expression",
        verdict(
            digest_checked(
                "matchImageReferences:\n  - expression: \"ref.startsWith('docker.io/')\"\n",
            ),
            digest_checked(
                "matchImageReferences:\n  - expression: \"ref.startsWith('ghcr.io/')\"\n",
            ),
        ),
    );
    add("spec.credentials", Parent);
    add(
        "spec.credentials.allowInsecureRegistry",
        Refused(pol(&format!(
            "credentials:\n  allowInsecureRegistry: true\n{PASSES}"
        ))),
    );
    // `default` is the only provider ivpol has (the host's credentials);
    // every cloud helper is refused.
    add(
        "spec.credentials.providers",
        Refused(pol(&format!(
            "credentials:\n  providers: [amazon]\n{PASSES}"
        ))),
    );
    add(
        "spec.credentials.secrets",
        Elsewhere {
            file: "tests/tests/e2e/token_auth.rs",
            test: "policy_credentials_secrets_are_read_by_the_host",
        },
    );
    add("spec.images", Parent);
    add(
        "spec.images[].expression",
        verdict(
            checks(
                "images.extra.size() == 0",
                "images:\n  - name: extra\n    expression: '[]'\n",
            ),
            checks(
                "images.extra.size() == 0",
                "images:\n  - name: extra\n    expression: \"['x']\"\n",
            ),
        ),
    );
    add(
        "spec.images[].name",
        verdict(
            checks(
                "images.extra.size() == 0",
                "images:\n  - name: extra\n    expression: '[]'\n",
            ),
            checks(
                "images.extra.size() == 0",
                "images:\n  - name: other\n    expression: '[]'\n",
            ),
        ),
    );
    add("spec.validations", Parent);
    add(
        "spec.validations[].expression",
        verdict(pol(PASSES), pol(FAILS)),
    );
    add(
        "spec.validations[].message",
        verdict(
            pol("validations:\n  - expression: 'false'\n    message: one\n"),
            pol("validations:\n  - expression: 'false'\n    message: two\n"),
        ),
    );
    add(
        "spec.validations[].messageExpression",
        verdict(
            pol("validations:\n  - expression: 'false'\n    messageExpression: \"'one'\"\n"),
            pol("validations:\n  - expression: 'false'\n    messageExpression: \"'two'\"\n"),
        ),
    );
    add(
        "spec.validations[].reason",
        Refused(pol(
            "validations:\n  - expression: 'false'\n    reason: Forbidden\n",
        )),
    );
    add("spec.webhookConfiguration", Parent);
    add(
        "spec.webhookConfiguration.timeoutSeconds",
        Timeout {
            a: pol(&format!(
                "webhookConfiguration:\n  timeoutSeconds: 5\n{FAILS}"
            )),
            b: pol(&format!(
                "webhookConfiguration:\n  timeoutSeconds: 20\n{FAILS}"
            )),
        },
    );
    add("spec.evaluation", Parent);
    add("spec.evaluation.admission", Parent);
    add("spec.evaluation.background", Parent);
    add(
        "spec.evaluation.mode",
        verdict(
            pol(&format!("evaluation:\n  mode: Kubernetes\n{FAILS}")),
            pol(&format!("evaluation:\n  mode: JSON\n{FAILS}")),
        ),
    );
    add(
        "spec.evaluation.admission.enabled",
        verdict(
            pol(&format!(
                "evaluation:\n  admission:\n    enabled: true\n{FAILS}"
            )),
            pol(&format!(
                "evaluation:\n  admission:\n    enabled: false\n{FAILS}"
            )),
        ),
    );
    add(
        "spec.evaluation.background.enabled",
        Background {
            a: pol(&format!(
                "evaluation:\n  background:\n    enabled: true\n{FAILS}"
            )),
            b: pol(&format!(
                "evaluation:\n  background:\n    enabled: false\n{FAILS}"
            )),
            resource: pod("p", &[NGINX]),
        },
    );
    add("spec.autogen", Parent);
    add("spec.autogen.podControllers", Parent);
    add(
        "spec.autogen.podControllers.controllers",
        Decides {
            a: pol(&format!(
                "autogen:\n  podControllers:\n    controllers: [deployments]\n{FAILS}"
            )),
            b: pol(&format!(
                "autogen:\n  podControllers:\n    controllers: [cronjobs]\n{FAILS}"
            )),
            request: create(&deployment("d", json!({}), json!({"app": "web"}), &[NGINX])),
        },
    );
    // --- attestations
    add("spec.attestations", Parent);
    add("spec.attestations[].intoto", Parent);
    add("spec.attestations[].referrer", Parent);
    let extract = |attestation: &str| {
        ivp(
            "f",
            &spec(&[
                PODS,
                RELAXED,
                NO_ATTESTORS,
                &format!("attestations:\n  - name: a\n{attestation}"),
                "validations:\n  - expression: \"images.containers.all(i, extractPayload(i, attestations.a) != null)\"\n",
            ]),
        )
    };
    add(
        "spec.attestations[].name",
        verdict(
            extract("    referrer:\n      type: t\n"),
            extract("    referrer:\n      type: t\n").replace("attestations.a)", "attestations.b)"),
        ),
    );
    add(
        "spec.attestations[].referrer.type",
        verdict(
            extract("    referrer:\n      type: one\n"),
            extract("    referrer:\n      type: two\n"),
        ),
    );
    add(
        "spec.attestations[].intoto.type",
        Elsewhere {
            file: COSIGN_E2E,
            test: "attestations_are_filtered_by_predicate_type_and_extracted_after_verification",
        },
    );
    // --- attestors
    add("spec.attestors", Parent);
    add("spec.attestors[].cosign", Parent);
    add("spec.attestors[].notary", Parent);
    add(
        "spec.attestors[].name",
        verdict(
            key_with(""),
            key_with("").replace("attestors.c]", "attestors.d]"),
        ),
    );
    add("spec.attestors[].cosign.key", Parent);
    add(
        "spec.attestors[].cosign.key.data",
        Elsewhere {
            file: COSIGN_E2E,
            test: "key_signatures_admit_the_signed_and_deny_everything_else",
        },
    );
    add(
        "spec.attestors[].cosign.key.expression",
        Elsewhere {
            file: COSIGN_E2E,
            test: "attestor_expressions_and_hash_algorithms",
        },
    );
    add(
        "spec.attestors[].cosign.key.hashAlgorithm",
        Elsewhere {
            file: COSIGN_E2E,
            test: "attestor_expressions_and_hash_algorithms",
        },
    );
    add(
        "spec.attestors[].cosign.key.kms",
        Refused(with_cosign("      key:\n        kms: awskms:///alias/x\n")),
    );
    add("spec.attestors[].cosign.keyless", Parent);
    add("spec.attestors[].cosign.keyless.identities", Parent);
    for field in [
        "issuer",
        "subject",
        "issuerRegExp",
        "subjectRegExp",
        "subjectExpression",
    ] {
        let path: &'static str = Box::leak(
            format!("spec.attestors[].cosign.keyless.identities[].{field}").into_boxed_str(),
        );
        let (file, test) = match field {
            "subjectExpression" => (FIELDS_E2E, "subject_expression_is_a_per_request_regexp"),
            _ => (FIELDS_E2E, "identity_regexps_and_roots"),
        };
        add(path, Elsewhere { file, test });
    }
    add(
        "spec.attestors[].cosign.trustedRoot.value",
        Elsewhere {
            file: FIELDS_E2E,
            test: "identity_regexps_and_roots",
        },
    );
    add(
        "spec.attestors[].cosign.keyless.roots",
        Elsewhere {
            file: FIELDS_E2E,
            test: "identity_regexps_and_roots",
        },
    );
    add(
        "spec.attestors[].cosign.keyless.additionalExtensions",
        Elsewhere {
            file: FIELDS_E2E,
            test: "additional_extensions_pin_the_workflow",
        },
    );
    add("spec.attestors[].cosign.certificate", Parent);
    for path in [
        "spec.attestors[].cosign.certificate.cert.expression",
        "spec.attestors[].cosign.certificate.certChain.expression",
        "spec.attestors[].notary.certs.expression",
        "spec.attestors[].notary.tsaCerts.expression",
    ] {
        add(
            path,
            Elsewhere {
                file: FIELDS_E2E,
                test: "expressions_supply_certificates_and_notary_trust",
            },
        );
    }
    add("spec.attestors[].cosign.certificate.cert", Parent);
    add("spec.attestors[].cosign.certificate.certChain", Parent);
    for (path, test) in [
        (
            "spec.attestors[].cosign.certificate.cert.value",
            "certificates_annotations_and_bundles_signed_with_keys",
        ),
        (
            "spec.attestors[].cosign.certificate.certChain.value",
            "certificates_annotations_and_bundles_signed_with_keys",
        ),
        (
            "spec.attestors[].cosign.trustedRoot.expression",
            "attestor_expressions_and_hash_algorithms",
        ),
        (
            "spec.attestors[].cosign.ctlog.rekorPubKey",
            "transparency_log_is_required_unless_ignored",
        ),
        (
            "spec.attestors[].cosign.ctlog.ctLogPubKey",
            "certificates_annotations_and_bundles_signed_with_keys",
        ),
        (
            "spec.attestors[].cosign.ctlog.insecureIgnoreSCT",
            "keyless_certificates_need_an_sct_unless_ignored",
        ),
        (
            "spec.attestors[].cosign.source.repository",
            "several_attestors_are_counted_and_signatures_can_live_elsewhere",
        ),
        (
            "spec.attestors[].cosign.source.tagPrefix",
            "several_attestors_are_counted_and_signatures_can_live_elsewhere",
        ),
        (
            "spec.attestors[].cosign.tuf.mirror",
            "tuf_mirrors_supply_the_trusted_root",
        ),
        (
            "spec.attestors[].cosign.tuf.root.data",
            "tuf_mirrors_supply_the_trusted_root",
        ),
        (
            "spec.attestors[].cosign.annotations",
            "certificates_annotations_and_bundles_signed_with_keys",
        ),
    ] {
        add(
            path,
            Elsewhere {
                file: COSIGN_E2E,
                test,
            },
        );
    }
    add("spec.attestors[].cosign.trustedRoot", Parent);
    for path in [
        "spec.attestors[].cosign.ctlog.url",
        "spec.attestors[].cosign.ctlog.insecureIgnoreTlog",
    ] {
        add(
            path,
            Elsewhere {
                file: FIELDS_E2E,
                test: "transparency_log_switches",
            },
        );
    }
    add("spec.attestors[].cosign.ctlog", Parent);
    add(
        "spec.attestors[].cosign.ctlog.tsaCertChain",
        Refused(key_with("      ctlog:\n        tsaCertChain: x\n")),
    );
    add("spec.attestors[].cosign.source", Parent);
    add(
        "spec.attestors[].cosign.source.PullSecrets",
        Refused(key_with(
            "      source:\n        PullSecrets:\n          - name: s\n",
        )),
    );
    add(
        "spec.attestors[].cosign.source.PullSecrets[].name",
        Refused(key_with(
            "      source:\n        PullSecrets:\n          - name: s\n",
        )),
    );
    add("spec.attestors[].cosign.tuf", Parent);
    add("spec.attestors[].cosign.tuf.root", Parent);
    add(
        "spec.attestors[].cosign.tuf.root.path",
        Refused(keyless_with(
            "subject: s",
            "      tuf:\n        root:\n          path: /root.json\n",
        )),
    );
    add("spec.attestors[].notary.certs", Parent);
    add("spec.attestors[].notary.tsaCerts", Parent);
    for (path, test) in [
        (
            "spec.attestors[].notary.certs.value",
            "notary_signatures_admit_the_signed_and_deny_everything_else",
        ),
        (
            "spec.attestors[].notary.tsaCerts.value",
            "timestamps_let_certificates_expire_after_signing",
        ),
    ] {
        add(
            path,
            Elsewhere {
                file: NOTARY_E2E,
                test,
            },
        );
    }
    t
}

/// The PolicyException table: one entry per `spec` path.
fn exception_table() -> BTreeMap<&'static str, Proof> {
    let mut t = BTreeMap::new();
    let skip_p =
        "  matchConditions:\n    - name: c\n      expression: \"object.metadata.name == 'p'\"\n";
    t.insert("spec.policyRefs", Parent);
    t.insert(
        "spec.policyRefs[].name",
        verdict(
            with_exception(skip_p),
            with_exception(skip_p).replace("    - name: f\n", "    - name: g\n"),
        ),
    );
    t.insert(
        "spec.policyRefs[].kind",
        verdict(
            with_exception(skip_p),
            with_exception(skip_p).replace(
                "      kind: ImageValidatingPolicy\n",
                "      kind: ValidatingPolicy\n",
            ),
        ),
    );
    t.insert("spec.matchConditions", Parent);
    t.insert(
        "spec.matchConditions[].expression",
        verdict(
            with_exception(skip_p),
            with_exception(&skip_p.replace("== 'p'", "== 'q'")),
        ),
    );
    // The name is part of the error when the condition fails to evaluate.
    let erring = "  matchConditions:\n    - name: c\n      expression: \"object.nope == 1\"\n";
    t.insert(
        "spec.matchConditions[].name",
        verdict(
            with_exception(erring),
            with_exception(&erring.replace("name: c", "name: d")),
        ),
    );
    t.insert(
        "spec.expiresAt",
        verdict(
            with_exception(&format!("{skip_p}  expiresAt: '2999-01-01T00:00:00Z'\n")),
            with_exception(&format!("{skip_p}  expiresAt: '2001-01-01T00:00:00Z'\n")),
        ),
    );
    t.insert(
        "spec.reportResult",
        verdict(
            with_exception(&format!("{skip_p}  reportResult: skip\n")),
            with_exception(&format!("{skip_p}  reportResult: pass\n")),
        ),
    );
    for (path, line) in [
        ("spec.allowedValues", "  allowedValues: [x]\n"),
        ("spec.images", "  images: [x]\n"),
        ("spec.evaluationMode", "  evaluationMode: Kubernetes\n"),
        ("spec.properties", "  properties:\n    ticket: T-1\n"),
    ] {
        t.insert(path, Refused(exception(&format!("{skip_p}{line}"))));
    }
    t
}

/// What a proof compares of a verdict.
fn summary(v: &Verdict) -> String {
    format!(
        "{} {:?} {:?} {:?} {:?}",
        v.allowed,
        v.message,
        v.warnings,
        v.patch,
        v.results
            .iter()
            .map(|r| (
                &r.policy,
                r.status,
                &r.message,
                &r.audit_annotations,
                &r.exceptions
            ))
            .collect::<Vec<_>>()
    )
}

fn loaded(doc: &str) -> PolicySet {
    load(&[doc.to_string()])
}

/// `doc` turned into a NamespacedImageValidatingPolicy in `default`.
fn namespaced(doc: &str) -> String {
    doc.replace(
        "kind: ImageValidatingPolicy\nmetadata:\n  name: f\n",
        "kind: NamespacedImageValidatingPolicy\nmetadata:\n  name: f\n  namespace: default\n",
    )
    .replace(
        "kind: ImageValidatingPolicy\n",
        "kind: NamespacedImageValidatingPolicy\n",
    )
}

fn webhooks(doc: &str) -> Value {
    let set = loaded(doc);
    let options = crate::webhooks::Options {
        service_name: "ivpol".into(),
        service_namespace: "ivpol-system".into(),
        service_port: 443,
        ca_bundle: b"PEM".to_vec(),
        exclude_namespaces: Vec::new(),
        force_failure_policy_ignore: false,
    };
    crate::webhooks::configurations(set.policies().filter(|p| p.autogen.is_none()), &options)
        .expect("configurations")
}

/// Runs one proof; `Err` says why it does not hold.
fn prove(path: &str, proof: &Proof, scope: &Scope) -> Result<(), String> {
    let differ = |what: &str, a: String, b: String| {
        if a == b {
            Err(format!("{what} is the same either way: {a}"))
        } else {
            Ok(())
        }
    };
    match proof {
        Decides { a, b, request } => {
            let run = |doc: &str| {
                summary(&admit_with(
                    &loaded(doc),
                    Phase::Validate,
                    scope,
                    &[],
                    request,
                    None,
                ))
            };
            differ("the verdict", run(a), run(b))
        }
        DecidesWith {
            a,
            b,
            phase,
            request,
            namespace,
        } => {
            let run = |doc: &str| {
                summary(&admit_with(
                    &loaded(doc),
                    *phase,
                    scope,
                    &[],
                    request,
                    namespace.as_deref(),
                ))
            };
            differ("the verdict", run(a), run(b))
        }
        Background { a, b, resource } => {
            let run = |doc: &str| {
                let v = loaded(doc)
                    .evaluate(
                        &resource.to_string(),
                        "CREATE",
                        None,
                        super::super::Mode::Background,
                        std::sync::Arc::new(Offline),
                    )
                    .map_err(|e| e.to_string());
                format!("{:?}", v.map(|v| summary(&v)))
            };
            differ("the background scan", run(a), run(b))
        }
        Webhook { a, b } => differ(
            "the webhooks",
            webhooks(a).to_string(),
            webhooks(b).to_string(),
        ),
        Timeout { a, b } => differ(
            "the deadline",
            loaded(a).max_timeout_seconds().to_string(),
            loaded(b).max_timeout_seconds().to_string(),
        ),
        Refused(doc) => {
            let set = PolicySet::load(&[SourceDocument {
                source: "fields.yaml".into(),
                content: doc.clone(),
            }]);
            if set.policies().next().is_some() {
                return Err("the policy loaded".into());
            }
            // The diagnostic names the field: its path with list indices.
            let leaf = path.rsplit('.').next().unwrap_or(path);
            let found = set.diagnostics().iter().any(|d| d.message.contains(leaf));
            if found {
                Ok(())
            } else {
                Err(format!(
                    "no diagnostic names {leaf}: {:?}",
                    set.diagnostics()
                ))
            }
        }
        Elsewhere { file, test } => {
            let source =
                std::fs::read_to_string(format!("{}/../{file}", env!("CARGO_MANIFEST_DIR")))
                    .map_err(|e| format!("{file}: {e}"))?;
            let start = source
                .find(&format!("fn {test}("))
                .ok_or_else(|| format!("{file} has no test {test}"))?;
            let body = &source[start..];
            let body = &body[..body.find("\n}\n").unwrap_or(body.len())];
            // The test must set the field: its name appears in its body
            // (or in a helper it calls, named in `HELPERS`).
            let leaf = path
                .rsplit('.')
                .next()
                .unwrap_or(path)
                .trim_end_matches("[]");
            let in_helper = HELPERS.iter().any(|(helper_file, h)| {
                let reachable = helper_file == file || helper_file.starts_with("tests/src/");
                if !reachable || !body.contains(&format!("{h}(")) {
                    return false;
                }
                let path = format!("{}/../{helper_file}", env!("CARGO_MANIFEST_DIR"));
                let text = std::fs::read_to_string(path).unwrap_or_default();
                let Some(start) = text.find(&format!("fn {h}(")) else {
                    return false;
                };
                let rest = &text[start..];
                rest[..rest.find("\n}\n").unwrap_or(rest.len())].contains(leaf)
            });
            if body.contains(leaf) || in_helper {
                Ok(())
            } else {
                Err(format!("{file}: {test} never mentions {leaf}"))
            }
        }
        Parent => Ok(()),
    }
}

/// A `Parent` entry must have children in the table, and only parents may.
fn check_parents(table: &BTreeMap<&'static str, Proof>, problems: &mut Vec<String>) {
    for (path, proof) in table {
        let has_children = table.keys().any(|k| {
            k.len() > path.len()
                && k.starts_with(path)
                && matches!(&k[path.len()..path.len() + 1], "." | "[")
        });
        match (proof, has_children) {
            (Parent, false) => problems.push(format!("{path}: a Parent without children")),
            (Parent, true) | (_, false) => {}
            (_, true) => {}
        }
    }
}

fn check(crd_files: &[&str], table: &BTreeMap<&'static str, Proof>, scopes: &[(&str, Scope)]) {
    let mut problems = Vec::new();
    let mut crd = BTreeSet::new();
    for file in crd_files {
        let paths = crd_paths(file);
        if !crd.is_empty() && paths != crd {
            problems.push(format!("{file}: spec differs from {}", crd_files[0]));
        }
        crd.extend(paths);
    }
    let listed: BTreeSet<String> = table.keys().map(|k| k.to_string()).collect();
    for missing in crd.difference(&listed) {
        problems.push(format!(
            "{missing}: in the CRD, not in the table: prove it is read or refuse it"
        ));
    }
    for extra in listed.difference(&crd) {
        problems.push(format!("{extra}: in the table, not in the CRD"));
    }
    check_parents(table, &mut problems);
    for (kind, scope) in scopes {
        for (path, proof) in table {
            let proof = match (kind, proof) {
                (&"NamespacedImageValidatingPolicy", Decides { a, b, request }) => Decides {
                    a: namespaced(a),
                    b: namespaced(b),
                    request: request.clone(),
                },
                (&"NamespacedImageValidatingPolicy", Refused(doc)) => Refused(namespaced(doc)),
                (&"NamespacedImageValidatingPolicy", _) => continue,
                _ => match proof {
                    Decides { a, b, request } => Decides {
                        a: a.clone(),
                        b: b.clone(),
                        request: request.clone(),
                    },
                    other => {
                        if let Err(e) = prove(path, other, scope) {
                            problems.push(format!("{kind} {path}: {e}"));
                        }
                        continue;
                    }
                },
            };
            if let Err(e) = prove(path, &proof, scope) {
                problems.push(format!("{kind} {path}: {e}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn every_image_validating_policy_field_is_read_or_refused() {
    check(
        &[
            "policies.kyverno.io_imagevalidatingpolicies.yaml",
            "policies.kyverno.io_namespacedimagevalidatingpolicies.yaml",
        ],
        &policy_table(),
        &[
            ("ImageValidatingPolicy", Scope::Cluster),
            (
                "NamespacedImageValidatingPolicy",
                Scope::Namespaced("default".into()),
            ),
        ],
    );
}

#[test]
fn every_policy_exception_field_is_read_or_refused() {
    check(
        &["policies.kyverno.io_policyexceptions.yaml"],
        &exception_table(),
        &[("PolicyException", Scope::Cluster)],
    );
}
