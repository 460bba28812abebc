//! The policy table: the proof for every ImageValidatingPolicy and
//! NamespacedImageValidatingPolicy `spec` path.

use super::*;

/// The policy table: one entry per IVP/NIVP `spec` path.
pub(super) fn policy_table() -> BTreeMap<&'static str, Proof> {
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
                "variables:\n  - name: v\n    expression: 'true'\n  - name: w\n    expression: 'false'\n",
            ),
            checks(
                "variables.v",
                "variables:\n  - name: w\n    expression: 'true'\n  - name: v\n    expression: 'false'\n",
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
                    "validationConfigurations:\n  mutateDigest: true\n  verifyDigest: false\n",
                ]),
            ),
            b: ivp(
                "f",
                &spec(&[
                    PODS,
                    NO_ATTESTORS,
                    PASSES,
                    "validationConfigurations:\n  mutateDigest: false\n  verifyDigest: false\n",
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
    // Every provider Kyverno has is the host's credential, each tested
    // end to end in that file (a name Kyverno does not have is refused).
    add(
        "spec.credentials.providers",
        Elsewhere {
            file: "tests/tests/e2e/basic_auth.rs",
            test: "the_azure_provider_exchanges_an_entra_token_at_the_registry",
        },
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
        Elsewhere {
            file: "tests/tests/e2e/kms.rs",
            test: "awskms_keys_verify_what_kms_signed_and_nothing_else",
        },
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
            "spec.attestors[].cosign.source.repository",
            "several_attestors_are_counted_and_signatures_can_live_elsewhere",
        ),
        (
            "spec.attestors[].cosign.source.tagPrefix",
            "several_attestors_are_counted_and_signatures_can_live_elsewhere",
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
    add(
        "spec.attestors[].cosign.ctlog.insecureIgnoreSCT",
        Elsewhere {
            file: "tests/tests/e2e/cosign/keyless.rs",
            test: "keyless_certificates_need_an_sct_unless_ignored",
        },
    );
    for path in [
        "spec.attestors[].cosign.tuf.mirror",
        "spec.attestors[].cosign.tuf.root.data",
    ] {
        add(
            path,
            Elsewhere {
                file: "tests/tests/e2e/cosign/trust.rs",
                test: "tuf_mirrors_supply_the_trusted_root_from_data_or_a_file",
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
        Elsewhere {
            file: "tests/tests/e2e/cosign/trust.rs",
            test: "tsa_cert_chain_requires_a_timestamp_by_that_authority",
        },
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
        Elsewhere {
            file: "tests/tests/e2e/cosign/trust.rs",
            test: "tuf_mirrors_supply_the_trusted_root_from_data_or_a_file",
        },
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
