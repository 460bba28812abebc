//! Reading policy and namespace files from disk. The host does not parse
//! policies: it hands the text to the component.

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A file's name and text, as the component receives it.
pub struct Document {
    pub source: String,
    pub content: String,
}

const MAX_FILE_BYTES: u64 = 4 << 20;

/// Every `.yaml`, `.yml` and `.json` file under the given paths, sorted.
pub fn read_all(paths: &[PathBuf]) -> Result<Vec<Document>> {
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
            Ok(Document {
                source: f.display().to_string(),
                content,
            })
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
pub fn read_namespaces(path: &Path) -> Result<BTreeMap<String, serde_json::Value>> {
    let mut out = BTreeMap::new();
    for doc in read_all(&[path.to_path_buf()])? {
        for value in serde_yaml::Deserializer::from_str(&doc.content) {
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

/// The Namespace object for `name`: from `--namespaces`, else the minimal
/// object the API server guarantees (the `kubernetes.io/metadata.name` label).
pub fn namespace_object(
    namespaces: &BTreeMap<String, serde_json::Value>,
    name: &str,
) -> Option<String> {
    if name.is_empty() {
        return None;
    }
    let object = namespaces.get(name).cloned().unwrap_or_else(|| {
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        })
    });
    Some(object.to_string())
}
