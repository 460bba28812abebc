//! Pulled artifacts on disk, addressed by digest: `<cache>/components/
//! sha256-<hex>.wasm` for components, `.json` for manifests and configs.
//!
//! A reference pinned by digest whose manifest is here starts without the
//! registry. Every read re-hashes the file, so a corrupted or edited entry
//! is a miss, never a wrong component.

use super::artifact::sha256_digest;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

pub struct ComponentCache {
    dir: PathBuf,
}

impl ComponentCache {
    /// The cache under ivpol's cache directory (`--cache-dir`).
    pub fn new(cache_dir: &Path) -> ComponentCache {
        ComponentCache {
            dir: cache_dir.join("components"),
        }
    }

    fn path(&self, digest: &str, ext: &str) -> PathBuf {
        self.dir.join(format!("{}.{ext}", digest.replace(':', "-")))
    }

    /// The blob `digest`, if cached and intact.
    pub fn get(&self, digest: &str, ext: &str) -> Option<Vec<u8>> {
        let path = self.path(digest, ext);
        let bytes = std::fs::read(&path).ok()?;
        if sha256_digest(&bytes) == digest {
            return Some(bytes);
        }
        tracing::warn!(path = %path.display(), "ignoring a cached blob that does not match its digest");
        None
    }

    /// Stores `bytes` under their digest, atomically (a crash leaves no
    /// half-written entry under the final name).
    pub fn put(&self, bytes: &[u8], ext: &str) -> Result<()> {
        crate::runtime::precompiled::create_private_dir(&self.dir)?;
        let path = self.path(&sha256_digest(bytes), ext);
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("renaming to {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_checked_against_their_digest() {
        let dir = tempdir("component-cache");
        let cache = ComponentCache::new(&dir);
        cache.put(b"component", "wasm").expect("put");
        let digest = sha256_digest(b"component");
        assert_eq!(
            cache.get(&digest, "wasm").as_deref(),
            Some(&b"component"[..])
        );
        assert_eq!(cache.get(&digest, "json"), None);
        std::fs::write(cache.path(&digest, "wasm"), b"tampered").expect("edit");
        assert_eq!(cache.get(&digest, "wasm"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tempdir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ivpol-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }
}
