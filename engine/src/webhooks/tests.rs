//! Grouping, naming, paths, mutateDigest, admission-disabled and NIVP
//! pinning of the generated webhook configurations.

use super::selectors::{go_html_escape, selector_key};
use super::*;
use crate::engine::PolicySet;
use crate::policy::SourceDocument;

fn options() -> Options {
    Options {
        service_name: "ivpol".into(),
        service_namespace: "ivpol-system".into(),
        service_port: 443,
        ca: crate::webhooks::Ca::Bundle(b"PEM".to_vec()),
        exclude_namespaces: vec!["kube-system".into(), "ivpol-system".into()],
        force_failure_policy_ignore: false,
        // Kyverno's names: these tests pin Kyverno's webhooks.
        naming: Naming::Kyverno,
    }
}

/// A policy document: `kind`, `name`, optional namespace, and extra spec lines.
fn policy(kind: &str, name: &str, namespace: Option<&str>, extra: &str) -> String {
    let ns = namespace
        .map(|n| format!("\n  namespace: {n}"))
        .unwrap_or_default();
    format!(
        r#"apiVersion: policies.kyverno.io/v1beta1
kind: {kind}
metadata:
  name: {name}{ns}
spec:
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["pods"]
{extra}  attestors: []
  validations:
    - expression: "true"
"#
    )
}

fn ivp(name: &str, extra: &str) -> String {
    policy("ImageValidatingPolicy", name, None, extra)
}

fn generate(docs: &[String], opts: &Options) -> Result<Value, String> {
    let sources: Vec<SourceDocument> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| SourceDocument {
            source: format!("p{i}.yaml"),
            content: d.clone(),
        })
        .collect();
    let set = PolicySet::load(&sources);
    assert!(set.diagnostics().is_empty(), "{:?}", set.diagnostics());
    configurations(set.policies(), opts)
}

/// (mutating, validating) webhooks.
fn hooks(docs: &[String]) -> (Vec<Value>, Vec<Value>) {
    hooks_with(docs, &options())
}

fn hooks_with(docs: &[String], opts: &Options) -> (Vec<Value>, Vec<Value>) {
    let list = generate(docs, opts).expect("configurations");
    let items = list["items"].as_array().expect("items").clone();
    assert_eq!(items[0]["kind"], "MutatingWebhookConfiguration");
    assert_eq!(items[0]["metadata"]["name"], opts.naming.mutating_config());
    assert_eq!(items[1]["kind"], "ValidatingWebhookConfiguration");
    assert_eq!(
        items[1]["metadata"]["name"],
        opts.naming.validating_config()
    );
    let webhooks = |i: usize| items[i]["webhooks"].as_array().cloned().unwrap_or_default();
    (webhooks(0), webhooks(1))
}

