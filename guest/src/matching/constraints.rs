//! `spec.matchConstraints` (`admissionregistration/v1` `MatchResources`): its
//! JSON form, its diagnostics, and the decision whether a request is in
//! scope, following the apiserver policy matcher
//! (`pkg/admission/plugin/policy/matching/matching.go`) as Kyverno adapts it
//! for its CEL policies (`pkg/cel/matching/`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::rules::{rule_matches, NamedRuleWithOperations, RequestAttrs};
use super::selector::LabelSelector;
use super::{aggregate, child_path, index_path, null_as_default};

const ROOT: &str = "spec.matchConstraints";

/// The label the API server puts on every Namespace, holding its name. Kyverno
/// synthesises it when the namespace itself is not available, so it is the
/// one namespace label a selector can rely on even then.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// How rules are compared with the request's resource.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MatchPolicy {
    /// Only the resource exactly as requested.
    Exact,
    /// Also an equivalent form of the resource (another version or group
    /// serving the same objects). This is the API's default.
    #[default]
    Equivalent,
}

/// `spec.matchConstraints`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MatchResources {
    /// Absent means every namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// Absent means every object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_selector: Option<LabelSelector>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub resource_rules: Vec<NamedRuleWithOperations>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub exclude_resource_rules: Vec<NamedRuleWithOperations>,
    /// Absent means [`MatchPolicy::Equivalent`], the value the API server
    /// defaults it to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_policy: Option<MatchPolicy>,
}

/// Everything [`MatchResources::matches`] needs to know about one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MatchInput {
    /// The request's resource (`AdmissionRequest.resource`/`subResource`).
    pub attrs: RequestAttrs,
    /// The resource as originally requested
    /// (`AdmissionRequest.requestResource`/`requestSubResource`) when it
    /// differs from `attrs`; only its group, version, resource and
    /// subresource are used.
    pub request_attrs: Option<RequestAttrs>,
    /// Labels of the request's namespace; `None` when not known.
    pub namespace_labels: Option<BTreeMap<String, String>>,
    /// Labels of the object in the request; `None` when there is no object
    /// (e.g. DELETE).
    pub object_labels: Option<BTreeMap<String, String>>,
    /// Labels of the old object; `None` when there is none (e.g. CREATE).
    pub old_object_labels: Option<BTreeMap<String, String>>,
    /// The request is for a Namespace object itself.
    pub is_namespace_object: bool,
}

impl MatchResources {
    /// The effective match policy.
    pub fn match_policy(&self) -> MatchPolicy {
        self.match_policy.unwrap_or_default()
    }

    /// Field-path diagnostics for this `matchConstraints`, rooted at
    /// `spec.matchConstraints`: Kyverno's requirement of at least one resource
    /// rule, then the API server's checks of both selectors and every rule.
    pub fn validate(&self) -> Vec<String> {
        let mut errors = Vec::new();
        if self.resource_rules.is_empty() {
            errors.push(missing_resource_rules());
        }
        if let Some(sel) = &self.namespace_selector {
            errors.extend(sel.validate_at(&child_path(ROOT, "namespaceSelector")));
        }
        if let Some(sel) = &self.object_selector {
            errors.extend(sel.validate_at(&child_path(ROOT, "objectSelector")));
        }
        for (field, rules) in [
            ("resourceRules", &self.resource_rules),
            ("excludeResourceRules", &self.exclude_resource_rules),
        ] {
            let base = child_path(ROOT, field);
            for (i, rule) in rules.iter().enumerate() {
                errors.extend(rule.validate_at(&index_path(&base, i)));
            }
        }
        errors
    }

    /// Whether the request is in scope of these constraints.
    ///
    /// Order and error handling follow the apiserver matcher: the namespace
    /// and object selectors are evaluated first and a plain mismatch is final;
    /// then a matching exclude rule rules the request out; then some resource
    /// rule must match. An invalid selector is reported as `Err` only once the
    /// request would otherwise match, so a broken policy does not fail
    /// requests it never applied to.
    ///
    /// With no `resourceRules` every resource matches, as in the apiserver and
    /// Kyverno; Kyverno rejects such a policy up front, see
    /// [`MatchResources::validate`].
    pub fn matches(&self, req: &MatchInput) -> Result<bool, String> {
        let (ns_matches, ns_err) = self.namespace_selector_matches(req);
        if !ns_matches && ns_err.is_none() {
            return Ok(false);
        }
        let (obj_matches, obj_err) = self.object_selector_matches(req);
        if !obj_matches && obj_err.is_none() {
            return Ok(false);
        }
        if self.any_rule_matches(&self.exclude_resource_rules, req) {
            return Ok(false);
        }
        if !self.resource_rules.is_empty() && !self.any_rule_matches(&self.resource_rules, req) {
            return Ok(false);
        }
        if let Some(err) = ns_err.or(obj_err) {
            return Err(err);
        }
        Ok(true)
    }

