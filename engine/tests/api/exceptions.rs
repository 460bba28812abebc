//! PolicyExceptions: which policies they name, when their matchConditions
//! exempt a request, and the result Kyverno reports for it, in the validate
//! and mutate phases and outside admission.

use super::*;
use ivpol_policy::policy::exception::ExceptionScope;

/// A `policies.kyverno.io` PolicyException for `policy` (an IVP) with one
/// matchCondition, plus extra spec lines.
fn exception(name: &str, policy: &str, condition: &str, extra: &str) -> String {
    format!(
        "apiVersion: policies.kyverno.io/v1alpha1\nkind: PolicyException\nmetadata:\n  name: {name}\nspec:\n  policyRefs:\n    - name: {policy}\n      kind: ImageValidatingPolicy\n  matchConditions:\n    - name: check-name\n      expression: \"{condition}\"\n{extra}"
    )
}

const SKIPPED_POD: &str = "object.metadata.name == 'skipped-pod'";

/// Kyverno's `ivpol-sample` shape: every pod image must end in `:signed`.
fn sample() -> String {
    simple(
        "ivpol-sample",
        "validations:\n  - expression: \"images.containers.all(i, i.endsWith(':signed'))\"\n    message: failed to verify image with notary cert\n",
    )
}

#[test]
fn a_matching_exception_skips_with_kyvernos_message() {
    let set = load(&[
        sample(),
        exception("check-name", "ivpol-sample", SKIPPED_POD, ""),
    ]);
    let v = validate(&set, &create(&pod("skipped-pod", &[UNSIGNED])));
    assert_allowed_silently(&v);
    assert_eq!(
        outcomes(&v),
        one(
            "ivpol-sample",
            Status::Skip,
            "rule is skipped due to policy exception: check-name"
        )
    );
    assert_eq!(v.results[0].exceptions, vec!["check-name".to_string()]);
    // Any other pod is still checked.
    assert_denied(
        &validate(&set, &create(&pod("test-pod-bad", &[UNSIGNED]))),
        "Policy ivpol-sample failed: failed to verify image with notary cert",
    );
}

#[test]
fn an_exception_for_another_policy_changes_nothing() {
    let set = load(&[
        sample(),
        exception("check-name", "not-ivpol-sample", SKIPPED_POD, ""),
    ]);
    let v = validate(&set, &create(&pod("skipped-pod", &[UNSIGNED])));
    assert!(!v.allowed, "{v:?}");
    // The kind must match too: a ValidatingPolicy of the same name is not this policy.
    let vpol = exception("check-name", "ivpol-sample", SKIPPED_POD, "")
        .replace("kind: ImageValidatingPolicy", "kind: ValidatingPolicy");
    let set = load(&[sample(), vpol]);
    assert!(!validate(&set, &create(&pod("skipped-pod", &[UNSIGNED]))).allowed);
}

#[test]
fn exceptions_apply_to_autogen_variants_on_the_controller_object() {
    let set = load(&[
        sample(),
        exception(
            "check-name",
            "ivpol-sample",
            "object.metadata.name in ['skipped-deployment']",
            "",
        ),
    ]);
    let skipped = deployment("skipped-deployment", json!({}), json!({}), &[UNSIGNED]);
    let v = validate(&set, &create(&skipped));
    assert_eq!(v.results.len(), 1, "{v:?}");
    assert_eq!(v.results[0].status, Status::Skip);
    let bad = deployment("bad-deployment", json!({}), json!({}), &[UNSIGNED]);
    assert!(!validate(&set, &create(&bad)).allowed);
}

#[test]
fn several_matching_exceptions_are_all_named_and_report_result_pass_is_honoured() {
    let namespaced = exception("b", "ivpol-sample", SKIPPED_POD, "")
        .replace("  name: b\n", "  name: b\n  namespace: kyverno\n");
    let set = load(&[
        sample(),
        exception("a", "ivpol-sample", SKIPPED_POD, ""),
        namespaced,
    ]);
    let v = validate(&set, &create(&pod("skipped-pod", &[UNSIGNED])));
    assert_eq!(
        v.results[0].message,
        "rule is skipped due to policy exception: a, kyverno/b"
    );
    let pass = exception("p", "ivpol-sample", SKIPPED_POD, "  reportResult: pass\n");
    let set = load(&[sample(), pass]);
    let v = validate(&set, &create(&pod("skipped-pod", &[UNSIGNED])));
    assert_eq!(v.results[0].status, Status::Pass);
    assert_eq!(v.results[0].exceptions, vec!["p".to_string()]);
}

