//! The AdmissionRequest Kyverno's CLI and background scan build for a
//! resource read from a file or the cluster, so that evaluation outside
//! admission runs the very same path as the webhook.

use serde_json::{json, Value};

/// Why a resource cannot be made into an AdmissionRequest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    /// Not JSON.
    #[error("resource is not valid JSON: {0}")]
    NotJson(String),
    /// No `apiVersion` or `kind`.
    #[error("resource has no {0}")]
    Missing(&'static str),
    /// Neither `metadata.name` nor `metadata.generateName`.
    #[error("{0} resource has no metadata.name")]
    NoName(String),
    /// An operation the CLI does not simulate.
    #[error("operation {0:?} is not one of CREATE, UPDATE, DELETE")]
    Operation(String),
}

/// The AdmissionRequest JSON for `resource` (an object's JSON) under
/// `operation`: CREATE sets `object`, UPDATE sets both `object` and
/// `oldObject` to it, DELETE sets only `oldObject`.
pub fn request(resource: &str, operation: &str) -> Result<String, ResourceError> {
    let object: Value =
        serde_json::from_str(resource).map_err(|e| ResourceError::NotJson(e.to_string()))?;
    let api_version = field(&object, "apiVersion")?;
    let kind = field(&object, "kind")?;
    let name = object
        .pointer("/metadata/name")
        .or_else(|| object.pointer("/metadata/generateName"))
        .and_then(Value::as_str)
        .ok_or_else(|| ResourceError::NoName(kind.to_string()))?;
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let namespace = namespace_of(&object, kind);
    let (new, old) = match operation {
        "CREATE" => (object.clone(), Value::Null),
        "UPDATE" => (object.clone(), object.clone()),
        "DELETE" => (Value::Null, object.clone()),
        other => return Err(ResourceError::Operation(other.to_string())),
    };
    let request = json!({
        "uid": "ivpol-offline",
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": resource_name(kind)},
        "name": name,
        "namespace": namespace,
        "operation": operation,
        "userInfo": {},
        "object": new,
        "oldObject": old,
        "dryRun": false,
    });
    Ok(request.to_string())
}

/// The top-level string field `name`, not empty.
fn field<'a>(object: &'a Value, name: &'static str) -> Result<&'a str, ResourceError> {
    object
        .get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or(ResourceError::Missing(name))
}

/// The resource's namespace by the rule the host names it by too
/// (`ivpol_refs::scope`); empty for a cluster-scoped kind.
fn namespace_of(object: &Value, kind: &str) -> String {
    let declared = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str);
    ivpol_refs::scope::namespace_of(kind, declared).unwrap_or_default()
}

/// The resource (plural) of a kind, by the rule Kubernetes uses when it has
/// no discovery data: lower case, `s` → `ses`, `y` → `ies`, else `+s`.
pub fn resource_name(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if lower == "endpoints" {
        return lower;
    }
    if lower.ends_with('s') {
        return format!("{lower}es");
    }
    if let Some(stem) = lower.strip_suffix('y') {
        return format!("{stem}ies");
    }
    format!("{lower}s")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::Request;

    fn pod(extra: Value) -> String {
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
        if let (Some(p), Some(e)) = (pod.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        pod.to_string()
    }

    #[test]
    fn a_pod_without_a_namespace_is_created_in_default() {
        let req =
            Request::parse(&request(&pod(json!({})), "CREATE").expect("builds")).expect("parses");
        assert_eq!(req.namespace, "default");
        assert_eq!(req.resource.resource, "pods");
        assert_eq!(req.kind.kind, "Pod");
        assert_eq!(req.name, "p");
        assert!(req.old_object.is_null());
        assert_eq!(req.object.tree()["kind"], "Pod");
    }

    #[test]
    fn groups_versions_and_namespaces_come_from_the_object() {
        let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "team"}});
        let req = Request::parse(&request(&deploy.to_string(), "UPDATE").expect("builds"))
            .expect("parses");
        assert_eq!(
            (req.resource.group.as_str(), req.resource.version.as_str()),
            ("apps", "v1")
        );
        assert_eq!(req.resource.resource, "deployments");
        assert_eq!(req.namespace, "team");
        assert_eq!(req.object, req.old_object);
    }

    #[test]
    fn delete_carries_only_the_old_object_and_cluster_kinds_no_namespace() {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}});
        let req =
            Request::parse(&request(&ns.to_string(), "DELETE").expect("builds")).expect("parses");
        assert!(req.object.is_null());
        assert_eq!(req.old_object.tree()["metadata"]["name"], "n");
        assert_eq!(req.namespace, "");
        assert!(req.is_namespace_object());
    }

    #[test]
    fn plurals_follow_the_kubernetes_guess() {
        for (kind, plural) in [
            ("Pod", "pods"),
            ("Ingress", "ingresses"),
            ("NetworkPolicy", "networkpolicies"),
            ("Endpoints", "endpoints"),
            ("CronJob", "cronjobs"),
        ] {
            assert_eq!(resource_name(kind), plural);
        }
    }

    #[test]
    fn unusable_resources_are_errors() {
        assert!(matches!(
            request("not json", "CREATE"),
            Err(ResourceError::NotJson(_))
        ));
        for (resource, op, want) in [
            (
                r#"{"kind":"Pod","metadata":{"name":"p"}}"#,
                "CREATE",
                ResourceError::Missing("apiVersion"),
            ),
            (
                r#"{"apiVersion":"v1","metadata":{"name":"p"}}"#,
                "CREATE",
                ResourceError::Missing("kind"),
            ),
            (
                r#"{"apiVersion":"v1","kind":"Pod"}"#,
                "CREATE",
                ResourceError::NoName("Pod".into()),
            ),
            (
                &pod(json!({})),
                "PATCH",
                ResourceError::Operation("PATCH".into()),
            ),
        ] {
            assert_eq!(request(resource, op), Err(want), "{resource}");
        }
        assert_eq!(
            ResourceError::NoName("Pod".into()).to_string(),
            "Pod resource has no metadata.name"
        );
    }
}
