//! The component as an OCI artifact, end to end against the real
//! registry: `ivpol push`, `pull`, `inspect`, and `serve --component
//! oci://`, with every bad input refused clearly; and the component's own
//! cosign signature (`--component-key`, `--component-identity`), signed by
//! the fixture generator.

use ivpol_tests::faulty::{Answer, Faulty};
use ivpol_tests::fixtures::{sha256, Pusher, OCI_MANIFEST};
use ivpol_tests::oci::{
    assert_serves_verdicts, component_file, descriptor, ivpol, push, push_edited, registry_digest,
    registry_rule, serve, wasm_config, wasm_manifest, ENGINE, WASM_CONFIG, WASM_LAYER,
};
use ivpol_tests::precompile_cache_dir;
use ivpol_tests::registry::Registry;
use ivpol_tests::sign::{
    now, BundleOpts, Content, CtLog, Fulcio, Identity, KeyKind, KeyPair, Rekor, SignOpts, Signer,
    TrustedRoot, Window,
};
use ivpol_tests::token::{TokenServer, PASSWORD, USER};
use std::sync::atomic::Ordering;

/// `ivpol serve` that must refuse to start, with `message`.
fn serve_refused(component: &str, flags: &[&str], message: &str) {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("p.yaml"), registry_rule()).expect("policy");
    let cache = dir.path().join("cache");
    let policies = dir.path().display().to_string();
    let cache = cache.display().to_string();
    let mut args = vec![
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--policies",
        policies.as_str(),
    ];
    args.extend(["--cache-dir", cache.as_str(), "--component", component]);
    args.extend(flags);
    ivpol(&args).expect_err(&format!("serve --component {component}"), message);
}

#[test]
fn push_pull_round_trip_and_inspect() {
    let reg = Registry::start();
    let file = component_file();
    let wasm = std::fs::read(&file).expect("component");
    let printed = push(&reg.addr, "ivpol/policy", "v1");
    let digest = registry_digest(&reg.addr, "ivpol/policy", "v1");
    assert_eq!(printed, format!("{}/ivpol/policy:v1@{digest}", reg.addr));

    let dir = tempfile::tempdir().expect("dir");
    let out = dir.path().join("pulled.wasm");
    let out_s = out.display().to_string();
    let pulled = ivpol(&[
        "pull",
        "--insecure-registry",
        &reg.addr,
        &format!("{}/ivpol/policy:v1", reg.addr),
        "-o",
        &out_s,
    ]);
    assert_eq!(pulled.expect_ok("pull"), printed);
    assert!(
        pulled.stderr.contains("pulling layer sha256:"),
        "{}",
        pulled.stderr
    );
    assert_eq!(
        std::fs::read(&out).expect("pulled"),
        wasm,
        "the pulled bytes are the pushed ones"
    );
    // By digest too.
    let by_digest = ivpol(&[
        "pull",
        "--insecure-registry",
        &reg.addr,
        &format!("oci://{printed}"),
        "-o",
        &out_s,
    ]);
    assert_eq!(by_digest.expect_ok("pull by digest"), printed);

    // The layout, read raw from the registry.
    let manifest: serde_json::Value =
        ureq::get(&reg.url(&format!("/v2/ivpol/policy/manifests/{digest}")))
            .set("Accept", OCI_MANIFEST)
            .call()
            .expect("manifest")
            .into_json()
            .expect("json");
    assert_eq!(manifest["mediaType"], OCI_MANIFEST);
    assert_eq!(manifest["config"]["mediaType"], WASM_CONFIG);
    assert_eq!(manifest["layers"].as_array().map(Vec::len), Some(1));
    assert_eq!(manifest["layers"][0]["mediaType"], WASM_LAYER);
    assert_eq!(manifest["layers"][0]["digest"], sha256(&wasm));
    assert_eq!(
        manifest["layers"][0]["annotations"]["org.opencontainers.image.title"],
        "ivpol.wasm"
    );
    let config_digest = manifest["config"]["digest"].as_str().expect("digest");
    let config: serde_json::Value =
        ureq::get(&reg.url(&format!("/v2/ivpol/policy/blobs/{config_digest}")))
            .call()
            .expect("config")
            .into_json()
            .expect("json");
    assert_eq!(
        (config["architecture"].as_str(), config["os"].as_str()),
        (Some("wasm"), Some("wasip2"))
    );
    assert_eq!(config["layerDigests"], serde_json::json!([sha256(&wasm)]));
    assert!(
        config["created"].as_str().is_some_and(|c| c.ends_with('Z')),
        "{config}"
    );
    let exports = config["component"]["exports"].as_array().expect("exports");
    assert!(exports.iter().any(|e| e == ENGINE), "{config}");

    // inspect, from the file and from the registry, agree.
    let local = ivpol(&["inspect", &file.display().to_string()]).expect_ok("inspect file");
    let remote = ivpol(&[
        "inspect",
        "--insecure-registry",
        &reg.addr,
        &format!("oci://{}/ivpol/policy:v1", reg.addr),
    ])
    .expect_ok("inspect ref");
    for text in [&local, &remote] {
        assert!(
            text.contains("world: ivpol:admission/policy-module@0.1.0"),
            "{text}"
        );
        assert!(text.contains(&format!("  {ENGINE}\n")), "{text}");
        assert!(text.contains("  wasi:http/outgoing-handler@0.2."), "{text}");
        assert!(
            text.contains(&format!("digest: {}", sha256(&wasm))),
            "{text}"
        );
        assert!(
            text.contains(&format!("size: {} bytes", wasm.len())),
            "{text}"
        );
    }
    assert!(remote.contains(&format!("manifest: {digest}")), "{remote}");
    // A second push of the same bytes skips the blobs it already has.
    let again = ivpol(&[
        "push",
        "--insecure-registry",
        &reg.addr,
        &format!("{}/ivpol/policy:v2", reg.addr),
    ]);
    again.expect_ok("second push");
    assert!(
        again.stderr.contains("already in the registry"),
        "{}",
        again.stderr
    );
}

