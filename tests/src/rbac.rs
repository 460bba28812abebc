//! Kubernetes RBAC, evaluated the way the API server's authorizer does for
//! the rules `deploy/` renders to: which requests a ServiceAccount may make. The
//! kube_api test server has no authorizer; this checks every request ivpol
//! made against the manifests it would run with.

use crate::kube_api::RequestRecord;
use serde_json::Value;

/// Every object of the production install (`kustomize::install`): the
/// cert-manager overlay with every component.
pub fn deploy_manifests() -> Vec<Value> {
    crate::kustomize::install().to_vec()
}

/// What the authorizer sees of one resource request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attributes {
    pub verb: String,
    pub group: String,
    /// `plural`, or `plural/subresource`.
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

/// The resource attributes of `r`; none for non-resource URLs (discovery,
/// `/version`), which every authenticated user may read.
pub fn attributes(r: &RequestRecord) -> Option<Attributes> {
    let parts: Vec<&str> = r.path.trim_matches('/').split('/').collect();
    let (group, rest) = match parts.as_slice() {
        ["api", _version, rest @ ..] => (String::new(), rest),
        ["apis", group, _version, rest @ ..] => (group.to_string(), rest),
        _ => return None,
    };
    // `/namespaces/x` alone is the Namespace `x`; deeper, its contents.
    let (namespace, rest) = match rest {
        ["namespaces", ns, plural, rest @ ..] => (Some(ns.to_string()), prepend(plural, rest)),
        other => (None, other.to_vec()),
    };
    let (plural, name, sub) = match rest.as_slice() {
        [plural] => (*plural, None, None),
        [plural, name] => (*plural, Some(name.to_string()), None),
        [plural, name, sub] => (*plural, Some(name.to_string()), Some(*sub)),
        _ => return None,
    };
    let verb = match (r.method.as_str(), &name, r.watch) {
        (_, _, true) => "watch",
        ("GET", None, _) => "list",
        ("GET", Some(_), _) => "get",
        ("POST", _, _) => "create",
        ("PUT", _, _) => "update",
        ("PATCH", _, _) => "patch",
        ("DELETE", _, _) => "delete",
        _ => return None,
    };
    Some(Attributes {
        verb: verb.into(),
        group,
        resource: match sub {
            Some(sub) => format!("{plural}/{sub}"),
            None => plural.to_string(),
        },
        namespace,
        name,
    })
}

fn prepend<'a>(first: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    std::iter::once(first).chain(rest.iter().copied()).collect()
}

/// Whether the ServiceAccount `namespace/name` may make `a`, by the Roles,
/// ClusterRoles and their bindings in `manifests`.
pub fn allows(manifests: &[Value], namespace: &str, name: &str, a: &Attributes) -> bool {
    let bound = |b: &Value| {
        b["subjects"].as_array().into_iter().flatten().any(|s| {
            s["kind"] == "ServiceAccount" && s["name"] == name && s["namespace"] == namespace
        })
    };
    let role = |kind: &str, role_name: &Value, role_ns: Option<&Value>| {
        manifests.iter().find(|m| {
            m["kind"] == kind
                && &m["metadata"]["name"] == role_name
                && role_ns.is_none_or(|ns| &m["metadata"]["namespace"] == ns)
        })
    };
    manifests.iter().filter(|b| bound(b)).any(|b| {
        let ref_kind = b["roleRef"]["kind"].as_str().unwrap_or_default();
        let (rules, scope) = match (b["kind"].as_str(), ref_kind) {
            (Some("ClusterRoleBinding"), "ClusterRole") => {
                (role("ClusterRole", &b["roleRef"]["name"], None), None)
            }
            (Some("RoleBinding"), "ClusterRole") => (
                role("ClusterRole", &b["roleRef"]["name"], None),
                b["metadata"]["namespace"].as_str(),
            ),
            (Some("RoleBinding"), "Role") => (
                role(
                    "Role",
                    &b["roleRef"]["name"],
                    Some(&b["metadata"]["namespace"]),
                ),
                b["metadata"]["namespace"].as_str(),
            ),
            _ => return false,
        };
        let in_scope = scope.is_none_or(|s| a.namespace.as_deref() == Some(s));
        in_scope
            && rules.is_some_and(|r| {
                r["rules"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|rule| matches(rule, a))
            })
    })
}

fn matches(rule: &Value, a: &Attributes) -> bool {
    let has = |field: &str, value: &str| {
        rule[field]
            .as_array()
            .into_iter()
            .flatten()
            .any(|v| v == "*" || v == value)
    };
    let named = match rule["resourceNames"].as_array() {
        None => true,
        Some(names) if names.is_empty() => true,
        Some(names) => a
            .name
            .as_ref()
            .is_some_and(|n| names.iter().any(|v| v == n.as_str())),
    };
    has("verbs", &a.verb) && has("apiGroups", &a.group) && has("resources", &a.resource) && named
}

/// Whether one Role or ClusterRole's rules allow `a` (bindings aside).
pub fn role_allows(role: &Value, a: &Attributes) -> bool {
    role["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|rule| matches(rule, a))
}