fn names(webhooks: &[Value]) -> Vec<String> {
    webhooks
        .iter()
        .map(|w| w["name"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn paths(webhooks: &[Value]) -> Vec<String> {
    webhooks
        .iter()
        .map(|w| {
            w["clientConfig"]["service"]["path"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[test]
fn basic_policies_share_one_webhook_per_failure_policy() {
    let docs = [
        ivp("b", ""),
        ivp("a", ""),
        ivp("c", "  failurePolicy: Ignore\n"),
    ];
    let (mutate, validate) = hooks(&docs);
    assert_eq!(
        names(&validate),
        [
            "ivpol.validate.kyverno.svc-fail",
            "ivpol.validate.kyverno.svc-ignore"
        ]
    );
    // One path names every policy of the group, sorted, for both webhooks.
    assert_eq!(
        paths(&validate),
        ["/ivpol/validate/a/b/c", "/ivpol/validate/a/b/c"]
    );
    assert_eq!(
        names(&mutate),
        [
            "ivpol.mutate.kyverno.svc-fail",
            "ivpol.mutate.kyverno.svc-ignore"
        ]
    );
    assert_eq!(
        paths(&mutate),
        ["/ivpol/mutate/a/b/c", "/ivpol/mutate/a/b/c"]
    );
    let w = &validate[0];
    assert_eq!(w["failurePolicy"], "Fail");
    assert_eq!(validate[1]["failurePolicy"], "Ignore");
    assert_eq!(w["sideEffects"], "NoneOnDryRun");
    assert_eq!(w["timeoutSeconds"], 10);
    assert_eq!(w["matchPolicy"], "Equivalent");
    assert_eq!(w["admissionReviewVersions"], json!(["v1"]));
    assert_eq!(w["objectSelector"], json!({}));
    assert_eq!(w["clientConfig"]["caBundle"], "UEVN");
    assert_eq!(w["clientConfig"]["service"]["name"], "ivpol");
    assert_eq!(w["clientConfig"]["service"]["namespace"], "ivpol-system");
    assert_eq!(w["clientConfig"]["service"]["port"], 443);
    assert!(w.get("reinvocationPolicy").is_none());
    assert_eq!(mutate[0]["reinvocationPolicy"], "Never");
    assert_eq!(
        w["namespaceSelector"],
        json!({"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]},
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["ivpol-system"]},
        ]})
    );
}

#[test]
fn with_the_ca_injected_no_ca_bundle_is_written_and_the_injector_is_named() {
    let opts = Options {
        ca: Ca::InjectedFrom("ivpol/ivpol-tls".into()),
        ..options()
    };
    let list = generate(&[ivp("a", "")], &opts).expect("configurations");
    for item in list["items"].as_array().expect("items") {
        assert_eq!(
            item["metadata"]["annotations"]["cert-manager.io/inject-ca-from"], "ivpol/ivpol-tls",
            "{item}"
        );
        for w in item["webhooks"].as_array().expect("webhooks") {
            assert!(w["clientConfig"].get("caBundle").is_none(), "{w}");
            assert_eq!(w["clientConfig"]["service"]["name"], "ivpol");
        }
    }
    let (_, validate) = hooks(&[ivp("a", "")]);
    let own = generate(&[ivp("a", "")], &options()).expect("configurations");
    assert!(own["items"][1]["metadata"]["annotations"]
        .get("cert-manager.io/inject-ca-from")
        .is_none());
    assert_eq!(validate[0]["clientConfig"]["caBundle"], "UEVN");
}

/// Kyverno chooses a policy's webhook by its `failurePolicy` alone: a
/// policy that only warns or audits is still registered `Fail` unless it
/// says `failurePolicy: Ignore` (or the installation forces Ignore).
#[test]
fn a_warn_or_audit_only_policy_is_registered_by_its_failure_policy_alone() {
    let docs = [
        ivp("warns", "  validationActions: [Warn]\n"),
        ivp("audits", "  validationActions: [Audit]\n"),
        ivp(
            "ignores",
            "  validationActions: [Warn]\n  failurePolicy: Ignore\n",
        ),
    ];
    let (_, validate) = hooks(&docs);
    let by_path: Vec<(String, String)> = validate
        .iter()
        .map(|w| {
            (
                w["failurePolicy"].as_str().unwrap_or_default().into(),
                w["clientConfig"]["service"]["path"]
                    .as_str()
                    .unwrap_or_default()
                    .into(),
            )
        })
        .collect();
    assert_eq!(
        by_path,
        [
            (
                "Fail".to_string(),
                "/ivpol/validate/audits/ignores/warns".to_string()
            ),
            (
                "Ignore".to_string(),
                "/ivpol/validate/audits/ignores/warns".to_string()
            ),
        ],
        "{validate:?}"
    );
    let forced = Options {
        force_failure_policy_ignore: true,
        ..options()
    };
    let (_, validate) = hooks_with(&docs, &forced);
    assert!(
        validate.iter().all(|w| w["failurePolicy"] == "Ignore"),
        "{validate:?}"
    );
}

#[test]
fn rules_include_autogen_deduplicated_and_sorted() {
    let (_, validate) = hooks(&[ivp("a", ""), ivp("b", "")]);
    assert_eq!(
        validate[0]["rules"],
        json!([
            {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"], "scope": "*"},
            {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"],
             "resources": ["daemonsets", "deployments", "replicasets", "statefulsets"], "scope": "*"},
            {"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["cronjobs"], "scope": "*"},
            {"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["jobs"], "scope": "*"},
        ])
    );
    // Only the configured controllers.
    let only = "  autogen:\n    podControllers:\n      controllers: [deployments]\n";
    let (_, validate) = hooks(&[ivp("a", only)]);
    let resources: Vec<Value> = validate[0]["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .map(|r| r["resources"].clone())
        .collect();
    assert_eq!(resources, [json!(["pods"]), json!(["deployments"])]);
}

#[test]
fn fine_grained_policies_get_their_own_webhook() {
    let conditions =
        "  matchConditions:\n    - name: prod\n      expression: \"object.metadata.name == 'x'\"\n";
    let docs = [
        ivp("basic", ""),
        ivp("cond", conditions),
        ivp("slow", "  webhookConfiguration:\n    timeoutSeconds: 20\n"),
        ivp(
            "lenient",
            "  failurePolicy: Ignore\n  webhookConfiguration:\n    timeoutSeconds: 5\n",
        ),
        ivp("exact", "").replace(
            "  matchConstraints:\n",
            "  matchConstraints:\n    matchPolicy: Exact\n",
        ),
    ];
    let (mutate, validate) = hooks(&docs);
    assert_eq!(
        names(&validate),
        [
            "ivpol.validate.kyverno.svc-fail",
            "ivpol.validate.kyverno.svc-fail-finegrained-cond",
            "ivpol.validate.kyverno.svc-fail-finegrained-exact",
            "ivpol.validate.kyverno.svc-fail-finegrained-slow",
            "ivpol.validate.kyverno.svc-ignore-finegrained-lenient",
        ]
    );
    assert_eq!(
        paths(&validate),
        [
            "/ivpol/validate/basic",
            "/ivpol/validate/cond",
            "/ivpol/validate/exact",
            "/ivpol/validate/slow",
            "/ivpol/validate/lenient",
        ]
    );
    let by_name = |hooks: &[Value], n: &str| {
        hooks
            .iter()
            .find(|w| w["name"].as_str().is_some_and(|x| x.ends_with(n)))
            .cloned()
            .expect(n)
    };
    assert_eq!(by_name(&validate, "-slow")["timeoutSeconds"], 20);
    assert_eq!(by_name(&validate, "-lenient")["timeoutSeconds"], 5);
    assert_eq!(by_name(&validate, "-lenient")["failurePolicy"], "Ignore");
    assert_eq!(by_name(&validate, "-exact")["matchPolicy"], "Exact");
    // Kyverno's mutating webhooks never carry matchPolicy: the API default.
    assert_eq!(by_name(&mutate, "-exact")["matchPolicy"], "Equivalent");
    assert_eq!(by_name(&mutate, "-slow")["timeoutSeconds"], 20);
    let cond = by_name(&validate, "-cond");
    let conditions: Vec<(String, String)> = cond["matchConditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or_default().into(),
                c["expression"].as_str().unwrap_or_default().into(),
            )
        })
        .collect();
    assert_eq!(
        conditions,
        [
            ("autogen-prod".to_string(),
             "!((object.apiVersion == 'v1' && object.kind =='Pod')) || (object.metadata.name == 'x')".to_string()),
            ("autogen-cronjobs-prod".to_string(),
             "!((object.apiVersion == 'batch/v1' && object.kind =='CronJob')) || (object.spec.jobTemplate.spec.template.metadata.name == 'x')".to_string()),
            ("autogen-defaults-prod".to_string(),
             "!((object.apiVersion == 'apps/v1' && object.kind =='DaemonSet') || (object.apiVersion == 'apps/v1' && object.kind =='Deployment') || (object.apiVersion == 'apps/v1' && object.kind =='ReplicaSet') || (object.apiVersion == 'apps/v1' && object.kind =='StatefulSet') || (object.apiVersion == 'batch/v1' && object.kind =='Job')) || (object.spec.template.metadata.name == 'x')".to_string()),
        ]
    );
    assert!(by_name(&validate, "-fail").get("matchConditions").is_none());
}

#[test]
fn conditions_of_a_policy_autogen_cannot_cover_are_not_wrapped() {
    let extra = "  matchConditions:\n    - name: c\n      expression: \"true\"\n";
    let doc = ivp("svc", extra).replace("resources: [\"pods\"]", "resources: [\"services\"]");
    let (_, validate) = hooks(&[doc]);
    assert_eq!(
        validate[0]["matchConditions"],
        json!([{"name": "c", "expression": "true"}])
    );
    assert_eq!(validate[0]["rules"].as_array().map(Vec::len), Some(1));
}

#[test]
fn a_mutating_webhook_needs_mutate_digest_or_verify_digest() {
    let off = "  validationConfigurations:\n    mutateDigest: false\n    verifyDigest: false\n";
    let verify_only = "  validationConfigurations:\n    mutateDigest: false\n";
    let (mutate, validate) = hooks(&[
        ivp("pinned", ""),
        ivp("unpinned", off),
        ivp("verified", verify_only),
    ]);
    assert_eq!(paths(&mutate), ["/ivpol/mutate/pinned/verified"]);
    assert_eq!(
        paths(&validate),
        ["/ivpol/validate/pinned/unpinned/verified"]
    );
    let (mutate, validate) = hooks(&[ivp("unpinned", off)]);
    assert!(mutate.is_empty());
    assert_eq!(validate.len(), 1);
}

#[test]
fn admission_disabled_and_json_mode_policies_get_no_webhooks() {
    let disabled = "  evaluation:\n    admission:\n      enabled: false\n";
    let json_mode = "  evaluation:\n    mode: JSON\n";
    let (mutate, validate) = hooks(&[ivp("on", ""), ivp("off", disabled), ivp("json", json_mode)]);
    assert_eq!(paths(&mutate), ["/ivpol/mutate/on"]);
    assert_eq!(paths(&validate), ["/ivpol/validate/on"]);
}

#[test]
fn namespaced_policies_are_pinned_to_their_namespace() {
    let nivp = |name: &str, ns: &str, extra: &str| {
        policy("NamespacedImageValidatingPolicy", name, Some(ns), extra)
    };
    // The policy's own namespaceSelector is replaced by the pin.
    let own_selector =
        "  matchConstraints:\n    namespaceSelector:\n      matchLabels: {team: x}\n";
    let docs = [
        nivp("n", "team-a", "").replace("  matchConstraints:\n", own_selector),
        nivp(
            "t",
            "team-a",
            "  webhookConfiguration:\n    timeoutSeconds: 3\n",
        ),
    ];
    let (mutate, validate) = hooks(&docs);
    assert_eq!(
        names(&validate),
        [
            "ivpol.validate.kyverno.svc-fail",
            "ivpol.validate.kyverno.svc-fail-finegrained-team-a-t",
        ]
    );
    assert_eq!(
        paths(&validate),
        ["/nivpol/validate/n", "/nivpol/validate/t"]
    );
    assert_eq!(paths(&mutate), ["/nivpol/mutate/n", "/nivpol/mutate/t"]);
    let pinned = json!({"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a"]},
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]},
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["ivpol-system"]},
    ]});
    for w in validate.iter().chain(&mutate) {
        assert_eq!(w["namespaceSelector"], pinned, "{}", w["name"]);
    }
    // Unlike Kyverno, a namespaced fine-grained policy also covers pod
    // controllers, as its autogen variants are evaluated.
    assert_eq!(validate[1]["rules"].as_array().map(Vec::len), Some(4));
}

#[test]
fn selector_groups_are_suffixed_with_kyvernos_digest() {
    let selector = "  matchConstraints:\n    namespaceSelector:\n      matchLabels: {env: prod}\n";
    let docs = [
        ivp("plain", ""),
        ivp("prod", "").replace("  matchConstraints:\n", selector),
    ];
    let opts = Options {
        exclude_namespaces: Vec::new(),
        ..options()
    };
    let (_, validate) = hooks_with(&docs, &opts);
    let prod = LabelSelector {
        match_labels: BTreeMap::from([("env".to_string(), "prod".to_string())]),
        match_expressions: Vec::new(),
    };
    // The key hashes Go's encoding of the pair; `null` for an absent selector.
    let hex = |b: &[u8]| crate::verify::encoding::hex(&Sha256::digest(b));
    let plain_key = hex(b"[null,null]");
    let prod_key = hex(br#"[{"matchLabels":{"env":"prod"}},null]"#);
    assert_eq!(selector_key(None, None), plain_key);
    assert_eq!(selector_key(Some(&prod), None), prod_key);
    let mut expected = vec![
        (
            format!("ivpol.validate.kyverno.svc-fail-{}", &plain_key[..8]),
            "/ivpol/validate/plain",
        ),
        (
            format!("ivpol.validate.kyverno.svc-fail-{}", &prod_key[..8]),
            "/ivpol/validate/prod",
        ),
    ];
    expected.sort();
    let got: Vec<(String, String)> = names(&validate).into_iter().zip(paths(&validate)).collect();
    let expected: Vec<(String, String)> = expected
        .into_iter()
        .map(|(n, p)| (n, p.to_string()))
        .collect();
    assert_eq!(got, expected);
    assert_eq!(
        go_html_escape(r#"{"a":"<&>"}"#),
        r#"{"a":"\u003c\u0026\u003e"}"#
    );
}

#[test]
fn cluster_and_namespaced_groups_never_share_a_name() {
    let docs = [
        ivp("c", ""),
        policy("NamespacedImageValidatingPolicy", "n", Some("team-a"), ""),
    ];
    let (_, validate) = hooks(&docs);
    let names = names(&validate);
    assert_eq!(names.len(), 2);
    assert_eq!(names[0], "ivpol.validate.kyverno.svc-fail");
    let hex = names[1]
        .strip_prefix("ivpol.validate.kyverno.svc-fail-nivpol-")
        .unwrap_or_default();
    assert!(
        hex.len() == 8 && hex.chars().all(|c| c.is_ascii_hexdigit()),
        "{names:?}"
    );
    assert_eq!(
        paths(&validate),
        ["/ivpol/validate/c", "/nivpol/validate/n"]
    );
}

/// Kyverno's names clash for a cluster policy `team-a-p` and an NIVP `p`
/// in `team-a`, and run past 253 characters for a long name: those
/// webhooks take a hashed name instead, and the others keep Kyverno's.
#[test]
fn a_kyverno_name_that_clashes_or_is_too_long_is_made_unique() {
    let slow = "  webhookConfiguration:\n    timeoutSeconds: 3\n";
    let long = "y".repeat(240);
    let docs = [
        ivp("team-a-p", slow),
        policy("NamespacedImageValidatingPolicy", "p", Some("team-a"), slow),
        ivp(&long, slow),
        ivp("plain", slow),
    ];
    let (_, validate) = hooks(&docs);
    let names = names(&validate);
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(names.iter().all(|n| n.len() <= 253), "{names:?}");
    let unique: BTreeSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), 4, "{names:?}");
    assert!(
        names.contains(&"ivpol.validate.kyverno.svc-fail-finegrained-plain".to_string()),
        "{names:?}"
    );
    let hashed: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("ivpol.validate.kyverno.svc-fail-finegrained-team-a-p-"))
        .collect();
    assert_eq!(hashed.len(), 2, "{names:?}");
}

