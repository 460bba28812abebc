//! `ivpol pull`: a Wasm component artifact to a file, verified against
//! its digests. Prints the reference pinned by digest on stdout.

use super::registry::RegistryArgs;
use crate::oci::client::Client;
use crate::oci::reference::Reference;
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub(super) struct PullArgs {
    /// What to pull: `[oci://]REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST]`.
    #[arg(value_name = "REF")]
    reference: String,
    /// Where to write the component.
    #[arg(short = 'o', long = "output", value_name = "FILE", required = true)]
    output: PathBuf,
    #[command(flatten)]
    registry: RegistryArgs,
}

pub(super) async fn run(args: PullArgs) -> Result<()> {
    let reference = Reference::parse(&args.reference)?;
    let client = Client::new(args.registry.net(None)?, &reference);
    let pulled = crate::oci::pull::pull(&client, None)
        .await
        .with_context(|| format!("pulling {reference}"))?;
    write_atomically(&args.output, &pulled.component)?;
    eprintln!(
        "wrote {} ({} bytes, {})",
        args.output.display(),
        pulled.component.len(),
        pulled.layer.digest
    );
    println!("{}", reference.pinned(&pulled.manifest_digest));
    Ok(())
}

/// No half-written component under the final name if the write fails.
fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}
