//! Cross-checks of the cosign/Sigstore fixture generator (`ivpol_tests::sign`)
//! with independent verifiers: every fixture is pushed to a real registry,
//! read back over the distribution API, and handed to openssl or
//! sigstore-python 4.5.1 (Notary envelopes: jwcrypto and pycose, in the same
//! venv). Tampered fixtures must be rejected by the same oracles, so these
//! checks can fail.
//!
//! The oracles come from `cargo xtask test`, which sets `IVPOL_OPENSSL` and
//! `IVPOL_SIGSTORE_PYTHON`; without them these tests fail (never skip).

use ivpol_tests::fixtures::{sha256, Pusher, OCI_INDEX, OCI_MANIFEST};
use ivpol_tests::registry::Registry;
use ivpol_tests::sign::cosign::pae;
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

/// The referrer manifests of `artifact_type` recorded for `digest` in the
/// referrers tag-schema index, each checked for the OCI 1.1 referrer shape
/// (its subject, artifactType and empty config).
fn referrer_manifests(p: &Pusher, repo: &str, digest: &str, artifact_type: &str) -> Vec<Value> {
    let tag = oci::digest_tag(digest, "", "");
    let (ct, body) = oci::get_manifest(p, repo, &tag).expect("referrers index");
    assert_eq!(ct, OCI_INDEX);
    let index: Value = serde_json::from_slice(&body).expect("index JSON");
    index["manifests"]
        .as_array()
        .expect("manifests")
        .iter()
        .filter(|d| d["artifactType"] == artifact_type)
        .map(|d| {
            let (_, body) = oci::get_manifest(p, repo, d["digest"].as_str().expect("digest"))
                .expect("referrer");
            let m: Value = serde_json::from_slice(&body).expect("referrer JSON");
            assert_eq!(m["subject"]["digest"], digest, "referrer subject");
            assert_eq!(m["artifactType"], artifact_type);
            assert_eq!(m["config"]["mediaType"], oci::OCI_EMPTY);
            m
        })
        .collect()
}

