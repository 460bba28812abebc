use super::super::selector::{LabelSelectorOperator, LabelSelectorRequirement};
use super::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn s(items: &[&str]) -> Vec<String> {
    items.iter().map(|i| i.to_string()).collect()
}

fn rule(groups: &[&str], versions: &[&str], resources: &[&str]) -> NamedRuleWithOperations {
    NamedRuleWithOperations {
        resource_names: vec![],
        operations: s(&["CREATE", "UPDATE"]),
        api_groups: s(groups),
        api_versions: s(versions),
        resources: s(resources),
        scope: None,
    }
}

fn pods_rule() -> NamedRuleWithOperations {
    rule(&[""], &["v1"], &["pods"])
}

fn sel_labels(pairs: &[(&str, &str)]) -> LabelSelector {
    LabelSelector {
        match_labels: labels(pairs),
        match_expressions: vec![],
    }
}

fn sel_expr(key: &str, operator: LabelSelectorOperator, values: &[&str]) -> LabelSelector {
    LabelSelector {
        match_labels: BTreeMap::new(),
        match_expressions: vec![LabelSelectorRequirement {
            key: key.into(),
            operator,
            values: s(values),
        }],
    }
}

fn constraints() -> MatchResources {
    MatchResources {
        resource_rules: vec![pods_rule()],
        ..Default::default()
    }
}

fn pod_attrs(op: &str, ns: &str) -> RequestAttrs {
    RequestAttrs {
        group: String::new(),
        version: "v1".into(),
        resource: "pods".into(),
        subresource: String::new(),
        operation: op.into(),
        namespace: ns.into(),
        name: "p".into(),
    }
}

fn pod_input() -> MatchInput {
    MatchInput {
        attrs: pod_attrs("CREATE", "default"),
        namespace_labels: Some(labels(&[("env", "prod")])),
        object_labels: Some(labels(&[("app", "web")])),
        ..Default::default()
    }
}

fn namespace_input(op: &str) -> MatchInput {
    MatchInput {
        attrs: RequestAttrs {
            group: String::new(),
            version: "v1".into(),
            resource: "namespaces".into(),
            subresource: String::new(),
            operation: op.into(),
            namespace: "team-a".into(),
            name: "team-a".into(),
        },
        is_namespace_object: true,
        ..Default::default()
    }
}

fn cluster_input() -> MatchInput {
    MatchInput {
        attrs: RequestAttrs {
            group: "rbac.authorization.k8s.io".into(),
            version: "v1".into(),
            resource: "clusterroles".into(),
            subresource: String::new(),
            operation: "CREATE".into(),
            namespace: String::new(),
            name: "cr".into(),
        },
        ..Default::default()
    }
}

fn all_rule() -> NamedRuleWithOperations {
    rule(&["*"], &["*"], &["*"])
}

// ---- serde ----

