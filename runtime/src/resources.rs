//! `resource.Get` and `resource.List` for the component: read-only access
//! to the kinds the operator grants (`--grant-resource configmaps`).
//!
//! Objects are fetched on demand, never watched cluster-wide, and kept for
//! [`TTL`] in a cache bounded in entries and bytes, so that a policy that
//! reads one ConfigMap per request costs one GET per few seconds and a
//! change reaches policies within the TTL. Nothing is granted by default.

use crate::object_name::is_object_name;
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
const MAX_LIST_ITEMS: usize = 500;
/// Items asked for per page: a list is read a page at a time and its bytes
/// counted as each page arrives, so a list past [`MAX_OBJECT_BYTES`] stops
/// after at most one page more, instead of 500 objects of up to 1.5 MiB
/// each being read before the size check.
const LIST_PAGE: u32 = 16;
/// How long a failed read is answered from memory: a policy that reads a
/// missing grant or an oversized list on every request costs the API
/// server one call a second, not one per request.
const FAILURE_TTL: Duration = Duration::from_secs(1);

type Key = (String, String, String, String);

/// What the operator granted, and a cache of what was read.
pub struct ClusterResources {
    client: Client,
    granted: Vec<String>,
    /// (apiVersion, resource, namespace, name or "" for a list) to JSON
    /// (`None`: the object does not exist).
    cache: moka::sync::Cache<Key, Option<String>>,
    /// Reads that failed, kept for [`FAILURE_TTL`].
    failures: moka::sync::Cache<Key, String>,
    /// One read per key at a time: the others wait for its answer (single
    /// flight), so a burst of requests makes one API call.
    reading:
        std::sync::Mutex<std::collections::HashMap<Key, std::sync::Arc<tokio::sync::Mutex<()>>>>,
}

impl ClusterResources {
    pub fn new(client: Client, granted: Vec<String>) -> ClusterResources {
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
        let failures = moka::sync::Cache::builder()
            .max_capacity(1024)
            .time_to_live(FAILURE_TTL)
            .build();
        ClusterResources {
            client,
            granted,
            cache,
            failures,
            reading: Default::default(),
        }
    }

    /// The lock that makes reads of `key` one at a time.
    fn turn(&self, key: &Key) -> std::sync::Arc<tokio::sync::Mutex<()>> {
        let mut reading = self.reading.lock().unwrap_or_else(|p| p.into_inner());
        // Locks nobody holds or waits for go, so the map stays as small
        // as the reads in flight.
        reading.retain(|_, lock| std::sync::Arc::strong_count(lock) > 1);
        reading.entry(key.clone()).or_default().clone()
    }

    /// A cached answer or failure for `key`, if any.
    fn remembered(&self, key: &Key) -> Option<Result<Option<String>, String>> {
        if let Some(hit) = self.cache.get(key) {
            return Some(Ok(hit));
        }
        self.failures.get(key).map(Err)
    }

    /// `result`, remembered under `key`.
    fn remember<T: Clone>(
        &self,
        key: Key,
        result: Result<T, String>,
        store: impl FnOnce(T) -> Option<String>,
    ) -> Result<T, String> {
        match &result {
            Ok(v) => self.cache.insert(key, store(v.clone())),
            Err(e) => self.failures.insert(key, e.clone()),
        }
        result
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
        if let Some(known) = self.remembered(&key) {
            return known;
        }
        let turn = self.turn(&key);
        let _one = turn.lock().await;
        if let Some(known) = self.remembered(&key) {
            return known;
        }
        let read = async {
            let found = api
                .get_opt(name)
                .await
                .map_err(|e| format!("reading {resource} {namespace}/{name}: {e}"))?;
            found.map(|o| bounded(resource, &o)).transpose()
        };
        let result = read.await;
        self.remember(key, result, |text| text)
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
        if let Some(known) = self.remembered(&key) {
            return known.map(Option::unwrap_or_default);
        }
        let turn = self.turn(&key);
        let _one = turn.lock().await;
        if let Some(known) = self.remembered(&key) {
            return known.map(Option::unwrap_or_default);
        }
        let result = read_list(&api, resource, namespace).await;
        self.remember(key, result, Some)
    }

    /// The API for a granted resource, or why it is refused.
    fn api(
        &self,
        api_version: &str,
        resource: &str,
        namespace: &str,
    ) -> Result<Api<DynamicObject>, String> {
        let api = api_resource(api_version, "", resource);
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

/// Every object of `api` as the JSON of a `List`, read a page at a time
/// and refused as soon as it holds more than [`MAX_LIST_ITEMS`] objects or
/// [`MAX_OBJECT_BYTES`] bytes.
async fn read_list(
    api: &Api<DynamicObject>,
    resource: &str,
    namespace: &str,
) -> Result<String, String> {
    let mut items: Vec<serde_json::Value> = Vec::new();
    let mut bytes = 0usize;
    let mut params = ListParams::default().limit(LIST_PAGE);
    let resource_version = loop {
        let page = api
            .list(&params)
            .await
            .map_err(|e| format!("listing {resource} in {namespace:?}: {e}"))?;
        for item in page.items {
            let item = serde_json::to_value(item).map_err(|e| e.to_string())?;
            bytes = bytes.saturating_add(item.to_string().len());
            if bytes > MAX_OBJECT_BYTES {
                return Err(format!(
                    "listing {resource} in {namespace:?}: more than the {MAX_OBJECT_BYTES} bytes a policy may read at once"
                ));
            }
            items.push(item);
            if items.len() > MAX_LIST_ITEMS {
                return Err(format!(
                    "listing {resource} in {namespace:?}: more than {MAX_LIST_ITEMS} objects"
                ));
            }
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break page.metadata.resource_version,
        }
    };
    let value = serde_json::json!({
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"resourceVersion": resource_version},
        "items": items,
    });
    bounded(resource, &value)
}

fn key(api_version: &str, resource: &str, namespace: &str, name: &str) -> Key {
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

/// The API resource `plural` (of `kind`) at `api_version` (`v1`, `apps/v1`).
pub fn api_resource(api_version: &str, kind: &str, plural: &str) -> kube::api::ApiResource {
    let (group, version) = match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    };
    kube::api::ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}
