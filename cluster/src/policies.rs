//! The cluster's policies and PolicyExceptions as policy documents.

use super::drive;
use anyhow::{bail, Result};
use ivpol_runtime::policies::{Document, Owner};
use kube::api::{ApiResource, DynamicObject, ListParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use tokio::sync::Notify;

const GROUP: &str = "policies.kyverno.io";

/// The versions tried, newest first: the first one the cluster serves is
/// watched (the API server converts every object to it).
const VERSIONS: [&str; 3] = ["v1", "v1beta1", "v1alpha1"];

/// A kind ivpol reads from the cluster.
struct Kind {
    kind: &'static str,
    plural: &'static str,
    /// Without it ivpol cannot serve (the policies themselves); an absent
    /// PolicyException CRD only means there are no exceptions.
    required: bool,
}

const KINDS: [Kind; 3] = [
    Kind {
        kind: "ImageValidatingPolicy",
        plural: "imagevalidatingpolicies",
        required: true,
    },
    Kind {
        kind: "NamespacedImageValidatingPolicy",
        plural: "namespacedimagevalidatingpolicies",
        required: true,
    },
    Kind {
        kind: "PolicyException",
        plural: "policyexceptions",
        required: false,
    },
];

/// One reflector per kind.
pub(super) struct PolicyWatch {
    stores: Vec<(ApiResource, Store<DynamicObject>)>,
}

impl PolicyWatch {
    pub(super) async fn start(client: &Client, changed: Arc<Notify>) -> Result<PolicyWatch> {
        let mut stores = Vec::new();
        for kind in &KINDS {
            let Some(resource) = served(client, kind).await? else {
                continue;
            };
            let writer = reflector::store::Writer::new(resource.clone());
            let reader = writer.as_reader();
            let api = Api::<DynamicObject>::all_with(client.clone(), &resource);
            let stream = reflector::reflector(writer, watcher(api, watcher::Config::default()))
                .default_backoff();
            tokio::spawn(drive(stream, kind.plural, Some(changed.clone())));
            tracing::info!(api_version = %resource.api_version, kind = kind.kind, "watching");
            stores.push((resource, reader));
        }
        Ok(PolicyWatch { stores })
    }

    pub(super) async fn wait_synced(&self) {
        for (_, store) in &self.stores {
            let _ = store.wait_until_ready().await;
        }
    }

    /// The policies (not the exceptions) with their API resource.
    pub(super) fn policy_objects(&self) -> Vec<(ApiResource, Arc<DynamicObject>)> {
        self.stores
            .iter()
            .filter(|(resource, _)| resource.kind != "PolicyException")
            .flat_map(|(resource, store)| {
                store
                    .state()
                    .into_iter()
                    .map(move |o| (resource.clone(), o))
            })
            .collect()
    }

    /// Every object as a document, in a stable order (the reload hash
    /// compares them).
    pub(super) fn documents(&self) -> Vec<Document> {
        let mut out: Vec<Document> = self
            .stores
            .iter()
            .flat_map(|(resource, store)| {
                store
                    .state()
                    .into_iter()
                    .map(move |o| document(resource, &o))
            })
            .collect();
        out.sort_by(|a, b| a.source.cmp(&b.source));
        out
    }
}

/// The newest version of `kind` the cluster serves; none for an optional
/// kind it does not serve at all.
async fn served(client: &Client, kind: &Kind) -> Result<Option<ApiResource>> {
    for version in VERSIONS {
        let resource = super::api_resource(&format!("{GROUP}/{version}"), kind.kind, kind.plural);
        let api = Api::<DynamicObject>::all_with(client.clone(), &resource);
        match api.list_metadata(&ListParams::default().limit(1)).await {
            Ok(_) => return Ok(Some(resource)),
            Err(kube::Error::Api(status)) if status.code == 404 => continue,
            Err(e) => bail!("listing {}.{GROUP}/{version}: {e}", kind.plural),
        }
    }
    if kind.required {
        bail!(
            "the API server serves no version of {}.{GROUP} ({}): install Kyverno's CRDs",
            kind.plural,
            VERSIONS.join(", ")
        );
    }
    tracing::warn!(
        "the API server serves no {}.{GROUP}: no exceptions apply",
        kind.plural
    );
    Ok(None)
}

/// The object as the component reads a policy file: apiVersion, kind,
/// name, namespace and spec, which is all that decides what it enforces,
/// and the few annotations and labels its report results carry
/// ([`ivpol_refs::POLICY_REPORT_ANNOTATIONS`]). Status, other labels and
/// annotations and the server's bookkeeping are left out, so that a status
/// write, or a tenant relabelling its NIVPs, is no reload (which would
/// recompile every namespace's policies and fetch every registry Secret
/// again).
fn document(resource: &ApiResource, o: &DynamicObject) -> Document {
    let meta = &o.metadata;
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(meta.name));
    if let Some(ns) = &meta.namespace {
        metadata.insert("namespace".into(), json!(ns));
    }
    let kept = |map: &Option<std::collections::BTreeMap<String, String>>, keys: &[&str]| {
        let kept: Map<String, Value> = (map.iter().flatten())
            .filter(|(k, _)| keys.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        (!kept.is_empty()).then_some(Value::Object(kept))
    };
    if let Some(a) = kept(&meta.annotations, &ivpol_refs::POLICY_REPORT_ANNOTATIONS) {
        metadata.insert("annotations".into(), a);
    }
    if let Some(l) = kept(&meta.labels, &ivpol_refs::POLICY_REPORT_LABELS) {
        metadata.insert("labels".into(), l);
    }
    let mut value = json!({
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": metadata,
    });
    if let Some(spec) = o.data.get("spec") {
        value["spec"] = spec.clone();
    }
    let place = match &meta.namespace {
        Some(ns) => format!("{ns}/"),
        None => String::new(),
    };
    Document {
        source: format!(
            "kubernetes:{}/{place}{}",
            resource.plural,
            meta.name.as_deref().unwrap_or_default()
        ),
        content: Value::to_string(&value),
        owner: Some(Owner {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
            namespace: meta.namespace.clone(),
            name: meta.name.clone().unwrap_or_default(),
        }),
        refused: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource() -> ApiResource {
        ApiResource {
            group: GROUP.into(),
            version: "v1".into(),
            api_version: format!("{GROUP}/v1"),
            kind: "ImageValidatingPolicy".into(),
            plural: "imagevalidatingpolicies".into(),
        }
    }

    fn object(status: &str, resource_version: &str) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "policies.kyverno.io/v1",
            "kind": "ImageValidatingPolicy",
            "metadata": {
                "name": "p",
                "resourceVersion": resource_version,
                "uid": "u-1",
                "labels": {"team": "a"},
                "annotations": {
                    "kubectl.kubernetes.io/last-applied-configuration": "{...}",
                    "note": "left out",
                },
            },
            "spec": {"validationActions": ["Deny"]},
            "status": {"conditionStatus": {"ready": status == "ready"}},
        }))
        .expect("object")
    }

    /// What the component reads: spec and name; not the status, the
    /// labels and annotations or the server's bookkeeping, so that writing
    /// a status (ivpol's own, as leader) or a relabelling never triggers a
    /// reload.
    #[test]
    fn a_document_is_the_policy_without_status_or_bookkeeping() {
        let d = document(&resource(), &object("ready", "7"));
        assert_eq!(d.source, "kubernetes:imagevalidatingpolicies/p");
        let v: Value = serde_json::from_str(&d.content).expect("JSON");
        assert_eq!(
            v,
            json!({
                "apiVersion": "policies.kyverno.io/v1",
                "kind": "ImageValidatingPolicy",
                "metadata": {"name": "p"},
                "spec": {"validationActions": ["Deny"]},
            })
        );
        let other = document(&resource(), &object("not ready", "8"));
        assert_eq!(
            d.content, other.content,
            "a status write changed the document"
        );
        let mut relabelled = object("ready", "9");
        relabelled.metadata.labels = Some([("team".to_string(), "b".to_string())].into());
        assert_eq!(
            d.content,
            document(&resource(), &relabelled).content,
            "a label edit changed the document"
        );
    }

    /// What its report results carry is kept, and nothing else of the
    /// metadata: the component reads category, severity, scored and the
    /// reporting label from the document.
    #[test]
    fn a_document_keeps_the_report_annotations_and_label() {
        let mut o = object("ready", "7");
        let annotations = o.metadata.annotations.get_or_insert_default();
        annotations.insert("policies.kyverno.io/severity".into(), "high".into());
        annotations.insert("policies.kyverno.io/category".into(), "Supply chain".into());
        let labels = o.metadata.labels.get_or_insert_default();
        labels.insert("reports.kyverno.io/disabled".into(), "".into());
        let v: Value = serde_json::from_str(&document(&resource(), &o).content).expect("JSON");
        assert_eq!(
            v["metadata"],
            json!({
                "name": "p",
                "annotations": {
                    "policies.kyverno.io/category": "Supply chain",
                    "policies.kyverno.io/severity": "high",
                },
                "labels": {"reports.kyverno.io/disabled": ""},
            })
        );
    }
}
