//! Precompiled components on disk, so that start-up does not pay for a
//! cranelift compile every time.
//!
//! An entry is named by the component's SHA-256 and the engine's
//! compatibility hash (wasmtime version, target, settings), so a different
//! component or a different wasmtime never loads a stale artifact.
//!
//! Loading a precompiled artifact runs native code from disk: the cache
//! directory is created private to the user (0700), entries are written
//! atomically, and an entry is mapped only when it and its directory are
//! owned by this user and writable by no one else ([`trusted`]): a file
//! someone else could have written is compiled again and replaced, never
//! run. With `--component-key` the entry's name binds the digest of the
//! component whose signature was just verified, so a signed component is
//! never swapped for another's artifact.
//!
//! `serve` compiles in a child process ([`Compiler::Child`]): cranelift
//! needs about 200 MB of heap for this component, and in a long-lived
//! process the allocator keeps most of it (RSS stayed at 264 MB after
//! start-up, against 35 MB when the artifact was loaded from the cache).
//! The child's memory ends with it; the server maps the artifact it wrote.

use anyhow::{Context, Result};
use ivpol_refs::encoding::hex;
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::component::Component;
use wasmtime::Engine;

/// Where a component with no cached artifact is compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compiler {
    /// In this process: one-shot commands, and tests.
    InProcess,
    /// In a child `ivpol compile-component` (see the module comment), whose
    /// engine is built from the same [`super::engine_config`]: the
    /// instance memory limit is its one input.
    Child,
}

/// Compiles `bytes`, or loads the artifact a previous run cached in `dir`;
/// `engine` was built by [`super::engine_config`] from `instance_memory`.
pub(crate) fn load(
    engine: &Engine,
    bytes: &[u8],
    dir: Option<&Path>,
    compiler: Compiler,
    instance_memory: usize,
) -> Result<Component> {
    let Some(dir) = dir else {
        return match compiler {
            Compiler::InProcess => compile(engine, bytes),
            Compiler::Child => compile_uncached(engine, bytes, instance_memory),
        };
    };
    let path = entry_path(engine, bytes, dir);
    if path.is_file() {
        match trusted(&path).and_then(|()| deserialize(engine, &path)) {
            Ok(component) => return Ok(component),
            Err(e) => {
                tracing::warn!(path = %path.display(), "ignoring unusable precompiled component: {e}")
            }
        }
    }
    tracing::info!(cache = %dir.display(), "compiling the policy component (once per build; later starts load it from the cache)");
    if compiler == Compiler::Child {
        // A cache directory that cannot be made (a read-only file system)
        // costs the cache, not the child.
        if let Err(e) = create_private_dir(dir) {
            tracing::warn!(dir = %dir.display(), "cannot cache the precompiled component: {e:#}");
            return compile_uncached(engine, bytes, instance_memory);
        }
        let compiled =
            child::compile(bytes, instance_memory, &path).and_then(|()| deserialize(engine, &path));
        if let Some(component) = or_warn(compiled) {
            return Ok(component);
        }
    }
    let component = compile(engine, bytes)?;
    if let Err(e) = store(&component, dir, &path) {
        tracing::warn!(dir = %dir.display(), "cannot cache the precompiled component: {e:#}");
    }
    Ok(component)
}

/// [`Compiler::Child`] without a cache: the child writes the artifact into
/// a scratch directory made private, with an unpredictable name (a shared
/// temporary directory is writable by others), and removed once the
/// artifact is mapped.
fn compile_uncached(engine: &Engine, bytes: &[u8], instance_memory: usize) -> Result<Component> {
    let compiled = tempfile::Builder::new()
        .prefix("ivpol-compile-")
        .tempdir()
        .context("creating a scratch directory")
        .and_then(|scratch| {
            create_private_dir(scratch.path())?;
            let path = scratch.path().join("component.cwasm");
            child::compile(bytes, instance_memory, &path)?;
            deserialize(engine, &path)
        });
    match or_warn(compiled) {
        Some(component) => Ok(component),
        None => compile(engine, bytes),
    }
}

/// A child's compile, or `None` after a warning: the caller then compiles
/// in this process, as it did before children. That is never silent: the
/// server keeps the compiler's memory, so the log says why and
/// `ivpol_component_compiled_in_process` is 1.
fn or_warn(compiled: Result<Component>) -> Option<Component> {
    compiled
        .map_err(|e| {
            crate::metrics::metrics().compiled_in_process.set(1);
            tracing::warn!(
                "compiling in a child process failed, so the policy component is compiled in this process, which keeps the compiler's memory (about 200 MB) for its lifetime: {e:#}"
            )
        })
        .ok()
}

/// Maps an artifact this module (or its child) wrote.
fn deserialize(engine: &Engine, path: &Path) -> Result<Component> {
    #[allow(unsafe_code)]
    // SAFETY: the file was written by `store` or `write_artifact` from a
    // component compiled by this same engine configuration (a cache entry's
    // name binds the compatibility hash, and wasmtime checks it again), in
    // a directory only this user can write.
    let loaded = unsafe { Component::deserialize_file(engine, path) };
    loaded.map_err(anyhow::Error::from)
}

