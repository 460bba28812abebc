//! `deploy/` as a cluster gets it: each overlay rendered by `kubectl
//! kustomize` (kubectl 1.32, kustomize 5.5), parsed into objects.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The repository's `deploy/`.
pub fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// The objects `kubectl kustomize dir` renders.
pub fn render(dir: &Path) -> Vec<Value> {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("kubectl (1.32, with kustomize 5) renders deploy/ in the tests: {e}")
        });
    assert!(
        out.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| <Value as serde::Deserialize>::deserialize(d).expect("rendered YAML"))
        .filter(|v| !v.is_null())
        .collect()
}

/// What a production install runs: the cert-manager overlay with every
/// component (monitoring and the background scan), rendered once per test
/// process.
pub fn install() -> &'static [Value] {
    static INSTALL: OnceLock<Vec<Value>> = OnceLock::new();
    INSTALL.get_or_init(|| with_components(&["admission-reports", "monitoring", "scan"]))
}

/// The cert-manager overlay with `components` (names under
/// `deploy/components`).
pub fn with_components(components: &[&str]) -> Vec<Value> {
    let dir = tempfile::tempdir().expect("temp dir");
    // kustomize takes only relative paths, from the kustomization's own
    // directory, even to directories elsewhere.
    let up = "../".repeat(dir.path().components().count() - 1);
    let deploy = deploy_dir().canonicalize().expect("deploy/");
    let at = |p: &str| {
        format!(
            "{up}{}/{p}",
            deploy.display().to_string().trim_start_matches('/')
        )
    };
    let components: Vec<String> = components
        .iter()
        .map(|c| at(&format!("components/{c}")))
        .collect();
    let kustomization = format!(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [{}]\ncomponents: [{}]\n",
        at("overlays/cert-manager"),
        components.join(", "),
    );
    std::fs::write(dir.path().join("kustomization.yaml"), kustomization).expect("write");
    render(dir.path())
}

/// The self-signed overlay, rendered from a copy of `deploy/` in which its
/// `make-certs.sh` made the certificates; the copy stays for as long as
/// the returned directory.
pub fn self_signed() -> (Vec<Value>, tempfile::TempDir) {
    let copy = tempfile::tempdir().expect("temp dir");
    let status = Command::new("cp")
        .arg("-r")
        .arg(deploy_dir())
        .arg(copy.path())
        .status()
        .expect("cp");
    assert!(status.success());
    let overlay = copy.path().join("deploy/overlays/self-signed");
    for f in ["ca.crt", "ca.key", "ca.only.crt", "tls.crt", "tls.key"] {
        let _ = std::fs::remove_file(overlay.join(f));
    }
    let made = Command::new(overlay.join("make-certs.sh"))
        .output()
        .expect("make-certs.sh");
    assert!(
        made.status.success(),
        "make-certs.sh: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    (render(&overlay), copy)
}