/// The bundles recorded for `digest` in the referrers tag-schema index.
fn read_bundles(p: &Pusher, repo: &str, digest: &str) -> Vec<Vec<u8>> {
    referrer_manifests(p, repo, digest, oci::BUNDLE_V03)
        .iter()
        .map(|m| oci::get_blob(p, repo, m["layers"][0]["digest"].as_str().expect("layer")))
        .collect()
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

#[test]
fn key_signatures_of_every_kind_verify_with_openssl_and_tampered_ones_do_not() {
    let reg = Registry::start();
    let p = pusher(&reg);
    let dir = tempfile::tempdir().expect("tmp");
    let rekor = Rekor::new();
    for kind in KeyKind::ALL {
        let repo = format!("keyed/{}", kind.name());
        let digest = p.image(&repo, "v1", OCI_MANIFEST, "amd64");
        let signer = Signer::keyed(kind);
        let signed = signer.sign_image(
            &p,
            &repo,
            &digest,
            &SignOpts::default().rekor(&rekor).annotation("team", "a"),
        );
        let other = Signer::with_key(KeyPair::from_seed(kind, "someone else"));
        signer.sign_image(
            &p,
            &repo,
            &digest,
            &SignOpts::default().tamper(Tamper::PayloadAfterSigning),
        );
        signer.sign_image(
            &p,
            &repo,
            &digest,
            &SignOpts::default().tamper(Tamper::wrong_key(other.key.clone())),
        );

        let layers = read_layers(&p, &repo, &signed.tag);
        assert_eq!(signed.tag, format!("sha256-{}.sig", &digest[7..]));
        assert_eq!(layers.len(), 3, "each signing appends a layer");
        for (l, _) in &layers {
            assert_eq!(l["mediaType"], oci::SIMPLESIGNING);
        }
        let (good, payload) = &layers[0];
        let v: Value = serde_json::from_slice(payload).expect("payload JSON");
        assert_eq!(
            v["critical"]["image"]["docker-manifest-digest"],
            digest.as_str()
        );
        assert_eq!(v["critical"]["type"], "cosign container image signature");
        assert_eq!(v["optional"], json!({"team": "a"}));
        let body = body_of(ann(good, oci::ANN_BUNDLE));
        assert_eq!(body["spec"]["data"]["hash"]["value"], &sha256(payload)[7..]);
        assert_eq!(
            body["spec"]["signature"]["content"],
            ann(good, oci::ANN_SIGNATURE)
        );
        let (ok, out) = set_verifies(dir.path(), &rekor.public_pem(), ann(good, oci::ANN_BUNDLE));
        assert!(ok, "{kind:?}: SET rejected by openssl: {out}");

        if kind == KeyKind::Ed25519ph {
            // openssl 3.0 cannot verify Ed25519ph; only the self-check here.
            let sig = unb64(ann(good, oci::ANN_SIGNATURE));
            assert!(signer.key.verify(payload, &sig));
            continue;
        }
        let verdicts: Vec<(bool, String)> = layers
            .iter()
            .map(|(l, blob)| {
                openssl_verify(
                    dir.path(),
                    kind,
                    &signer.public_pem(),
                    blob,
                    &unb64(ann(l, oci::ANN_SIGNATURE)),
                )
            })
            .collect();
        assert!(
            verdicts[0].0,
            "{kind:?}: openssl rejected a good signature: {}",
            verdicts[0].1
        );
        assert!(
            !verdicts[1].0,
            "{kind:?}: openssl accepted a payload tampered after signing"
        );
        assert!(
            !verdicts[2].0,
            "{kind:?}: openssl accepted a signature by another key"
        );
        let (ok, _) = openssl_verify(
            dir.path(),
            kind,
            &other.public_pem(),
            &layers[0].1,
            &unb64(ann(&layers[0].0, oci::ANN_SIGNATURE)),
        );
        assert!(
            !ok,
            "{kind:?}: openssl accepted the signature with the wrong public key"
        );
    }
}

#[test]
fn p384_with_sha384_and_rsa_with_sha512_verify_with_openssl() {
    let reg = Registry::start();
    let p = pusher(&reg);
    let dir = tempfile::tempdir().expect("tmp");
    let digest = p.image("hashes", "v1", OCI_MANIFEST, "amd64");
    for (kind, hash, flag) in [
        (KeyKind::P384, ivpol_tests::sign::SigHash::Sha384, "-sha384"),
        (
            KeyKind::Rsa2048,
            ivpol_tests::sign::SigHash::Sha512,
            "-sha512",
        ),
    ] {
        let signer = Signer::with_key(KeyPair::new(kind).with_hash(hash));
        let s = signer.sign_image(&p, "hashes", &digest, &SignOpts::default().replace());
        let layers = read_layers(&p, "hashes", &s.tag);
        let key = write(dir.path(), "pub.pem", signer.public_pem());
        let m = write(dir.path(), "msg", &layers[0].1);
        let sig = write(
            dir.path(),
            "sig",
            unb64(ann(&layers[0].0, oci::ANN_SIGNATURE)),
        );
        let (ok, out) = openssl(&["dgst", flag, "-verify", &key, "-signature", &sig, &m]);
        assert!(ok, "{kind:?} {flag}: {out}");
    }
}

#[test]
fn other_repository_and_tag_prefix_follow_cosign() {
    let reg = Registry::start();
    let p = pusher(&reg);
    let digest = p.image("app/web", "v1", OCI_MANIFEST, "amd64");
    let signer = Signer::keyed(KeyKind::P256);
    let s = signer.sign_image(
        &p,
        "app/web",
        &digest,
        &SignOpts::default()
            .repository("sigs/web")
            .tag_prefix("pre-"),
    );
    assert_eq!(s.repo, "sigs/web");
    assert_eq!(s.tag, format!("pre-sha256-{}.sig", &digest[7..]));
    let layers = read_layers(&p, "sigs/web", &s.tag);
    let v: Value = serde_json::from_slice(&layers[0].1).expect("payload");
    assert_eq!(
        v["critical"]["identity"]["docker-reference"],
        format!("{}/app/web", reg.addr)
    );
    assert!(oci::get_manifest(&p, "app/web", &oci::digest_tag(&digest, "", "sig")).is_none());
    // The exact payload bytes, in Go struct order.
    let plain = signer.sign_image(&p, "app/web", &digest, &SignOpts::default());
    assert_eq!(
        String::from_utf8(plain.layer).unwrap(),
        format!(
            "{{\"critical\":{{\"identity\":{{\"docker-reference\":\"{}/app/web\"}},\"image\":{{\"docker-manifest-digest\":\"{digest}\"}},\"type\":\"cosign container image signature\"}},\"optional\":null}}",
            reg.addr
        )
    );
}

#[test]
fn keyless_sig_chain_sct_and_set_verify_with_openssl() {
    let reg = Registry::start();
    let p = pusher(&reg);
    let dir = tempfile::tempdir().expect("tmp");
    let (ca, ct, rekor) = (Fulcio::new(), CtLog::default(), Rekor::new());
    // Valid at the log's integrated time, expired now.
    let t = now() - 7200;
    let leaf = ca.leaf(
        Identity::Email("dev@ivpol.test".into()),
        "https://issuer.ivpol.test",
        Window::fulcio_at(t),
    );
    let digest = p.image("keyless", "v1", OCI_MANIFEST, "amd64");
    let signer = Signer::keyless(&leaf);
    let s = signer.sign_image(
        &p,
        "keyless",
        &digest,
        &SignOpts::default().rekor(&rekor).time(t),
    );
    signer.sign_image(
        &p,
        "keyless",
        &digest,
        &SignOpts::default()
            .rekor(&rekor)
            .time(t + 1)
            .tamper(Tamper::Set),
    );
    let layers = read_layers(&p, "keyless", &s.tag);
    let (l, payload) = &layers[0];

    let cert = write(dir.path(), "leaf.pem", ann(l, oci::ANN_CERTIFICATE));
    let chain = ann(l, oci::ANN_CHAIN);
    assert_eq!(chain, ca.chain_pem());
    let root = write(dir.path(), "root.pem", ca.root_pem());
    let inter = write(dir.path(), "inter.pem", ca.intermediate_pem());
    let bundle: Value = serde_json::from_str(ann(l, oci::ANN_BUNDLE)).expect("bundle");
    let it = bundle["Payload"]["integratedTime"]
        .as_i64()
        .expect("integratedTime");
    assert_eq!(it, t);
    let verify_at = |when: i64, root: &str| {
        openssl(&[
            "verify",
            "-x509_strict",
            "-attime",
            &when.to_string(),
            "-CAfile",
            root,
            "-untrusted",
            &inter,
            &cert,
        ])
    };
    let (ok, out) = verify_at(it, &root);
    assert!(ok, "openssl rejected the chain at integratedTime: {out}");
    let (ok, out) = openssl(&["verify", "-CAfile", &root, "-untrusted", &inter, &cert]);
    assert!(
        !ok && out.contains("expired"),
        "the leaf must be expired now: {out}"
    );
    let (ok, out) = verify_at(leaf.window.not_before - 10, &root);
    assert!(!ok && out.contains("not yet valid"), "{out}");
    let stranger = write(
        dir.path(),
        "other-root.pem",
        Fulcio::with_seed("stranger", ivpol_tests::sign::ca::CA_WINDOW).root_pem(),
    );
    let (ok, _) = verify_at(it, &stranger);
    assert!(!ok, "openssl accepted the chain under an unrelated root");

    // The leaf as openssl reads it: Fulcio's extensions and the SCT.
    let (ok, text) = openssl(&[
        "x509",
        "-in",
        &cert,
        "-noout",
        "-text",
        "-certopt",
        "ext_parse",
    ]);
    assert!(ok, "{text}");
    assert!(
        text.contains("X509v3 Subject Alternative Name: critical"),
        "{text}"
    );
    assert!(text.contains("email:dev@ivpol.test"), "{text}");
    assert!(
        text.contains("X509v3 Key Usage: critical") && text.contains("Digital Signature"),
        "{text}"
    );
    assert!(text.contains("Code Signing"), "{text}");
    assert!(
        text.contains("1.3.6.1.4.1.57264.1.1") && text.contains("1.3.6.1.4.1.57264.1.8"),
        "{text}"
    );
    assert!(text.contains("CT Precertificate SCTs"), "{text}");
    let log_id = ct
        .log_id()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":");
    let flat: String = text.split_whitespace().collect();
    assert!(flat.contains(&log_id), "SCT log ID {log_id} not in {text}");

    // The signature with the certificate's key, and the SET.
    let (ok, pubkey) = openssl(&["x509", "-in", &cert, "-noout", "-pubkey"]);
    assert!(ok, "{pubkey}");
    let (ok, out) = openssl_verify(
        dir.path(),
        KeyKind::P256,
        &pubkey,
        payload,
        &unb64(ann(l, oci::ANN_SIGNATURE)),
    );
    assert!(ok, "{out}");
    let body = body_of(ann(l, oci::ANN_BUNDLE));
    assert_eq!(
        body["spec"]["signature"]["publicKey"]["content"],
        b64(leaf.pem())
    );
    let (ok, out) = set_verifies(dir.path(), &rekor.public_pem(), ann(l, oci::ANN_BUNDLE));
    assert!(ok, "SET: {out}");
    let (ok, _) = set_verifies(
        dir.path(),
        &rekor.public_pem(),
        ann(&layers[1].0, oci::ANN_BUNDLE),
    );
    assert!(!ok, "openssl accepted a broken SET");
    let (ok, _) = set_verifies(
        dir.path(),
        &Rekor::with_seed("other rekor", 0).public_pem(),
        ann(l, oci::ANN_BUNDLE),
    );
    assert!(!ok, "openssl accepted the SET with another log's key");
}

