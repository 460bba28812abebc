//! Reading the resources that `apply`, `test` and `scan` evaluate: Kubernetes
//! objects from multi-document YAML or JSON files (or directories of them),
//! and `--json` payloads. The host checks only what it needs to name a
//! resource; everything else is the component's business.

use anyhow::{anyhow, bail, Context, Result};
use ivpol_runtime::policies;
use serde_json::Value;
use std::path::PathBuf;

/// Who a result is about, as a report's `resources[]` entry names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    /// None for cluster-scoped kinds; `default` when a namespaced resource names none.
    pub namespace: Option<String>,
    pub uid: Option<String>,
}

impl Subject {
    /// `ns/Kind/name` as `kyverno apply` prints it (`/Kind/name` when cluster-scoped).
    pub fn path(&self) -> String {
        let ns = self.namespace.as_deref().unwrap_or("");
        format!("{ns}/{}/{}", self.kind, self.name)
    }

    /// The subject as the component's report shapes take it.
    pub(crate) fn to_wit(&self) -> ivpol_runtime::reports::ResourceRef {
        ivpol_runtime::reports::ResourceRef {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            uid: self.uid.clone(),
        }
    }

    /// `apiVersion/Kind/ns/name` as `kyverno test` prints it.
    pub fn test_path(&self) -> String {
        let ns = self.namespace.as_deref().unwrap_or("");
        format!("{}/{}/{ns}/{}", self.api_version, self.kind, self.name)
    }
}

/// One object read from a file.
pub struct Resource {
    /// `file` or `file#N` (zero-based document index) for messages.
    pub source: String,
    pub object: Value,
    pub subject: Subject,
}

/// Every object in `paths` (files or directories, read recursively), in
/// file order. Empty documents are skipped; anything else that is not a
/// Kubernetes object with `apiVersion`, `kind` and `metadata.name` is an error.
pub fn read(paths: &[PathBuf]) -> Result<Vec<Resource>> {
    let mut out = Vec::new();
    for doc in policies::read_all(paths)? {
        for (index, de) in serde_yaml_ng::Deserializer::from_str(&doc.content).enumerate() {
            let source = format!("{}#{index}", doc.source);
            let value: Value = serde::Deserialize::deserialize(de)
                .with_context(|| format!("{source}: not valid YAML"))?;
            if value.is_null() {
                continue;
            }
            let subject = subject(&value).with_context(|| source.clone())?;
            out.push(Resource {
                source,
                object: value,
                subject,
            });
        }
    }
    Ok(out)
}

/// The object's identity, or why it is not a Kubernetes object.
pub(crate) fn subject(value: &Value) -> Result<Subject> {
    if !value.is_object() {
        bail!("not a Kubernetes object (a mapping with apiVersion, kind and metadata)");
    }
    let text = |pointer: &str| {
        value
            .pointer(pointer)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let kind = text("/kind").ok_or_else(|| anyhow!("resource has no kind"))?;
    let api_version =
        text("/apiVersion").ok_or_else(|| anyhow!("{kind} resource has no apiVersion"))?;
    let name = text("/metadata/name")
        .or_else(|| text("/metadata/generateName"))
        .ok_or_else(|| anyhow!("{kind} resource has no metadata.name"))?;
    let namespace = ivpol_refs::scope::namespace_of(&kind, text("/metadata/namespace").as_deref());
    Ok(Subject {
        api_version,
        kind,
        name,
        namespace,
        uid: text("/metadata/uid"),
    })
}

/// A `--json` payload: one JSON (or YAML) document per file.
pub struct Payload {
    pub source: String,
    pub text: String,
}

pub fn read_payloads(paths: &[PathBuf]) -> Result<Vec<Payload>> {
    let mut out = Vec::new();
    for doc in policies::read_all(paths)? {
        let value: Value = serde_yaml_ng::from_str(&doc.content)
            .with_context(|| format!("{}: not valid JSON", doc.source))?;
        out.push(Payload {
            source: doc.source,
            text: value.to_string(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn namespaced_kinds_default_to_default_and_cluster_kinds_have_none() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
        let s = subject(&pod).expect("pod");
        assert_eq!(s.path(), "default/Pod/p");
        assert_eq!(s.test_path(), "v1/Pod/default/p");
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}});
        assert_eq!(subject(&ns).expect("ns").path(), "/Namespace/team");
    }

    #[test]
    fn objects_without_kind_or_name_are_refused() {
        for (bad, why) in [
            (
                json!({"apiVersion": "v1", "metadata": {"name": "p"}}),
                "no kind",
            ),
            (
                json!({"kind": "Pod", "metadata": {"name": "p"}}),
                "no apiVersion",
            ),
            (
                json!({"apiVersion": "v1", "kind": "Pod"}),
                "no metadata.name",
            ),
            (json!(["a"]), "not a Kubernetes object"),
        ] {
            let e = subject(&bad).expect_err("refused").to_string();
            assert!(e.contains(why), "{e}");
        }
    }
}
