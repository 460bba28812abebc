//! What each verb does to the store, with the API server's bookkeeping:
//! uid, creationTimestamp, generation, the status subresource's split,
//! optimistic concurrency, and the (simplified) patch types.

mod patch;

use super::error::{ApiError, FieldError};
use super::resources::{ResId, ResourceType, Resources};
use super::selector::Selectors;
use super::store::{AtVersion, ObjKey, Store};
use base64::Engine as _;
use serde_json::{json, Map, Value};

/// What a request addresses: a type at a served version, and maybe a
/// namespace, an object and its `/status`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Target {
    pub res: ResId,
    pub version: String,
    /// The path's namespace; none for cluster-scoped types, or a
    /// namespaced type listed across all namespaces.
    pub ns: Option<String>,
    pub name: Option<String>,
    pub status: bool,
}

/// The PATCH content types.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PatchKind {
    /// `application/apply-patch+yaml`: server-side apply (simplified).
    Apply,
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json`, done as a merge patch.
    Strategic,
    /// `application/json-patch+json` (RFC 6902).
    Json,
}

/// Which state a list reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ListAt {
    Latest,
    NotOlderThan(u64),
    Exact(u64),
}

#[derive(Debug, Clone)]
pub(crate) struct ListQuery {
    pub selectors: Selectors,
    pub limit: Option<usize>,
    pub resume: Option<Continue>,
    pub at: ListAt,
}

/// A continue token's content: the snapshot's version and the last key sent.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Continue {
    pub rv: u64,
    pub ns: String,
    pub name: String,
}

impl Continue {
    pub(crate) fn encode(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
    }

    pub(crate) fn decode(token: &str) -> Result<Continue, ApiError> {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or_else(|| ApiError::bad_request(format!("continue key is not valid: {token:?}")))
    }
}

/// The store and the types it holds.
pub(crate) struct Api {
    pub store: Store,
    pub resources: Resources,
}

impl Api {
    pub(crate) fn rt(&self, t: &Target) -> &ResourceType {
        self.resources.get(t.res)
    }

    /// The object as read at the target's version: its apiVersion and kind.
    pub(crate) fn present(&self, t: &Target, mut obj: Value) -> Value {
        let rt = self.rt(t);
        if let Some(o) = obj.as_object_mut() {
            o.insert("apiVersion".into(), json!(rt.api_version(&t.version)));
            o.insert("kind".into(), json!(rt.kind));
        }
        obj
    }

    fn key(&self, t: &Target, name: &str) -> ObjKey {
        (t.res, t.ns.clone().unwrap_or_default(), name.to_string())
    }

    fn target_name<'a>(&self, t: &'a Target) -> Result<&'a str, ApiError> {
        t.name
            .as_deref()
            .ok_or_else(|| ApiError::bad_request("a name is required"))
    }

    fn namespace_exists(&self, ns: &str) -> bool {
        self.resources
            .namespace_id()
            .is_some_and(|id| self.store.get(&(id, String::new(), ns.into())).is_some())
    }

    pub(crate) fn get(&self, t: &Target) -> Result<Value, ApiError> {
        let name = self.target_name(t)?;
        let obj = self
            .store
            .get(&self.key(t, name))
            .ok_or_else(|| ApiError::not_found(self.rt(t), name))?;
        Ok(self.present(t, obj.clone()))
    }

    /// Checks a body against the path, and fills in what the path says:
    /// apiVersion, kind, namespace and (if unset) name.
    fn check_body(&self, t: &Target, body: &mut Value) -> Result<(), ApiError> {
        let rt = self.rt(t);
        let expected = rt.api_version(&t.version);
        let Some(obj) = body.as_object_mut() else {
            return Err(ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {})",
                rt.kind
            )));
        };
        if let Some(v) = obj.get("apiVersion").and_then(Value::as_str) {
            if v != expected {
                return Err(ApiError::bad_request(format!(
                    "the API version in the data ({v}) does not match the expected API version ({expected})"
                )));
            }
        }
        if let Some(k) = obj.get("kind").and_then(Value::as_str) {
            if k != rt.kind {
                return Err(ApiError::bad_request(format!(
                    "the kind in the data ({k}) does not match the expected kind ({})",
                    rt.kind
                )));
            }
        }
        obj.insert("apiVersion".into(), json!(expected));
        obj.insert("kind".into(), json!(rt.kind));
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or_else(|| ApiError::bad_request("metadata is not an object"))?;
        match (&t.ns, meta.get("namespace").and_then(Value::as_str)) {
            (Some(ns), Some(given)) if given != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ))
            }
            (Some(ns), _) => {
                meta.insert("namespace".into(), json!(ns));
            }
            (None, _) => {
                meta.remove("namespace");
            }
        }
        if let Some(name) = &t.name {
            match meta.get("name").and_then(Value::as_str) {
                Some(given) if given != name => {
                    return Err(ApiError::bad_request(format!(
                    "the name of the object ({given}) does not match the name on the URL ({name})"
                )))
                }
                Some(_) => {}
                None => {
                    meta.insert("name".into(), json!(name));
                }
            }
        }
        Ok(())
    }

    /// POST: a new object (201), or AlreadyExists.
    pub(crate) fn create(&mut self, t: &Target, mut body: Value) -> Result<Value, ApiError> {
        self.check_body(t, &mut body)?;
        let rt = self.rt(t).clone();
        if rt.namespaced && t.ns.is_none() {
            return Err(ApiError::method_not_allowed());
        }
        let name = name_for_create(&rt, &mut body)?;
        if let Some(ns) = t.ns.as_deref().filter(|_| rt.namespaced) {
            if !self.namespace_exists(ns) {
                return Err(ApiError::namespace_not_found(ns));
            }
        }
        let key = self.key(t, &name);
        if self.store.get(&key).is_some() {
            return Err(ApiError::already_exists(&rt, &name));
        }
        if !resource_version(&body).is_empty() {
            return Err(ApiError::bad_request(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        let meta = metadata_mut(&mut body)?;
        meta.insert("uid".into(), json!(new_uid()));
        meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
        meta.insert("generation".into(), json!(1));
        meta.remove("deletionTimestamp");
        if rt.has_status(&t.version) {
            // Status is the subresource's to write.
            if let Some(o) = body.as_object_mut() {
                o.remove("status");
            }
        }
        if rt.is_namespace() {
            namespace_defaults(&mut body, &name);
            body["status"] = json!({"phase": "Active"});
        }
        let stored = self.store.put(key, body);
        Ok(self.present(t, stored))
    }

    /// PUT, on the object or its `/status`.
    pub(crate) fn replace(&mut self, t: &Target, mut body: Value) -> Result<Value, ApiError> {
        self.check_body(t, &mut body)?;
        let name = self.target_name(t)?.to_string();
        let key = self.key(t, &name);
        let rt = self.rt(t);
        let old = self
            .store
            .get(&key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(rt, &name))?;
        let given = resource_version(&body);
        if given.is_empty() && rt.custom {
            // The CRD strategy refuses unconditional updates.
            return Err(ApiError::invalid(
                &rt.group,
                &rt.kind,
                &name,
                &[FieldError::invalid(
                    "metadata.resourceVersion",
                    "0x0",
                    "must be specified for an update",
                )],
            ));
        }
        if !given.is_empty() && given != resource_version(&old) {
            return Err(ApiError::conflict(rt, &name));
        }
        self.update(t, key, old, body)
    }

    /// Stores `new` over `old`: the status subresource's split, system
    /// metadata kept, generation bumped on a spec change; a write that
    /// changes nothing stores nothing (no new version, no event).
    fn update(
        &mut self,
        t: &Target,
        key: ObjKey,
        old: Value,
        new: Value,
    ) -> Result<Value, ApiError> {
        let rt = self.rt(t).clone();
        let with_status = rt.has_status(&t.version);
        let mut next = if t.status {
            with_field_of(&old, &new, "status")
        } else if with_status {
            with_field_of(&new, &old, "status")
        } else {
            new
        };
        keep_system_metadata(&old, &mut next)?;
        if rt.is_namespace() {
            namespace_defaults(&mut next, &key.2);
        }
        let generation = old["metadata"]["generation"].as_i64().unwrap_or(1);
        let bump = i64::from(spec_of(&old, with_status) != spec_of(&next, with_status));
        metadata_mut(&mut next)?.insert("generation".into(), json!(generation + bump));
        if same_object(&old, &next) {
            return Ok(self.present(t, old));
        }
        let stored = self.store.put(key, next);
        Ok(self.present(t, stored))
    }

    /// DELETE: the object's last state (the caller answers with a Status).
    /// Deleting a namespace deletes what is in it, at once.
    pub(crate) fn delete(&mut self, t: &Target, options: &Value) -> Result<Value, ApiError> {
        let name = self.target_name(t)?.to_string();
        let key = self.key(t, &name);
        let rt = self.rt(t).clone();
        let old = self
            .store
            .get(&key)
            .ok_or_else(|| ApiError::not_found(&rt, &name))?;
        let pre = &options["preconditions"];
        for (field, what) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
            if let Some(wanted) = pre[field].as_str() {
                let actual = old["metadata"][field].as_str().unwrap_or("");
                if wanted != actual {
                    return Err(ApiError::precondition(&rt, &name, what, wanted, actual));
                }
            }
        }
        let last = self
            .store
            .remove(&key)
            .ok_or_else(|| ApiError::not_found(&rt, &name))?;
        if rt.is_namespace() {
            self.delete_contents(&name);
        }
        self.collect_dependents(&last);
        Ok(self.present(t, last))
    }

    /// The garbage collector, at once: every object whose
    /// `metadata.ownerReferences` name the deleted object's uid, and none
    /// that still exists, is deleted too, and so on down the chain (the
    /// API server's background propagation, without its delay).
    fn collect_dependents(&mut self, deleted: &Value) {
        let mut gone: Vec<String> = deleted["metadata"]["uid"]
            .as_str()
            .map(String::from)
            .into_iter()
            .collect();
        while let Some(uid) = gone.pop() {
            let owners = |o: &Value| -> Vec<String> {
                o["metadata"]["ownerReferences"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r["uid"].as_str().map(String::from))
                    .collect()
            };
            let all: Vec<(ObjKey, Vec<String>)> = (0..self.resources.all().len())
                .flat_map(|id| {
                    self.store
                        .objects_of(id)
                        .map(|(k, v)| (k.clone(), owners(v)))
                        .collect::<Vec<_>>()
                })
                .collect();
            let live: std::collections::BTreeSet<String> = (0..self.resources.all().len())
                .flat_map(|id| {
                    self.store
                        .objects_of(id)
                        .filter_map(|(_, v)| v["metadata"]["uid"].as_str().map(String::from))
                        .collect::<Vec<_>>()
                })
                .collect();
            for (key, owned_by) in all {
                if owned_by.contains(&uid) && owned_by.iter().all(|o| !live.contains(o)) {
                    if let Some(last) = self.store.remove(&key) {
                        gone.extend(last["metadata"]["uid"].as_str().map(String::from));
                    }
                }
            }
        }
    }

    fn delete_contents(&mut self, ns: &str) {
        let keys: Vec<ObjKey> = (0..self.resources.all().len())
            .filter(|&id| self.resources.get(id).namespaced)
            .flat_map(|id| {
                self.store
                    .objects_of(id)
                    .filter(|(k, _)| k.1 == ns)
                    .map(|(k, _)| k.clone())
                    .collect::<Vec<_>>()
            })
            .collect();
        for k in keys {
            self.store.remove(&k);
        }
    }

    /// LIST: `{Kind}List` at a consistent snapshot, paged by `limit` and
    /// `continue`.
    pub(crate) fn list(&self, t: &Target, q: &ListQuery) -> Result<Value, ApiError> {
        let rv = self.list_version(q)?;
        let items =
            self.store.snapshot(t.res, rv).map_err(|e| {
                match (e, &q.resume) {
            (AtVersion::Expired(_), Some(_)) => ApiError::expired(
                "The provided continue parameter is too old to display a consistent list result. \
                 You can start a new list without the continue parameter.",
            ),
            (AtVersion::Expired(oldest), None) => {
                ApiError::expired(format!("too old resource version: {rv} ({oldest})"))
            }
            (AtVersion::TooLarge(current), _) => ApiError::timeout(format!(
                "Too large resource version: {rv}, current: {current}"
            )),
        }
            })?;
        let mut selected = items
            .into_iter()
            .filter(|(k, v)| t.ns.as_ref().is_none_or(|ns| *ns == k.1) && q.selectors.matches(v))
            .filter(|(k, _)| {
                q.resume
                    .as_ref()
                    .is_none_or(|c| (&k.1, &k.2) > (&c.ns, &c.name))
            })
            .peekable();
        let mut page = Vec::new();
        while let Some((k, v)) = selected.next_if(|_| q.limit.is_none_or(|l| page.len() < l)) {
            page.push((k, v));
        }
        let remaining = selected.count();
        let rt = self.rt(t);
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if let (Some((last, _)), true) = (page.last(), remaining > 0) {
            let token = Continue {
                rv,
                ns: last.1.clone(),
                name: last.2.clone(),
            };
            meta["continue"] = json!(token.encode());
            if q.selectors.is_empty() {
                meta["remainingItemCount"] = json!(remaining);
            }
        }
        let items: Vec<Value> = page.into_iter().map(|(_, v)| self.present(t, v)).collect();
        Ok(json!({
            "kind": format!("{}List", rt.kind),
            "apiVersion": rt.api_version(&t.version),
            "metadata": meta,
            "items": items,
        }))
    }

    fn list_version(&self, q: &ListQuery) -> Result<u64, ApiError> {
        let current = self.store.rv();
        Ok(match (&q.resume, q.at) {
            (Some(c), _) => c.rv,
            (None, ListAt::Latest) => current,
            (None, ListAt::Exact(rv)) => rv,
            (None, ListAt::NotOlderThan(rv)) if rv > current => {
                return Err(ApiError::timeout(format!(
                    "Too large resource version: {rv}, current: {current}"
                )))
            }
            (None, ListAt::NotOlderThan(_)) => current,
        })
    }
}

fn metadata_mut(obj: &mut Value) -> Result<&mut Map<String, Value>, ApiError> {
    let o = obj
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the object is not a JSON object"))?;
    let meta = o.entry("metadata").or_insert_with(|| json!({}));
    meta.as_object_mut()
        .ok_or_else(|| ApiError::bad_request("metadata is not an object"))
}

fn resource_version(obj: &Value) -> &str {
    obj["metadata"]["resourceVersion"].as_str().unwrap_or("")
}

/// `metadata.name`, or one made from `metadata.generateName`.
fn name_for_create(rt: &ResourceType, body: &mut Value) -> Result<String, ApiError> {
    let meta = metadata_mut(body)?;
    if let Some(name) = meta
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        return Ok(name.to_string());
    }
    let Some(prefix) = meta.get("generateName").and_then(Value::as_str) else {
        return Err(ApiError::invalid(
            &rt.group,
            &rt.kind,
            "",
            &[FieldError::required(
                "metadata.name",
                "name or generateName is required",
            )],
        ));
    };
    let name = format!("{prefix}{}", &new_uid()[..5]);
    meta.insert("name".into(), json!(name));
    Ok(name)
}

/// `base` with `field` taken from `from` (or removed, if `from` has none).
fn with_field_of(base: &Value, from: &Value, field: &str) -> Value {
    let mut out = base.clone();
    if let Some(o) = out.as_object_mut() {
        match from.get(field) {
            Some(v) => o.insert(field.into(), v.clone()),
            None => o.remove(field),
        };
    }
    out
}

/// uid, creationTimestamp, name and namespace stay as stored.
fn keep_system_metadata(old: &Value, next: &mut Value) -> Result<(), ApiError> {
    let meta = metadata_mut(next)?;
    for field in [
        "uid",
        "creationTimestamp",
        "name",
        "namespace",
        "resourceVersion",
    ] {
        match old["metadata"].get(field) {
            Some(v) => meta.insert(field.into(), v.clone()),
            None => meta.remove(field),
        };
    }
    Ok(())
}

/// What a change to bumps `generation`: everything but metadata (and
/// status, when it is a subresource).
fn spec_of(obj: &Value, status_subresource: bool) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.as_object_mut() {
        m.remove("metadata");
        m.remove("apiVersion");
        m.remove("kind");
        if status_subresource {
            m.remove("status");
        }
    }
    o
}

/// Equal but for apiVersion (the read version) and resourceVersion.
fn same_object(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove("apiVersion");
        }
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        v
    };
    strip(a) == strip(b)
}

/// The label the API server puts on every namespace.
fn namespace_defaults(obj: &mut Value, name: &str) {
    let labels = &mut obj["metadata"]["labels"];
    if !labels.is_object() {
        *labels = json!({});
    }
    labels["kubernetes.io/metadata.name"] = json!(name);
}

/// A random version-4 UUID.
pub(crate) fn new_uid() -> String {
    let mut b = random_bytes::<16>();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex = crate::sign::hex(&b);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    use ring::rand::SecureRandom;
    let mut b = [0u8; N];
    ring::rand::SystemRandom::new()
        .fill(&mut b)
        .expect("the system's random source");
    b
}

/// Now, to the second, as the API server writes timestamps.
fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    k8s_openapi::jiff::Timestamp::from_second(i64::try_from(now).unwrap_or_default())
        .map(|t| t.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::patch::apply_over;
    use super::*;

    #[test]
    fn apply_replaces_top_level_fields_and_metadata_keys() {
        let old = json!({"metadata": {"name": "a", "uid": "u", "labels": {"x": "1"}}, "spec": {"a": 1, "b": 2}, "status": {"ok": true}});
        let applied =
            json!({"metadata": {"name": "a", "annotations": {"y": "2"}}, "spec": {"a": 3}});
        let out = apply_over(&old, &applied);
        assert_eq!(out["spec"], json!({"a": 3}));
        assert_eq!(out["metadata"]["uid"], "u");
        assert_eq!(out["metadata"]["labels"]["x"], "1");
        assert_eq!(out["metadata"]["annotations"]["y"], "2");
        assert_eq!(out["status"]["ok"], true);
    }

    #[test]
    fn continue_tokens_round_trip() {
        let c = Continue {
            rv: 7,
            ns: "a".into(),
            name: "b".into(),
        };
        assert_eq!(Continue::decode(&c.encode()).expect("token"), c);
        assert_eq!(Continue::decode("!!").expect_err("bad").code, 400);
    }

    #[test]
    fn uids_are_uuids() {
        let u = new_uid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
    }
}
