use super::*;

fn s(items: &[&str]) -> Vec<String> {
    items.iter().map(|i| i.to_string()).collect()
}

fn rule(
    ops: &[&str],
    groups: &[&str],
    versions: &[&str],
    resources: &[&str],
) -> NamedRuleWithOperations {
    NamedRuleWithOperations {
        resource_names: vec![],
        operations: s(ops),
        api_groups: s(groups),
        api_versions: s(versions),
        resources: s(resources),
        scope: None,
    }
}

fn pods_rule() -> NamedRuleWithOperations {
    rule(&["CREATE"], &[""], &["v1"], &["pods"])
}

fn attrs(
    group: &str,
    version: &str,
    resource: &str,
    sub: &str,
    op: &str,
    ns: &str,
    name: &str,
) -> RequestAttrs {
    RequestAttrs {
        group: group.into(),
        version: version.into(),
        resource: resource.into(),
        subresource: sub.into(),
        operation: op.into(),
        namespace: ns.into(),
        name: name.into(),
    }
}

fn pod_create() -> RequestAttrs {
    attrs("", "v1", "pods", "", "CREATE", "default", "p")
}

fn with_scope(mut r: NamedRuleWithOperations, scope: &str) -> NamedRuleWithOperations {
    r.scope = Some(scope.to_string());
    r
}

// ---- serde ----

#[test]
fn deserializes_named_rule_camel_case() {
    let r: NamedRuleWithOperations = serde_json::from_str(
            r#"{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"],"scope":"Namespaced","resourceNames":["a"]}"#,
        )
        .unwrap();
    assert_eq!(r.operations, s(&["CREATE"]));
    assert_eq!(r.api_groups, s(&[""]));
    assert_eq!(r.api_versions, s(&["v1"]));
    assert_eq!(r.resources, s(&["pods"]));
    assert_eq!(r.scope.as_deref(), Some("Namespaced"));
    assert_eq!(r.resource_names, s(&["a"]));
    assert_eq!(r.rule().resources, s(&["pods"]));
}

