//! A pulled artifact's cosign signatures, fetched for the component to
//! verify (`--component-key`, `--component-identity`): the legacy
//! `sha256-<hex>.sig` image, and Sigstore bundles attached as OCI 1.1
//! referrers (the referrers API, or its `sha256-<hex>` tag-schema fallback),
//! as cosign v2 and v3 store them.
//!
//! The host only fetches and keeps them, bounded in count and bytes, as
//! the rest of `oci` bounds what it reads; it never judges them: the
//! embedded component's cosign verifier does (`sigstore.verify-artifact`).
//! What was fetched is kept next to the pulled component (`cache`), so
//! that a start from the cache verifies again without the registry.

use super::artifact::{sha256_digest, Descriptor, MAX_MANIFEST_BYTES};
use super::cache::MAX_SIGNATURES_TOTAL;
use super::client::{registry_error, Client};
use super::reference::parse_digest;
use anyhow::{bail, Context, Result};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use http::StatusCode;
pub(crate) use ivpol_runtime::sigstore as wit;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The artifactType cosign v3 gives its bundle referrers.
pub(crate) const BUNDLE_ARTIFACT_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// Media types of a bundle referrer's layer (v0.1 to v0.3).
const BUNDLE_MEDIA_TYPE_PREFIX: &str = "application/vnd.dev.sigstore.bundle";
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// The most `.sig` layers, and the most bundle referrers, read for one artifact.
pub(crate) const MAX_SIGNATURES: usize = 32;
/// The largest signature layer or bundle read.
pub(crate) const MAX_SIGNATURE_BYTES: u64 = 1 << 20;

/// What was fetched, as the registry served it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Signatures {
    /// The manifest at `sha256-<hex>.sig`, if the tag exists.
    pub sig_manifest: Option<Vec<u8>>,
    /// Its layer blobs: (digest, content).
    pub sig_layers: Vec<(String, Vec<u8>)>,
    /// Bundle JSON, one per bundle referrer.
    pub bundles: Vec<Vec<u8>>,
}

/// The on-disk form (`cache`): the same pieces, base64-encoded.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Kept {
    sig_manifest: Option<String>,
    sig_layers: Vec<KeptBlob>,
    bundles: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct KeptBlob {
    digest: String,
    content: String,
}

impl Signatures {
    /// As the WIT record the component verifies.
    pub(crate) fn to_wit(&self) -> wit::ArtifactSignatures {
        wit::ArtifactSignatures {
            sig_manifest: self.sig_manifest.clone(),
            sig_layers: self
                .sig_layers
                .iter()
                .map(|(digest, content)| wit::OciBlob {
                    digest: digest.clone(),
                    content: content.clone(),
                })
                .collect(),
            bundles: self.bundles.clone(),
        }
    }

    /// The form kept on disk.
    pub(crate) fn to_json(&self) -> Result<Vec<u8>> {
        let kept = Kept {
            sig_manifest: self.sig_manifest.as_ref().map(|m| B64.encode(m)),
            sig_layers: self
                .sig_layers
                .iter()
                .map(|(digest, content)| KeptBlob {
                    digest: digest.clone(),
                    content: B64.encode(content),
                })
                .collect(),
            bundles: self.bundles.iter().map(|b| B64.encode(b)).collect(),
        };
        Ok(serde_json::to_vec(&kept)?)
    }

    /// Reads the form kept on disk.
    pub(crate) fn from_json(bytes: &[u8]) -> Result<Signatures> {
        let kept: Kept = serde_json::from_slice(bytes).context("not kept signatures")?;
        let decode = |s: &str| B64.decode(s).context("not base64");
        Ok(Signatures {
            sig_manifest: kept.sig_manifest.as_deref().map(decode).transpose()?,
            sig_layers: kept
                .sig_layers
                .iter()
                .map(|b| Ok((b.digest.clone(), decode(&b.content)?)))
                .collect::<Result<_>>()?,
            bundles: kept
                .bundles
                .iter()
                .map(|b| decode(b))
                .collect::<Result<_>>()?,
        })
    }
}