#[test]
fn deserializes_camel_case() {
    let mc: MatchResources = serde_json::from_str(
            r#"{
                "namespaceSelector": {"matchLabels": {"env": "prod"}},
                "objectSelector": {},
                "resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
                "excludeResourceRules": [{"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "resourceNames": ["skip"]}],
                "matchPolicy": "Exact"
            }"#,
        )
        .unwrap();
    assert_eq!(mc.namespace_selector, Some(sel_labels(&[("env", "prod")])));
    assert_eq!(mc.object_selector, Some(LabelSelector::default()));
    assert_eq!(mc.resource_rules.len(), 1);
    assert_eq!(mc.exclude_resource_rules[0].resource_names, s(&["skip"]));
    assert_eq!(mc.match_policy, Some(MatchPolicy::Exact));
}

#[test]
fn match_policy_defaults_to_equivalent() {
    let mc: MatchResources = serde_json::from_str("{}").unwrap();
    assert_eq!(mc.match_policy, None);
    assert_eq!(mc.match_policy(), MatchPolicy::Equivalent);
    let mc: MatchResources = serde_json::from_str(r#"{"matchPolicy":"Equivalent"}"#).unwrap();
    assert_eq!(mc.match_policy(), MatchPolicy::Equivalent);
}

#[test]
fn rejects_unknown_fields_and_match_policy() {
    let err = serde_json::from_str::<MatchResources>(r#"{"resourceRule":[]}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown field `resourceRule`"), "{err}");
    let err = serde_json::from_str::<MatchResources>(r#"{"matchPolicy":"Fuzzy"}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown variant `Fuzzy`"), "{err}");
    assert!(serde_json::from_str::<MatchResources>(r#"{"resourceRules":null}"#).is_ok());
}

#[test]
fn serializes_round_trip() {
    let mut mc = constraints();
    mc.match_policy = Some(MatchPolicy::Exact);
    mc.namespace_selector = Some(sel_labels(&[("a", "b")]));
    let json = serde_json::to_string(&mc).unwrap();
    assert!(json.contains(r#""matchPolicy":"Exact""#), "{json}");
    assert!(!json.contains("excludeResourceRules"), "{json}");
    assert_eq!(serde_json::from_str::<MatchResources>(&json).unwrap(), mc);
}

// ---- validation ----

#[test]
fn valid_constraints_have_no_diagnostics() {
    let mut mc = constraints();
    mc.namespace_selector = Some(sel_labels(&[("env", "prod")]));
    mc.object_selector = Some(LabelSelector::default());
    mc.exclude_resource_rules = vec![pods_rule()];
    assert!(mc.validate().is_empty());
    assert!(validate_match_constraints(Some(&mc)).is_empty());
}

#[test]
fn empty_resource_rules_use_kyverno_message() {
    let expected =
            "spec.matchConstraints: Required value: a matchConstraints with at least one resource rule is required";
    assert_eq!(MatchResources::default().validate(), s(&[expected]));
    assert_eq!(validate_match_constraints(None), s(&[expected]));
}

#[test]
fn selector_diagnostics_carry_field_paths() {
    let mut mc = constraints();
    mc.namespace_selector = Some(sel_expr("k", LabelSelectorOperator::In, &[]));
    mc.object_selector = Some(sel_expr("k", LabelSelectorOperator::Exists, &["v"]));
    assert_eq!(
            mc.validate(),
            s(&[
                "spec.matchConstraints.namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "spec.matchConstraints.objectSelector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            ])
        );
}

#[test]
fn rule_diagnostics_carry_field_paths() {
    let mut bad = pods_rule();
    bad.operations = s(&["PATCH"]);
    let mut bad_scope = pods_rule();
    bad_scope.scope = Some("Global".into());
    let mc = MatchResources {
        resource_rules: vec![pods_rule(), bad],
        exclude_resource_rules: vec![bad_scope],
        ..Default::default()
    };
    let errs = mc.validate();
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(errs[0].starts_with(
        "spec.matchConstraints.resourceRules[1].operations[0]: Unsupported value: \"PATCH\""
    ));
    assert!(errs[1].starts_with(
        "spec.matchConstraints.excludeResourceRules[0].scope: Unsupported value: \"Global\""
    ));
}

// ---- resource rules ----

#[test]
fn matching_resource_rule_matches() {
    assert_eq!(constraints().matches(&pod_input()), Ok(true));
}

#[test]
fn no_matching_resource_rule_does_not_match() {
    let mut input = pod_input();
    input.attrs.operation = "DELETE".into();
    assert_eq!(constraints().matches(&input), Ok(false));
    assert_eq!(constraints().matches(&cluster_input()), Ok(false));
}

#[test]
fn any_of_several_resource_rules_suffices() {
    let mc = MatchResources {
        resource_rules: vec![rule(&["apps"], &["v1"], &["deployments"]), pods_rule()],
        ..Default::default()
    };
    assert_eq!(mc.matches(&pod_input()), Ok(true));
}

#[test]
fn empty_resource_rules_match_everything_like_the_apiserver() {
    assert_eq!(MatchResources::default().matches(&pod_input()), Ok(true));
    assert_eq!(
        MatchResources::default().matches(&cluster_input()),
        Ok(true)
    );
}

#[test]
fn exclude_rule_wins_over_resource_rule() {
    let mut mc = constraints();
    let mut skip = pods_rule();
    skip.resource_names = s(&["p"]);
    mc.exclude_resource_rules = vec![skip];
    assert_eq!(mc.matches(&pod_input()), Ok(false));
    let mut other = pod_input();
    other.attrs.name = "q".into();
    assert_eq!(mc.matches(&other), Ok(true));
}

#[test]
fn exclude_rule_alone_does_not_make_a_match() {
    let mut mc = constraints();
    mc.exclude_resource_rules = vec![rule(&["apps"], &["v1"], &["deployments"])];
    assert_eq!(mc.matches(&pod_input()), Ok(true));
    assert_eq!(mc.matches(&cluster_input()), Ok(false));
}

// ---- match policy ----

fn converted_input() -> MatchInput {
    // The webhook received apps/v1 deployments; the client asked for
    // extensions/v1beta1.
    MatchInput {
        attrs: RequestAttrs {
            group: "apps".into(),
            version: "v1".into(),
            resource: "deployments".into(),
            subresource: String::new(),
            operation: "CREATE".into(),
            namespace: "default".into(),
            name: "d".into(),
        },
        request_attrs: Some(RequestAttrs {
            group: "extensions".into(),
            version: "v1beta1".into(),
            resource: "deployments".into(),
            ..Default::default()
        }),
        namespace_labels: Some(BTreeMap::new()),
        ..Default::default()
    }
}

fn legacy_rule() -> NamedRuleWithOperations {
    rule(&["extensions"], &["v1beta1"], &["deployments"])
}

#[test]
fn equivalent_matches_request_resource_form() {
    let mc = MatchResources {
        resource_rules: vec![legacy_rule()],
        match_policy: Some(MatchPolicy::Equivalent),
        ..Default::default()
    };
    assert_eq!(mc.matches(&converted_input()), Ok(true));
    // Unset behaves as Equivalent.
    let mc = MatchResources {
        resource_rules: vec![legacy_rule()],
        ..Default::default()
    };
    assert_eq!(mc.matches(&converted_input()), Ok(true));
}

#[test]
fn exact_matches_only_attrs() {
    let mc = MatchResources {
        resource_rules: vec![legacy_rule()],
        match_policy: Some(MatchPolicy::Exact),
        ..Default::default()
    };
    assert_eq!(mc.matches(&converted_input()), Ok(false));
    let mc = MatchResources {
        resource_rules: vec![rule(&["apps"], &["v1"], &["deployments"])],
        match_policy: Some(MatchPolicy::Exact),
        ..Default::default()
    };
    assert_eq!(mc.matches(&converted_input()), Ok(true));
}

#[test]
fn equivalent_without_request_attrs_is_exact() {
    let mc = MatchResources {
        resource_rules: vec![legacy_rule()],
        ..Default::default()
    };
    let mut input = converted_input();
    input.request_attrs = None;
    assert_eq!(mc.matches(&input), Ok(false));
}

#[test]
fn equivalent_keeps_operation_of_attrs() {
    // request_attrs contributes only the resource identity; its empty
    // operation must not stop the match, nor could a different one.
    let mut mc = MatchResources {
        resource_rules: vec![legacy_rule()],
        ..Default::default()
    };
    mc.resource_rules[0].operations = s(&["DELETE"]);
    assert_eq!(mc.matches(&converted_input()), Ok(false));
    mc.resource_rules[0].operations = s(&["CREATE"]);
    assert_eq!(mc.matches(&converted_input()), Ok(true));
}

#[test]
fn equivalent_applies_to_exclusions() {
    let mut mc = MatchResources {
        resource_rules: vec![all_rule()],
        exclude_resource_rules: vec![legacy_rule()],
        ..Default::default()
    };
    assert_eq!(mc.matches(&converted_input()), Ok(false));
    mc.match_policy = Some(MatchPolicy::Exact);
    assert_eq!(mc.matches(&converted_input()), Ok(true));
}

// ---- namespaceSelector ----

fn with_ns_selector(sel: LabelSelector) -> MatchResources {
    MatchResources {
        namespace_selector: Some(sel),
        resource_rules: vec![all_rule()],
        ..Default::default()
    }
}

#[test]
fn namespace_selector_uses_namespace_labels() {
    let mc = with_ns_selector(sel_labels(&[("env", "prod")]));
    assert_eq!(mc.matches(&pod_input()), Ok(true));
    let mut input = pod_input();
    input.namespace_labels = Some(labels(&[("env", "dev")]));
    assert_eq!(mc.matches(&input), Ok(false));
}

#[test]
fn empty_or_absent_namespace_selector_matches() {
    let mut input = pod_input();
    input.namespace_labels = Some(labels(&[("env", "dev")]));
    assert_eq!(
        with_ns_selector(LabelSelector::default()).matches(&input),
        Ok(true)
    );
    let mc = MatchResources {
        resource_rules: vec![all_rule()],
        ..Default::default()
    };
    assert_eq!(mc.matches(&input), Ok(true));
}

#[test]
fn cluster_scoped_requests_always_pass_namespace_selector() {
    let mc = with_ns_selector(sel_labels(&[("env", "prod")]));
    assert_eq!(mc.matches(&cluster_input()), Ok(true));
}

#[test]
fn namespace_object_uses_its_own_labels_on_create_and_update() {
    let mc = with_ns_selector(sel_labels(&[("env", "prod")]));
    for op in ["CREATE", "UPDATE"] {
        let mut input = namespace_input(op);
        input.object_labels = Some(labels(&[("env", "prod")]));
        // The stored namespace's labels are stale for a write.
        input.namespace_labels = Some(labels(&[("env", "dev")]));
        assert_eq!(mc.matches(&input), Ok(true), "{op}");
        input.object_labels = Some(labels(&[("env", "dev")]));
        input.namespace_labels = Some(labels(&[("env", "prod")]));
        assert_eq!(mc.matches(&input), Ok(false), "{op}");
    }
}

#[test]
fn namespace_object_with_empty_request_namespace_is_not_cluster_scoped_for_selector() {
    let mc = with_ns_selector(sel_labels(&[("env", "prod")]));
    let mut input = namespace_input("CREATE");
    input.attrs.namespace = String::new();
    input.object_labels = Some(labels(&[("env", "dev")]));
    assert_eq!(mc.matches(&input), Ok(false));
    // Detected from the resource name even without the flag.
    input.is_namespace_object = false;
    assert_eq!(mc.matches(&input), Ok(false));
    input.object_labels = Some(labels(&[("env", "prod")]));
    assert_eq!(mc.matches(&input), Ok(true));
}

#[test]
fn namespace_object_delete_uses_stored_namespace_labels() {
    let mc = with_ns_selector(sel_labels(&[("env", "prod")]));
    let mut mc_del = mc.clone();
    mc_del.resource_rules[0].operations = s(&["*"]);
    let mut input = namespace_input("DELETE");
    input.old_object_labels = Some(labels(&[("env", "dev")]));
    input.namespace_labels = Some(labels(&[("env", "prod")]));
    assert_eq!(mc_del.matches(&input), Ok(true));
    input.namespace_labels = Some(labels(&[("env", "dev")]));
    assert_eq!(mc_del.matches(&input), Ok(false));
}

#[test]
fn namespace_object_write_without_object_is_a_deferred_error() {
    let mc = with_ns_selector(sel_labels(&[("env", "prod")]));
    let input = namespace_input("CREATE");
    let err = mc.matches(&input).unwrap_err();
    assert_eq!(err, MatchError::NamespaceWithoutObject("team-a".into()));
    assert_eq!(
        err.to_string(),
        "spec.matchConstraints.namespaceSelector: cannot evaluate: the request for Namespace \"team-a\" carries no object"
    );
    // Not reported when the rules would not match anyway.
    let mc = MatchResources {
        resource_rules: vec![pods_rule()],
        ..mc
    };
    assert_eq!(mc.matches(&input), Ok(false));
}

#[test]
fn unknown_namespace_answers_name_only_selectors() {
    let mut input = pod_input();
    input.namespace_labels = None;
    let by_name = with_ns_selector(sel_labels(&[(NAMESPACE_NAME_LABEL, "default")]));
    assert_eq!(by_name.matches(&input), Ok(true));
    let by_other_name = with_ns_selector(sel_labels(&[(NAMESPACE_NAME_LABEL, "kube-system")]));
    assert_eq!(by_other_name.matches(&input), Ok(false));
    let not_system = with_ns_selector(sel_expr(
        NAMESPACE_NAME_LABEL,
        LabelSelectorOperator::NotIn,
        &["kube-system"],
    ));
    assert_eq!(not_system.matches(&input), Ok(true));
}

/// Kyverno would not match `env: prod` here and admit the pod
/// unverified; ivpol reports an error instead, whatever the operator.
#[test]
fn unknown_namespace_labels_are_an_error_not_a_mismatch() {
    let mut input = pod_input();
    input.namespace_labels = None;
    for mc in [
        with_ns_selector(sel_labels(&[("env", "prod")])),
        with_ns_selector(sel_expr("env", LabelSelectorOperator::NotIn, &["prod"])),
        with_ns_selector(sel_expr("env", LabelSelectorOperator::DoesNotExist, &[])),
    ] {
        let err = mc
            .matches(&input)
            .expect_err("unknown labels must not decide");
        assert_eq!(err, MatchError::UnknownNamespace("default".into()));
    }
    // Still deferred: a request the rules never cover is not touched.
    let mut mc = with_ns_selector(sel_labels(&[("env", "prod")]));
    mc.resource_rules = vec![rule(&["apps"], &["v1"], &["deployments"])];
    assert_eq!(mc.matches(&input), Ok(false));
    // Cluster-scoped requests have no namespace to know.
    let mc = with_ns_selector(sel_labels(&[("env", "prod")]));
    assert_eq!(mc.matches(&cluster_input()), Ok(true));
}

#[test]
fn invalid_namespace_selector_is_err_with_field_path() {
    let mc = with_ns_selector(sel_expr("k", LabelSelectorOperator::In, &[]));
    assert_eq!(
            mc.matches(&pod_input()),
            Err(MatchError::InvalidSelector(vec!["spec.matchConstraints.namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'".to_string()]))
        );
}

#[test]
fn invalid_selector_error_is_deferred_until_rules_match() {
    let mut mc = with_ns_selector(sel_expr("k", LabelSelectorOperator::In, &[]));
    mc.resource_rules = vec![rule(&["apps"], &["v1"], &["deployments"])];
    assert_eq!(mc.matches(&pod_input()), Ok(false));
    mc.resource_rules = vec![all_rule()];
    mc.exclude_resource_rules = vec![pods_rule()];
    assert_eq!(mc.matches(&pod_input()), Ok(false));
}

#[test]
fn invalid_namespace_selector_is_not_checked_for_cluster_scoped() {
    let mc = with_ns_selector(sel_expr("k", LabelSelectorOperator::In, &[]));
    assert_eq!(mc.matches(&cluster_input()), Ok(true));
}

#[test]
fn plain_selector_mismatch_beats_other_selector_error() {
    let mut mc = with_ns_selector(sel_labels(&[("env", "other")]));
    mc.object_selector = Some(sel_expr("k", LabelSelectorOperator::In, &[]));
    assert_eq!(mc.matches(&pod_input()), Ok(false));
}

// ---- objectSelector ----

fn with_obj_selector(sel: LabelSelector) -> MatchResources {
    MatchResources {
        object_selector: Some(sel),
        resource_rules: vec![all_rule()],
        ..Default::default()
    }
}

#[test]
fn object_selector_matches_new_object() {
    let mc = with_obj_selector(sel_labels(&[("app", "web")]));
    assert_eq!(mc.matches(&pod_input()), Ok(true));
    let mut input = pod_input();
    input.object_labels = Some(labels(&[("app", "db")]));
    assert_eq!(mc.matches(&input), Ok(false));
}

#[test]
fn object_selector_matches_old_object() {
    let mc = with_obj_selector(sel_labels(&[("app", "web")]));
    let mut input = pod_input();
    input.attrs.operation = "UPDATE".into();
    input.object_labels = Some(labels(&[("app", "db")]));
    input.old_object_labels = Some(labels(&[("app", "web")]));
    assert_eq!(mc.matches(&input), Ok(true));
    input.old_object_labels = Some(labels(&[("app", "cache")]));
    assert_eq!(mc.matches(&input), Ok(false));
}

#[test]
fn object_selector_with_absent_objects_never_matches() {
    // matchObject(nil) is false in the apiserver, even for a selector an
    // empty label set would satisfy.
    let mc = with_obj_selector(sel_expr("app", LabelSelectorOperator::DoesNotExist, &[]));
    let mut input = pod_input();
    input.object_labels = None;
    input.old_object_labels = None;
    assert_eq!(mc.matches(&input), Ok(false));
    input.object_labels = Some(BTreeMap::new());
    assert_eq!(mc.matches(&input), Ok(true));
}

#[test]
fn empty_object_selector_matches_without_objects() {
    let mc = with_obj_selector(LabelSelector::default());
    let mut input = pod_input();
    input.object_labels = None;
    assert_eq!(mc.matches(&input), Ok(true));
}

#[test]
fn invalid_object_selector_is_err_with_field_path() {
    let mc = with_obj_selector(sel_expr("k", LabelSelectorOperator::Exists, &["v"]));
    assert_eq!(
            mc.matches(&pod_input()),
            Err(MatchError::InvalidSelector(vec!["spec.matchConstraints.objectSelector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'".to_string()]))
        );
}

#[test]
fn namespace_error_is_reported_before_object_error() {
    let mut mc = with_ns_selector(sel_expr("a", LabelSelectorOperator::In, &[]));
    mc.object_selector = Some(sel_expr("b", LabelSelectorOperator::In, &[]));
    let err = mc.matches(&pod_input()).unwrap_err();
    let MatchError::InvalidSelector(errors) = &err else {
        panic!("{err:?}");
    };
    assert_eq!(errors.len(), 1);
    assert!(
        err.to_string()
            .starts_with("spec.matchConstraints.namespaceSelector"),
        "{err}"
    );
}

#[test]
fn all_conditions_combined() {
    let mc = MatchResources {
        namespace_selector: Some(sel_labels(&[("env", "prod")])),
        object_selector: Some(sel_labels(&[("app", "web")])),
        resource_rules: vec![pods_rule()],
        exclude_resource_rules: vec![],
        match_policy: None,
    };
    assert_eq!(mc.matches(&pod_input()), Ok(true));
    let mut input = pod_input();
    input.object_labels = Some(BTreeMap::new());
    assert_eq!(mc.matches(&input), Ok(false));
}