#[test]
fn attestations_verify_with_openssl_over_pae() {
    let reg = Registry::start();
    let p = pusher(&reg);
    let dir = tempfile::tempdir().expect("tmp");
    let rekor = Rekor::new();
    let digest = p.image("attested", "v1", OCI_MANIFEST, "amd64");
    let signer = Signer::keyed(KeyKind::P256);
    let att = AttOpts::new(
        "https://slsa.dev/provenance/v0.2",
        json!({"builder": {"id": "ivpol"}}),
    );
    let s = signer.attest_image(
        &p,
        "attested",
        &digest,
        &att,
        &SignOpts::default().rekor(&rekor),
    );
    signer.attest_image(
        &p,
        "attested",
        &digest,
        &att,
        &SignOpts::default().tamper(Tamper::PayloadAfterSigning),
    );
    signer.attest_image(
        &p,
        "attested",
        &digest,
        &att.clone().dsse_entry(),
        &SignOpts::default().rekor(&rekor),
    );
    assert_eq!(s.tag, format!("sha256-{}.att", &digest[7..]));
    let layers = read_layers(&p, "attested", &s.tag);
    assert_eq!(layers.len(), 3);
    let verdicts: Vec<bool> = layers
        .iter()
        .map(|(l, blob)| {
            assert_eq!(l["mediaType"], oci::DSSE_ENVELOPE);
            assert_eq!(ann(l, oci::ANN_SIGNATURE), "");
            assert_eq!(
                ann(l, oci::ANN_PREDICATE_TYPE),
                "https://slsa.dev/provenance/v0.2"
            );
            let env: Value = serde_json::from_slice(blob).expect("envelope");
            assert_eq!(env["payloadType"], oci::IN_TOTO);
            let stmt = unb64(env["payload"].as_str().expect("payload"));
            let v: Value = serde_json::from_slice(&stmt).expect("statement");
            assert_eq!(v["subject"][0]["digest"]["sha256"], &digest[7..]);
            assert_eq!(v["predicateType"], "https://slsa.dev/provenance/v0.2");
            let sig = unb64(env["signatures"][0]["sig"].as_str().expect("sig"));
            openssl_verify(
                dir.path(),
                KeyKind::P256,
                &signer.public_pem(),
                &pae(oci::IN_TOTO, &stmt),
                &sig,
            )
            .0
        })
        .collect();
    assert_eq!(verdicts, [true, false, true]);
    let intoto = body_of(ann(&layers[0].0, oci::ANN_BUNDLE));
    assert_eq!(
        (intoto["kind"].as_str(), intoto["apiVersion"].as_str()),
        (Some("intoto"), Some("0.0.2"))
    );
    let dsse = body_of(ann(&layers[2].0, oci::ANN_BUNDLE));
    assert_eq!(
        (dsse["kind"].as_str(), dsse["apiVersion"].as_str()),
        (Some("dsse"), Some("0.0.1"))
    );
    for i in [0, 2] {
        let (ok, out) = set_verifies(
            dir.path(),
            &rekor.public_pem(),
            ann(&layers[i].0, oci::ANN_BUNDLE),
        );
        assert!(ok, "{out}");
    }
}

/// Runs the sigstore-python oracle; (verified, output).
fn sigstore_python_verify(
    dir: &Path,
    root: &TrustedRoot,
    bundle: &[u8],
    identity: &str,
    issuer: &str,
    artifact: Option<&[u8]>,
) -> (bool, String) {
    let root = write(dir, "trusted_root.json", root.to_string_pretty());
    let b = write(dir, "bundle.json", bundle);
    let mut cmd = Command::new(sigstore_python());
    cmd.arg(oracle("sigstore_python_verify.py"))
        .args([&root, &b, identity, issuer]);
    match artifact {
        Some(a) => cmd.args(["--artifact", &write(dir, "artifact", a)]),
        None => cmd.arg("--dsse"),
    };
    let (ok, out) = run(&mut cmd);
    eprintln!("sigstore-python: {}", out.trim());
    assert_eq!(ok, out.starts_with("OK"), "{out}");
    (ok, out)
}