/// Counts the bytes read for one artifact's signatures.
struct Budget(u64);

impl Budget {
    fn take(&mut self, bytes: usize) -> Result<()> {
        self.0 = self.0.saturating_add(bytes as u64);
        if self.0 > MAX_SIGNATURES_TOTAL {
            bail!("its signatures are more than the {MAX_SIGNATURES_TOTAL} bytes ivpol reads");
        }
        Ok(())
    }
}

/// Fetches the signatures of the manifest `digest` in `client`'s repository.
pub(crate) async fn fetch(client: &Client, digest: &str) -> Result<Signatures> {
    parse_digest(digest, digest)?;
    let mut budget = Budget(0);
    let mut signatures = Signatures::default();
    legacy(client, digest, &mut budget, &mut signatures)
        .await
        .context("reading its cosign .sig image")?;
    signatures.bundles = bundles(client, digest, &mut budget)
        .await
        .context("reading its Sigstore bundle referrers")?;
    Ok(signatures)
}

/// A manifest by tag or digest; none when the registry has no such one.
async fn manifest(
    client: &Client,
    reference: &str,
    accept: &str,
    budget: &mut Budget,
) -> Result<Option<Vec<u8>>> {
    let path = format!("manifests/{reference}");
    let answer = client.get(&path, accept, MAX_MANIFEST_BYTES).await?;
    match answer.status {
        StatusCode::OK => {}
        StatusCode::NOT_FOUND => return Ok(None),
        s => return Err(registry_error("GET", &path, s, &answer.body)),
    }
    budget.take(answer.body.len())?;
    if parse_digest(reference, reference).is_ok() && sha256_digest(&answer.body) != reference {
        bail!("the registry sent another manifest than {reference}");
    }
    Ok(Some(answer.body.to_vec()))
}

/// A signature blob named by `d`, within the size and byte bounds.
async fn blob(client: &Client, d: &Descriptor, what: &str, budget: &mut Budget) -> Result<Vec<u8>> {
    parse_digest(&d.digest, &d.digest)?;
    if d.size > MAX_SIGNATURE_BYTES {
        bail!(
            "the {what} {} is {} bytes, more than the {MAX_SIGNATURE_BYTES} ivpol reads",
            d.digest,
            d.size
        );
    }
    budget.take(d.size as usize)?;
    super::pull::blob(client, d, MAX_SIGNATURE_BYTES, what).await
}

/// The layers of the `sha256-<hex>.sig` image, if there is one.
async fn legacy(
    client: &Client,
    digest: &str,
    budget: &mut Budget,
    out: &mut Signatures,
) -> Result<()> {
    #[derive(Deserialize)]
    struct Layers {
        #[serde(default)]
        layers: Vec<Descriptor>,
    }
    let tag = format!("{}.sig", ivpol_refs::digest_tag(digest));
    let accept = format!("{OCI_MANIFEST}, {DOCKER_MANIFEST}");
    let Some(bytes) = manifest(client, &tag, &accept, budget).await? else {
        return Ok(());
    };
    let manifest: Layers = serde_json::from_slice(&bytes)
        .with_context(|| format!("{tag} is not an image manifest"))?;
    if manifest.layers.len() > MAX_SIGNATURES {
        bail!(
            "{tag} has {} layers, more than the {MAX_SIGNATURES} ivpol reads",
            manifest.layers.len()
        );
    }
    for d in &manifest.layers {
        let content = blob(client, d, "signature layer", budget).await?;
        out.sig_layers.push((d.digest.clone(), content));
    }
    out.sig_manifest = Some(bytes);
    Ok(())
}

