//! PATCH: JSON and merge patches, and server-side apply (simplified),
//! with the checks a patched document passes before it is stored.

use super::{resource_version, PatchKind, Target};
use crate::kube_api::error::{ApiError, FieldError};
use crate::kube_api::store::ObjKey;
use serde_json::Value;

impl super::Api {
    /// PATCH, on the object or its `/status`: (object, whether it was created).
    pub(crate) fn patch(
        &mut self,
        t: &Target,
        kind: &PatchKind,
        body: &[u8],
    ) -> Result<(Value, bool), ApiError> {
        let name = self.target_name(t)?.to_string();
        let key = self.key(t, &name);
        let old = self.store.get(&key).cloned();
        if *kind == PatchKind::Apply {
            return self.apply(t, key, old, body);
        }
        let old = old.ok_or_else(|| ApiError::not_found(self.rt(t), &name))?;
        let mut doc = self.present(t, old.clone());
        match kind {
            PatchKind::Json => {
                let ops: json_patch::Patch = serde_json::from_slice(body)
                    .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))?;
                json_patch::patch(&mut doc, &ops.0).map_err(|e| {
                    ApiError::new(
                        422,
                        "Invalid",
                        format!(
                            "the server rejected our request due to an error in our request: {e}"
                        ),
                    )
                })?;
            }
            _ => {
                let patch: Value = serde_json::from_slice(body)
                    .map_err(|e| ApiError::bad_request(format!("invalid merge patch: {e}")))?;
                if !patch.is_object() {
                    return Err(ApiError::bad_request("a merge patch must be a JSON object"));
                }
                json_patch::merge(&mut doc, &patch);
            }
        }
        self.check_patched(t, &name, &old, &mut doc)?;
        Ok((self.update(t, key, old, doc)?, false))
    }

    /// Server-side apply, simplified: the applied configuration's top-level
    /// fields (and metadata's) replace the stored ones; no field ownership.
    fn apply(
        &mut self,
        t: &Target,
        key: ObjKey,
        old: Option<Value>,
        body: &[u8],
    ) -> Result<(Value, bool), ApiError> {
        let mut applied: Value = serde_yaml_ng::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
        for field in ["apiVersion", "kind"] {
            if applied.get(field).and_then(Value::as_str).is_none() {
                return Err(ApiError::bad_request(format!(
                    "Object '{}' is missing in the apply configuration",
                    if field == "kind" {
                        "Kind"
                    } else {
                        "apiVersion"
                    }
                )));
            }
        }
        self.check_body(t, &mut applied)?;
        let Some(old) = old else {
            if t.status {
                return Err(ApiError::not_found(self.rt(t), &key.2));
            }
            return Ok((self.create(t, applied)?, true));
        };
        let given = resource_version(&applied);
        if !given.is_empty() && given != resource_version(&old) {
            return Err(ApiError::conflict(self.rt(t), &key.2));
        }
        let merged = apply_over(&old, &applied);
        Ok((self.update(t, key, old, merged)?, false))
    }

    /// A patched document may not rename, and its resourceVersion (if the
    /// patch set one) is a precondition.
    fn check_patched(
        &self,
        t: &Target,
        name: &str,
        old: &Value,
        doc: &mut Value,
    ) -> Result<(), ApiError> {
        let rt = self.rt(t);
        let given = resource_version(doc);
        if !given.is_empty() && given != resource_version(old) {
            return Err(ApiError::conflict(rt, name));
        }
        let renamed = doc["metadata"]["name"].as_str() != Some(name)
            || doc["metadata"]["namespace"] != old["metadata"]["namespace"];
        if renamed {
            return Err(ApiError::invalid(
                &rt.group,
                &rt.kind,
                name,
                &[FieldError::invalid(
                    "metadata.name",
                    &doc["metadata"]["name"].to_string(),
                    "field is immutable",
                )],
            ));
        }
        self.check_body(t, doc)
    }
}

/// The applied configuration's fields over the stored object: top-level
/// keys replace, metadata's keys replace one by one.
pub(super) fn apply_over(old: &Value, applied: &Value) -> Value {
    let mut out = old.clone();
    let (Some(target), Some(fields)) = (out.as_object_mut(), applied.as_object()) else {
        return out;
    };
    for (k, v) in fields {
        match (k.as_str(), target.get_mut(k), v.as_object()) {
            ("metadata", Some(Value::Object(meta)), Some(given)) => {
                for (mk, mv) in given {
                    meta.insert(mk.clone(), mv.clone());
                }
            }
            _ => {
                target.insert(k.clone(), v.clone());
            }
        }
    }
    out
}