#[test]
fn keyless_bundles_verify_with_sigstore_python_and_tampered_ones_do_not() {
    let reg = Registry::start();
    let p = pusher(&reg);
    let dir = tempfile::tempdir().expect("tmp");
    let (ca, ct, rekor) = (Fulcio::new(), CtLog::default(), Rekor::new());
    let root = TrustedRoot::of(&ca, &rekor, &ct);
    let (id, iss) = (
        "https://github.com/ivpol/app/.github/workflows/release.yml@refs/heads/main",
        "https://token.actions.githubusercontent.com",
    );
    let t = now() - 7200; // expired now, valid when logged
    let leaf = ca.leaf(Identity::Uri(id.into()), iss, Window::fulcio_at(t));
    let signer = Signer::keyless(&leaf);

    let digest = p.image("bundled", "v1", OCI_MANIFEST, "amd64");
    let (_, manifest) = oci::get_manifest(&p, "bundled", &digest).expect("image");
    let cases: Vec<(&str, Content, Tamper, bool)> = vec![
        (
            "message signature",
            Content::MessageSignature,
            Tamper::None,
            true,
        ),
        (
            "DSSE cosign sign",
            Content::cosign_sign(),
            Tamper::None,
            true,
        ),
        (
            "DSSE attestation",
            Content::attestation(
                "https://slsa.dev/provenance/v1",
                json!({"buildDefinition": {}}),
            ),
            Tamper::None,
            true,
        ),
        (
            "message over another artifact",
            Content::MessageSignature,
            Tamper::OtherDigest("another artifact".into()),
            false,
        ),
        (
            "message digest claims another digest",
            Content::MessageSignature,
            Tamper::ClaimedDigest(format!("sha256:{}", "ab".repeat(32))),
            false,
        ),
        (
            "DSSE payload after signing",
            Content::cosign_sign(),
            Tamper::PayloadAfterSigning,
            false,
        ),
        (
            "message: wrong key",
            Content::MessageSignature,
            Tamper::wrong_key(KeyPair::from_seed(KeyKind::P256, "x")),
            false,
        ),
        (
            "DSSE: wrong key",
            Content::cosign_sign(),
            Tamper::wrong_key(KeyPair::from_seed(KeyKind::P256, "x")),
            false,
        ),
        (
            "message: broken SET",
            Content::MessageSignature,
            Tamper::Set,
            false,
        ),
        (
            "message: log body of another artifact",
            Content::MessageSignature,
            Tamper::LogBody,
            false,
        ),
        (
            "DSSE: log body of another statement",
            Content::cosign_sign(),
            Tamper::LogBody,
            false,
        ),
        (
            "message: broken checkpoint",
            Content::MessageSignature,
            Tamper::Checkpoint,
            false,
        ),
        (
            "DSSE: broken inclusion proof",
            Content::cosign_sign(),
            Tamper::InclusionProof,
            false,
        ),
    ];
    for (name, content, tamper, expect) in &cases {
        let is_dsse = matches!(content, Content::Dsse { .. });
        signer.bundle_image(
            &p,
            "bundled",
            &digest,
            &BundleOpts::new(content.clone())
                .rekor(&rekor)
                .time(t + 30)
                .tamper(tamper.clone()),
        );
        let stored = read_bundles(&p, "bundled", &digest);
        let bundle = stored.last().expect("a bundle");
        let artifact = (!is_dsse).then_some(manifest.as_slice());
        let (ok, out) = sigstore_python_verify(dir.path(), &root, bundle, id, iss, artifact);
        eprintln!("case {name}");
        assert_eq!(ok, *expect, "{name}: {out}");
    }
    assert_eq!(
        read_bundles(&p, "bundled", &digest).len(),
        cases.len(),
        "the tag-schema index holds every referrer"
    );

    // Policy and trust negatives on a good bundle.
    let good = signer.bundle_image(
        &p,
        "bundled",
        &digest,
        &BundleOpts::new(Content::cosign_sign())
            .rekor(&rekor)
            .time(t + 30),
    );
    let (ok, out) = sigstore_python_verify(dir.path(), &root, &good.bytes, id, iss, None);
    assert!(ok, "{out}");
    let (ok, _) = sigstore_python_verify(
        dir.path(),
        &root,
        &good.bytes,
        "https://github.com/evil/app",
        iss,
        None,
    );
    assert!(!ok, "sigstore-python accepted another identity");
    let (ok, _) = sigstore_python_verify(
        dir.path(),
        &root,
        &good.bytes,
        id,
        "https://other-issuer",
        None,
    );
    assert!(!ok, "sigstore-python accepted another issuer");
    let other_ct = TrustedRoot::of(&ca, &rekor, &CtLog::new("another ct log"));
    let (ok, out) = sigstore_python_verify(dir.path(), &other_ct, &good.bytes, id, iss, None);
    assert!(
        !ok && out.contains("SCT"),
        "an SCT from an untrusted CT log: {out}"
    );
    let other_ca = TrustedRoot::of(
        &Fulcio::with_seed("stranger", ivpol_tests::sign::ca::CA_WINDOW),
        &rekor,
        &ct,
    );
    let (ok, _) = sigstore_python_verify(dir.path(), &other_ca, &good.bytes, id, iss, None);
    assert!(!ok, "sigstore-python accepted a leaf of an untrusted CA");
    let other_rekor = TrustedRoot::of(&ca, &Rekor::with_seed("other rekor", 0), &ct);
    let (ok, _) = sigstore_python_verify(dir.path(), &other_rekor, &good.bytes, id, iss, None);
    assert!(
        !ok,
        "sigstore-python accepted a log entry of an untrusted Rekor"
    );

    // A certificate that was not valid at the integrated time.
    let late = ca.leaf(Identity::Uri(id.into()), iss, Window::fulcio_at(t + 3600));
    let b = Signer::keyless(&late).bundle_image(
        &p,
        "bundled",
        &digest,
        &BundleOpts::new(Content::cosign_sign())
            .rekor(&rekor)
            .time(t),
    );
    let (ok, _) = sigstore_python_verify(dir.path(), &root, &b.bytes, id, iss, None);
    assert!(
        !ok,
        "sigstore-python accepted a certificate not valid at the integrated time"
    );
    // An email identity, no SCT → rejected (SCTs are required).
    let no_sct = ca.issue(LeafSpec::new(
        Identity::Email("dev@ivpol.test".into()),
        iss,
        Window::fulcio_at(t),
    ));
    let b = Signer::keyless(&no_sct).bundle_image(
        &p,
        "bundled",
        &digest,
        &BundleOpts::new(Content::cosign_sign())
            .rekor(&rekor)
            .time(t + 30),
    );
    let (ok, out) =
        sigstore_python_verify(dir.path(), &root, &b.bytes, "dev@ivpol.test", iss, None);
    assert!(!ok, "sigstore-python accepted a leaf without an SCT: {out}");
    let with_sct = ca.leaf(
        Identity::Email("dev@ivpol.test".into()),
        iss,
        Window::fulcio_at(t),
    );
    let b = Signer::keyless(&with_sct).bundle_image(
        &p,
        "bundled",
        &digest,
        &BundleOpts::new(Content::MessageSignature)
            .rekor(&rekor)
            .time(t + 30),
    );
    let (ok, out) = sigstore_python_verify(
        dir.path(),
        &root,
        &b.bytes,
        "dev@ivpol.test",
        iss,
        Some(&manifest),
    );
    assert!(ok, "email identity: {out}");
}

