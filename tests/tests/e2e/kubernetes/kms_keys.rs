//! `cosign.key.kms: k8s://NAMESPACE/SECRET`: the Secret's `cosign.pub`,
//! read through the API server as cosign stores a key pair; a namespaced
//! policy reads its own namespace's Secrets only.

use super::{cluster, serve, yaml, SOON};
use base64::Engine as _;
use ivpol_tests::policy::{kms_attestor, verifying_policy};
use ivpol_tests::review::{pod, review};
use ivpol_tests::sign::{KeyKind, SignOpts, Signer};
use ivpol_tests::verifying::Setup;
use serde_json::{json, Value};

const VERIFIED: &str =
    "images.containers.map(i, verifyImageSignatures(i, [attestors.kms])).all(n, n > 0)";

/// A policy whose one attestor's key is `kms`, in `namespace` when given
/// (a NamespacedImageValidatingPolicy).
fn policy(name: &str, kms: &str, namespace: Option<&str>) -> Value {
    let attestor = kms_attestor("kms", kms);
    let mut p = yaml(&verifying_policy(
        name,
        &attestor,
        "",
        VERIFIED,
        "not signed",
    ));
    if let Some(ns) = namespace {
        p["kind"] = json!("NamespacedImageValidatingPolicy");
        p["metadata"]["namespace"] = json!(ns);
    }
    p
}

/// A Secret holding `pem` as cosign's `cosign.pub`.
fn key_secret(namespace: &str, name: &str, pem: &str) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD;
    json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"cosign.pub": b64.encode(pem), "cosign.key": b64.encode("(not read)")}})
}

#[test]
fn k8s_keys_are_read_from_the_secret_and_tenants_read_their_own_only() {
    let setup = Setup::new();
    let signer = Signer::keyed(KeyKind::P256);
    let (signed, digest) = setup.image("k8s/signed");
    signer.sign_image(&setup.pusher(), "k8s/signed", &digest, &SignOpts::default());
    let api = cluster();
    api.apply(key_secret("team", "cosign", &signer.public_pem()))
        .expect("secret");
    api.apply(policy("by-secret", "k8s://team/cosign", None))
        .expect("policy");
    api.apply(policy("missing", "k8s://team/nobody", None))
        .expect("policy");
    api.apply(policy("own", "k8s://team/cosign", Some("team")))
        .expect("nivp");
    api.apply(policy("elsewhere", "k8s://ivpol/cosign", Some("team")))
        .expect("nivp");
    let (s, _kube) = serve(&api, &["--insecure-registry", &setup.reg.addr]);
    let mut object = pod("p", &[&signed]);
    object["metadata"]["namespace"] = json!("team");
    let create = review("CREATE", "team", &object);
    let answer = |path: &str| s.review(path, &create);
    assert!(
        s.eventually(SOON, |_| answer("/ivpol/validate/by-secret")["allowed"]
            == true),
        "{}",
        answer("/ivpol/validate/by-secret")
    );
    let r = answer("/ivpol/validate/missing");
    let message = r["status"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("k8s://team/nobody"), "{r}");
    assert!(message.contains("not found"), "{r}");
    // The tenant's policy that names its own namespace verifies; the one
    // naming ivpol's namespace never loaded, so it denies with why.
    let r = answer("/nivpol/validate/own");
    assert_eq!(r["allowed"], true, "{r}");
    let r = answer("/nivpol/validate/elsewhere");
    assert_eq!(r["allowed"], false, "{r}");
    let message = r["status"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("from its own namespace (team) only"),
        "{r}"
    );
    // No Secret of ivpol's namespace was read for the tenant.
    let reads: Vec<String> = api
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/secrets"))
        .map(|r| r.path)
        .collect();
    assert!(
        reads
            .iter()
            .all(|p| p.starts_with("/api/v1/namespaces/team/secrets/")),
        "{reads:?}"
    );
}
