//! Cosign's legacy `.sig`/`.att` layers of every key kind, keyless chains with their SCT and SET, and attestations: verified with openssl.

use super::*;

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
