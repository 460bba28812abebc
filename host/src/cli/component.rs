//! Which component a subcommand runs, and where its precompiled form is kept.

use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct ComponentArgs {
    /// Component to run instead of the embedded one.
    #[arg(long)]
    component: Option<PathBuf>,
    /// Where precompiled components are kept between runs (default
    /// `$XDG_CACHE_HOME/ivpol` or `~/.cache/ivpol`).
    #[arg(long = "cache-dir", value_name = "DIR", env = "IVPOL_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
    /// Compile the component on every start instead of caching it.
    #[arg(long = "no-precompile-cache", conflicts_with = "cache_dir")]
    no_precompile_cache: bool,
}

impl ComponentArgs {
    /// The component's bytes.
    pub fn bytes(&self) -> Result<Vec<u8>> {
        match &self.component {
            Some(path) => {
                std::fs::read(path).with_context(|| format!("reading component {}", path.display()))
            }
            None => Ok(crate::runtime::EMBEDDED_COMPONENT.to_vec()),
        }
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
