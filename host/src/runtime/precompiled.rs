//! Precompiled components on disk, so that start-up does not pay for a
//! cranelift compile every time.
//!
//! An entry is named by the component's SHA-256 and the engine's
//! compatibility hash (wasmtime version, target, settings), so a different
//! component or a different wasmtime never loads a stale artifact.
//!
//! Loading a precompiled artifact runs native code from disk: the cache
//! directory is created private to the user (0700), entries are written
//! atomically, and only files this module wrote are ever deserialized.

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::component::Component;
use wasmtime::Engine;

/// Compiles `bytes`, or loads the artifact a previous run cached in `dir`.
pub(crate) fn load(engine: &Engine, bytes: &[u8], dir: Option<&Path>) -> Result<Component> {
    let Some(dir) = dir else {
        return compile(engine, bytes);
    };
    let path = entry_path(engine, bytes, dir);
    if path.is_file() {
        #[allow(unsafe_code)]
        // SAFETY: the file was written by `store` below from a component
        // compiled by this same engine configuration (the name binds the
        // compatibility hash), in a directory only this user can write.
        let loaded = unsafe { Component::deserialize_file(engine, &path) };
        match loaded {
            Ok(component) => return Ok(component),
            Err(e) => {
                tracing::warn!(path = %path.display(), "ignoring unusable precompiled component: {e}")
            }
        }
    }
    tracing::info!(cache = %dir.display(), "compiling the policy component (once per build; later starts load it from the cache)");
    let component = compile(engine, bytes)?;
    if let Err(e) = store(&component, dir, &path) {
        tracing::warn!(dir = %dir.display(), "cannot cache the precompiled component: {e:#}");
    }
    Ok(component)
}

fn compile(engine: &Engine, bytes: &[u8]) -> Result<Component> {
    Component::new(engine, bytes)
        .map_err(anyhow::Error::from)
        .context("compiling the policy component")
}

fn entry_path(engine: &Engine, bytes: &[u8], dir: &Path) -> PathBuf {
    let component = hex(&Sha256::digest(bytes));
    let mut compat = ShaHasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut compat);
    let compat = hex(&compat.0.finalize()[..8]);
    dir.join(format!("{component}-{compat}.cwasm"))
}

fn store(component: &Component, dir: &Path, path: &Path) -> Result<()> {
    create_private_dir(dir)?;
    let bytes = component.serialize()?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))
}

pub(crate) fn create_private_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("restricting {}", dir.display()))?;
    }
    Ok(())
}

/// The default cache directory: `$XDG_CACHE_HOME/ivpol`, else `~/.cache/ivpol`.
pub(crate) fn default_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("ivpol"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Feeds `Hash` output into SHA-256, so the name is stable across runs
/// (std's `DefaultHasher` is not guaranteed to be).
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn finish(&self) -> u64 {
        0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ivpol-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// The first load writes an entry, the second loads it, and an entry
    /// that does not deserialize is replaced rather than failing start-up.
    #[test]
    fn caches_reuses_and_replaces_a_corrupt_entry() {
        let engine = Engine::default();
        let bytes = super::super::EMBEDDED_COMPONENT;
        let dir = scratch_dir("precompiled");
        load(&engine, bytes, Some(&dir)).expect("compiles");
        let path = entry_path(&engine, bytes, &dir);
        let written = std::fs::read(&path).expect("entry written");
        load(&engine, bytes, Some(&dir)).expect("loads the entry");
        std::fs::write(&path, b"not a component").expect("corrupt");
        load(&engine, bytes, Some(&dir)).expect("recompiles");
        assert_eq!(
            std::fs::read(&path).expect("rewritten").len(),
            written.len()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
