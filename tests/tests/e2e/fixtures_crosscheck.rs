//! Cross-checks of the cosign/Sigstore fixture generator (`ivpol_tests::sign`)
//! with independent verifiers: every fixture is pushed to a real registry,
//! read back over the distribution API, and handed to openssl,
//! sigstore-python 4.5.1 (Notary envelopes: jwcrypto and pycose, in the same
//! venv) or sigstore-js. Tampered fixtures must be rejected by the same
//! oracles, so these checks can fail. The sigstore-rust cross-check
//! (`sigstore-verify`, linked in) lives in the oracles' own workspace,
//! `oracles/`, so that its RustCrypto generation stays out of this lockfile.
//!
//! The external oracles come from `cargo xtask test`, which sets
//! `IVPOL_OPENSSL`, `IVPOL_SIGSTORE_PYTHON`, `IVPOL_NODE` and
//! `IVPOL_SIGSTORE_JS`; without them these tests fail (never skip).

use ivpol_tests::fixtures::{sha256, Pusher, OCI_MANIFEST};
use ivpol_tests::registry::Registry;
use ivpol_tests::sign::cosign::pae;
use ivpol_tests::sign::oci::{read_bundles, referrer_manifests};
use ivpol_tests::sign::{
    attach_referrer, b64, notary, now, oci, rfc3339, unb64, AttOpts, BundleOpts, Content, CtLog,
    Format, Fulcio, Identity, KeyKind, KeyPair, LeafSpec, NotaryAlg, NotaryCa, NotaryLeaf,
    NotaryOpts, NotarySigner, NotaryTamper, Rekor, SigHash, SignOpts, Signer, Tamper, TrustedRoot,
    Tsa, Window,
};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

fn tool(var: &str) -> PathBuf {
    match std::env::var_os(var) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!(
            "{var} is not set: run the fixture cross-checks with `cargo xtask test` \
             (it installs openssl and sigstore-python 4.5.1 and sets {var})"
        ),
    }
}

fn openssl_bin() -> PathBuf {
    tool("IVPOL_OPENSSL")
}

fn sigstore_python() -> PathBuf {
    tool("IVPOL_SIGSTORE_PYTHON")
}

fn oracle(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("oracles")
        .join(name)
}

/// Runs a command; (success, stdout + stderr).
fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn openssl(args: &[&str]) -> (bool, String) {
    run(Command::new(openssl_bin()).args(args))
}

/// Writes a file with a unique name under `dir`.
fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let p = dir.join(format!("{}-{name}", N.fetch_add(1, Ordering::Relaxed)));
    std::fs::write(&p, bytes).expect("write temp file");
    p.to_str().expect("utf8 path").to_string()
}

/// Verifies `sig` over `msg` with openssl, as `kind` signs.
fn openssl_verify(
    dir: &Path,
    kind: KeyKind,
    pub_pem: &str,
    msg: &[u8],
    sig: &[u8],
) -> (bool, String) {
    let key = write(dir, "pub.pem", pub_pem);
    let m = write(dir, "msg", msg);
    let s = write(dir, "sig", sig);
    match kind {
        KeyKind::Ed25519 => openssl(&[
            "pkeyutl", "-verify", "-pubin", "-inkey", &key, "-rawin", "-in", &m, "-sigfile", &s,
        ]),
        KeyKind::Rsa2048Pss => openssl(&[
            "dgst",
            "-sha256",
            "-sigopt",
            "rsa_padding_mode:pss",
            "-sigopt",
            "rsa_pss_saltlen:auto",
            "-verify",
            &key,
            "-signature",
            &s,
            &m,
        ]),
        KeyKind::Ed25519ph => panic!("openssl 3.0 has no Ed25519ph"),
        _ => openssl(&["dgst", "-sha256", "-verify", &key, "-signature", &s, &m]),
    }
}

fn pusher(reg: &Registry) -> Pusher<'_> {
    Pusher {
        addr: &reg.addr,
        auth: None,
    }
}

/// The layers of a `.sig`/`.att` image read back from the registry:
/// (descriptor, blob).
fn read_layers(p: &Pusher, repo: &str, tag: &str) -> Vec<(Value, Vec<u8>)> {
    let (ct, body) =
        oci::get_manifest(p, repo, tag).unwrap_or_else(|| panic!("{repo}:{tag} is missing"));
    assert_eq!(ct, OCI_MANIFEST);
    let m: Value = serde_json::from_slice(&body).expect("manifest JSON");
    assert_eq!(m["mediaType"], OCI_MANIFEST);
    let config = oci::get_blob(
        p,
        repo,
        m["config"]["digest"].as_str().expect("config digest"),
    );
    let config: Value = serde_json::from_slice(&config).expect("config JSON");
    let layers: Vec<Value> = m["layers"].as_array().expect("layers").clone();
    assert_eq!(
        config["rootfs"]["diff_ids"].as_array().map(Vec::len),
        Some(layers.len())
    );
    layers
        .into_iter()
        .map(|l| {
            let blob = oci::get_blob(p, repo, l["digest"].as_str().expect("digest"));
            assert_eq!(l["size"].as_u64(), Some(blob.len() as u64));
            (l, blob)
        })
        .collect()
}

fn ann<'a>(layer: &'a Value, key: &str) -> &'a str {
    layer["annotations"][key]
        .as_str()
        .unwrap_or_else(|| panic!("annotation {key} missing in {layer}"))
}

fn canonical_with_sigstore_python(dir: &Path, v: &Value) -> Vec<u8> {
    let input = write(dir, "payload.json", v.to_string());
    let out = Command::new(sigstore_python())
        .arg(oracle("jcs.py"))
        .stdin(std::fs::File::open(&input).expect("open"))
        .output()
        .expect("run jcs.py");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Checks a `dev.sigstore.cosign/bundle` annotation with openssl: the SET
/// over the canonical payload (canonicalized by sigstore-python's `rfc8785`).
fn set_verifies(dir: &Path, rekor_pem: &str, annotation: &str) -> (bool, String) {
    let bundle: Value = serde_json::from_str(annotation).expect("bundle annotation JSON");
    let payload = canonical_with_sigstore_python(dir, &bundle["Payload"]);
    let set = unb64(bundle["SignedEntryTimestamp"].as_str().expect("SET"));
    openssl_verify(dir, KeyKind::P256, rekor_pem, &payload, &set)
}

fn body_of(annotation: &str) -> Value {
    let bundle: Value = serde_json::from_str(annotation).expect("bundle JSON");
    serde_json::from_slice(&unb64(bundle["Payload"]["body"].as_str().expect("body")))
        .expect("body JSON")
}

mod cosign;
mod notation;
mod sigstore_js;
mod sigstore_python;
