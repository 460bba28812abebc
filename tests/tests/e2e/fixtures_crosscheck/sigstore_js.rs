//! Key-based and keyless DSSE bundles verified with sigstore-js, tampered ones refused.

use super::*;

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