/// Runs the sigstore-js oracle; `key` = (hint, PEM) for public-key bundles,
/// else `identity` = (SAN, issuer). (verified, output).
fn sigstore_js_verify(
    dir: &Path,
    root: &TrustedRoot,
    bundle: &[u8],
    artifact: Option<&[u8]>,
    key: Option<(&str, &str)>,
    identity: Option<(&str, &str)>,
) -> (bool, String) {
    let root = write(dir, "trusted_root.json", root.to_string_pretty());
    let b = write(dir, "bundle.json", bundle);
    let mut cmd = Command::new(tool("IVPOL_NODE"));
    cmd.env("NODE_PATH", tool("IVPOL_SIGSTORE_JS"))
        .arg(oracle("sigstore_js_verify.js"))
        .args([&root, &b]);
    match artifact {
        Some(a) => cmd.args(["--artifact", &write(dir, "artifact", a)]),
        None => cmd.arg("--dsse"),
    };
    if let Some((hint, pem)) = key {
        cmd.args(["--key", hint, &write(dir, "key.pem", pem)]);
    }
    if let Some((id, iss)) = identity {
        cmd.args(["--identity", id, "--issuer", iss]);
    }
    let (ok, out) = run(&mut cmd);
    eprintln!("sigstore-js: {}", out.trim());
    assert_eq!(ok, out.starts_with("OK"), "{out}");
    (ok, out)
}

#[test]
fn key_based_bundles_verify_with_sigstore_js_and_tampered_ones_do_not() {
    let reg = Registry::start();
    let p = pusher(&reg);
    let dir = tempfile::tempdir().expect("tmp");
    let rekor = Rekor::new();
    let root = TrustedRoot::new().rekor(&rekor);
    for kind in [
        KeyKind::P256,
        KeyKind::P384,
        KeyKind::Rsa2048,
        KeyKind::Ed25519,
    ] {
        let repo = format!("bundle-key/{}", kind.name());
        let digest = p.image(&repo, "v1", OCI_MANIFEST, "amd64");
        let (_, manifest) = oci::get_manifest(&p, &repo, &digest).expect("image");
        let signer = Signer::keyed(kind);
        let hint = ivpol_tests::sign::bundle::key_hint(&signer);
        let cases: Vec<(&str, Content, Tamper, bool)> = vec![
            (
                "message signature",
                Content::MessageSignature,
                Tamper::None,
                true,
            ),
            ("DSSE", Content::cosign_sign(), Tamper::None, true),
            (
                "message: wrong key",
                Content::MessageSignature,
                Tamper::wrong_key(KeyPair::from_seed(kind, "x")),
                false,
            ),
            (
                "DSSE payload after signing",
                Content::cosign_sign(),
                Tamper::PayloadAfterSigning,
                false,
            ),
            (
                "message over another artifact",
                Content::MessageSignature,
                Tamper::OtherDigest("another artifact".into()),
                false,
            ),
            (
                "DSSE: broken checkpoint",
                Content::cosign_sign(),
                Tamper::Checkpoint,
                false,
            ),
            (
                "message: broken SET",
                Content::MessageSignature,
                Tamper::Set,
                false,
            ),
        ];
        for (name, content, tamper, expect) in &cases {
            let is_dsse = matches!(content, Content::Dsse { .. });
            signer.bundle_image(
                &p,
                &repo,
                &digest,
                &BundleOpts::new(content.clone())
                    .rekor(&rekor)
                    .tamper(tamper.clone()),
            );
            let stored = read_bundles(&p, &repo, &digest);
            let bundle = stored.last().expect("a bundle");
            let v: Value = serde_json::from_slice(bundle).expect("bundle");
            assert_eq!(
                v["verificationMaterial"]["publicKey"]["hint"],
                hint.as_str()
            );
            let artifact = (!is_dsse).then_some(manifest.as_slice());
            let (ok, out) = sigstore_js_verify(
                dir.path(),
                &root,
                bundle,
                artifact,
                Some((&hint, &signer.public_pem())),
                None,
            );
            assert_eq!(ok, *expect, "{kind:?} {name}: {out}");
        }
        let good = read_bundles(&p, &repo, &digest).remove(1);
        let other = KeyPair::from_seed(kind, "x").public_pem();
        let (ok, _) =
            sigstore_js_verify(dir.path(), &root, &good, None, Some((&hint, &other)), None);
        assert!(
            !ok,
            "{kind:?}: sigstore-js accepted the bundle with another public key"
        );
    }
}

#[test]
fn keyless_dsse_bundle_verifies_with_sigstore_js_too() {
    let reg = Registry::start();
    let p = pusher(&reg);
    let dir = tempfile::tempdir().expect("tmp");
    let (ca, ct, rekor) = (Fulcio::new(), CtLog::default(), Rekor::new());
    let (id, iss) = ("dev@ivpol.test", "https://issuer.ivpol.test");
    let t = now() - 7200;
    let leaf = ca.leaf(Identity::Email(id.into()), iss, Window::fulcio_at(t));
    let digest = p.image("js-keyless", "v1", OCI_MANIFEST, "amd64");
    let b = Signer::keyless(&leaf).bundle_image(
        &p,
        "js-keyless",
        &digest,
        &BundleOpts::new(Content::cosign_sign())
            .rekor(&rekor)
            .time(t + 30),
    );
    let root = TrustedRoot::of(&ca, &rekor, &ct);
    let (ok, out) = sigstore_js_verify(dir.path(), &root, &b.bytes, None, None, Some((id, iss)));
    assert!(ok, "{out}");
    let (ok, _) = sigstore_js_verify(
        dir.path(),
        &root,
        &b.bytes,
        None,
        None,
        Some(("eve@ivpol.test", iss)),
    );
    assert!(!ok, "sigstore-js accepted another identity");
    let no_ct = TrustedRoot::new().fulcio(&ca).rekor(&rekor);
    let (ok, _) = sigstore_js_verify(dir.path(), &no_ct, &b.bytes, None, None, Some((id, iss)));
    assert!(!ok, "sigstore-js accepted an SCT without a trusted CT log");
}