#[test]
fn serve_runs_a_component_from_the_registry_by_tag_and_by_digest() {
    let reg = Registry::start();
    let pinned = push(&reg.addr, "ivpol/serve", "v1");
    let by_tag = serve(
        &format!("oci://{}/ivpol/serve:v1", reg.addr),
        &["--insecure-registry", &reg.addr],
    );
    assert_serves_verdicts(&by_tag);
    assert!(
        by_tag.log().contains("component pulled"),
        "{}",
        by_tag.log()
    );
    let by_digest = serve(
        &format!("oci://{pinned}"),
        &["--insecure-registry", &reg.addr],
    );
    assert_serves_verdicts(&by_digest);
}

#[test]
fn a_component_pinned_by_digest_starts_from_the_cache_without_the_registry() {
    let reg = Registry::start();
    let pinned = push(&reg.addr, "ivpol/cached", "v1");
    let flags = ["--insecure-registry", reg.addr.as_str()];
    drop(serve(&format!("oci://{pinned}"), &flags));
    let addr = reg.addr.clone();
    drop(reg);
    let s = serve(&format!("oci://{pinned}"), &["--insecure-registry", &addr]);
    assert!(s.log().contains("using cached"), "{}", s.log());
    assert_serves_verdicts(&s);
    // A tag is always resolved: with the registry gone it is refused, not
    // served from the cache or replaced by the embedded component.
    serve_refused(
        &format!("oci://{addr}/ivpol/cached:v1"),
        &["--insecure-registry", &addr],
        "pulling the component",
    );
}

#[test]
fn unresolvable_and_broken_artifacts_are_refused() {
    let reg = Registry::start();
    let flags = ["--insecure-registry", reg.addr.as_str()];
    let component = std::fs::read(component_file()).expect("component");
    let p = Pusher {
        addr: &reg.addr,
        auth: None,
    };
    serve_refused(
        &format!("oci://{}/ivpol/none:v1", reg.addr),
        &flags,
        "not found in the registry",
    );
    // Kubewarden's older config media type.
    push_edited(&p, "ivpol/bad", "v1-config", &component, |m| {
        m["config"]["mediaType"] = "application/vnd.wasm.config.v1+json".into()
    });
    serve_refused(
        &format!("oci://{}/ivpol/bad:v1-config", reg.addr),
        &flags,
        "not application/vnd.wasm.config.v0+json",
    );
    push_edited(&p, "ivpol/bad", "two-layers", &component, |m| {
        let l = m["layers"][0].clone();
        m["layers"] = serde_json::json!([l.clone(), l]);
    });
    serve_refused(
        &format!("oci://{}/ivpol/bad:two-layers", reg.addr),
        &flags,
        "2 layers",
    );
    push_edited(&p, "ivpol/bad", "image", &component, |m| {
        m["layers"][0]["mediaType"] = "application/vnd.oci.image.layer.v1.tar+gzip".into()
    });
    serve_refused(
        &format!("oci://{}/ivpol/bad:image", reg.addr),
        &flags,
        "layer has media type",
    );
    // The manifest names a blob the registry has, with another size.
    push_edited(&p, "ivpol/bad", "size", &component, |m| {
        m["layers"][0]["size"] = (component.len() - 1).into()
    });
    serve_refused(
        &format!("oci://{}/ivpol/bad:size", reg.addr),
        &flags,
        "does not match the manifest",
    );
    // A digest the repository does not have.
    let missing = format!("oci://{}/ivpol/bad@{}", reg.addr, sha256(b"nothing"));
    serve_refused(&missing, &flags, "not found in the registry");
    // Not a URL the network policy allows: loopback without --insecure-registry.
    serve_refused(
        &format!("oci://{}/ivpol/bad:v1-config", reg.addr),
        &[],
        "non-public address",
    );
}

