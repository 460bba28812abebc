//! `resource.Get` and `resource.List` for the component: read-only access
//! to the kinds the operator grants (`--grant-resource configmaps`).
//!
//! Objects are fetched on demand, never watched cluster-wide, and kept for
//! [`TTL`] in a cache bounded in entries and bytes, so that a policy that
//! reads one ConfigMap per request costs one GET per few seconds and a
//! change reaches policies within the TTL. Nothing is granted by default.

use super::is_object_name;
use kube::api::{DynamicObject, ListParams};
use kube::{Api, Client};
use std::time::Duration;

/// How long a read object is reused.
pub(super) const TTL: Duration = Duration::from_secs(3);
/// The most bytes of objects the cache holds (each entry counted as at
/// least 1 KiB, which bounds the entries too).
const MAX_CACHE_BYTES: u64 = 16 << 20;
/// The largest object (or list) handed to the component.
const MAX_OBJECT_BYTES: usize = 1 << 20;
/// The most items a list may hold.
const MAX_LIST_ITEMS: u32 = 500;

/// What the operator granted, and a cache of what was read.
pub(crate) struct ClusterResources {
    client: Client,
    granted: Vec<String>,
    /// (apiVersion, resource, namespace, name or "" for a list) to JSON
    /// (`None`: the object does not exist).
    cache: moka::sync::Cache<(String, String, String, String), Option<String>>,
}

impl ClusterResources {
    pub(crate) fn new(client: Client, granted: Vec<String>) -> ClusterResources {
        let cache = moka::sync::Cache::builder()
            .max_capacity(MAX_CACHE_BYTES)
            // Bytes, but at least 1 KiB an entry: the cache holds at most
            // 16 MiB and at most 16,384 entries.
            .weigher(|k: &(String, String, String, String), v: &Option<String>| {
                let key = k.0.len() + k.1.len() + k.2.len() + k.3.len();
                let bytes = (key + v.as_ref().map_or(0, String::len)).max(1024);
                u32::try_from(bytes).unwrap_or(u32::MAX)
            })
            .time_to_live(TTL)
            .build();
        ClusterResources {
            client,
            granted,
            cache,
        }
    }

    /// The granted resources, as `<plural>` or `<plural>.<group>`.
    pub(crate) fn granted(&self) -> Vec<String> {
        self.granted.clone()
    }

    /// One object as JSON; none when it does not exist.
    pub(crate) async fn get(
        &self,
        api_version: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<String>, String> {
        let api = self.api(api_version, resource, namespace)?;
        if !is_object_name(name) {
            return Err(format!("invalid {resource} name {name:?}"));
        }
        let key = key(api_version, resource, namespace, name);
        if let Some(hit) = self.cache.get(&key) {
            return Ok(hit);
        }
        let found = api
            .get_opt(name)
            .await
            .map_err(|e| format!("reading {resource} {namespace}/{name}: {e}"))?;
        let text = found.map(|o| bounded(resource, &o)).transpose()?;
        self.cache.insert(key, text.clone());
        Ok(text)
    }

    /// A `List` of the objects in `namespace` (all namespaces if empty).
    pub(crate) async fn list(
        &self,
        api_version: &str,
        resource: &str,
        namespace: &str,
    ) -> Result<String, String> {
        let api = self.api(api_version, resource, namespace)?;
        let key = key(api_version, resource, namespace, "");
        if let Some(Some(hit)) = self.cache.get(&key) {
            return Ok(hit);
        }
        let list = api
            .list(&ListParams::default().limit(MAX_LIST_ITEMS))
            .await
            .map_err(|e| format!("listing {resource} in {namespace:?}: {e}"))?;
        if list
            .metadata
            .continue_
            .as_deref()
            .is_some_and(|c| !c.is_empty())
        {
            return Err(format!(
                "listing {resource} in {namespace:?}: more than {MAX_LIST_ITEMS} objects"
            ));
        }
        let value = serde_json::json!({
            "apiVersion": "v1",
            "kind": "List",
            "metadata": {"resourceVersion": list.metadata.resource_version},
            "items": list.items,
        });
        let text = bounded(resource, &value)?;
        self.cache.insert(key, Some(text.clone()));
        Ok(text)
    }

    /// The API for a granted resource, or why it is refused.
    fn api(
        &self,
        api_version: &str,
        resource: &str,
        namespace: &str,
    ) -> Result<Api<DynamicObject>, String> {
        let api = super::api_resource(api_version, "", resource);
        let grant = match api.group.as_str() {
            "" => resource.to_string(),
            group => format!("{resource}.{group}"),
        };
        if !self.granted.contains(&grant) {
            return Err(format!(
                "{grant} is not granted to policies (ivpol serve --grant-resource {grant})"
            ));
        }
        let group_ok = api.group.is_empty() || api.group.split('.').all(is_object_name);
        if !is_object_name(&api.version) || !is_object_name(resource) || !group_ok {
            return Err(format!("invalid resource {api_version} {resource}"));
        }
        Ok(match namespace {
            "" => Api::all_with(self.client.clone(), &api),
            ns if is_object_name(ns) => Api::namespaced_with(self.client.clone(), ns, &api),
            ns => return Err(format!("invalid namespace {ns:?}")),
        })
    }
}

fn key(
    api_version: &str,
    resource: &str,
    namespace: &str,
    name: &str,
) -> (String, String, String, String) {
    (
        api_version.into(),
        resource.into(),
        namespace.into(),
        name.into(),
    )
}

/// The value as JSON, if within [`MAX_OBJECT_BYTES`].
fn bounded(resource: &str, value: &impl serde::Serialize) -> Result<String, String> {
    let text = serde_json::to_string(value).map_err(|e| e.to_string())?;
    match text.len() <= MAX_OBJECT_BYTES {
        true => Ok(text),
        false => Err(format!(
            "{resource}: {} bytes is more than the {MAX_OBJECT_BYTES} a policy may read at once",
            text.len()
        )),
    }
}