/// Whether `path` and its directory may be mapped as native code: owned by
/// this process's user and writable by no one else (no group or other
/// write bit), and `path` a regular file, not a link.
#[cfg(target_os = "linux")]
fn trusted(path: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let me = rustix::process::geteuid().as_raw();
    let dir = path.parent().unwrap_or(Path::new("."));
    for (what, meta) in [
        ("the artifact", std::fs::symlink_metadata(path)),
        ("its directory", std::fs::metadata(dir)),
    ] {
        let meta = meta.with_context(|| format!("reading {}", path.display()))?;
        if meta.uid() != me || meta.mode() & 0o022 != 0 || meta.file_type().is_symlink() {
            anyhow::bail!(
                "{what} is not this user's alone (owner {}, mode {:o}): compiling again rather than running native code someone else may have written",
                meta.uid(),
                meta.mode() & 0o7777
            );
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn trusted(_: &Path) -> Result<()> {
    Ok(())
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
    write_artifact(component, path)
}

/// The child's side of [`Compiler::Child`]: compiles `bytes` with the
/// engine settings of a server whose instances may hold `instance_memory`
/// bytes each, and writes the artifact to `out`.
pub fn compile_to_file(bytes: &[u8], instance_memory: usize, out: &Path) -> Result<()> {
    let engine = Engine::new(&super::engine_config(instance_memory))?;
    write_artifact(&compile(&engine, bytes)?, out)
}

/// Writes `component`'s artifact to `path` atomically (a file beside it,
/// then renamed): a reader never maps a half-written artifact.
fn write_artifact(component: &Component, path: &Path) -> Result<()> {
    let bytes = component.serialize()?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))
}

/// The parent's side of [`Compiler::Child`].
mod child {
    use anyhow::{bail, Context, Result};
    use std::io::Write as _;
    use std::path::Path;
    use std::process::{Command, Stdio};

    /// Runs `ivpol compile-component`, handing it `bytes` on its standard
    /// input, and waits for it to write the artifact to `out`. Its standard
    /// error goes into the error, not into the server's log stream, which
    /// may be JSON.
    pub(super) fn compile(bytes: &[u8], instance_memory: usize, out: &Path) -> Result<()> {
        tracing::info!("compiling the policy component in a child process");
        let exe = std::env::current_exe().context("finding the ivpol executable")?;
        let mut child = Command::new(exe)
            .arg("compile-component")
            .arg("--instance-memory-bytes")
            .arg(instance_memory.to_string())
            .arg("--out")
            .arg(out)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting ivpol compile-component")?;
        // The child reads all of its input before it writes anything, and
        // the pipe closes when `stdin` is dropped here.
        let written = match child.stdin.take() {
            Some(mut stdin) => stdin.write_all(bytes),
            None => Ok(()),
        };
        let output = child
            .wait_with_output()
            .context("waiting for ivpol compile-component")?;
        if !output.status.success() {
            let said = String::from_utf8_lossy(&output.stderr);
            bail!(
                "ivpol compile-component failed ({}): {}",
                output.status,
                said.trim()
            );
        }
        written.context("handing the component to ivpol compile-component")
    }
}

pub fn create_private_dir(dir: &Path) -> Result<()> {
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
pub fn default_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("ivpol"))
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

    /// The empty component: what is cached does not matter here, and the
    /// policy component would take Cranelift seconds per compile.
    const EMPTY: &[u8] = b"\0asm\x0d\0\x01\0";

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
        let bytes = EMPTY;
        let dir = scratch_dir("precompiled");
        // In process, the instance memory limit (only a child's engine
        // setting) goes unused.
        let here = Compiler::InProcess;
        load(&engine, bytes, Some(&dir), here, 0).expect("compiles");
        let path = entry_path(&engine, bytes, &dir);
        let written = std::fs::read(&path).expect("entry written");
        load(&engine, bytes, Some(&dir), here, 0).expect("loads the entry");
        std::fs::write(&path, b"not a component").expect("corrupt");
        load(&engine, bytes, Some(&dir), here, 0).expect("recompiles");
        assert_eq!(
            std::fs::read(&path).expect("rewritten").len(),
            written.len()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A valid entry that others could have written (group or world
    /// writable) is not mapped: it is compiled again and replaced by one
    /// this user alone may write.
    #[cfg(target_os = "linux")]
    #[test]
    fn an_entry_others_may_write_is_compiled_again_not_run() {
        use std::os::unix::fs::PermissionsExt;
        let engine = Engine::default();
        let bytes = EMPTY;
        let dir = scratch_dir("precompiled-mode");
        let here = Compiler::InProcess;
        load(&engine, bytes, Some(&dir), here, 0).expect("compiles");
        let path = entry_path(&engine, bytes, &dir);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        let e = trusted(&path).expect_err("refused").to_string();
        assert!(e.contains("is not this user's alone"), "{e}");
        load(&engine, bytes, Some(&dir), here, 0).expect("recompiles");
        let mode = std::fs::metadata(&path)
            .expect("entry")
            .permissions()
            .mode();
        assert_eq!(mode & 0o022, 0, "the entry was mapped as it was: {mode:o}");
        assert!(trusted(&path).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
