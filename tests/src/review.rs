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

/// The API resource (group, version, plural) for an object's kind.
fn resource_of(object: &Value) -> (&'static str, &'static str, &'static str) {
    match object["kind"].as_str().unwrap_or_default() {
        "Deployment" => ("apps", "v1", "deployments"),
        "CronJob" => ("batch", "v1", "cronjobs"),
        "Namespace" => ("", "v1", "namespaces"),
        _ => ("", "v1", "pods"),
    }
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
