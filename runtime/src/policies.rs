//! Reading policy and namespace files from disk. The host does not parse
//! policies: it hands the text to the component.

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A file's name and text, as the component receives it.
pub struct Document {
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
pub struct Owner {
    pub api_version: String,
    pub kind: String,
    /// None for a cluster-scoped object (an ImageValidatingPolicy).
    pub namespace: Option<String>,
    pub name: String,
}

impl Document {
    /// A document of the operator's (a file, a command-line input).
    pub fn file(source: String, content: String) -> Document {
        Document {
            source,
            content,
            owner: None,
            refused: None,
        }
    }

    /// The same document, owner and refusal included.
    pub fn copy(&self) -> Document {
        Document {
            source: self.source.clone(),
            content: self.content.clone(),
            owner: self.owner.clone(),
            refused: self.refused.clone(),
        }
    }
}

/// The largest policy file read; the component refuses any document over
/// 1 MiB itself, so this only bounds what is read.
const MAX_FILE_BYTES: u64 = 4 << 20;
/// The most files read under the paths (a directory of more is an
/// operator's mistake, or a link loop that canonical paths did not catch).
const MAX_FILES: usize = 10_000;

/// Every `.yaml`, `.yml` and `.json` file under the given paths, sorted and
/// each read once (by canonical path: a `dir -> .` link reads nothing
/// twice). A path that does not exist is an error; a file that cannot be
/// read safely (not a regular file, a dangling or looping link, too large,
/// not UTF-8) is not: it becomes a refused document naming the path and
/// why, which the component turns into a diagnostic that denies in its
/// scope. One odd file never stops the others from loading.
pub fn read_all(paths: &[PathBuf]) -> Result<Vec<Document>> {
    let mut files = Files::default();
    for p in paths {
        std::fs::symlink_metadata(p).with_context(|| format!("reading {}", p.display()))?;
        files.collect(p);
    }
    let mut documents: Vec<Document> = files
        .found
        .into_values()
        .map(|path| {
            let source = path.display().to_string();
            match read_file(&path) {
                Ok(content) => Document::file(source, content),
                Err(why) => unreadable(source, why),
            }
        })
        .collect();
    documents.extend(
        files
            .broken
            .into_iter()
            .map(|(path, why)| unreadable(path.display().to_string(), why)),
    );
    documents.sort_by(|a, b| a.source.cmp(&b.source));
    Ok(documents)
}

/// A file that could not be read, as a refused document.
fn unreadable(source: String, why: String) -> Document {
    tracing::warn!(file = %source, "policy file not read: {why}");
    Document {
        refused: Some(format!("{source}: {why}")),
        ..Document::file(source, String::new())
    }
}

/// What walking the paths found: readable candidates by canonical path,
/// and entries that cannot be read, with why.
#[derive(Default)]
struct Files {
    found: BTreeMap<PathBuf, PathBuf>,
    broken: Vec<(PathBuf, String)>,
    /// Directories already walked, by canonical path.
    walked: std::collections::BTreeSet<PathBuf>,
}

impl Files {
    fn collect(&mut self, path: &Path) {
        if self.found.len() + self.broken.len() >= MAX_FILES {
            self.broken.push((
                path.to_path_buf(),
                format!("more than {MAX_FILES} files under the policy paths: not read"),
            ));
            return;
        }
        // Follows links: a dangling link or a loop is an error here.
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) => {
                return self
                    .broken
                    .push((path.to_path_buf(), format!("cannot be read: {e}")))
            }
        };
        let canonical = match std::fs::canonicalize(path) {
            Ok(c) => c,
            Err(e) => {
                return self
                    .broken
                    .push((path.to_path_buf(), format!("cannot be read: {e}")))
            }
        };
        if meta.is_dir() {
            if self.walked.insert(canonical) {
                self.walk(path);
            }
            return;
        }
        self.found
            .entry(canonical)
            .or_insert_with(|| path.to_path_buf());
    }

    fn walk(&mut self, dir: &Path) {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) => {
                return self
                    .broken
                    .push((dir.to_path_buf(), format!("cannot be listed: {e}")))
            }
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            // Hidden entries are skipped: a mounted ConfigMap or Secret
            // holds each file three times, as `name`, `..data/name` and
            // `..<timestamp>/name` (the kubelet's atomic writer), and only
            // the first is meant.
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if name.starts_with('.') {
                continue;
            }
            let is_dir = std::fs::metadata(&p).is_ok_and(|m| m.is_dir());
            let policy_file = matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml" | "json")
            );
            if is_dir || policy_file {
                self.collect(&p);
            }
        }
    }
}