/// Bytes that do not match their digests, and sizes past the limits: a
/// real registry will not serve those, so the misbehaving one does.
#[test]
fn digest_mismatches_and_oversized_artifacts_are_refused() {
    let faulty = Faulty::start();
    let wasm = std::fs::read(component_file()).expect("component");
    let config = wasm_config(&wasm);
    let manifest = wasm_manifest(
        descriptor(WASM_CONFIG, &config),
        vec![descriptor(WASM_LAYER, &wasm)],
    );
    let bytes = |body: Vec<u8>| Answer::Bytes {
        content_type: "application/octet-stream".into(),
        body,
    };
    let manifest_answer = |body: Vec<u8>| Answer::Bytes {
        content_type: OCI_MANIFEST.into(),
        body,
    };
    faulty
        .on(
            "/v2/x/manifests/tampered",
            manifest_answer(manifest.clone()),
        )
        .on(
            &format!("/v2/x/blobs/{}", sha256(&config)),
            bytes(config.clone()),
        );
    let mut tampered = wasm.clone();
    tampered[100] ^= 0xff;
    faulty.on(&format!("/v2/x/blobs/{}", sha256(&wasm)), bytes(tampered));
    let pull = |reference: &str| {
        let dir = tempfile::tempdir().expect("dir");
        let out = dir.path().join("c.wasm").display().to_string();
        let r = ivpol(&[
            "pull",
            "--insecure-registry",
            &faulty.addr,
            &format!("{}/x{reference}", faulty.addr),
            "-o",
            &out,
        ]);
        assert!(
            !std::path::Path::new(&out).exists(),
            "nothing is written on failure"
        );
        r
    };
    pull(":tampered").expect_err("tampered layer", "the layer does not match the manifest");
    // A manifest that is not the pinned one.
    let other = sha256(b"another manifest");
    faulty.on(
        &format!("/v2/x/manifests/{other}"),
        manifest_answer(manifest.clone()),
    );
    pull(&format!("@{other}")).expect_err("pinned mismatch", "not the pinned");
    // A layer declared past 64 MiB is refused before it is fetched.
    let mut huge: serde_json::Value = serde_json::from_slice(&manifest).expect("json");
    huge["layers"][0]["size"] = (65u64 << 20).into();
    faulty.on(
        "/v2/x/manifests/huge",
        manifest_answer(serde_json::to_vec(&huge).expect("json")),
    );
    pull(":huge").expect_err("huge layer", "more than the 67108864 ivpol accepts");
    // A manifest past 4 MiB.
    faulty.on(
        "/v2/x/manifests/fat",
        manifest_answer(vec![b' '; (4 << 20) + 1]),
    );
    pull(":fat").expect_err("fat manifest", "more than the 4194304 allowed");
    // A registry error is reported with its status.
    faulty.on("/v2/x/manifests/down", Answer::Status(500, "{}".into()));
    pull(":down").expect_err("500", "500");
}

#[test]
fn bad_command_lines_get_clear_errors() {
    let reg = Registry::start();
    let dir = tempfile::tempdir().expect("dir");
    let target = format!("{}/ivpol/x:v1", reg.addr);
    let not_wasm = dir.path().join("policy.yaml");
    std::fs::write(&not_wasm, "kind: ImageValidatingPolicy\n").expect("write");
    let module = dir.path().join("module.wasm");
    std::fs::write(&module, b"\0asm\x01\0\0\0").expect("write");
    let push_file = |f: &std::path::Path| {
        ivpol(&[
            "push",
            "--insecure-registry",
            &reg.addr,
            "--component",
            &f.display().to_string(),
            &target,
        ])
    };
    push_file(&not_wasm).expect_err("push yaml", "not a WebAssembly component");
    push_file(&module).expect_err("push module", "core WebAssembly module, not a component");
    push_file(&dir.path().join("missing.wasm")).expect_err("push missing", "reading");
    ivpol(&[
        "push",
        "--insecure-registry",
        &reg.addr,
        &format!("{target}@{}", sha256(b"x")),
    ])
    .expect_err("push to a digest", "push to a tag");
    ivpol(&["pull", "--insecure-registry", &reg.addr, &target])
        .expect_err("pull without -o", "--output");
    for bad in [
        "oci://",
        "Registry/UPPER",
        "127.0.0.1:5000/a/b@sha256:12",
        "https://ghcr.io/a",
    ] {
        let out = dir.path().join("o.wasm").display().to_string();
        ivpol(&["pull", bad, "-o", &out]).expect_err(bad, "not");
    }
    let out = dir.path().join("o.wasm").display().to_string();
    ivpol(&[
        "pull",
        "--insecure-registry",
        &reg.addr,
        &format!("{}/ivpol/none:v1", reg.addr),
        "-o",
        &out,
    ])
    .expect_err("404", "not found in the registry");
    ivpol(&["inspect", &not_wasm.display().to_string()])
        .expect_err("inspect yaml", "not a WebAssembly component");
    ivpol(&["inspect", "no/such/file.wasm"])
        .expect_err("inspect missing", "reading no/such/file.wasm");
}