// ---------------------------------------------------------------------------
// Notary Project (notation) envelopes: the signature with jwcrypto 1.6.1
// (JWS) or pycose 1.1.0 (COSE), the chain, the leaf's extensions and the
// RFC 3161 countersignature with openssl.

/// One Notary signature read back from the registry: the referrer's
/// annotations, its layer's media type and the envelope.
struct NotaryRead {
    annotations: Value,
    media_type: String,
    envelope: Vec<u8>,
}

/// The Notary signatures recorded for `digest` in the referrers tag-schema
/// index, each manifest checked for notation's referrer shape.
fn read_notary(p: &Pusher, repo: &str, digest: &str) -> Vec<NotaryRead> {
    referrer_manifests(p, repo, digest, notary::ARTIFACT_TYPE)
        .iter()
        .map(|m| {
            let layers = m["layers"].as_array().expect("layers");
            assert_eq!(layers.len(), 1, "a Notary signature has exactly one layer");
            NotaryRead {
                annotations: m["annotations"].clone(),
                media_type: layers[0]["mediaType"].as_str().expect("type").into(),
                envelope: oci::get_blob(p, repo, layers[0]["digest"].as_str().expect("layer")),
            }
        })
        .collect()
}

/// The subject's descriptor as a verifier resolves it.
fn descriptor_of(p: &Pusher, repo: &str, digest: &str) -> Value {
    let (ct, body) = oci::get_manifest(p, repo, digest).expect("subject manifest");
    json!({"mediaType": ct, "digest": digest, "size": body.len()})
}

/// Verifies an envelope's signature with jwcrypto or pycose; Ok(what the
/// oracle decoded) or Err(its verdict).
fn notary_oracle(dir: &Path, media_type: &str, envelope: &[u8]) -> Result<Value, String> {
    notary_oracle_with(dir, media_type, envelope, &[])
}

fn notary_oracle_with(
    dir: &Path,
    media_type: &str,
    envelope: &[u8],
    extra: &[&str],
) -> Result<Value, String> {
    let fmt = match media_type {
        "application/jose+json" => "jws",
        "application/cose" => "cose",
        other => panic!("not a Notary envelope type: {other}"),
    };
    let file = write(dir, "envelope", envelope);
    let (ok, out) = run(Command::new(sigstore_python())
        .arg(oracle("notary_verify.py"))
        .arg(fmt)
        .arg(&file)
        .args(extra));
    match out.trim().strip_prefix("OK ") {
        Some(json) if ok => Ok(serde_json::from_str(json).expect("oracle JSON")),
        _ => Err(out),
    }
}

/// The protected header the oracle decoded is notation's: algorithm,
/// content type, `notary.x509` scheme, signing time, optional expiry, and
/// `crit` listing the scheme (and expiry).
fn assert_protected(decoded: &Value, format: Format, alg: NotaryAlg, at: i64, expiry: Option<i64>) {
    let mut crit = vec!["io.cncf.notary.signingScheme"];
    let mut want = match format {
        Format::Jws => json!({
            "alg": alg.jws(),
            "cty": notary::PAYLOAD_TYPE,
            "io.cncf.notary.signingTime": rfc3339(at),
        }),
        Format::Cose => json!({
            "1": alg.cose(),
            "3": notary::PAYLOAD_TYPE,
            "io.cncf.notary.signingTime": at,
        }),
    };
    want["io.cncf.notary.signingScheme"] = json!("notary.x509");
    if let Some(e) = expiry {
        want["io.cncf.notary.expiry"] = match format {
            Format::Jws => json!(rfc3339(e)),
            Format::Cose => json!(e),
        };
        crit.push("io.cncf.notary.expiry");
    }
    let crit_key = if format == Format::Jws { "crit" } else { "2" };
    want[crit_key] = json!(crit);
    assert_eq!(decoded["protected"], want, "protected header");
}

fn target_matches(decoded: &Value, subject: &Value) -> bool {
    let t = &decoded["payload"]["targetArtifact"];
    ["digest", "mediaType", "size"]
        .iter()
        .all(|k| t[*k] == subject[*k])
}

fn decoded_certs(decoded: &Value) -> Vec<Vec<u8>> {
    decoded["certs"]
        .as_array()
        .expect("certs")
        .iter()
        .map(|c| unb64(c.as_str().expect("b64 cert")))
        .collect()
}

/// `openssl verify` of chain[0] with chain[1..n-1] untrusted and `root`
/// trusted, at `at` when given.
fn openssl_chain(dir: &Path, chain: &[Vec<u8>], root_pem: &str, at: Option<i64>) -> (bool, String) {
    let pem = |d: &Vec<u8>| ivpol_tests::sign::der::pem("CERTIFICATE", d);
    let leaf = write(dir, "leaf.pem", pem(&chain[0]));
    let untrusted: String = chain[1..chain.len() - 1].iter().map(pem).collect();
    let untrusted = write(dir, "untrusted.pem", untrusted);
    let root = write(dir, "root.pem", root_pem);
    let at = at.map(|t| t.to_string());
    let mut args = vec![
        "verify",
        "-x509_strict",
        "-CAfile",
        &root,
        "-untrusted",
        &untrusted,
    ];
    if let Some(t) = &at {
        args.extend(["-attime", t]);
    }
    args.push(&leaf);
    openssl(&args)
}

/// The leaf's KeyUsage (critical, digitalSignature only) and EKU
/// (codeSigning), as `openssl x509 -text` prints them.
fn assert_notary_leaf_extensions(dir: &Path, leaf: &[u8]) {
    let der = write(dir, "leaf.der", leaf);
    let (ok, text) = openssl(&["x509", "-inform", "DER", "-in", &der, "-noout", "-text"]);
    assert!(ok, "{text}");
    let after = |label: &str| {
        let at = text
            .find(label)
            .unwrap_or_else(|| panic!("no {label} in\n{text}"));
        text[at + label.len()..]
            .lines()
            .nth(1)
            .unwrap_or("")
            .trim()
            .to_string()
    };
    assert_eq!(after("X509v3 Key Usage: critical"), "Digital Signature");
    assert_eq!(after("X509v3 Extended Key Usage:"), "Code Signing");
    assert!(
        text.contains("Subject: C = US, ST = WA, O = ivpol.test, CN = "),
        "{text}"
    );
}

