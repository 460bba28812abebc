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

/// Why `matchConstraints` cannot decide whether a request is in scope: the
/// apiserver matcher's deferred selector errors, in its words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatchError {
    /// A selector that does not validate: its field errors, aggregated as
    /// apimachinery aggregates them.
    #[error("{}", aggregate(.0))]
    InvalidSelector(Vec<String>),
    /// A Namespace create or update whose request carries no object, so its
    /// new labels cannot be read (the namespace's name).
    #[error("{root}.namespaceSelector: cannot evaluate: the request for Namespace {0:?} carries no object", root = ROOT)]
    NamespaceWithoutObject(String),
    /// A namespace the host does not know, under a selector that needs its
    /// labels (the namespace's name).
    #[error("{root}.namespaceSelector: namespace {0:?} is not known to ivpol, and the selector needs its labels", root = ROOT)]
    UnknownNamespace(String),
}

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
    /// `resourceRules`: the rules a request must match one of to be in scope.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub resource_rules: Vec<NamedRuleWithOperations>,
    /// `excludeResourceRules`: rules that take a request out of scope, even
    /// when it matches `resourceRules`.
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
    pub fn matches(&self, req: &MatchInput) -> Result<bool, MatchError> {
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
    fn namespace_selector_matches(&self, req: &MatchInput) -> (bool, Option<MatchError>) {
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
            return (false, Some(MatchError::InvalidSelector(errors)));
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
                    Some(MatchError::NamespaceWithoutObject(
                        namespace_name(req).to_string(),
                    )),
                ),
            };
        }
        match &req.namespace_labels {
            Some(labels) => (selector.matches(labels), None),
            // Unknown namespace, but the selector only asks for its name:
            // the name label the API server sets on every namespace answers.
            None if selector.uses_only_key(NAMESPACE_NAME_LABEL) => {
                let labels = ivpol_refs::sort::map([(
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
                Some(MatchError::UnknownNamespace(
                    namespace_name(req).to_string(),
                )),
            ),
        }
    }

    /// `objectSelector` as the apiserver object predicate evaluates it: the
    /// new or the old object must match; an absent object matches nothing
    /// (`matchObject(nil)` is false), so a non-empty selector needs at least
    /// one of them.
    fn object_selector_matches(&self, req: &MatchInput) -> (bool, Option<MatchError>) {
        let Some(selector) = &self.object_selector else {
            return (true, None);
        };
        let errors = selector.validate_at(&child_path(ROOT, "objectSelector"));
        if !errors.is_empty() {
            return (false, Some(MatchError::InvalidSelector(errors)));
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
mod tests;