#[test]
fn an_expired_exception_no_longer_applies() {
    let expired = exception(
        "old",
        "ivpol-sample",
        SKIPPED_POD,
        "  expiresAt: \"2020-01-01T00:00:00Z\"\n",
    );
    let current = exception(
        "new",
        "ivpol-sample",
        SKIPPED_POD,
        "  expiresAt: \"2999-01-01T00:00:00Z\"\n",
    );
    let set = load(&[sample(), expired.clone()]);
    assert!(!validate(&set, &create(&pod("skipped-pod", &[UNSIGNED]))).allowed);
    let set = load(&[sample(), expired, current]);
    let v = validate(&set, &create(&pod("skipped-pod", &[UNSIGNED])));
    assert_eq!(v.results[0].exceptions, vec!["new".to_string()]);
}

#[test]
fn a_namespaced_policy_is_exempted_only_from_its_own_namespace() {
    let check = spec(&[
        PODS,
        RELAXED,
        NO_ATTESTORS,
        "validations:\n  - expression: \"false\"\n",
    ]);
    let nivp_exception = |ns: &str| {
        exception("e", "team-policy", "true", "")
            .replace(
                "kind: ImageValidatingPolicy",
                "kind: NamespacedImageValidatingPolicy",
            )
            .replace("  name: e\n", &format!("  name: e\n  namespace: {ns}\n"))
    };
    let mut p = pod("p", &[SIGNED]);
    p["metadata"]["namespace"] = json!("team");
    let mut request = create(&p);
    request["namespace"] = json!("team");
    let scope = Scope::Namespaced("team".into());
    for (ns, want) in [("team", Status::Skip), ("other", Status::Fail)] {
        let set = load(&[nivp("team-policy", "team", &check), nivp_exception(ns)]);
        let v = admit_with(&set, Phase::Validate, &scope, &[], &request, None);
        assert_eq!(v.results[0].status, want, "exception in {ns}: {v:?}");
    }
}

#[test]
fn a_false_policy_match_condition_wins_over_an_exception() {
    let policy = simple(
        "ivpol-sample",
        "matchConditions:\n  - name: prod\n    expression: \"object.metadata.name == 'prod'\"\nvalidations:\n  - expression: \"false\"\n",
    );
    let set = load(&[policy, exception("e", "ivpol-sample", "true", "")]);
    assert_no_results(&validate(&set, &create(&pod("skipped-pod", &[SIGNED]))));
}

