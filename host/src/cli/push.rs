//! `ivpol push`: the component as a CNCF Wasm OCI artifact. Prints the
//! pushed reference pinned by digest on stdout.

use super::registry::RegistryArgs;
use crate::oci::artifact::{created_now, Artifact};
use crate::oci::client::Client;
use crate::oci::reference::Reference;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub(super) struct PushArgs {
    /// The component to push (default: the embedded one).
    #[arg(long, value_name = "PATH")]
    component: Option<PathBuf>,
    /// Where to push: `[oci://]REGISTRY/REPOSITORY[:TAG]` (tag `latest` by default).
    #[arg(value_name = "REF")]
    reference: String,
    #[command(flatten)]
    registry: RegistryArgs,
}

pub(super) async fn run(args: PushArgs) -> Result<()> {
    let reference = Reference::parse(&args.reference)?;
    if reference.digest.is_some() {
        bail!(
            "{}: push to a tag; the digest is computed and printed",
            args.reference
        );
    }
    let (bytes, title) = match &args.component {
        Some(path) => (
            std::fs::read(path).with_context(|| format!("reading {}", path.display()))?,
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "component.wasm".into()),
        ),
        None => (
            ivpol_runtime::EMBEDDED_COMPONENT.to_vec(),
            "ivpol.wasm".into(),
        ),
    };
    let source = args
        .component
        .as_ref()
        .map_or("the embedded component".into(), |p| p.display().to_string());
    let artifact = Artifact::new(bytes, &title, created_now())
        .with_context(|| format!("{source} cannot be pushed"))?;
    let tag = reference.manifest_reference().to_string();
    let client = Client::new(args.registry.net(None)?, &reference);
    let digest = crate::oci::push::push(&client, artifact, &tag)
        .await
        .with_context(|| format!("pushing to {reference}"))?;
    let tagged = Reference {
        tag: Some(tag),
        ..reference
    };
    println!("{}", tagged.pinned(&digest));
    Ok(())
}