#[test]
fn deserializes_rule_with_defaults_and_nulls() {
    let r: RuleWithOperations = serde_json::from_str(r#"{"operations":null}"#).unwrap();
    assert_eq!(r, RuleWithOperations::default());
    let r: NamedRuleWithOperations = serde_json::from_str("{}").unwrap();
    assert_eq!(r, NamedRuleWithOperations::default());
}

#[test]
fn rejects_unknown_fields() {
    // `resourceNames` belongs to the named rule only.
    let err = serde_json::from_str::<RuleWithOperations>(r#"{"resourceNames":["a"]}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown field `resourceNames`"), "{err}");
    let err = serde_json::from_str::<NamedRuleWithOperations>(r#"{"apiGroup":[""]}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown field `apiGroup`"), "{err}");
}

#[test]
fn serializes_round_trip() {
    let r = with_scope(pods_rule(), "Cluster");
    let json = serde_json::to_string(&r).unwrap();
    assert!(!json.contains("resourceNames"), "{json}");
    assert_eq!(
        serde_json::from_str::<NamedRuleWithOperations>(&json).unwrap(),
        r
    );
}

// ---- operations ----

#[test]
fn operation_exact() {
    assert!(rule_matches(&pods_rule(), &pod_create()));
    let mut a = pod_create();
    a.operation = "UPDATE".into();
    assert!(!rule_matches(&pods_rule(), &a));
}

#[test]
fn operation_wildcard() {
    let r = rule(&["*"], &[""], &["v1"], &["pods"]);
    for op in ["CREATE", "UPDATE", "DELETE", "CONNECT"] {
        let mut a = pod_create();
        a.operation = op.into();
        assert!(rule_matches(&r, &a), "{op}");
    }
}

#[test]
fn operation_is_case_sensitive_and_empty_list_matches_nothing() {
    assert!(!rule_matches(
        &rule(&["create"], &[""], &["v1"], &["pods"]),
        &pod_create()
    ));
    assert!(!rule_matches(
        &rule(&[], &[""], &["v1"], &["pods"]),
        &pod_create()
    ));
}

// ---- groups and versions ----

#[test]
fn group_exact_and_wildcard() {
    let deploy = attrs("apps", "v1", "deployments", "", "CREATE", "ns", "d");
    assert!(rule_matches(
        &rule(&["CREATE"], &["apps"], &["v1"], &["deployments"]),
        &deploy
    ));
    assert!(rule_matches(
        &rule(&["CREATE"], &["*"], &["v1"], &["deployments"]),
        &deploy
    ));
    assert!(!rule_matches(
        &rule(&["CREATE"], &[""], &["v1"], &["deployments"]),
        &deploy
    ));
    assert!(!rule_matches(
        &rule(&["CREATE"], &["apps"], &["v1"], &["pods"]),
        &pod_create()
    ));
}

#[test]
fn version_exact_and_wildcard() {
    assert!(rule_matches(
        &rule(&["CREATE"], &[""], &["*"], &["pods"]),
        &pod_create()
    ));
    assert!(!rule_matches(
        &rule(&["CREATE"], &[""], &["v2"], &["pods"]),
        &pod_create()
    ));
    assert!(!rule_matches(
        &rule(&["CREATE"], &[""], &[], &["pods"]),
        &pod_create()
    ));
}

// ---- resources ----

fn pod_sub(sub: &str) -> RequestAttrs {
    let mut a = pod_create();
    a.subresource = sub.into();
    a
}

#[test]
fn resource_exact_excludes_subresources() {
    assert!(rule_matches(&pods_rule(), &pod_create()));
    assert!(!rule_matches(&pods_rule(), &pod_sub("status")));
    let mut svc = pod_create();
    svc.resource = "services".into();
    assert!(!rule_matches(&pods_rule(), &svc));
}

#[test]
fn resource_star_is_all_resources_without_subresources() {
    let r = rule(&["CREATE"], &["*"], &["*"], &["*"]);
    assert!(rule_matches(&r, &pod_create()));
    assert!(rule_matches(
        &r,
        &attrs("apps", "v1", "deployments", "", "CREATE", "ns", "d")
    ));
    assert!(!rule_matches(&r, &pod_sub("status")));
}

#[test]
fn resource_star_star_is_everything() {
    let r = rule(&["CREATE"], &["*"], &["*"], &["*/*"]);
    assert!(rule_matches(&r, &pod_create()));
    assert!(rule_matches(&r, &pod_sub("status")));
    assert!(rule_matches(&r, &pod_sub("ephemeralcontainers")));
}

#[test]
fn resource_pods_star_is_pods_and_all_subresources() {
    let r = rule(&["CREATE"], &[""], &["v1"], &["pods/*"]);
    assert!(rule_matches(&r, &pod_sub("status")));
    assert!(rule_matches(&r, &pod_sub("ephemeralcontainers")));
    // `*` in the subresource slot also matches the empty subresource.
    assert!(rule_matches(&r, &pod_create()));
    let mut svc = pod_sub("status");
    svc.resource = "services".into();
    assert!(!rule_matches(&r, &svc));
}

#[test]
fn resource_star_status_is_any_status() {
    let r = rule(&["CREATE"], &["*"], &["*"], &["*/status"]);
    assert!(rule_matches(&r, &pod_sub("status")));
    let mut d = attrs("apps", "v1", "deployments", "status", "CREATE", "ns", "d");
    assert!(rule_matches(&r, &d));
    d.subresource = "scale".into();
    assert!(!rule_matches(&r, &d));
    assert!(!rule_matches(&r, &pod_create()));
}

#[test]
fn resource_specific_subresource() {
    let r = rule(&["CREATE"], &[""], &["v1"], &["pods/ephemeralcontainers"]);
    assert!(rule_matches(&r, &pod_sub("ephemeralcontainers")));
    assert!(!rule_matches(&r, &pod_sub("status")));
    assert!(!rule_matches(&r, &pod_create()));
}

#[test]
fn resource_list_any_entry_matches() {
    let r = rule(
        &["CREATE"],
        &[""],
        &["v1"],
        &["services", "pods", "pods/status"],
    );
    assert!(rule_matches(&r, &pod_create()));
    assert!(rule_matches(&r, &pod_sub("status")));
    assert!(!rule_matches(&r, &pod_sub("exec")));
    assert!(!rule_matches(
        &rule(&["CREATE"], &[""], &["v1"], &[]),
        &pod_create()
    ));
}

#[test]
fn resource_split_keeps_rest_as_subresource() {
    assert_eq!(split_resource("pods/a/b"), ("pods", "a/b"));
    assert_eq!(split_resource("pods"), ("pods", ""));
    let r = rule(&["CREATE"], &[""], &["v1"], &["pods/a/b"]);
    assert!(rule_matches(&r, &pod_sub("a/b")));
    assert!(!rule_matches(&r, &pod_sub("a")));
}

// ---- scope ----

fn cluster_obj() -> RequestAttrs {
    attrs(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "",
        "CREATE",
        "",
        "cr",
    )
}

fn namespace_obj(ns_field: &str) -> RequestAttrs {
    attrs("", "v1", "namespaces", "", "CREATE", ns_field, "team-a")
}

fn any_rule() -> NamedRuleWithOperations {
    rule(&["*"], &["*"], &["*"], &["*"])
}

#[test]
fn scope_unset_and_star_match_anything() {
    for r in [any_rule(), with_scope(any_rule(), "*")] {
        assert!(rule_matches(&r, &pod_create()));
        assert!(rule_matches(&r, &cluster_obj()));
        assert!(rule_matches(&r, &namespace_obj("team-a")));
    }
}

#[test]
fn scope_cluster() {
    let r = with_scope(any_rule(), "Cluster");
    assert!(rule_matches(&r, &cluster_obj()));
    assert!(!rule_matches(&r, &pod_create()));
}

#[test]
fn scope_namespaced() {
    let r = with_scope(any_rule(), "Namespaced");
    assert!(rule_matches(&r, &pod_create()));
    assert!(!rule_matches(&r, &cluster_obj()));
}

#[test]
fn namespace_object_counts_as_cluster_scoped() {
    // The API server sets the request namespace of a Namespace object to
    // its own name; it must still count as cluster-scoped.
    let ns = namespace_obj("team-a");
    assert!(rule_matches(&with_scope(any_rule(), "Cluster"), &ns));
    assert!(!rule_matches(&with_scope(any_rule(), "Namespaced"), &ns));
    let ns_status = attrs(
        "",
        "v1",
        "namespaces",
        "status",
        "UPDATE",
        "team-a",
        "team-a",
    );
    let all = rule(&["*"], &["*"], &["*"], &["*/*"]);
    assert!(rule_matches(
        &with_scope(all.clone(), "Cluster"),
        &ns_status
    ));
    assert!(!rule_matches(&with_scope(all, "Namespaced"), &ns_status));
}

#[test]
fn namespace_special_case_needs_exact_core_v1_gvr() {
    // Only core v1 namespaces is special; a CRD named `namespaces` in
    // another group is an ordinary namespaced resource.
    let other = attrs(
        "example.com",
        "v1",
        "namespaces",
        "",
        "CREATE",
        "team-a",
        "x",
    );
    assert!(rule_matches(&with_scope(any_rule(), "Namespaced"), &other));
    assert!(!rule_matches(&with_scope(any_rule(), "Cluster"), &other));
}

#[test]
fn unknown_scope_never_matches() {
    let r = with_scope(any_rule(), "namespaced");
    assert!(!rule_matches(&r, &pod_create()));
    assert!(!rule_matches(&r, &cluster_obj()));
}

// ---- resourceNames ----

#[test]
fn resource_names_empty_matches_any_name() {
    let mut a = pod_create();
    a.name = String::new();
    assert!(rule_matches(&pods_rule(), &a));
}

#[test]
fn resource_names_restrict_by_name() {
    let mut r = pods_rule();
    r.resource_names = s(&["a", "p"]);
    assert!(rule_matches(&r, &pod_create()));
    let mut a = pod_create();
    a.name = "other".into();
    assert!(!rule_matches(&r, &a));
    a.name = String::new();
    assert!(!rule_matches(&r, &a));
}

#[test]
fn resource_names_do_not_rescue_a_non_matching_rule() {
    let mut r = pods_rule();
    r.resource_names = s(&["p"]);
    let mut a = pod_create();
    a.operation = "DELETE".into();
    assert!(!rule_matches(&r, &a));
}

#[test]
fn plain_rule_matches_ignores_names() {
    let plain = pods_rule().rule();
    assert!(plain.matches(&pod_create()));
    assert!(!plain.matches(&pod_sub("status")));
    let mut named = pods_rule();
    named.resource_names = s(&["x"]);
    assert!(!named.matches(&pod_create()));
}

// ---- validation ----

#[test]
fn valid_rule_has_no_diagnostics() {
    assert!(pods_rule().validate().is_empty());
    assert!(with_scope(any_rule(), "Namespaced").validate().is_empty());
    assert!(rule(
        &["CREATE", "UPDATE"],
        &["", "apps"],
        &["v1"],
        &["pods", "pods/status"]
    )
    .validate()
    .is_empty());
    assert!(pods_rule().rule().validate().is_empty());
}

#[test]
fn unknown_operation_is_reported() {
    let r = rule(&["CREATE", "PATCH"], &[""], &["v1"], &["pods"]);
    assert_eq!(
            r.validate_at("spec.matchConstraints.resourceRules[0]"),
            vec![r#"spec.matchConstraints.resourceRules[0].operations[1]: Unsupported value: "PATCH": supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE""#.to_string()]
        );
    let r = rule(&["create"], &[""], &["v1"], &["pods"]).rule();
    assert_eq!(r.validate().len(), 1);
    assert!(r.validate()[0].starts_with("operations[0]: Unsupported value: \"create\""));
}

#[test]
fn unknown_scope_is_reported() {
    let r = with_scope(pods_rule(), "Global");
    assert_eq!(
        r.validate(),
        vec![
            r#"scope: Unsupported value: "Global": supported values: "*", "Cluster", "Namespaced""#
                .to_string()
        ]
    );
}

#[test]
fn missing_lists_are_required() {
    let errs = rule(&[], &[], &[], &[]).validate_at("r");
    assert_eq!(
        errs,
        s(&[
            "r.operations: Required value",
            "r.apiGroups: Required value",
            "r.apiVersions: Required value",
            "r.resources: Required value",
        ])
    );
}

#[test]
fn wildcards_must_stand_alone() {
    let errs = rule(&["*", "CREATE"], &["*", "apps"], &["*", "v1"], &["pods"]).validate();
    assert_eq!(
        errs,
        s(&[
            r#"operations: Invalid value: ["*","CREATE"]: if '*' is present, must not specify other operations"#,
            r#"apiGroups: Invalid value: ["*","apps"]: if '*' is present, must not specify other API groups"#,
            r#"apiVersions: Invalid value: ["*","v1"]: if '*' is present, must not specify other API versions"#,
        ])
    );
}

#[test]
fn empty_version_and_resource_entries_are_required() {
    let errs = rule(&["CREATE"], &[""], &["v1", ""], &["pods", ""]).validate();
    assert_eq!(
        errs,
        s(&[
            "apiVersions[1]: Required value",
            "resources[1]: Required value"
        ])
    );
}

#[test]
fn resource_wildcard_conflicts() {
    let errs = rule(&["CREATE"], &[""], &["v1"], &["*/*", "pods"]).validate();
    assert_eq!(
        errs,
        s(&[
            r#"resources: Invalid value: ["*/*","pods"]: if '*/*' is present, must not specify other resources"#
        ])
    );
    let errs = rule(&["CREATE"], &[""], &["v1"], &["*", "pods"]).validate();
    assert_eq!(
        errs,
        s(&[
            r#"resources: Invalid value: ["*","pods"]: if '*' is present, must not specify other resources without subresources"#
        ])
    );
    let errs = rule(&["CREATE"], &[""], &["v1"], &["pods/*", "pods/status"]).validate();
    assert_eq!(
        errs,
        s(&[
            r#"resources[1]: Invalid value: "pods/status": if 'pods/*' is present, must not specify pods/status"#
        ])
    );
    let errs = rule(&["CREATE"], &[""], &["v1"], &["*/status", "pods/status"]).validate();
    assert_eq!(
        errs,
        s(&[
            r#"resources[1]: Invalid value: "pods/status": if '*/status' is present, must not specify pods/status"#
        ])
    );
    // `*` with subresource entries is fine.
    assert!(rule(&["CREATE"], &[""], &["v1"], &["*", "pods/status"])
        .validate()
        .is_empty());
}

#[test]
fn resource_validation_keeps_apiserver_order_quirks() {
    // Only the last single-segment entry decides the `*` conflict, and
    // `x/*` only conflicts with later entries, as in the API server.
    assert!(rule(&["CREATE"], &[""], &["v1"], &["pods", "*"])
        .validate()
        .is_empty());
    assert!(
        rule(&["CREATE"], &[""], &["v1"], &["pods/status", "pods/*"])
            .validate()
            .is_empty()
    );
}

#[test]
fn resource_names_are_validated() {
    let mut r = pods_rule();
    r.resource_names = s(&["ok", "..", "a/b%c", "ok"]);
    assert_eq!(
        r.validate_at("x"),
        s(&[
            r#"x.resourceNames[1]: Invalid value: "..": may not be '..'"#,
            r#"x.resourceNames[2]: Invalid value: "a/b%c": may not contain '/'"#,
            r#"x.resourceNames[2]: Invalid value: "a/b%c": may not contain '%'"#,
            r#"x.resourceNames[3]: Duplicate value: "ok""#,
        ])
    );
}