#[test]
fn an_erroring_exception_condition_follows_the_failure_policy() {
    let bad = exception("e", "ivpol-sample", "object.metadata.nope == 'x'", "");
    let set = load(&[sample(), bad.clone()]);
    let v = validate(&set, &create(&pod("skipped-pod", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Error, "{v:?}");
    assert!(
        v.results[0].message.starts_with(
            "failed to evaluate policy: policy exception e: matchCondition check-name"
        ),
        "{}",
        v.results[0].message
    );
    let ignore = sample().replace("spec:\n", "spec:\n  failurePolicy: Ignore\n");
    let set = load(&[ignore, bad]);
    let v = validate(&set, &create(&pod("skipped-pod", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Pass, "{v:?}");
}

#[test]
fn an_exempted_request_gets_no_digest_patch() {
    let policy = mutate_policy("ivpol-mutate-digest", PIN, "[Deny]");
    let set = load(&[
        policy.clone(),
        exception("e", "ivpol-mutate-digest", SKIPPED_POD, ""),
    ]);
    assert_no_results(&mutate(&set, &create(&pod("skipped-pod", &[SIGNED]))));
    assert!(!mutate(&set, &create(&pod("other", &[SIGNED]))).allowed);
}

#[test]
fn exceptions_apply_outside_admission() {
    let set = load(&[
        sample(),
        exception("check-name", "ivpol-sample", SKIPPED_POD, ""),
    ]);
    let v = set
        .evaluate(
            &pod("skipped-pod", &[UNSIGNED]).to_string(),
            "CREATE",
            None,
            ivpol_engine::engine::Mode::Background,
            std::sync::Arc::new(Offline),
        )
        .expect("evaluates");
    assert_eq!(v.results[0].status, Status::Skip);
}

#[test]
fn kyvernos_cli_exception_loads_and_skips() {
    let exception = include_str!(
        "../../../conformance/kyverno/test/cli/test-image-validating-policy/with-cel-exceptions/exception.yaml"
    );
    let set = load(&[sample(), exception.to_string()]);
    let v = validate(&set, &create(&pod("skipped-pod", &[UNSIGNED])));
    assert_eq!(v.results[0].status, Status::Skip);
}

fn exception_diagnostics(doc: &str) -> String {
    messages(&load_scoped(&[doc.to_string()], ExceptionScope::Any))
}

#[test]
fn bad_exceptions_are_load_diagnostics() {
    let good = exception("e", "p", "true", "");
    assert_eq!(exception_diagnostics(&good), "");
    for (doc, want) in [
        (
            good.replace("policies.kyverno.io/v1alpha1", "kyverno.io/v2"),
            "not served for kind PolicyException",
        ),
        (
            good.replace(
                "    - name: p\n      kind: ImageValidatingPolicy\n",
                "    []\n",
            )
            .replace("  policyRefs:\n    []", "  policyRefs: []"),
            "spec.policyRefs: Required value",
        ),
        (
            format!("{good}  images: [nginx]\n"),
            "spec.images: not supported",
        ),
        (
            format!("{good}  reportResult: maybe\n"),
            "spec.reportResult: Unsupported value",
        ),
        (
            format!("{good}  expiresAt: tomorrow\n"),
            "spec.expiresAt: \"tomorrow\" is not an RFC 3339 time",
        ),
        (
            good.replace("expression: \"true\"", "expression: \"1 +\""),
            "spec.matchConditions[0].expression",
        ),
        (format!("{good}  frobnicate: 1\n"), "frobnicate"),
        (
            good.replace("  name: e\n", ""),
            "metadata.name: Required value",
        ),
    ] {
        let got = exception_diagnostics(&doc);
        assert!(got.contains(want), "{want:?} not in {got:?} for\n{doc}");
    }
}

/// `exception` placed in namespace `ns`.
fn in_namespace(doc: String, ns: &str) -> String {
    let at = doc.find("  name: ").expect("has a name");
    let end = at + doc[at..].find('\n').expect("name line ends");
    format!("{}\n  namespace: {ns}{}", &doc[..end], &doc[end..])
}

fn load_scoped(docs: &[String], scope: ExceptionScope) -> PolicySet {
    PolicySet::load_scoped(
        &[SourceDocument {
            source: "policies.yaml".into(),
            content: docs.join("---\n"),
        }],
        scope,
    )
}

fn messages(set: &PolicySet) -> String {
    set.diagnostics()
        .iter()
        .map(|d| d.message.clone())
        .collect::<Vec<_>>()
        .join(" | ")
}

/// A tenant who may write PolicyExceptions in its own namespace must not
/// exempt anyone (itself included) from a cluster policy: only the
/// namespaces the operator names count, and the refusal says so at load.
#[test]
fn an_exception_outside_the_allowed_namespaces_exempts_no_cluster_policy() {
    let scope = ExceptionScope::Namespaces(vec!["ivpol".into()]);
    let hostile = in_namespace(exception("open", "ivpol-sample", "true", ""), "attacker");
    let set = load_scoped(&[sample(), hostile], scope.clone());
    let got = messages(&set);
    assert!(
        got.contains("spec.policyRefs[0]: an exception in namespace \"attacker\" may not exempt a cluster policy")
            && got.contains("\"ivpol\""),
        "{got}"
    );
    let v = validate(&set, &create(&pod("skipped-pod", &[UNSIGNED])));
    assert!(!v.allowed, "the hostile exception exempted: {v:?}");
    // From an allowed namespace, and without one (the operator's file),
    // the same exception applies.
    for placed in [
        in_namespace(exception("ok", "ivpol-sample", "true", ""), "ivpol"),
        exception("ok", "ivpol-sample", "true", ""),
    ] {
        let set = load_scoped(&[sample(), placed], scope.clone());
        assert_eq!(messages(&set), "");
        let v = validate(&set, &create(&pod("skipped-pod", &[UNSIGNED])));
        assert_eq!(v.results[0].status, Status::Skip, "{v:?}");
    }
    // Any namespace, as Kyverno before 1.13 (and policy files by default).
    let anywhere = in_namespace(exception("open", "ivpol-sample", "true", ""), "attacker");
    let set = load_scoped(&[sample(), anywhere], ExceptionScope::Any);
    let v = validate(&set, &create(&pod("skipped-pod", &[UNSIGNED])));
    assert_eq!(v.results[0].status, Status::Skip, "{v:?}");
}

/// The scope is about cluster policies: a team's exception to its own
/// namespaced policy still applies from the team's namespace.
#[test]
fn a_namespaced_policys_exception_applies_from_its_namespace_whatever_the_scope() {
    let check = spec(&[
        PODS,
        RELAXED,
        NO_ATTESTORS,
        "validations:\n  - expression: \"false\"\n",
    ]);
    let team_exception = in_namespace(
        exception("e", "team-policy", "true", "").replace(
            "kind: ImageValidatingPolicy",
            "kind: NamespacedImageValidatingPolicy",
        ),
        "team",
    );
    let set = load_scoped(
        &[nivp("team-policy", "team", &check), team_exception],
        ExceptionScope::Namespaces(vec!["ivpol".into()]),
    );
    assert_eq!(messages(&set), "");
    let mut p = pod("p", &[SIGNED]);
    p["metadata"]["namespace"] = json!("team");
    let mut request = create(&p);
    request["namespace"] = json!("team");
    let scope = Scope::Namespaced("team".into());
    let v = admit_with(&set, Phase::Validate, &scope, &[], &request, None);
    assert_eq!(v.results[0].status, Status::Skip, "{v:?}");
}

#[test]
fn with_exceptions_off_every_exception_is_refused_and_exempts_nothing() {
    let set = load_scoped(
        &[sample(), exception("e", "ivpol-sample", "true", "")],
        ExceptionScope::None,
    );
    assert!(
        messages(&set).contains("policy exceptions are disabled"),
        "{}",
        messages(&set)
    );
    assert!(!validate(&set, &create(&pod("skipped-pod", &[UNSIGNED]))).allowed);
}

/// An exception's matchConditions are data only: whoever may write an
/// exception must not reach the policy's registry credentials (through
/// getImageData or the verifier), its granted cluster objects, or its
/// variables (which may call either).
#[test]
fn an_exception_that_reaches_for_the_policys_capabilities_is_refused() {
    for (condition, used) in [
        (
            "getImageData('registry.example.com/private:1').config != null",
            "getImageData",
        ),
        (
            "image.GetMetadata('registry.example.com/private:1') != null",
            "GetMetadata",
        ),
        (
            "verifyImageSignatures('registry.example.com/a:1', [attestors.x]) > 0",
            "attestors",
        ),
        ("variables.x == 1", "variables"),
        ("size(images) > 0", "images"),
        (
            "resource.Get('v1', 'secrets', 'kube-system', 'x') != null",
            "resource",
        ),
        ("extractPayload('a', 'b') != null", "extractPayload"),
    ] {
        let doc = exception("e", "ivpol-sample", condition, "");
        let got = exception_diagnostics(&doc);
        assert!(
            got.contains(&format!("{used} is not available here")) && got.contains("data only"),
            "{condition}: {got}"
        );
    }
    // The request's own data, its namespace and the pure libraries load.
    for fine in [
        "object.metadata.name == 'x' && request.operation == 'CREATE'",
        "namespaceObject.metadata.name == 'team'",
        "image('nginx:1').registry() == 'docker.io'",
        "object.spec.containers.all(c, c.image.startsWith('r/'))",
    ] {
        let doc = exception("e", "ivpol-sample", fine, "");
        assert_eq!(exception_diagnostics(&doc), "", "{fine}");
    }
}
