//! Pushing a component artifact: blobs the registry lacks (HEAD first),
//! then the manifest under a tag.
//!
//! Progress goes to stderr; callers print results to stdout.

use super::artifact::{self, Artifact, MANIFEST_MEDIA_TYPE};
use super::client::Client;
use anyhow::{bail, Result};
use bytes::Bytes;

/// Pushes `artifact` under `tag` and returns the manifest digest.
pub(crate) async fn push(client: &Client, artifact: Artifact, tag: &str) -> Result<String> {
    blob(client, "config", artifact.config).await?;
    blob(client, "layer", artifact.layer).await?;
    let digest = artifact::sha256_digest(&artifact.manifest);
    eprintln!(
        "pushing manifest {digest} ({} bytes)",
        artifact.manifest.len()
    );
    let said = client
        .put_manifest(tag, MANIFEST_MEDIA_TYPE, Bytes::from(artifact.manifest))
        .await?;
    if let Some(said) = said.filter(|s| *s != digest) {
        bail!("the registry stored the manifest as {said}, not {digest}");
    }
    eprintln!("pushed manifest {digest}");
    Ok(digest)
}

async fn blob(client: &Client, what: &str, bytes: Vec<u8>) -> Result<()> {
    let digest = artifact::sha256_digest(&bytes);
    if client.has_blob(&digest).await? {
        eprintln!("{what} {digest} already in the registry");
        return Ok(());
    }
    eprintln!("pushing {what} {digest} ({} bytes)", bytes.len());
    client.upload_blob(&digest, Bytes::from(bytes)).await?;
    eprintln!("pushed {what} {digest}");
    Ok(())
}