/// A docker config.json for `user:password` at `addr`, in `dir`.
fn docker_config(dir: &std::path::Path, addr: &str, user: &str, password: &str) -> String {
    let path = dir.join("config.json");
    let body = serde_json::json!({"auths": {addr: {"username": user, "password": password}}});
    std::fs::write(&path, body.to_string()).expect("config");
    path.display().to_string()
}

/// Push needs a token with push scope: anonymous tokens only pull `public/`.
#[test]
fn push_and_pull_through_token_auth() {
    let tokens = TokenServer::start();
    let reg = tokens.registry();
    let dir = tempfile::tempdir().expect("dir");
    let target = format!("oci://{}/private/ivpol:v1", reg.addr);
    let net = [
        "--insecure-registry",
        reg.addr.as_str(),
        "--insecure-registry",
        tokens.addr.as_str(),
    ];
    let mut args = vec!["push"];
    args.extend(net);
    args.push(&target);
    ivpol(&args).expect_err("anonymous push", "401");
    let config = docker_config(dir.path(), &reg.addr, USER, PASSWORD);
    let mut args = vec!["push", "--registry-config", config.as_str()];
    args.extend(net);
    args.push(&target);
    let pushed = ivpol(&args);
    let printed = pushed.expect_ok("push with credentials");
    assert!(!pushed.stderr.contains(PASSWORD) && !pushed.stdout.contains("eyJ"));
    assert!(tokens.authenticated.load(Ordering::SeqCst) >= 1);
    let out = dir.path().join("c.wasm").display().to_string();
    let pull = format!("oci://{printed}");
    let mut args = vec![
        "pull",
        "--registry-config",
        config.as_str(),
        "-o",
        out.as_str(),
    ];
    args.extend(net);
    args.push(&pull);
    assert_eq!(ivpol(&args).expect_ok("pull"), printed);
    assert_eq!(
        std::fs::read(&out).expect("pulled"),
        std::fs::read(component_file()).expect("component")
    );
}

/// Basic auth over TLS, with the registry's CA from --registry-ca.
#[test]
fn push_and_pull_through_basic_auth_over_tls() {
    let dir = tempfile::tempdir().expect("dir");
    let (_plain, reg, ca) = Registry::start_basic_auth(dir.path(), "bob", "basic-pw");
    let ca = ca.display().to_string();
    let config = docker_config(dir.path(), &reg.addr, "bob", "basic-pw");
    let target = format!("{}/ivpol/basic:v1", reg.addr);
    let tls = [
        "--allow-registry",
        reg.addr.as_str(),
        "--registry-ca",
        ca.as_str(),
    ];
    let mut args = vec!["push", "--registry-config", config.as_str()];
    args.extend(tls);
    args.push(&target);
    let printed = ivpol(&args).expect_ok("push");
    let out = dir.path().join("c.wasm").display().to_string();
    let mut args = vec![
        "pull",
        "--registry-config",
        config.as_str(),
        "-o",
        out.as_str(),
    ];
    args.extend(tls);
    args.push(&printed);
    assert_eq!(ivpol(&args).expect_ok("pull"), printed);
    // Without the CA the registry's certificate is not trusted.
    ivpol(&[
        "push",
        "--registry-config",
        &config,
        "--allow-registry",
        &reg.addr,
        &target,
    ])
    .expect_err("push without the CA", "failed");
}

/// The component's own signature: pulled components signed by the
/// fixture generator, as `cosign sign` (v2 `.sig` images, v3 bundle
/// referrers) would, checked by `--component-key` / `--component-identity`.
mod signed;
