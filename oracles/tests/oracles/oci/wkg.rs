use super::*;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_wasm::{WasmClient, WasmConfig};

fn client(addr: &str) -> WasmClient {
    WasmClient::new(oci_client::Client::new(ClientConfig {
        protocol: ClientProtocol::HttpsExcept(vec![addr.to_string()]),
        ..ClientConfig::default()
    }))
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

#[test]
fn oci_wasm_pulls_what_ivpol_pushes() {
    let reg = Registry::start();
    push(&reg.addr, "ivpol/wkg", "v1");
    let reference: oci_client::Reference = format!("{}/ivpol/wkg:v1", reg.addr)
        .parse()
        .expect("reference");
    let c = client(&reg.addr);
    let image = block_on(c.pull(&reference, &RegistryAuth::Anonymous)).expect("oci-wasm pull");
    let wasm = std::fs::read(component_file()).expect("component");
    assert_eq!(image.layers[0].data.to_vec(), wasm, "the same bytes");
    let (manifest, config, digest) =
        block_on(c.pull_manifest_and_config(&reference, &RegistryAuth::Anonymous))
            .expect("oci-wasm reads the config");
    assert_eq!(digest, registry_digest(&reg.addr, "ivpol/wkg", "v1"));
    assert_eq!(manifest.layers[0].media_type, WASM_LAYER);
    assert_eq!(
        (config.architecture.as_str(), config.os.as_str()),
        ("wasm", "wasip2")
    );
    assert_eq!(config.layer_digests, vec![sha256(&wasm)]);
    let component = config.component.expect("a component config");
    assert!(
        component.exports.iter().any(|e| e == ENGINE),
        "{:?}",
        component.exports
    );
    assert!(component
        .imports
        .iter()
        .any(|i| i.starts_with("wasi:http/outgoing-handler@")));
}

#[test]
fn ivpol_pulls_and_serves_what_oci_wasm_pushes() {
    let reg = Registry::start();
    let file = component_file();
    let (config, layer) = block_on(WasmConfig::from_component(
        &file,
        Some("ivpol tests".into()),
    ))
    .expect("oci-wasm reads the component");
    let reference: oci_client::Reference = format!("{}/wkg/pushed:v1", reg.addr)
        .parse()
        .expect("reference");
    block_on(client(&reg.addr).push(&reference, &RegistryAuth::Anonymous, layer, config, None))
        .expect("oci-wasm push");
    let dir = tempfile::tempdir().expect("dir");
    let out = dir.path().join("c.wasm").display().to_string();
    let target = format!("oci://{}/wkg/pushed:v1", reg.addr);
    let printed = ivpol(&[
        "pull",
        "--insecure-registry",
        &reg.addr,
        &target,
        "-o",
        &out,
    ])
    .expect_ok("pull");
    assert_eq!(
        printed,
        format!(
            "{}/wkg/pushed:v1@{}",
            reg.addr,
            registry_digest(&reg.addr, "wkg/pushed", "v1")
        )
    );
    assert_eq!(
        std::fs::read(&out).expect("pulled"),
        std::fs::read(&file).expect("component")
    );
    assert_serves_verdicts(&serve(&target, &["--insecure-registry", &reg.addr]));
}
