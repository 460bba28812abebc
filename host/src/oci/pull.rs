//! Pulling a component artifact: manifest, config, layer, each checked
//! against its digest and the layout before it is used.
//!
//! Progress goes to stderr; callers print results to stdout.

use super::artifact::{self, Descriptor, WasmConfig, MAX_LAYER_BYTES, MAX_MANIFEST_BYTES};
use super::cache::ComponentCache;
use super::client::{registry_error, Client};
use anyhow::{bail, Context, Result};
use http::StatusCode;

/// A pulled, verified artifact.
pub(crate) struct Pulled {
    pub manifest_digest: String,
    pub config: WasmConfig,
    pub layer: Descriptor,
    pub component: Vec<u8>,
    /// Whether the manifest came from the cache, with no registry call.
    pub from_cache: bool,
}

/// Pulls the artifact `client` names. With a cache, a reference pinned by
/// digest whose artifact is cached makes no registry call, and what is
/// pulled is cached.
pub(crate) async fn pull(client: &Client, cache: Option<&ComponentCache>) -> Result<Pulled> {
    let reference = client.reference();
    if let (Some(cache), Some(digest)) = (cache, reference.digest.as_deref()) {
        if let Some(pulled) = from_cache(cache, digest)? {
            eprintln!("using cached {reference} (layer {})", pulled.layer.digest);
            return Ok(pulled);
        }
    }
    let (manifest_digest, manifest_bytes) = manifest(client).await?;
    let (manifest, layer) = artifact::wasm_layer(&manifest_bytes)
        .with_context(|| format!("{reference} is not a Wasm component artifact"))?;
    let config_bytes = blob(client, &manifest.config, MAX_MANIFEST_BYTES, "config").await?;
    let config = artifact::check_config(&config_bytes, &layer)?;
    let component = match cache.and_then(|c| c.get(&layer.digest, "wasm")) {
        Some(bytes) => {
            eprintln!("layer {} from the cache", layer.digest);
            bytes
        }
        None => blob(client, &layer, MAX_LAYER_BYTES, "layer").await?,
    };
    if let Some(cache) = cache {
        // The manifest last: its presence vouches for the other two.
        let stored = cache
            .put(&component, "wasm")
            .and_then(|()| cache.put(&config_bytes, "json"))
            .and_then(|()| cache.put(&manifest_bytes, "json"));
        if let Err(e) = stored {
            tracing::warn!("cannot cache the pulled component: {e:#}");
        }
    }
    eprintln!("pulled {}", reference.pinned(&manifest_digest));
    Ok(Pulled {
        manifest_digest,
        config,
        layer,
        component,
        from_cache: false,
    })
}

/// The cached artifact `digest`, re-checked link by link.
fn from_cache(cache: &ComponentCache, digest: &str) -> Result<Option<Pulled>> {
    let Some(manifest) = cache.get(digest, "json") else {
        return Ok(None);
    };
    let (manifest, layer) = artifact::wasm_layer(&manifest)?;
    let (Some(config), Some(component)) = (
        cache.get(&manifest.config.digest, "json"),
        cache.get(&layer.digest, "wasm"),
    ) else {
        return Ok(None);
    };
    Ok(Some(Pulled {
        manifest_digest: digest.to_string(),
        config: artifact::check_config(&config, &layer)?,
        layer,
        component,
        from_cache: true,
    }))
}

/// The manifest's digest and bytes; a pinned digest must match.
pub(crate) async fn manifest(client: &Client) -> Result<(String, Vec<u8>)> {
    let reference = client.reference();
    eprintln!("pulling manifest {reference}");
    let path = format!("manifests/{}", reference.manifest_reference());
    let answer = client
        .get(&path, artifact::MANIFEST_MEDIA_TYPE, MAX_MANIFEST_BYTES)
        .await?;
    match answer.status {
        StatusCode::OK => {}
        StatusCode::NOT_FOUND => {
            bail!("{reference}: not found in the registry (no such repository, tag or digest)")
        }
        s => return Err(registry_error("GET", &path, s, &answer.body)),
    }
    let digest = artifact::sha256_digest(&answer.body);
    if let Some(pinned) = reference.digest.as_deref() {
        if pinned != digest {
            bail!("{reference}: the registry sent a manifest with digest {digest}, not the pinned {pinned}");
        }
    }
    Ok((digest, answer.body.to_vec()))
}

/// A blob, bounded by `limit` and checked against its descriptor.
pub(super) async fn blob(
    client: &Client,
    d: &Descriptor,
    limit: u64,
    what: &str,
) -> Result<Vec<u8>> {
    eprintln!("pulling {what} {} ({} bytes)", d.digest, d.size);
    let path = format!("blobs/{}", d.digest);
    // Bounded by the layout's limit, not the descriptor's size, so a blob of
    // the wrong size is reported as the mismatch it is.
    let answer = client.get(&path, "*/*", limit).await?;
    if answer.status != StatusCode::OK {
        return Err(registry_error("GET", &path, answer.status, &answer.body));
    }
    let got = artifact::sha256_digest(&answer.body);
    if got != d.digest || answer.body.len() as u64 != d.size {
        bail!(
            "the {what} does not match the manifest: expected {} ({} bytes), got {got} ({} bytes)",
            d.digest,
            d.size,
            answer.body.len()
        );
    }
    Ok(answer.body.to_vec())
}
