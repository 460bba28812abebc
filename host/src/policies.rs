//! Reading policy and namespace files from disk. The host does not parse
//! policies: it hands the text to the component.

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A file's name and text, as the component receives it.
pub(crate) struct Document {
    pub source: String,
    pub content: String,
    /// The object a document read from the API server holds (files have
    /// none: they are the operator's). Budgets charge it to its namespace.
    pub owner: Option<Owner>,
    /// Why the host refused the document (`budget.rs`); its content is
    /// then only a stub naming the object.
    pub refused: Option<String>,
}

/// The object behind a document read from the API server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owner {
    pub api_version: String,
    pub kind: String,
    /// None for a cluster-scoped object (an ImageValidatingPolicy).
    pub namespace: Option<String>,
    pub name: String,
}

impl Document {
    /// A document of the operator's (a file, a command-line input).
    pub(crate) fn file(source: String, content: String) -> Document {
        Document {
            source,
            content,
            owner: None,
            refused: None,
        }
    }

    /// The same document, owner and refusal included.
    pub(crate) fn copy(&self) -> Document {
        Document {
            source: self.source.clone(),
            content: self.content.clone(),
            owner: self.owner.clone(),
            refused: self.refused.clone(),
        }
    }
}

const MAX_FILE_BYTES: u64 = 4 << 20;

/// Every `.yaml`, `.yml` and `.json` file under the given paths, sorted.
pub(crate) fn read_all(paths: &[PathBuf]) -> Result<Vec<Document>> {
    let mut files = Vec::new();
    for p in paths {
        collect(p, &mut files).with_context(|| format!("reading {}", p.display()))?;
    }
    files.sort();
    files.dedup();
    files
        .into_iter()
        .map(|f| {
            let content = read_bounded(&f)?;
            Ok(Document::file(f.display().to_string(), content))
        })
        .collect()
}

fn collect(path: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let meta = std::fs::metadata(path)?;
    if meta.is_file() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    for entry in std::fs::read_dir(path)? {
        let p = entry?.path();
        // Hidden entries are skipped: a mounted ConfigMap or Secret holds
        // each file three times, as `name`, `..data/name` and
        // `..<timestamp>/name` (the kubelet's atomic writer), and only the
        // first is meant.
        if p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'))
        {
            continue;
        }
        if p.is_dir() {
            collect(&p, out)?;
        } else if matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            out.push(p);
        }
    }
    Ok(())
}

fn read_bounded(path: &Path) -> Result<String> {
    let len = std::fs::metadata(path)?.len();
    if len > MAX_FILE_BYTES {
        bail!("{} is larger than {} bytes", path.display(), MAX_FILE_BYTES);
    }
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// Namespace objects by name, from Namespace manifests (multi-document YAML).
pub(crate) fn read_namespaces(path: &Path) -> Result<BTreeMap<String, serde_json::Value>> {
    let mut out = BTreeMap::new();
    for doc in read_all(&[path.to_path_buf()])? {
        for value in serde_yaml_ng::Deserializer::from_str(&doc.content) {
            let v: serde_json::Value = serde::Deserialize::deserialize(value)
                .with_context(|| format!("parsing {}", doc.source))?;
            if v.get("kind").and_then(|k| k.as_str()) != Some("Namespace") {
                continue;
            }
            if let Some(name) = v.pointer("/metadata/name").and_then(|n| n.as_str()) {
                out.insert(name.to_string(), v.clone());
            }
        }
    }
    Ok(out)
}

/// The Namespace object for `name` from `--namespaces`, if it is there.
///
/// An unknown namespace is `None`, never a stand-in: the component then
/// fails closed on any `namespaceSelector` or `namespaceObject` that needs
/// its labels (a stand-in without them would let `env: prod` policies
/// silently not match).
pub(crate) fn namespace_object(
    namespaces: &BTreeMap<String, serde_json::Value>,
    name: &str,
) -> Option<String> {
    namespaces.get(name).map(|object| object.to_string())
}

/// [`namespace_object`], else the minimal object the API server guarantees
/// (only the `kubernetes.io/metadata.name` label): what the Kyverno CLI
/// assumes for a namespace its values do not describe, so that `ivpol
/// apply` and `ivpol test` give Kyverno's verdicts on Kyverno's test files.
pub(crate) fn namespace_or_minimal(
    namespaces: &BTreeMap<String, serde_json::Value>,
    name: &str,
) -> Option<String> {
    if name.is_empty() {
        return None;
    }
    namespace_object(namespaces, name).or_else(|| {
        let minimal = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        });
        Some(minimal.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::read_all;

    /// A ConfigMap volume as the kubelet writes it: each policy is read once.
    #[test]
    fn a_mounted_config_map_is_read_once() {
        let dir = std::env::temp_dir().join(format!("ivpol-policies-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let stamped = dir.join("..2026_12_02_05_00_00.000000001");
        std::fs::create_dir_all(&stamped).expect("dirs");
        std::fs::write(stamped.join("p.yaml"), "kind: X\n").expect("write");
        std::os::unix::fs::symlink(&stamped, dir.join("..data")).expect("..data");
        std::os::unix::fs::symlink(dir.join("..data/p.yaml"), dir.join("p.yaml")).expect("p.yaml");
        let docs = read_all(std::slice::from_ref(&dir)).expect("read");
        let sources: Vec<String> = docs.iter().map(|d| d.source.clone()).collect();
        assert_eq!(sources, [dir.join("p.yaml").display().to_string()]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
