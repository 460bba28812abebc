//! The repository's own `policies/` (what `cargo run --release -- serve`
//! serves) load cleanly and give the verdicts their comments promise.

use ivpol_tests::review::{create_pod, pod, review};
use ivpol_tests::Server;
use serde_json::json;
use std::path::Path;

fn sample_policies() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("policies/ exists") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        out.push((name, std::fs::read_to_string(&path).expect("readable")));
    }
    out
}

#[test]
fn sample_policies_load_and_decide() {
    let files = sample_policies();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(n, c)| (n.as_str(), c.as_str()))
        .collect();
    let s = Server::start(&refs);
    let (_, ready) = s.get("/health/readiness");
    assert_eq!(ready["rejected"], 0, "{}", s.log());
    assert_eq!(ready["policies"], files.len());

    let r = s.review(
        "/ivpol/validate/allowed-registries",
        &create_pod(&["nginx:1.27"]),
    );
    assert_eq!(
        r["status"]["message"],
        "Policy allowed-registries failed: images must come from ghcr.io or registry.k8s.io: nginx:1.27"
    );
    assert_eq!(
        s.review(
            "/ivpol/validate/allowed-registries",
            &create_pod(&["registry.k8s.io/pause:3.9"])
        )["allowed"],
        true
    );
    // A bad initContainer is named too (the message listed containers only).
    let mut with_init = pod("p", &["ghcr.io/a/b:1"]);
    with_init["spec"]["initContainers"] = json!([{"name": "init", "image": "quay.io/x:1"}]);
    let r = s.review(
        "/ivpol/validate/allowed-registries",
        &review("CREATE", "default", &with_init),
    );
    assert_eq!(
        r["status"]["message"],
        "Policy allowed-registries failed: images must come from ghcr.io or registry.k8s.io: quay.io/x:1"
    );

    let r = s.review(
        "/ivpol/validate/no-latest-warn",
        &create_pod(&["ghcr.io/a/b:latest"]),
    );
    assert_eq!(
        (r["allowed"].clone(), r["warnings"].clone()),
        (
            json!(true),
            json!(["Policy no-latest-warn failed: images should not use the latest tag"])
        )
    );

    let r = s.review(
        "/ivpol/validate/require-digest",
        &create_pod(&["registry.example.com/app:1.0"]),
    );
    assert_eq!(
        r["status"]["message"],
        "Policy require-digest failed: image registry.example.com/app:1.0 does not have a digest"
    );
    let pinned = format!("registry.example.com/app:1.0@sha256:{}", "d".repeat(64));
    assert_eq!(
        s.review("/ivpol/validate/require-digest", &create_pod(&[&pinned]))["allowed"],
        true
    );

    let r = s.review(
        "/ivpol/validate/require-digest-warn",
        &create_pod(&["ghcr.io/a/b:1"]),
    );
    assert_eq!(r["allowed"], true);
    assert_eq!(
        r["warnings"],
        json!(["Policy require-digest-warn failed: image ghcr.io/a/b:1 does not have a digest"])
    );
}
