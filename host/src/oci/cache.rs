//! Pulled artifacts on disk, addressed by digest: `<cache>/components/
//! sha256-<hex>.wasm` for components, `.json` for manifests and configs.
//!
//! A reference pinned by digest whose manifest is here starts without the
//! registry. Every read re-hashes the file, so a corrupted or edited entry
//! is a miss, never a wrong component.
//!
//! Next to a manifest, `sha256-<hex>.signatures.json` keeps the cosign
//! signatures fetched for it (`signatures`), so that a start from the cache
//! verifies the component again. That file is not addressed by its
//! content; it needs no such check, since the component verifies every
//! piece of it, and an edited one fails verification.

use super::artifact::sha256_digest;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

pub(crate) struct ComponentCache {
    dir: PathBuf,
}

impl ComponentCache {
    /// The cache under ivpol's cache directory (`--cache-dir`).
    pub(crate) fn new(cache_dir: &Path) -> ComponentCache {
        ComponentCache {
            dir: cache_dir.join("components"),
        }
    }

    fn path(&self, digest: &str, ext: &str) -> PathBuf {
        self.dir.join(format!("{}.{ext}", digest.replace(':', "-")))
    }

    /// The blob `digest`, if cached and intact.
    pub(crate) fn get(&self, digest: &str, ext: &str) -> Option<Vec<u8>> {
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
    pub(crate) fn put(&self, bytes: &[u8], ext: &str) -> Result<()> {
        self.write(&self.path(&sha256_digest(bytes), ext), bytes)
    }

    /// The signatures kept for the manifest `digest`, if any (read up to
    /// [`MAX_SIGNATURES_FILE`] bytes; a larger file is ignored).
    pub(crate) fn get_signatures(&self, digest: &str) -> Option<Vec<u8>> {
        let path = self.path(digest, SIGNATURES_EXT);
        let size = std::fs::metadata(&path).ok()?.len();
        if size > MAX_SIGNATURES_FILE {
            tracing::warn!(path = %path.display(), "ignoring kept signatures larger than {MAX_SIGNATURES_FILE} bytes");
            return None;
        }
        std::fs::read(&path).ok()
    }

    /// Keeps `bytes` as the signatures of the manifest `digest`, replacing
    /// what was kept.
    pub(crate) fn put_signatures(&self, digest: &str, bytes: &[u8]) -> Result<()> {
        self.write(&self.path(digest, SIGNATURES_EXT), bytes)
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        ivpol_runtime::precompiled::create_private_dir(&self.dir)?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))
    }
}

const SIGNATURES_EXT: &str = "signatures.json";
/// Kept signatures are base64 (4/3) of at most
/// [`MAX_SIGNATURES_TOTAL`] bytes.
const MAX_SIGNATURES_FILE: u64 = 2 * MAX_SIGNATURES_TOTAL;

/// The most bytes read for one artifact's signatures, manifests included.
pub(crate) const MAX_SIGNATURES_TOTAL: u64 = 16 << 20;

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

    #[test]
    fn signatures_are_kept_by_the_manifest_digest() {
        let dir = tempdir("component-signatures");
        let cache = ComponentCache::new(&dir);
        let digest = sha256_digest(b"manifest");
        assert_eq!(cache.get_signatures(&digest), None);
        cache.put_signatures(&digest, b"first").expect("put");
        cache.put_signatures(&digest, b"second").expect("replace");
        assert_eq!(
            cache.get_signatures(&digest).as_deref(),
            Some(&b"second"[..])
        );
        assert!(dir
            .join("components")
            .join(format!("{}.signatures.json", digest.replace(':', "-")))
            .exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tempdir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ivpol-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }
}
