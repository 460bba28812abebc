//! AdmissionReview bodies in the shapes the Kubernetes API server sends.

use serde_json::{json, Value};

/// A Pod manifest with these container images.
pub fn pod(name: &str, images: &[&str]) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": containers(images)},
    })
}

/// A Deployment with these images in its pod template.
pub fn deployment(name: &str, labels: Value, images: &[&str]) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "labels": labels.clone()},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": containers(images)},
            },
        },
    })
}

/// A CronJob with these images in its job template.
pub fn cronjob(name: &str, labels: Value, images: &[&str]) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedule": "* * * * *",
            "jobTemplate": {"spec": {"template": {
                "metadata": {"labels": labels},
                "spec": {"restartPolicy": "Never", "containers": containers(images)},
            }}},
        },
    })
}

fn containers(images: &[&str]) -> Value {
    Value::Array(
        images
            .iter()
            .enumerate()
            .map(|(i, image)| json!({"name": format!("c{i}"), "image": image}))
            .collect(),
    )
}

/// The API resource (group, version, plural) for an object: group and
/// version from its `apiVersion` (a Pod when it has none), the plural as the
/// API server names the built-in kinds.
fn resource_of(object: &Value) -> (String, String, String) {
    let api_version = object["apiVersion"].as_str().unwrap_or("v1");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = object["kind"]
        .as_str()
        .unwrap_or("Pod")
        .to_ascii_lowercase();
    let plural = match kind.strip_suffix('y') {
        Some(stem) => format!("{stem}ies"),
        None if kind.ends_with('s') => format!("{kind}es"),
        None => format!("{kind}s"),
    };
    (group.to_string(), version.to_string(), plural)
}

/// An AdmissionReview for `operation` on `object` in `namespace`.
pub fn review(operation: &str, namespace: &str, object: &Value) -> Value {
    let (group, version, resource) = resource_of(object);
    let kind = object["kind"].clone();
    let name = object["metadata"]["name"].clone();
    let (obj, old) = match operation {
        "DELETE" => (Value::Null, object.clone()),
        "UPDATE" => (object.clone(), object.clone()),
        _ => (object.clone(), Value::Null),
    };
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": resource},
            "requestKind": {"group": group, "version": version, "kind": kind},
            "requestResource": {"group": group, "version": version, "resource": resource},
            "name": name,
            "namespace": namespace,
            "operation": operation,
            "userInfo": {"username": "admin", "groups": ["system:authenticated"]},
            "object": obj,
            "oldObject": old,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    })
}

/// A CREATE review of a Pod in `default`.
pub fn create_pod(images: &[&str]) -> Value {
    review("CREATE", "default", &pod("test-pod", images))
}

/// The decoded JSON Patch of a mutate response.
/// An AdmissionResponse's `status.message` (empty when there is none).
pub fn message(resp: &Value) -> String {
    resp["status"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

pub fn patch(resp: &Value) -> Value {
    use base64::Engine;
    assert_eq!(resp["patchType"], "JSONPatch", "{resp}");
    let raw = base64::engine::general_purpose::STANDARD
        .decode(resp["patch"].as_str().unwrap_or_default())
        .expect("base64 patch");
    serde_json::from_slice(&raw).expect("JSON patch")
}

/// `object` with a mutate response's patch applied, as the API server
/// does before it calls the validating webhooks. ivpol only ever patches
/// with `replace` (digest pinning).
pub fn patched(object: &Value, resp: &Value) -> Value {
    let mut out = object.clone();
    if resp.get("patch").is_none() {
        return out;
    }
    for op in patch(resp).as_array().into_iter().flatten() {
        assert_eq!(op["op"], "replace", "{op}");
        let path = op["path"].as_str().unwrap_or_default();
        let target = out.pointer_mut(path).unwrap_or_else(|| panic!("no {path}"));
        *target = op["value"].clone();
    }
    out
}
