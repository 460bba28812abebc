//! Every IVP, NIVP and PolicyException file of Kyverno's own tests
//! (`conformance/kyverno/`) has the status `docs/compatibility.md` gives it:
//! it loads, or it is refused with the quoted diagnostic, or it is a
//! chainsaw assert. The page cannot drift from what the engine does.

use super::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../conformance/kyverno");
const DOC: &str = include_str!("../../../docs/compatibility.md");

/// `(status, note)` by file, from the rows of the status table (the section
/// "Status of each policy file"; later tables list cases, not files).
fn documented() -> BTreeMap<String, (String, String)> {
    let section = DOC
        .split("\n## ")
        .find(|s| s.starts_with("Status of each policy file"))
        .unwrap_or_default();
    section
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.strip_prefix("| `")?.splitn(3, " | ").collect();
            let [file, status, note] = cells[..] else {
                return None;
            };
            let file = file.strip_suffix('`')?;
            let note = note.trim_end_matches('|').trim();
            Some((file.to_string(), (status.to_string(), note.to_string())))
        })
        .collect()
}

/// Files under `test/` with a policy or exception document, the chainsaw
/// scripts and step templates (which only embed them) left out.
fn policy_files() -> Vec<String> {
    let mut out = Vec::new();
    walk(&Path::new(ROOT).join("test"), &mut out);
    let kinds = [
        "kind: ImageValidatingPolicy",
        "kind: NamespacedImageValidatingPolicy",
        "kind: PolicyException",
    ];
    let mut files: Vec<String> = out
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .filter(|p| !p.ends_with("chainsaw-test.yaml"))
        .filter(|p| !p.to_string_lossy().contains("_step-templates"))
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            kinds.iter().any(|k| text.contains(k))
        })
        .filter_map(|p| {
            let rel = p.strip_prefix(ROOT).ok()?;
            Some(rel.to_string_lossy().into_owned())
        })
        .collect();
    files.sort();
    files
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// A host that grants these resources and holds no objects.
struct Grants(Vec<String>);

impl ivpol_cel::resource_lib::ResourceSource for Grants {
    fn granted(&self) -> Vec<String> {
        self.0.clone()
    }
    fn get(&self, _: &str, _: &str, _: &str, _: &str) -> Result<Option<Value>, String> {
        Ok(None)
    }
    fn list(&self, _: &str, _: &str, _: &str) -> Result<Value, String> {
        Ok(json!({"items": []}))
    }
}

/// The quoted diagnostic of a `diagnostic` row (or the resource of a
/// `granted` row): its first `code span`.
fn quoted(note: &str) -> &str {
    note.split('`').nth(1).unwrap_or_default()
}

#[test]
fn kyverno_conformance() {
    let files = policy_files();
    assert!(files.len() > 70, "found only {} files", files.len());
    let table = documented();
    let listed: Vec<&String> = table.keys().collect();
    assert_eq!(
        listed,
        files.iter().collect::<Vec<_>>(),
        "docs/compatibility.md must list exactly the policy files"
    );
    for (file, (status, note)) in &table {
        let content = std::fs::read_to_string(Path::new(ROOT).join(file)).expect("readable");
        let set = PolicySet::load(&[SourceDocument {
            source: file.clone(),
            content,
        }]);
        let diagnostics: Vec<&str> = set
            .diagnostics()
            .iter()
            .map(|d| d.message.as_str())
            .collect();
        match status.as_str() {
            "loads" => assert!(diagnostics.is_empty(), "{file}: {diagnostics:?}"),
            "diagnostic" => {
                let want = quoted(note);
                assert!(!want.is_empty(), "{file}: the note quotes no diagnostic");
                assert!(
                    diagnostics.iter().any(|d| d.contains(want)),
                    "{file}: {want:?} not in {diagnostics:?}"
                );
            }
            // Loads where the quoted resource is granted (the `resource`
            // library); refused without a grant.
            "granted" => {
                let grant = quoted(note).to_string();
                let refused = "Kyverno library resource (resource.get) reads cluster objects";
                assert!(
                    diagnostics.iter().any(|d| d.contains(refused)),
                    "{file}: {refused:?} not in {diagnostics:?}"
                );
                let granted = PolicySet::load_with_resources(
                    &[SourceDocument {
                        source: file.clone(),
                        content: std::fs::read_to_string(Path::new(ROOT).join(file))
                            .expect("readable"),
                    }],
                    Arc::new(Grants(vec![grant])),
                    Default::default(),
                );
                assert!(
                    granted.diagnostics().is_empty(),
                    "{file}: {:?}",
                    granted.diagnostics()
                );
            }
            // A partial object: it must not load as a policy either.
            "assert" => assert_eq!(set.policies().count(), 0, "{file} loads as a policy"),
            other => panic!("{file}: unknown status {other:?}"),
        }
    }
}
