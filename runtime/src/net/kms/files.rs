//! `tuf.root.path`: trust files a policy names by path. The component has
//! no filesystem, so the host reads them, and only from the directories
//! the operator lists (`--trust-root-dir`, where a ConfigMap or Secret of
//! TUF roots is mounted): a policy cannot read any other file of the
//! host's through ivpol. Symbolic links are followed before the check, so
//! a ConfigMap's `..data` links work and a link out of the directory does
//! not.

use std::path::{Path, PathBuf};

/// The most bytes a trust file may have (a TUF root.json is a few KiB).
const MAX_FILE: u64 = 1 << 20;

/// The directories trust files may be read from.
#[derive(Default)]
pub(crate) struct TrustFiles {
    dirs: std::sync::OnceLock<Vec<PathBuf>>,
}

impl TrustFiles {
    /// Reads trust files from `dirs` (canonical), and nowhere else.
    pub(crate) fn allow(&self, dirs: &[PathBuf]) -> anyhow::Result<()> {
        let canonical = dirs
            .iter()
            .map(|d| {
                std::fs::canonicalize(d)
                    .map_err(|e| anyhow::anyhow!("--trust-root-dir {}: {e}", d.display()))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let _ = self.dirs.set(canonical);
        Ok(())
    }

    /// The contents of `path`, when it is a file inside a listed directory.
    pub(crate) fn read(&self, path: &str) -> Result<String, String> {
        let dirs = self.dirs.get().map(Vec::as_slice).unwrap_or_default();
        if dirs.is_empty() {
            return Err(
                "trust files are read only from a --trust-root-dir, and none is given".into(),
            );
        }
        let file = std::fs::canonicalize(path).map_err(|e| e.to_string())?;
        if !dirs.iter().any(|d| file.starts_with(d)) {
            return Err("not inside a --trust-root-dir".into());
        }
        read_bounded(&file)
    }
}

fn read_bounded(file: &Path) -> Result<String, String> {
    use std::io::Read;
    let opened = std::fs::File::open(file).map_err(|e| e.to_string())?;
    if !opened.metadata().map_err(|e| e.to_string())?.is_file() {
        return Err("not a regular file".into());
    }
    let mut text = String::new();
    opened
        .take(MAX_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > MAX_FILE {
        return Err(format!("over {MAX_FILE} bytes"));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_inside_a_listed_directory_are_read() {
        let dir = tempfile::tempdir().expect("dir");
        let other = tempfile::tempdir().expect("other");
        let root = dir.path().join("root.json");
        std::fs::write(&root, "{}").expect("root");
        std::fs::write(other.path().join("secret"), "s3cret").expect("secret");
        std::os::unix::fs::symlink(other.path().join("secret"), dir.path().join("link"))
            .expect("link");
        let files = TrustFiles::default();
        let unlisted = files.read(&root.display().to_string());
        assert!(unlisted
            .expect_err("none listed")
            .contains("--trust-root-dir"));
        files.allow(&[dir.path().to_path_buf()]).expect("allow");
        assert_eq!(files.read(&root.display().to_string()), Ok("{}".into()));
        let escape = |p: &Path| files.read(&p.display().to_string());
        let e = escape(&other.path().join("secret"))
            .expect_err("refused")
            .to_string();
        assert!(e.contains("not inside a --trust-root-dir"), "{e}");
        let e = escape(&dir.path().join("link"))
            .expect_err("refused")
            .to_string();
        assert!(e.contains("not inside a --trust-root-dir"), "{e}");
        let e = escape(&dir.path().join("../secret"))
            .expect_err("refused")
            .to_string();
        assert!(e.contains("No such file or directory"), "{e}");
        assert!(escape(dir.path())
            .expect_err("a directory")
            .contains("regular file"));
        let e = escape(&dir.path().join("missing"))
            .expect_err("refused")
            .to_string();
        assert!(e.contains("No such file or directory"), "{e}");
    }
}
