//! `ivpol inspect`: what a component is (world, imports, exports, size,
//! digest), from a file or from an artifact in a registry.

use super::registry::RegistryArgs;
use crate::oci::artifact::{inspect_component, sha256_digest, world};
use crate::oci::client::Client;
use crate::oci::reference::Reference;
use anyhow::{Context, Result};
use clap::Args;
use std::path::Path;

#[derive(Args)]
pub(super) struct InspectArgs {
    /// A component file, or `oci://REF` (a REF that is not a file also
    /// works without the scheme).
    #[arg(value_name = "REF|PATH")]
    target: String,
    #[command(flatten)]
    registry: RegistryArgs,
}

pub(super) async fn run(args: InspectArgs) -> Result<()> {
    let (bytes, manifest, listed) = match as_reference(&args.target)? {
        None => (
            std::fs::read(&args.target).with_context(|| format!("reading {}", args.target))?,
            None,
            None,
        ),
        Some(reference) => {
            let client = Client::new(args.registry.net(None)?, &reference);
            let pulled = crate::oci::pull::pull(&client, None).await?;
            let listed = pulled.config.component;
            (pulled.component, Some(pulled.manifest_digest), listed)
        }
    };
    let info = inspect_component(&bytes).with_context(|| format!("inspecting {}", args.target))?;
    // What is printed comes from the binary; a config that says otherwise is suspect.
    if listed.is_some_and(|l| l != info) {
        eprintln!("warning: the artifact's config lists other interfaces than the component has");
    }
    println!("world: {}", world(&info).unwrap_or("unknown"));
    println!("size: {} bytes", bytes.len());
    println!("digest: {}", sha256_digest(&bytes));
    if let Some(m) = manifest {
        println!("manifest: {m}");
    }
    println!("exports:");
    for e in &info.exports {
        println!("  {e}");
    }
    println!("imports:");
    for i in &info.imports {
        println!("  {i}");
    }
    Ok(())
}

/// `oci://REF` is a reference; so is a name that is no file and starts
/// with a registry host (`host.name/...`, `host:port/...`). Anything else
/// is a path, so a mistyped file name never turns into a registry call.
fn as_reference(target: &str) -> Result<Option<Reference>> {
    if let Some(r) = target.strip_prefix("oci://") {
        return Reference::parse(r).map(Some);
    }
    let first = target.split('/').next().unwrap_or_default();
    let hostlike = target.contains('/') && (first.contains(['.', ':']) || first == "localhost");
    if Path::new(target).exists() || !hostlike || first == "." || first == ".." {
        return Ok(None);
    }
    Reference::parse(target).map(Some)
}
