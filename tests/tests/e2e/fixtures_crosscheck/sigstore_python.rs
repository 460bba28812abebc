//! Sigstore bundles (keyless, with Rekor and timestamps) verified with sigstore-python, tampered ones refused.

use super::*;

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
