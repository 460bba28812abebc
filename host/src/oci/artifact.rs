//! The CNCF TAG Runtime Wasm OCI artifact layout: an OCI image manifest
//! with a `application/vnd.wasm.config.v0+json` config and exactly one
//! `application/wasm` layer, the component itself.
//!
//! The config names the component's imports and exports as fully
//! qualified interface names, read from the component binary (so they can
//! never disagree with what the host will link).

use anyhow::{bail, Context, Result};
use k8s_openapi::jiff::Timestamp;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

pub(crate) const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
pub(crate) const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
pub(crate) const LAYER_MEDIA_TYPE: &str = "application/wasm";
/// Layer media types of older Wasm artifacts, accepted on pull for interop.
const LEGACY_LAYER_MEDIA_TYPES: [&str; 2] = [
    "application/vnd.wasm.content.layer.v1+wasm",
    "application/vnd.module.wasm.content.layer.v1+wasm",
];
pub(crate) const TITLE_ANNOTATION: &str = "org.opencontainers.image.title";

/// The largest manifest or config read from a registry.
pub(crate) const MAX_MANIFEST_BYTES: u64 = 4 << 20;
/// The largest component read from a registry.
pub(crate) const MAX_LAYER_BYTES: u64 = 64 << 20;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Descriptor {
    pub media_type: String,
    pub digest: String,
    pub size: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Manifest {
    pub schema_version: u32,
    #[serde(default)]
    pub media_type: Option<String>,
    pub config: Descriptor,
    pub layers: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// What a component imports and exports (interfaces, fully qualified).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct ComponentInfo {
    pub exports: Vec<String>,
    pub imports: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WasmConfig {
    pub created: String,
    pub architecture: String,
    pub os: String,
    pub layer_digests: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<ComponentInfo>,
}

/// The world ivpol's host links, recognised by its exports.
pub(crate) const IVPOL_WORLD: &str = "ivpol:admission/policy-module@0.1.0";
const IVPOL_ENGINE: &str = "ivpol:admission/engine@0.1.0";
/// The webhook component's world (`webhook/`): any wasi:http host runs it,
/// ivpol's host does not.
pub(crate) const WEBHOOK_WORLD: &str = "ivpol:admission/webhook@0.1.0";
const INCOMING_HANDLER: &str = "wasi:http/incoming-handler@0.2.";
/// The manifest annotation naming the world of the component a push
/// published, so that a registry listing tells the two components apart.
pub(crate) const WORLD_ANNOTATION: &str = "dev.ivpol.world";

/// The world a component implements, when it is one of ivpol's: the policy
/// module by its engine export, the webhook component by exporting only
/// `wasi:http/incoming-handler` and importing only WASI.
pub(crate) fn world(info: &ComponentInfo) -> Option<&'static str> {
    if info.exports.iter().any(|e| e == IVPOL_ENGINE) {
        return Some(IVPOL_WORLD);
    }
    let handler = matches!(info.exports.as_slice(), [e] if e.starts_with(INCOMING_HANDLER));
    let wasi_only = info.imports.iter().all(|i| i.starts_with("wasi:"));
    (handler && wasi_only).then_some(WEBHOOK_WORLD)
}

pub(crate) fn sha256_digest(bytes: &[u8]) -> String {
    format!(
        "sha256:{}",
        ivpol_refs::encoding::hex(&Sha256::digest(bytes))
    )
}

/// Validates `bytes` as a WebAssembly component and lists its top-level
/// interface imports and exports.
pub(crate) fn inspect_component(bytes: &[u8]) -> Result<ComponentInfo> {
    if !wasmparser::Parser::is_component(bytes) {
        if wasmparser::Parser::is_core_wasm(bytes) {
            bail!("this is a core WebAssembly module, not a component (wrap it with `wasm-tools component new`)");
        }
        bail!("this is not a WebAssembly component (no component header)");
    }
    wasmparser::Validator::new()
        .validate_all(bytes)
        .context("the component does not validate")?;
    interfaces(bytes)
}

/// The top-level interface imports and exports of a component, read
/// without validating it (wasmtime validates what it compiles; this is for
/// telling ivpol's two worlds apart at start-up, where validating twice
/// would cost a good part of a second).
pub(crate) fn interfaces(bytes: &[u8]) -> Result<ComponentInfo> {
    let mut info = ComponentInfo::default();
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        use wasmparser::Payload;
        match payload.context("reading the component")? {
            Payload::Version { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            // Only the outermost component's imports and exports are its interface.
            Payload::ComponentImportSection(reader) if depth == 1 => {
                for import in reader {
                    let import = import?;
                    if matches!(import.ty, wasmparser::ComponentTypeRef::Instance(_)) {
                        info.imports.push(import.name.name.to_string());
                    }
                }
            }
            Payload::ComponentExportSection(reader) if depth == 1 => {
                for export in reader {
                    let export = export?;
                    if export.kind == wasmparser::ComponentExternalKind::Instance {
                        info.exports.push(export.name.name.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    Ok(info)
}

/// The three pieces of an artifact, serialized as they are pushed.
pub(crate) struct Artifact {
    pub config: Vec<u8>,
    pub layer: Vec<u8>,
    pub manifest: Vec<u8>,
}

impl Artifact {
    /// Lays out `component` (validated first); `title` names the layer,
    /// `created` is the RFC 3339 creation time.
    pub(crate) fn new(component: Vec<u8>, title: &str, created: String) -> Result<Artifact> {
        let info = inspect_component(&component)?;
        let annotations = world_annotation(&info);
        let layer_digest = sha256_digest(&component);
        let config = WasmConfig {
            created,
            architecture: "wasm".into(),
            os: "wasip2".into(),
            layer_digests: vec![layer_digest.clone()],
            component: Some(info),
        };
        let config = serde_json::to_vec(&config)?;
        let manifest = Manifest {
            schema_version: 2,
            media_type: Some(MANIFEST_MEDIA_TYPE.into()),
            config: descriptor(CONFIG_MEDIA_TYPE, &config, BTreeMap::new()),
            layers: vec![descriptor(
                LAYER_MEDIA_TYPE,
                &component,
                BTreeMap::from([(TITLE_ANNOTATION.to_string(), title.to_string())]),
            )],
            annotations,
        };
        Ok(Artifact {
            manifest: serde_json::to_vec(&manifest)?,
            config,
            layer: component,
        })
    }
}

/// [`WORLD_ANNOTATION`] with the component's world, when it is one of ivpol's.
fn world_annotation(info: &ComponentInfo) -> BTreeMap<String, String> {
    world(info)
        .map(|w| (WORLD_ANNOTATION.to_string(), w.to_string()))
        .into_iter()
        .collect()
}

fn descriptor(media_type: &str, bytes: &[u8], annotations: BTreeMap<String, String>) -> Descriptor {
    Descriptor {
        media_type: media_type.into(),
        digest: sha256_digest(bytes),
        size: bytes.len() as u64,
        annotations,
    }
}

/// Parses a pulled manifest and returns its one Wasm layer, refusing
/// anything that is not this layout.
pub(crate) fn wasm_layer(manifest_bytes: &[u8]) -> Result<(Manifest, Descriptor)> {
    let manifest: Manifest = serde_json::from_slice(manifest_bytes)
        .context("the manifest is not an OCI image manifest")?;
    if let Some(mt) = manifest
        .media_type
        .as_deref()
        .filter(|m| *m != MANIFEST_MEDIA_TYPE)
    {
        bail!("the manifest has media type {mt}, not {MANIFEST_MEDIA_TYPE}");
    }
    if manifest.config.media_type != CONFIG_MEDIA_TYPE {
        bail!(
            "the config has media type {}, not {CONFIG_MEDIA_TYPE}: not a Wasm component artifact",
            manifest.config.media_type
        );
    }
    let [layer] = manifest.layers.as_slice() else {
        bail!(
            "the artifact has {} layers; a Wasm artifact has exactly one",
            manifest.layers.len()
        );
    };
    let mt = layer.media_type.as_str();
    if mt != LAYER_MEDIA_TYPE && !LEGACY_LAYER_MEDIA_TYPES.contains(&mt) {
        bail!("the layer has media type {mt}, not {LAYER_MEDIA_TYPE}");
    }
    crate::oci::reference::parse_digest(&layer.digest, &layer.digest)?;
    crate::oci::reference::parse_digest(&manifest.config.digest, &manifest.config.digest)?;
    if layer.size > MAX_LAYER_BYTES {
        bail!(
            "the layer is {} bytes, more than the {MAX_LAYER_BYTES} ivpol accepts",
            layer.size
        );
    }
    if manifest.config.size > MAX_MANIFEST_BYTES {
        bail!(
            "the config is {} bytes, more than the {MAX_MANIFEST_BYTES} ivpol accepts",
            manifest.config.size
        );
    }
    let layer = layer.clone();
    Ok((manifest, layer))
}

/// Parses a pulled config and checks that it describes `layer`.
pub(crate) fn check_config(config_bytes: &[u8], layer: &Descriptor) -> Result<WasmConfig> {
    let config: WasmConfig =
        serde_json::from_slice(config_bytes).context("the config is not a Wasm config (v0)")?;
    if config.architecture != "wasm" {
        bail!(
            "the config's architecture is {:?}, not \"wasm\"",
            config.architecture
        );
    }
    if !config.layer_digests.is_empty() && config.layer_digests != [layer.digest.clone()] {
        bail!(
            "the config's layerDigests {:?} do not name the layer {}",
            config.layer_digests,
            layer.digest
        );
    }
    Ok(config)
}

/// Now in RFC 3339 (UTC, seconds), or `SOURCE_DATE_EPOCH` when set, so
/// that a rebuild can reproduce the same config and manifest digests.
pub(crate) fn created_now() -> String {
    let pinned = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .and_then(|secs| i64::try_from(secs).ok())
        .and_then(|secs| Timestamp::from_second(secs).ok());
    rfc3339(pinned.unwrap_or_else(Timestamp::now))
}

/// `YYYY-MM-DDTHH:MM:SSZ`: RFC 3339 in UTC, whole seconds (jiff's own
/// formatter; a precision of 0 drops the fraction).
fn rfc3339(at: Timestamp) -> String {
    format!("{at:.0}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ivpol_runtime::EMBEDDED_COMPONENT;

    #[test]
    fn the_embedded_component_lists_its_interfaces() {
        let info = inspect_component(EMBEDDED_COMPONENT).expect("a component");
        assert!(info.exports.iter().any(|e| e == IVPOL_ENGINE), "{info:?}");
        assert!(
            info.imports
                .iter()
                .any(|i| i.starts_with("wasi:http/outgoing-handler@0.2.")),
            "{info:?}"
        );
        assert_eq!(world(&info), Some(IVPOL_WORLD));
    }

    #[test]
    fn the_webhook_world_is_told_by_its_one_export_and_wasi_imports() {
        let info = |exports: &[&str], imports: &[&str]| ComponentInfo {
            exports: exports.iter().map(|e| e.to_string()).collect(),
            imports: imports.iter().map(|i| i.to_string()).collect(),
        };
        let handler = "wasi:http/incoming-handler@0.2.12";
        let outgoing = "wasi:http/outgoing-handler@0.2.12";
        assert_eq!(world(&info(&[handler], &[outgoing])), Some(WEBHOOK_WORLD));
        let ivpol_import = "ivpol:admission/namespaces@0.1.0";
        assert_eq!(world(&info(&[handler], &[ivpol_import])), None);
        assert_eq!(world(&info(&[handler, "x:y/z"], &[outgoing])), None);
        assert_eq!(world(&info(&["wasi:cli/run@0.2.12"], &[])), None);
    }

    #[test]
    fn refuses_what_is_not_a_component() {
        let module = b"\0asm\x01\0\0\0";
        let err = inspect_component(module).unwrap_err().to_string();
        assert!(err.contains("core WebAssembly module"), "{err}");
        let err = inspect_component(b"#!/bin/sh\n").unwrap_err().to_string();
        assert!(err.contains("not a WebAssembly component"), "{err}");
        let mut truncated = EMBEDDED_COMPONENT[..EMBEDDED_COMPONENT.len() / 2].to_vec();
        truncated.extend_from_slice(b"junk");
        let e = inspect_component(&truncated)
            .expect_err("refused")
            .to_string();
        assert!(e.contains("the component does not validate"), "{e}");
    }

    #[test]
    fn lays_out_and_reads_back_an_artifact() {
        let a = Artifact::new(
            EMBEDDED_COMPONENT.to_vec(),
            "ivpol.wasm",
            rfc3339(Timestamp::UNIX_EPOCH),
        )
        .expect("layout");
        let (manifest, layer) = wasm_layer(&a.manifest).expect("our own layout");
        assert_eq!(manifest.media_type.as_deref(), Some(MANIFEST_MEDIA_TYPE));
        assert_eq!(layer.digest, sha256_digest(EMBEDDED_COMPONENT));
        assert_eq!(layer.annotations[TITLE_ANNOTATION], "ivpol.wasm");
        assert_eq!(manifest.annotations[WORLD_ANNOTATION], IVPOL_WORLD);
        assert_eq!(manifest.config.digest, sha256_digest(&a.config));
        let config = check_config(&a.config, &layer).expect("config");
        assert_eq!(
            (config.os.as_str(), config.created.as_str()),
            ("wasip2", "1970-01-01T00:00:00Z")
        );
        let raw: serde_json::Value = serde_json::from_slice(&a.config).expect("json");
        assert!(
            raw["component"]["exports"].is_array() && raw["layerDigests"].is_array(),
            "{raw}"
        );
    }

    #[test]
    fn refuses_other_layouts() {
        let a = Artifact::new(
            EMBEDDED_COMPONENT.to_vec(),
            "x.wasm",
            rfc3339(Timestamp::UNIX_EPOCH),
        )
        .expect("layout");
        let good: serde_json::Value = serde_json::from_slice(&a.manifest).expect("json");
        let edit = |f: &dyn Fn(&mut serde_json::Value)| {
            let mut m = good.clone();
            f(&mut m);
            wasm_layer(&serde_json::to_vec(&m).expect("json"))
                .map(|_| ())
                .unwrap_err()
                .to_string()
        };
        let e = edit(&|m| m["config"]["mediaType"] = "application/vnd.wasm.config.v1+json".into());
        assert!(e.contains("not application/vnd.wasm.config.v0+json"), "{e}");
        let e = edit(&|m| {
            let l = m["layers"][0].clone();
            m["layers"] = serde_json::json!([l.clone(), l]);
        });
        assert!(e.contains("2 layers"), "{e}");
        let e = edit(&|m| m["layers"] = serde_json::json!([]));
        assert!(e.contains("0 layers"), "{e}");
        let e = edit(&|m| {
            m["layers"][0]["mediaType"] = "application/vnd.oci.image.layer.v1.tar".into()
        });
        assert!(e.contains("layer has media type"), "{e}");
        let e = edit(&|m| m["layers"][0]["size"] = (MAX_LAYER_BYTES + 1).into());
        assert!(e.contains("more than"), "{e}");
        let e = edit(&|m| m["mediaType"] = "application/vnd.oci.image.index.v1+json".into());
        assert!(e.contains("media type"), "{e}");
        let e = wasm_layer(b"{not json").expect_err("refused").to_string();
        assert!(e.contains("is not an OCI image manifest"), "{e}");
        for legacy in LEGACY_LAYER_MEDIA_TYPES {
            let mut m = good.clone();
            m["layers"][0]["mediaType"] = legacy.into();
            assert!(
                wasm_layer(&serde_json::to_vec(&m).expect("json")).is_ok(),
                "{legacy}"
            );
        }
    }

    #[test]
    fn a_config_must_name_its_layer() {
        let a = Artifact::new(
            EMBEDDED_COMPONENT.to_vec(),
            "x.wasm",
            rfc3339(Timestamp::UNIX_EPOCH),
        )
        .expect("layout");
        let (_, mut layer) = wasm_layer(&a.manifest).expect("layout");
        layer.digest = sha256_digest(b"other");
        assert!(check_config(&a.config, &layer)
            .unwrap_err()
            .to_string()
            .contains("layerDigests"));
        let e = check_config(b"{}", &layer)
            .expect_err("refused")
            .to_string();
        assert!(e.contains("is not a Wasm config"), "{e}");
    }

    #[test]
    fn formats_rfc3339() {
        let at = |secs| rfc3339(Timestamp::from_second(secs).expect("in range"));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_767_225_599), "2025-12-31T23:59:59Z");
        // Now has nanoseconds; the fraction is dropped, not rounded in.
        let now = Timestamp::new(1_767_225_599, 999_999_999).expect("in range");
        assert_eq!(rfc3339(now), "2025-12-31T23:59:59Z");
    }
}
