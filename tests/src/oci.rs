//! Helpers for the OCI packaging tests: running `ivpol push|pull|inspect`,
//! the component file the host embeds, hand-made Wasm artifacts (good
//! and broken) pushed straight to a registry, and `ivpol serve
//! --component oci://` with a rule that needs no registry.

use crate::fixtures::{sha256, Pusher, OCI_MANIFEST};
use crate::policy::pod_policy;
use crate::review::create_pod;
use crate::{Options, Server};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
pub const WASM_LAYER: &str = "application/wasm";

/// A finished `ivpol` run.
pub struct Run {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `ivpol ARGS` to completion.
pub fn ivpol(args: &[&str]) -> Run {
    let out: Output = Command::new(crate::ivpol_bin())
        .args(args)
        .env("IVPOL_LOG", "info")
        .env("NO_COLOR", "1")
        .output()
        .expect("run ivpol");
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

impl Run {
    /// Asserts success and returns stdout, trimmed.
    pub fn expect_ok(&self, what: &str) -> String {
        assert!(self.ok, "{what} failed:\n{}", self.stderr);
        self.stdout.trim().to_string()
    }

    /// Asserts failure with `message` on stderr.
    pub fn expect_err(&self, what: &str, message: &str) {
        assert!(
            !self.ok,
            "{what} succeeded:\n{}{}",
            self.stdout, self.stderr
        );
        assert!(
            self.stderr.contains(message),
            "{what}: expected {message:?} in:\n{}",
            self.stderr
        );
    }
}

/// The component build.rs embeds (`$IVPOL_GUEST_WASM`, else the guest build
/// as runtime/build.rs leaves it for this profile's `ivpol`, optimised when
/// `wasm-opt` ran).
pub fn component_file() -> PathBuf {
    // Cargo's `PROFILE` for a build script: `debug` unless optimised.
    let profile = match cfg!(debug_assertions) {
        true => "debug",
        false => "release",
    };
    let path = std::env::var_os("IVPOL_GUEST_WASM")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join(format!("../target/guest/ivpol-{profile}.wasm"))
        });
    assert!(
        path.exists(),
        "{} is missing: build ivpol-host first",
        path.display()
    );
    path
}

/// The registry's own digest for `repo:reference` (`Docker-Content-Digest`).
pub fn registry_digest(addr: &str, repo: &str, reference: &str) -> String {
    ureq::get(&format!("http://{addr}/v2/{repo}/manifests/{reference}"))
        .set("Accept", OCI_MANIFEST)
        .call()
        .unwrap_or_else(|e| panic!("GET manifest {repo}:{reference}: {e}"))
        .header("Docker-Content-Digest")
        .expect("Docker-Content-Digest")
        .to_string()
}

/// A Wasm artifact manifest with these config and layer descriptors.
pub fn wasm_manifest(config: Value, layers: Vec<Value>) -> Vec<u8> {
    let manifest = json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config, "layers": layers,
    });
    serde_json::to_vec(&manifest).expect("json")
}

pub fn descriptor(media_type: &str, bytes: &[u8]) -> Value {
    json!({"mediaType": media_type, "digest": sha256(bytes), "size": bytes.len()})
}

/// A v0 config naming `layer` (the interface lists do not matter to a puller).
pub fn wasm_config(layer: &[u8]) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "created": "2026-01-01T00:00:00Z", "architecture": "wasm", "os": "wasip2",
        "layerDigests": [sha256(layer)],
        "component": {"exports": [], "imports": []},
    }))
    .expect("json")
}

/// Pushes `component` as a Wasm artifact with `edit` applied to its
/// manifest JSON, under `repo:tag`; returns the manifest digest.
pub fn push_edited(
    p: &Pusher,
    repo: &str,
    tag: &str,
    component: &[u8],
    edit: impl Fn(&mut Value),
) -> String {
    let config = wasm_config(component);
    p.blob(repo, &config);
    p.blob(repo, component);
    let mut manifest: Value = serde_json::from_slice(&wasm_manifest(
        descriptor(WASM_CONFIG, &config),
        vec![descriptor(WASM_LAYER, component)],
    ))
    .expect("json");
    edit(&mut manifest);
    let body = serde_json::to_vec(&manifest).expect("json");
    p.manifest(repo, tag, OCI_MANIFEST, &body)
}

/// The interface the component exports.
pub const ENGINE: &str = "ivpol:admission/engine@0.1.0";

/// Pushes the embedded component to `addr/repo:tag`; returns what push printed.
pub fn push(addr: &str, repo: &str, tag: &str) -> String {
    let target = format!("oci://{addr}/{repo}:{tag}");
    ivpol(&["push", "--insecure-registry", addr, &target]).expect_ok("push")
}

/// Only images from ghcr.io: a verdict that needs no registry.
pub fn registry_rule() -> String {
    pod_policy(
        "ghcr-only",
        "\"CREATE\"",
        r#"  attestors: []
  validationConfigurations:
    mutateDigest: false
    verifyDigest: false
    required: false
  validations:
    - expression: "images.containers.all(i, parseImageReference(i).registry() == 'ghcr.io')"
      message: images must come from ghcr.io
"#,
    )
}

/// `ivpol serve --component oci://REF` with the registry rule.
pub fn serve(component: &str, flags: &[&str]) -> Server {
    let mut extra_args = vec!["--component".to_string(), component.to_string()];
    extra_args.extend(flags.iter().map(|s| s.to_string()));
    Server::start_with(
        &[("p.yaml", &registry_rule())],
        Options {
            extra_args,
            ..Options::default()
        },
    )
}

/// Asserts that `s` serves the registry rule's verdicts: a pod from
/// docker.io refused, one from ghcr.io admitted.
pub fn assert_serves_verdicts(s: &Server) {
    let r = s.review(
        "/ivpol/validate/ghcr-only",
        &create_pod(&["docker.io/library/nginx:1"]),
    );
    assert_eq!(r["allowed"], false, "{r}\n{}", s.log());
    assert_eq!(
        r["status"]["message"],
        "Policy ghcr-only failed: images must come from ghcr.io"
    );
    let r = s.review("/ivpol/validate/ghcr-only", &create_pod(&["ghcr.io/a/b:1"]));
    assert_eq!(r["allowed"], true, "{r}");
}
