//! Which component a subcommand runs, and where its precompiled form is kept.

use super::registry::RegistryArgs;
use crate::oci::cache::ComponentCache;
use crate::oci::client::Client;
use crate::oci::reference::Reference;
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct ComponentArgs {
    /// Component to run instead of the embedded one: a file, or
    /// `oci://REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST]` (pulled once, cached by digest).
    #[arg(long, value_name = "PATH|oci://REF")]
    component: Option<String>,
    /// Where precompiled and pulled components are kept between runs
    /// (default `$XDG_CACHE_HOME/ivpol` or `~/.cache/ivpol`).
    #[arg(long = "cache-dir", value_name = "DIR", env = "IVPOL_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
    /// Compile (and pull) the component on every start instead of caching it.
    #[arg(long = "no-precompile-cache", conflicts_with = "cache_dir")]
    no_precompile_cache: bool,
}

impl ComponentArgs {
    /// The component's bytes: the embedded ones, a file's, or an
    /// artifact's, pulled through `registry` and verified. A reference that
    /// cannot be pulled is an error: there is no fallback to the embedded
    /// component, which would run something other than what was asked.
    pub async fn bytes(&self, registry: &RegistryArgs) -> Result<Vec<u8>> {
        let Some(source) = &self.component else {
            return Ok(crate::runtime::EMBEDDED_COMPONENT.to_vec());
        };
        let Some(reference) = source.strip_prefix("oci://") else {
            return std::fs::read(source).with_context(|| format!("reading component {source}"));
        };
        let reference = Reference::parse(reference)?;
        let client = Client::new(registry.net(None)?, &reference);
        let cache = self.cache_dir().map(|d| ComponentCache::new(&d));
        let pulled = crate::oci::pull::pull(&client, cache.as_ref())
            .await
            .with_context(|| format!("pulling the component {source}"))?;
        tracing::info!(component = %reference.pinned(&pulled.manifest_digest), layer = %pulled.layer.digest, "component pulled");
        Ok(pulled.component)
    }

    /// The precompile cache directory, unless caching is off.
    pub fn cache_dir(&self) -> Option<PathBuf> {
        match self.no_precompile_cache {
            true => None,
            false => self
                .cache_dir
                .clone()
                .or_else(crate::runtime::precompiled::default_dir),
        }
    }
}