    /// `namespaceSelector` as the apiserver namespace predicate evaluates it.
    /// Returns the match and, separately, a deferred error.
    fn namespace_selector_matches(&self, req: &MatchInput) -> (bool, Option<String>) {
        let attrs = &req.attrs;
        // The predicate tests only the resource name, not group or version.
        let namespace_object = req.is_namespace_object || attrs.resource == "namespaces";
        // Cluster-scoped requests other than Namespaces are never excluded by
        // a namespace selector: there is no namespace to select.
        if attrs.namespace.is_empty() && !namespace_object {
            return (true, None);
        }
        let Some(selector) = &self.namespace_selector else {
            return (true, None);
        };
        let errors = selector.validate_at(&child_path(ROOT, "namespaceSelector"));
        if !errors.is_empty() {
            return (false, Some(aggregate(&errors)));
        }
        if selector.is_empty() {
            return (true, None);
        }
        // Creating or updating a Namespace: its new labels are in the object,
        // not yet in the cluster. Deleting one (or touching a subresource)
        // uses the stored namespace, as the apiserver does.
        let writes_namespace = namespace_object
            && attrs.subresource.is_empty()
            && matches!(attrs.operation.as_str(), "CREATE" | "UPDATE");
        if writes_namespace {
            return match &req.object_labels {
                Some(labels) => (selector.matches(labels), None),
                None => (
                    false,
                    Some(format!(
                        "{ROOT}.namespaceSelector: cannot evaluate: the request for Namespace {:?} carries no object",
                        namespace_name(req)
                    )),
                ),
            };
        }
        match &req.namespace_labels {
            Some(labels) => (selector.matches(labels), None),
            // Unknown namespace, but the selector only asks for its name:
            // the name label the API server sets on every namespace answers.
            None if selector.uses_only_key(NAMESPACE_NAME_LABEL) => {
                let labels = BTreeMap::from([(
                    NAMESPACE_NAME_LABEL.to_string(),
                    namespace_name(req).to_string(),
                )]);
                (selector.matches(&labels), None)
            }
            // Kyverno stands in a namespace with only the name label here
            // (pkg/cel/matching/predicates/namespace), so `env: prod` fails
            // to match and the request is admitted unverified. ivpol fails
            // closed instead: an error result, deferred like any selector
            // error until the rules would match.
            None => (
                false,
                Some(format!(
                    "{ROOT}.namespaceSelector: namespace {:?} is not known to ivpol, and the selector needs its labels",
                    namespace_name(req)
                )),
            ),
        }
    }

    /// `objectSelector` as the apiserver object predicate evaluates it: the
    /// new or the old object must match; an absent object matches nothing
    /// (`matchObject(nil)` is false), so a non-empty selector needs at least
    /// one of them.
    fn object_selector_matches(&self, req: &MatchInput) -> (bool, Option<String>) {
        let Some(selector) = &self.object_selector else {
            return (true, None);
        };
        let errors = selector.validate_at(&child_path(ROOT, "objectSelector"));
        if !errors.is_empty() {
            return (false, Some(aggregate(&errors)));
        }
        if selector.is_empty() {
            return (true, None);
        }
        let matches = |labels: &Option<BTreeMap<String, String>>| {
            labels.as_ref().is_some_and(|l| selector.matches(l))
        };
        (
            matches(&req.object_labels) || matches(&req.old_object_labels),
            None,
        )
    }

    /// Whether any rule matches the request itself or, under `Equivalent`,
    /// the request's alternative resource form.
    ///
    /// The apiserver asks a RESTMapper for every resource equivalent to the
    /// requested one. There is no RESTMapper here; the one equivalent known is
    /// the other form the AdmissionRequest carries, so `Equivalent` matches
    /// `attrs` or `request_attrs`. As in the apiserver's override, only the
    /// resource identity changes: operation, namespace and name stay those of
    /// `attrs`.
    fn any_rule_matches(&self, rules: &[NamedRuleWithOperations], req: &MatchInput) -> bool {
        if rules.iter().any(|rule| rule_matches(rule, &req.attrs)) {
            return true;
        }
        if self.match_policy() == MatchPolicy::Exact {
            return false;
        }
        let Some(alt) = &req.request_attrs else {
            return false;
        };
        let equivalent = RequestAttrs {
            group: alt.group.clone(),
            version: alt.version.clone(),
            resource: alt.resource.clone(),
            subresource: alt.subresource.clone(),
            ..req.attrs.clone()
        };
        equivalent != req.attrs && rules.iter().any(|rule| rule_matches(rule, &equivalent))
    }
}

/// The namespace a request concerns. For a Namespace object the apiserver
/// sets the request namespace to the object's name; fall back to the name in
/// case the caller left it empty.
fn namespace_name(req: &MatchInput) -> &str {
    if req.attrs.namespace.is_empty() {
        &req.attrs.name
    } else {
        &req.attrs.namespace
    }
}

/// Kyverno's message (pkg/image/verification/evaluator/validate.go), a
/// `field.Required` on `spec.matchConstraints`.
fn missing_resource_rules() -> String {
    format!(
        "{ROOT}: Required value: a matchConstraints with at least one resource rule is required"
    )
}

/// Diagnostics for an ImageValidatingPolicy's optional `matchConstraints`:
/// Kyverno requires it to be present with at least one resource rule.
pub fn validate_match_constraints(constraints: Option<&MatchResources>) -> Vec<String> {
    match constraints {
        Some(mc) => mc.validate(),
        None => vec![missing_resource_rules()],
    }
}

#[cfg(test)]
mod tests {
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
        assert!(serde_json::from_str::<MatchResources>(r#"{"resourceRule":[]}"#).is_err());
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
        assert!(
            err.starts_with("spec.matchConstraints.namespaceSelector:"),
            "{err}"
        );
        assert!(err.contains("team-a"), "{err}");
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
            assert!(err.contains("not known to ivpol"), "{err}");
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
            Err("spec.matchConstraints.namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'".to_string())
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
            Err("spec.matchConstraints.objectSelector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'".to_string())
        );
    }

    #[test]
    fn namespace_error_is_reported_before_object_error() {
        let mut mc = with_ns_selector(sel_expr("a", LabelSelectorOperator::In, &[]));
        mc.object_selector = Some(sel_expr("b", LabelSelectorOperator::In, &[]));
        let err = mc.matches(&pod_input()).unwrap_err();
        assert!(
            err.starts_with("spec.matchConstraints.namespaceSelector"),
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
}