/// `openssl ts -verify` of a token over `message` (hashed with `hash`) by `tsa`.
fn openssl_ts(
    dir: &Path,
    token: &[u8],
    message: &[u8],
    hash: SigHash,
    tsa: &Tsa,
) -> (bool, String) {
    let token = write(dir, "token.der", token);
    let root = write(dir, "tsa-root.pem", tsa.root_pem());
    let digest = ivpol_tests::sign::hex(&hash.digest(message));
    openssl(&[
        "ts",
        "-verify",
        "-token_in",
        "-in",
        &token,
        "-digest",
        &digest,
        "-CAfile",
        &root,
    ])
}

/// Reads back every Notary signature of `digest`, verifies each with the
/// oracle and checks its payload names `digest` and its thumbprint
/// annotation its chain; returns what the oracle decoded.
fn verified_notary(dir: &Path, p: &Pusher, repo: &str, digest: &str) -> Vec<(String, Value)> {
    let subject = descriptor_of(p, repo, digest);
    read_notary(p, repo, digest)
        .into_iter()
        .map(|r| {
            let decoded = notary_oracle(dir, &r.media_type, &r.envelope)
                .unwrap_or_else(|e| panic!("{} envelope rejected: {e}", r.media_type));
            assert!(
                target_matches(&decoded, &subject),
                "payload {} is not for {subject}",
                decoded["payload"]
            );
            let thumbprints: Vec<String> = decoded_certs(&decoded)
                .iter()
                .map(|c| sha256(c).trim_start_matches("sha256:").to_string())
                .collect();
            let ann: Vec<String> = serde_json::from_str(
                r.annotations[notary::ANN_THUMBPRINTS]
                    .as_str()
                    .expect("thumbprint annotation"),
            )
            .expect("thumbprints JSON");
            assert_eq!(ann, thumbprints, "thumbprint annotation");
            (r.media_type, decoded)
        })
        .collect()
}

#[test]
fn notary_jws_es256_and_ps256_verify_with_jwcrypto_and_openssl() {
    let reg = Registry::start();
    let p = pusher(&reg);
    let dir = tempfile::tempdir().expect("tmp");
    let ca = NotaryCa::new("ivpol-notary");
    let window = Window::starting(now() - 3600, 30 * 86_400);
    for (i, kind) in [KeyKind::P256, KeyKind::Rsa2048].into_iter().enumerate() {
        let digest = p.image("notary/jws", &format!("v{i}"), OCI_MANIFEST, "amd64");
        let signer = NotarySigner::new(ca.leaf(NotaryLeaf::new(kind, window)));
        let opts = NotaryOpts::new(Format::Jws).expiry(now() + 86_400);
        signer.sign(&p, "notary/jws", &digest, &opts);
        let read = verified_notary(dir.path(), &p, "notary/jws", &digest);
        assert_eq!(read.len(), 1);
        let (media_type, decoded) = &read[0];
        assert_eq!(media_type, "application/jose+json");
        let certs = decoded_certs(decoded);
        assert_eq!(certs.len(), 3, "x5c is leaf, intermediate, root");
        let (ok, out) = openssl_chain(dir.path(), &certs, &ca.root_pem(), None);
        assert!(ok, "{kind:?} chain: {out}");
        assert_notary_leaf_extensions(dir.path(), &certs[0]);
        assert_protected(
            decoded,
            Format::Jws,
            signer.alg(),
            opts.signing_time,
            opts.expiry,
        );
        // Without the Notary names registered, jwcrypto must refuse the
        // envelope for its `crit`.
        let envelope = read_notary(&p, "notary/jws", &digest).remove(0).envelope;
        let r = notary_oracle_with(dir.path(), media_type, &envelope, &["--no-notary-headers"]);
        assert!(
            r.as_ref()
                .is_err_and(|e| e.contains("Unknown critical header")),
            "{r:?}"
        );
    }
}

#[test]
fn notary_cose_es384_and_a_signed_sbom_verify_with_pycose_and_openssl() {
    let reg = Registry::start();
    let p = pusher(&reg);
    let dir = tempfile::tempdir().expect("tmp");
    let ca = NotaryCa::new("ivpol-notary");
    let window = Window::starting(now() - 3600, 30 * 86_400);
    let digest = p.image("notary/cose", "v1", OCI_MANIFEST, "amd64");
    let signer = NotarySigner::new(ca.leaf(NotaryLeaf::new(KeyKind::P384, window)));
    let opts = NotaryOpts::new(Format::Cose).expiry(now() + 86_400);
    signer.sign(&p, "notary/cose", &digest, &opts);
    // An SBOM referrer of the image, itself signed (COSE ES384 too).
    let sbom = json!({"spdxVersion": "SPDX-2.3", "name": "notary/cose"});
    let (sbom_digest, _) = attach_referrer(
        &p,
        "notary/cose",
        &digest,
        "application/spdx+json",
        "application/spdx+json",
        &sbom,
    );
    signer.sign(&p, "notary/cose", &sbom_digest, &opts);
    for subject in [&digest, &sbom_digest] {
        let read = verified_notary(dir.path(), &p, "notary/cose", subject);
        assert_eq!(read.len(), 1, "one signature of {subject}");
        let (media_type, decoded) = &read[0];
        assert_eq!(media_type, "application/cose");
        let certs = decoded_certs(decoded);
        let (ok, out) = openssl_chain(dir.path(), &certs, &ca.root_pem(), None);
        assert!(ok, "chain: {out}");
        assert_notary_leaf_extensions(dir.path(), &certs[0]);
        assert_protected(
            decoded,
            Format::Cose,
            NotaryAlg::Es384,
            opts.signing_time,
            opts.expiry,
        );
        // ES384: raw r‖s of 2 × 48 bytes.
        assert_eq!(unb64(decoded["signature"].as_str().unwrap()).len(), 96);
    }
    // The image's index lists the signature and the SBOM.
    let (_, body) =
        oci::get_manifest(&p, "notary/cose", &oci::digest_tag(&digest, "", "")).expect("index");
    let index: Value = serde_json::from_slice(&body).expect("index JSON");
    let types: Vec<&str> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["artifactType"].as_str().unwrap())
        .collect();
    assert_eq!(types, [notary::ARTIFACT_TYPE, "application/spdx+json"]);
}