/// A policy file's text, read safely: only a regular file (checked on the
/// opened handle, so nothing swapped in between is read), opened without
/// blocking (a FIFO never stalls the reader), at most
/// [`MAX_FILE_BYTES`] read whatever size the file claims, and UTF-8.
fn read_file(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let file = options
        .open(path)
        .map_err(|e| format!("cannot be opened: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot be read: {e}"))?;
    if !meta.is_file() {
        return Err(format!(
            "is not a regular file ({}): policy files must be",
            kind_of(&meta)
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read: {e}"))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("is larger than {MAX_FILE_BYTES} bytes"));
    }
    // A byte order mark is no part of the YAML.
    let text = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&bytes);
    String::from_utf8(text.to_vec()).map_err(|e| format!("is not UTF-8 text: {e}"))
}

fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a named pipe";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if meta.is_dir() {
        return "a directory";
    }
    "not a file"
}

/// Namespace objects by name, from Namespace manifests (multi-document YAML).
pub fn read_namespaces(path: &Path) -> Result<BTreeMap<String, serde_json::Value>> {
    let mut out = BTreeMap::new();
    for doc in read_all(&[path.to_path_buf()])? {
        if let Some(why) = &doc.refused {
            bail!("reading the namespaces: {why}");
        }
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
pub fn namespace_object(
    namespaces: &BTreeMap<String, serde_json::Value>,
    name: &str,
) -> Option<String> {
    namespaces.get(name).map(|object| object.to_string())
}

/// [`namespace_object`], else the minimal object the API server guarantees
/// (only the `kubernetes.io/metadata.name` label): what the Kyverno CLI
/// assumes for a namespace its values do not describe, so that `ivpol
/// apply` and `ivpol test` give Kyverno's verdicts on Kyverno's test files.
pub fn namespace_or_minimal(
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

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("ivpol-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        dir
    }

    /// Why each odd file was refused, by file name; the good one is read.
    fn outcomes(dir: &std::path::Path) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = read_all(&[dir.to_path_buf()])
            .expect("the directory is read")
            .into_iter()
            .map(|d| {
                let name = std::path::Path::new(&d.source)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (name, d.refused.unwrap_or_else(|| "read".into()))
            })
            .collect();
        out.sort();
        out
    }

    /// Files that used to stop `serve` at start, fail a whole reload, or
    /// hang or exhaust the reader: each is refused on its own, naming the
    /// path and why, without blocking, and the good file is still read.
    #[test]
    fn odd_files_are_refused_one_by_one_and_never_block() {
        let dir = scratch("odd-files");
        std::fs::write(dir.join("good.yaml"), "kind: X\n").expect("good");
        std::fs::write(dir.join("latin1.yaml"), b"name: caf\xe9\n").expect("latin1");
        std::os::unix::fs::symlink(dir.join("nowhere.yaml"), dir.join("dangling.yaml"))
            .expect("dangling");
        std::os::unix::fs::symlink(dir.join("loop-b.yaml"), dir.join("loop-a.yaml")).expect("a");
        std::os::unix::fs::symlink(dir.join("loop-a.yaml"), dir.join("loop-b.yaml")).expect("b");
        std::os::unix::fs::symlink("/dev/null", dir.join("device.yaml")).expect("device");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.join("pipe.yaml"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .expect("fifo");
        // Claims 5 MiB (sparse): refused by the bytes read, not the size.
        let big = std::fs::File::create(dir.join("big.yaml")).expect("big");
        big.set_len(5 << 20).expect("sparse");
        // A `dir -> .` link: nothing is read twice.
        std::os::unix::fs::symlink(&dir, dir.join("again")).expect("again");
        let got = outcomes(&dir);
        let why = |name: &str| {
            got.iter()
                .find(|(n, _)| n == name)
                .map(|(_, w)| w.clone())
                .unwrap_or_else(|| panic!("{name} missing from {got:?}"))
        };
        assert_eq!(why("good.yaml"), "read");
        assert!(why("latin1.yaml").contains("is not UTF-8 text"), "{got:?}");
        assert!(
            why("dangling.yaml").contains("dangling.yaml: cannot be read"),
            "{got:?}"
        );
        assert!(why("loop-a.yaml").contains("cannot be read"), "{got:?}");
        assert!(why("device.yaml").contains("a device"), "{got:?}");
        assert!(why("pipe.yaml").contains("a named pipe"), "{got:?}");
        assert!(
            why("big.yaml").contains("is larger than 4194304 bytes"),
            "{got:?}"
        );
        assert_eq!(
            got.iter().filter(|(n, _)| n == "good.yaml").count(),
            1,
            "{got:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A byte order mark is dropped, not read as part of the YAML.
    #[test]
    fn a_byte_order_mark_is_dropped() {
        let dir = scratch("bom");
        std::fs::write(dir.join("p.yaml"), b"\xef\xbb\xbfkind: X\n").expect("write");
        let docs = read_all(std::slice::from_ref(&dir)).expect("read");
        assert_eq!(docs[0].content, "kind: X\n");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
