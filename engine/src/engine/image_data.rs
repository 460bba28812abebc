//! The registry behind `getImageData` / `image.GetMetadata`: Kyverno's
//! ImageData fields, fetched through the OCI client, once per image per request.

use super::FastMap;
use crate::cel::image_data::{ImageDataError, ImageDataSource};
use crate::images::reference::{self, ImageRefError};
use crate::oci::{Client, OciError, Platform, Transport, TransportError, MAX_CONFIG_BYTES};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

pub(super) struct RegistryImageData {
    transport: Arc<dyn Transport + Send + Sync>,
    cache: Mutex<FastMap<String, Result<Value, ImageDataError>>>,
}

ivpol_verify::debug_as_display!(FetchError);
/// Why the registry did not give an image's data.
#[derive(thiserror::Error)]
enum FetchError {
    /// The reference does not parse.
    #[error(transparent)]
    Reference(#[from] ImageRefError),
    /// The registry refused or failed a request.
    #[error(transparent)]
    Registry(#[from] OciError),
    /// The data budget or the transport refused.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// A manifest without a config descriptor.
    #[error("manifest {0} has no config")]
    NoConfig(String),
    /// A config over the JSON limits.
    #[error("config {digest} refused: {detail}")]
    ConfigRefused {
        /// The config's digest.
        digest: String,
        /// Which limit.
        detail: String,
    },
    /// A config that is not JSON.
    #[error("config {digest} is not JSON: {source}")]
    ConfigNotJson {
        /// The config's digest.
        digest: String,
        /// The parser's error.
        source: serde_json::Error,
    },
}

impl RegistryImageData {
    pub(super) fn new(transport: Arc<dyn Transport + Send + Sync>) -> RegistryImageData {
        RegistryImageData {
            transport,
            cache: Mutex::new(FastMap::default()),
        }
    }

    fn fetch(&self, image: &str) -> Result<Value, FetchError> {
        let parsed = reference::parse(image)?;
        let client = Client::new(&*self.transport);
        let top = client.manifest(&parsed, parsed.identifier())?;
        let manifest = client.platform_manifest(&parsed, &top, &Platform::default())?;
        let config_digest = manifest
            .json
            .pointer("/config/digest")
            .and_then(Value::as_str)
            .ok_or_else(|| FetchError::NoConfig(manifest.digest.clone()))?;
        let config_bytes = client.blob(&parsed, config_digest, MAX_CONFIG_BYTES)?;
        let values =
            crate::oci::json_shape::check(&config_bytes, &crate::oci::json_shape::MANIFEST)
                .map_err(|detail| FetchError::ConfigRefused {
                    digest: config_digest.to_string(),
                    detail,
                })?;
        client.charge_parsed(values)?;
        let config: Value = ivpol_refs::json::from_slice(&config_bytes).map_err(|source| {
            FetchError::ConfigNotJson {
                digest: config_digest.to_string(),
                source,
            }
        })?;
        Ok(json!({
            "image": image,
            "resolvedImage": format!("{}@{}", parsed.tagged_name(), top.digest),
            "registry": parsed.registry(),
            "repository": parsed.repository(),
            "identifier": parsed.identifier(),
            "tag": parsed.tag().unwrap_or_default(),
            "digest": top.digest,
            "imageIndex": if top.is_index() { top.json.clone() } else { Value::Null },
            "manifest": manifest.json,
            "config": config,
        }))
    }
}

impl ImageDataSource for RegistryImageData {
    fn image_data(&self, image: &str) -> Result<Value, ImageDataError> {
        if let Some(hit) = self.cache.lock().ok().and_then(|c| c.get(image).cloned()) {
            return hit;
        }
        let result = self.fetch(image).map_err(|e| ImageDataError {
            image: image.to_string(),
            source: Arc::new(e),
        });
        if let Ok(mut c) = self.cache.lock() {
            c.insert(image.to_string(), result.clone());
        }
        result
    }
}