#[test]
fn notary_timestamp_in_the_past_verifies_with_openssl_ts() {
    let reg = Registry::start();
    let p = pusher(&reg);
    let dir = tempfile::tempdir().expect("tmp");
    let ca = NotaryCa::new("ivpol-notary");
    let tsa = Tsa::new("ivpol-tsa");
    // A leaf that expired long ago; the signature was countersigned while it was valid.
    let window = Window::starting(now() - 400 * 86_400, 30 * 86_400);
    let signed_at = window.not_before + 86_400;
    for (i, (kind, format)) in [(KeyKind::P256, Format::Jws), (KeyKind::P384, Format::Cose)]
        .into_iter()
        .enumerate()
    {
        let digest = p.image("notary/ts", &format!("v{i}"), OCI_MANIFEST, "amd64");
        let signer = NotarySigner::new(ca.leaf(NotaryLeaf::new(kind, window)));
        let opts = NotaryOpts::new(format)
            .signing_time(signed_at)
            .timestamp(&tsa);
        signer.sign(&p, "notary/ts", &digest, &opts);
        let read = verified_notary(dir.path(), &p, "notary/ts", &digest);
        let decoded = &read[0].1;
        assert_protected(decoded, format, signer.alg(), signed_at, None);
        let certs = decoded_certs(decoded);
        let (ok, out) = openssl_chain(dir.path(), &certs, &ca.root_pem(), Some(signed_at));
        assert!(ok, "{kind:?} chain at the signing time: {out}");
        let (ok, out) = openssl_chain(dir.path(), &certs, &ca.root_pem(), None);
        assert!(!ok && out.contains("expired"), "{kind:?} chain now: {out}");
        let token = unb64(decoded["timestamp"].as_str().expect("timestamp token"));
        let signature = unb64(decoded["signature"].as_str().expect("signature"));
        let hash = signer.alg().hash();
        let (ok, out) = openssl_ts(dir.path(), &token, &signature, hash, &tsa);
        assert!(
            ok && out.contains("Verification: OK"),
            "{kind:?} token: {out}"
        );
        let text = write(dir.path(), "token.der", &token);
        let (ok, out) = openssl(&[
            "ts",
            "-reply",
            "-token_in",
            "-in",
            &text,
            "-token_out",
            "-text",
        ]);
        assert!(ok, "{out}");
        let (y, mo, d, h, mi, s) = ivpol_tests::sign::civil(signed_at);
        let months = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        let gen_time = format!(
            "{} {d:2} {h:02}:{mi:02}:{s:02} {y} GMT",
            months[mo as usize - 1]
        );
        assert!(out.contains(&gen_time), "genTime {gen_time} in\n{out}");
        // A countersignature of other bytes, and one checked against another TSA.
        let (ok, out) = openssl_ts(dir.path(), &token, b"other bytes", hash, &tsa);
        assert!(!ok, "a token over other bytes verified: {out}");
        let (ok, out) = openssl_ts(dir.path(), &token, &signature, hash, &Tsa::new("other-tsa"));
        assert!(!ok, "a token verified under another TSA's root: {out}");
    }
}

#[test]
fn notary_tampered_envelopes_fail_the_oracles() {
    let reg = Registry::start();
    let p = pusher(&reg);
    let dir = tempfile::tempdir().expect("tmp");
    let ca = NotaryCa::new("ivpol-notary");
    let window = Window::starting(now() - 3600, 30 * 86_400);
    let digest = p.image("notary/bad", "v1", OCI_MANIFEST, "amd64");
    let subject = descriptor_of(&p, "notary/bad", &digest);
    for (kind, format) in [
        (KeyKind::P256, Format::Jws),
        (KeyKind::Rsa2048, Format::Jws),
        (KeyKind::P384, Format::Cose),
    ] {
        let signer = NotarySigner::new(ca.leaf(NotaryLeaf::new(kind, window)));
        let opts = |t: NotaryTamper| NotaryOpts::new(format).tamper(t);
        let envelope = |t| signer.envelope(&subject, &opts(t));
        let good = signer.envelope(&subject, &NotaryOpts::new(format));
        let decoded = notary_oracle(dir.path(), format.media_type(), &good)
            .unwrap_or_else(|e| panic!("{kind:?} {format:?}: {e}"));
        assert!(target_matches(&decoded, &subject));
        for t in [
            NotaryTamper::PayloadAfterSigning,
            NotaryTamper::WrongKey(KeyPair::from_seed(kind, "not the leaf")),
        ] {
            let r = notary_oracle(dir.path(), format.media_type(), &envelope(t.clone()));
            assert!(r.is_err(), "{kind:?} {format:?} {t:?} verified: {r:?}");
        }
        let other = notary_oracle(
            dir.path(),
            format.media_type(),
            &envelope(NotaryTamper::OtherDigest),
        )
        .unwrap_or_else(|e| panic!("OtherDigest is validly signed: {e}"));
        assert!(
            !target_matches(&other, &subject),
            "OtherDigest names the subject"
        );
    }
    // A leaf of another CA does not chain to this CA's root.
    let stranger = NotaryCa::new("another-notary-ca").leaf(NotaryLeaf::new(KeyKind::P256, window));
    let chain = [
        stranger.der.clone(),
        stranger.chain[0].clone(),
        stranger.chain[1].clone(),
    ];
    let (ok, out) = openssl_chain(dir.path(), &chain, &ca.root_pem(), None);
    assert!(!ok, "another CA's leaf verified: {out}");
    let (ok, out) = openssl_chain(
        dir.path(),
        &chain,
        &NotaryCa::new("another-notary-ca").root_pem(),
        None,
    );
    assert!(ok, "the other CA's own root: {out}");
}
