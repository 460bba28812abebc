//! `ivpol scan --kubernetes`: the resources a background scan reads from
//! the cluster (Pods and the pod controllers), and the per-resource
//! policy reports it writes back with server-side apply.

use super::policy_report::{Style, MANAGED_BY};
use super::resources::{self, Resource};
use anyhow::{bail, Context, Result};
use ivpol_runtime::resources::api_resource;
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::Value;
use std::collections::BTreeSet;

/// The field manager of every report write.
pub(crate) const FIELD_MANAGER: &str = "ivpol";

/// Objects asked for per list request.
const PAGE: u32 = 500;

/// What is scanned: Pods and every pod controller autogen covers, all
/// namespaced.
const KINDS: [(&str, &str, &str); 7] = [
    ("v1", "Pod", "pods"),
    ("apps/v1", "Deployment", "deployments"),
    ("apps/v1", "StatefulSet", "statefulsets"),
    ("apps/v1", "DaemonSet", "daemonsets"),
    ("apps/v1", "ReplicaSet", "replicasets"),
    ("batch/v1", "Job", "jobs"),
    ("batch/v1", "CronJob", "cronjobs"),
];

/// The namespaced report kind of `style`'s API.
fn report_resource(style: Style) -> ApiResource {
    let api = style.api;
    api_resource(api.api_version(), api.kind(true), api.plural())
}

/// Every Pod and pod controller in every namespace, listed in pages of
/// [`PAGE`]; more than `max` in all is refused (nothing is scanned) rather
/// than scanned in part.
pub async fn list_workloads(client: &Client, max: usize) -> Result<Vec<Resource>> {
    let mut out = Vec::new();
    for (api_version, kind, plural) in KINDS {
        let api = Api::<DynamicObject>::all_with(
            client.clone(),
            &api_resource(api_version, kind, plural),
        );
        let mut token: Option<String> = None;
        loop {
            let mut params = ListParams::default().limit(PAGE);
            if let Some(t) = &token {
                params = params.continue_token(t);
            }
            let list = api
                .list(&params)
                .await
                .with_context(|| format!("listing {plural} ({api_version})"))?;
            for item in list.items {
                if out.len() >= max {
                    bail!(
                        "the cluster holds more than {max} Pods and pod controllers; \
                         nothing was scanned (raise --max-resources)"
                    );
                }
                out.push(resource(api_version, kind, plural, item)?);
            }
            token = list.metadata.continue_.filter(|c| !c.is_empty());
            if token.is_none() {
                break;
            }
        }
    }
    Ok(out)
}

/// A listed object as a scanned resource: list items carry no apiVersion
/// and kind, so they are set; `managedFields` is server bookkeeping no
/// policy reads and is dropped.
fn resource(api_version: &str, kind: &str, plural: &str, item: DynamicObject) -> Result<Resource> {
    let mut object = serde_json::to_value(&item).context("a listed object")?;
    object["apiVersion"] = api_version.into();
    object["kind"] = kind.into();
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    let subject = resources::subject(&object)?;
    let source = format!(
        "kubernetes:{plural}/{}/{}",
        subject.namespace.as_deref().unwrap_or_default(),
        subject.name
    );
    Ok(Resource {
        source,
        object,
        subject,
    })
}

/// The report `namespace/name` of `style`'s API as the cluster has it, if
/// any.
pub(crate) async fn get_report(
    client: &Client,
    style: Style,
    namespace: &str,
    name: &str,
) -> Result<Option<Value>> {
    let api =
        Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &report_resource(style));
    let found = api
        .get_opt(name)
        .await
        .with_context(|| format!("reading {} {namespace}/{name}", style.api.kind(true)))?;
    Ok(found.map(|o| o.data))
}

/// Writes each report (`metadata.namespace` and `name` say where) with
/// server-side apply, field manager [`FIELD_MANAGER`], forcing ownership of
/// the fields it sets. The first failure stops the writes.
pub async fn apply_reports(client: &Client, style: Style, reports: &[Value]) -> Result<()> {
    let resource = report_resource(style);
    let kind = style.api.kind(true);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    for report in reports {
        let text = |key: &str| report["metadata"][key].as_str().unwrap_or_default();
        let (namespace, name) = (text("namespace"), text("name"));
        let api = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &resource);
        api.patch(name, &params, &Patch::Apply(report))
            .await
            .with_context(|| {
                format!(
                    "writing {kind} {namespace}/{name} (is the {} CRD installed?)",
                    style.api.api_version()
                )
            })?;
    }
    Ok(())
}

/// Deletes the reports (labelled as `style` labels them) about resources
/// that were scanned and have no result any more (say, the policy was
/// deleted), as Kyverno deletes a report left without results.
/// `resultless` holds `(namespace, report name)` of those resources;
/// reports about anything else are left alone (the owner reference removes
/// those of deleted resources). How many were deleted.
pub async fn delete_stale(
    client: &Client,
    style: Style,
    resultless: &BTreeSet<(String, String)>,
    max: usize,
) -> Result<usize> {
    if resultless.is_empty() {
        return Ok(0);
    }
    let resource = report_resource(style);
    let api = Api::<DynamicObject>::all_with(client.clone(), &resource);
    let selector = format!("{MANAGED_BY}={}", style.managed_by());
    let mut stale = Vec::new();
    let mut seen = 0usize;
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().labels(&selector).limit(PAGE);
        if let Some(t) = &token {
            params = params.continue_token(t);
        }
        let list = api
            .list_metadata(&params)
            .await
            .with_context(|| format!("listing {}", style.api.plural()))?;
        for item in list.items {
            seen += 1;
            if seen > max {
                bail!(
                    "more than {max} {}; stale ones were not deleted",
                    style.api.plural()
                );
            }
            let key = (
                item.metadata.namespace.clone().unwrap_or_default(),
                item.metadata.name.clone().unwrap_or_default(),
            );
            if resultless.contains(&key) {
                stale.push(key);
            }
        }
        token = list.metadata.continue_.filter(|c| !c.is_empty());
        if token.is_none() {
            break;
        }
    }
    for (namespace, name) in &stale {
        let api = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &resource);
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => {
                let kind = style.api.kind(true);
                return Err(e).context(format!("deleting {kind} {namespace}/{name}"));
            }
        }
    }
    Ok(stale.len())
}