/// ivpol's own names: per-policy webhooks always carry the hash, so two
/// policies never share one, and every name is a valid DNS subdomain.
#[test]
fn ivpols_names_are_hashed_and_valid() {
    let slow = "  webhookConfiguration:\n    timeoutSeconds: 3\n";
    let opts = Options {
        naming: Naming::Ivpol,
        ..options()
    };
    let docs = [
        policy("NamespacedImageValidatingPolicy", "c", Some("a-b"), slow),
        policy("NamespacedImageValidatingPolicy", "b-c", Some("a"), slow),
        policy(
            "NamespacedImageValidatingPolicy",
            "z.".repeat(120).trim_end_matches('.'),
            Some("a"),
            slow,
        ),
    ];
    let (mutate, validate) = hooks_with(&docs, &opts);
    for hooks in [mutate, validate] {
        let names = names(&hooks);
        let unique: BTreeSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), 3, "{names:?}");
        for n in &names {
            assert!(n.len() <= 253, "{n}");
            assert!(
                n.split('.').all(|l| !l.is_empty()
                    && !l.starts_with('-')
                    && !l.ends_with('-')
                    && l.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')),
                "{n}"
            );
        }
    }
}

/// A matchCondition the API server cannot evaluate stays out of the
/// webhook (ivpol evaluates it); the others are kept.
#[test]
fn conditions_the_api_server_cannot_evaluate_stay_out_of_the_webhook() {
    let extra = "  matchConditions:\n    - name: ns\n      expression: \"namespaceObject.metadata.name == 'x'\"\n    - name: img\n      expression: \"image('nginx').registry() == 'docker.io'\"\n    - name: plain\n      expression: \"object.metadata.name != ''\"\n";
    let (_, validate) = hooks(&[ivp("p", extra)]);
    let conditions: Vec<String> = validate[0]["matchConditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .map(|c| c["name"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        conditions.iter().all(|c| c.ends_with("-plain")),
        "{conditions:?}"
    );
    assert!(!conditions.is_empty());
}

#[test]
fn force_failure_policy_ignore_turns_every_webhook_ignore() {
    let opts = Options {
        force_failure_policy_ignore: true,
        ..options()
    };
    let docs = [
        ivp("a", ""),
        ivp("t", "  webhookConfiguration:\n    timeoutSeconds: 3\n"),
    ];
    let (mutate, validate) = hooks_with(&docs, &opts);
    assert_eq!(
        names(&validate),
        [
            "ivpol.validate.kyverno.svc-ignore",
            "ivpol.validate.kyverno.svc-ignore-finegrained-t",
        ]
    );
    for w in validate.iter().chain(&mutate) {
        assert_eq!(w["failurePolicy"], "Ignore");
    }
}

#[test]
fn no_exclusions_means_no_namespace_selector() {
    let opts = Options {
        exclude_namespaces: Vec::new(),
        ..options()
    };
    let (_, validate) = hooks_with(&[ivp("a", "")], &opts);
    assert_eq!(validate[0]["namespaceSelector"], json!({}));
}
