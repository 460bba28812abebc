//! The registry behind `getImageData` / `image.GetMetadata`: Kyverno's
//! ImageData fields, fetched through the OCI client, once per image per request.

use crate::cel::image_data::ImageDataSource;
use crate::images::reference;
use crate::oci::{Client, Platform, Transport, MAX_CONFIG_BYTES};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub(super) struct RegistryImageData {
    transport: Arc<dyn Transport + Send + Sync>,
    cache: Mutex<HashMap<String, Result<Value, String>>>,
}

impl RegistryImageData {
    pub(super) fn new(transport: Arc<dyn Transport + Send + Sync>) -> RegistryImageData {
        RegistryImageData {
            transport,
            cache: Mutex::new(HashMap::new()),
        }
    }

    fn fetch(&self, image: &str) -> Result<Value, String> {
        let parsed = reference::parse(image).map_err(|e| e.to_string())?;
        let client = Client::new(&*self.transport);
        let top = client
            .manifest(&parsed, parsed.identifier())
            .map_err(|e| e.to_string())?;
        let manifest = client
            .platform_manifest(&parsed, &top, &Platform::default())
            .map_err(|e| e.to_string())?;
        let config_digest = manifest
            .json
            .pointer("/config/digest")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("manifest {} has no config", manifest.digest))?;
        let config_bytes = client
            .blob(&parsed, config_digest, MAX_CONFIG_BYTES)
            .map_err(|e| e.to_string())?;
        let values =
            crate::oci::json_shape::check(&config_bytes, &crate::oci::json_shape::MANIFEST)
                .map_err(|e| format!("config {config_digest} refused: {e}"))?;
        client.charge_parsed(values).map_err(|e| e.to_string())?;
        let config: Value = serde_json::from_slice(&config_bytes)
            .map_err(|e| format!("config {config_digest} is not JSON: {e}"))?;
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
    fn image_data(&self, image: &str) -> Result<Value, String> {
        if let Some(hit) = self.cache.lock().ok().and_then(|c| c.get(image).cloned()) {
            return hit;
        }
        let result = self
            .fetch(image)
            .map_err(|e| format!("failed to get image data for {image}: {e}"));
        if let Ok(mut c) = self.cache.lock() {
            c.insert(image.to_string(), result.clone());
        }
        result
    }
}