/// The bundles of the referrers of `digest` whose artifactType is a
/// Sigstore bundle's.
async fn bundles(client: &Client, digest: &str, budget: &mut Budget) -> Result<Vec<Vec<u8>>> {
    let index = referrers(client, digest, budget).await?;
    let candidates: Vec<&Value> = index
        .get("manifests")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter(|d| d.get("artifactType").and_then(Value::as_str) == Some(BUNDLE_ARTIFACT_TYPE))
        .collect();
    if candidates.len() > MAX_SIGNATURES {
        bail!(
            "{} bundle referrers, more than the {MAX_SIGNATURES} ivpol reads",
            candidates.len()
        );
    }
    let mut bundles = Vec::new();
    for candidate in candidates {
        let referrer = candidate
            .get("digest")
            .and_then(Value::as_str)
            .unwrap_or_default();
        parse_digest(referrer, "a referrer")?;
        let Some(bytes) = manifest(client, referrer, OCI_MANIFEST, budget).await? else {
            bail!("the referrer {referrer} is listed but not in the registry");
        };
        let manifest: Value = serde_json::from_slice(&bytes)
            .with_context(|| format!("the referrer {referrer} is not JSON"))?;
        // A listing is only a hint; the manifest's subject is the claim.
        // (The bundle itself names the digest it signs, and is checked.)
        if manifest.pointer("/subject/digest").and_then(Value::as_str) != Some(digest) {
            continue;
        }
        let layers: Vec<Descriptor> = manifest
            .get("layers")
            .and_then(|l| serde_json::from_value(l.clone()).ok())
            .unwrap_or_default();
        let [layer] = layers.as_slice() else {
            continue;
        };
        if !layer.media_type.starts_with(BUNDLE_MEDIA_TYPE_PREFIX) {
            continue;
        }
        bundles.push(blob(client, layer, "signature bundle", budget).await?);
    }
    Ok(bundles)
}

/// The referrers index of `digest`: the OCI 1.1 referrers API, or, from a
/// registry without it (distribution 2.8 answers 404), the index cosign
/// keeps under the tag `sha256-<hex>`. Empty when there is neither.
async fn referrers(client: &Client, digest: &str, budget: &mut Budget) -> Result<Value> {
    let path = format!(
        "referrers/{digest}?artifactType={}",
        ivpol_refs::encoding::query_value(BUNDLE_ARTIFACT_TYPE)
    );
    let answer = client.get(&path, OCI_INDEX, MAX_MANIFEST_BYTES).await?;
    let bytes = match answer.status {
        StatusCode::OK => {
            budget.take(answer.body.len())?;
            answer.body.to_vec()
        }
        StatusCode::NOT_FOUND => {
            let tag = ivpol_refs::digest_tag(digest);
            match manifest(client, &tag, OCI_INDEX, budget).await? {
                Some(bytes) => bytes,
                None => return Ok(Value::Null),
            }
        }
        s => return Err(registry_error("GET", &path, s, &answer.body)),
    };
    serde_json::from_slice(&bytes).context("the referrers index is not JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_signatures_read_back() {
        let s = Signatures {
            sig_manifest: Some(b"{\"layers\":[]}".to_vec()),
            sig_layers: vec![(sha256_digest(b"x"), b"x".to_vec())],
            bundles: vec![b"{}".to_vec(), vec![0, 255]],
        };
        let json = s.to_json().expect("json");
        assert_eq!(Signatures::from_json(&json).expect("kept"), s);
        assert_eq!(
            Signatures::from_json(&Signatures::default().to_json().expect("json")).expect("kept"),
            Signatures::default()
        );
        let e = Signatures::from_json(b"{")
            .expect_err("refused")
            .to_string();
        assert!(e.contains("not kept signatures"), "{e}");
    }

    #[test]
    fn the_artifact_type_is_percent_encoded() {
        assert_eq!(
            ivpol_refs::encoding::query_value(BUNDLE_ARTIFACT_TYPE),
            "application%2Fvnd.dev.sigstore.bundle.v0.3%2Bjson"
        );
    }
}
