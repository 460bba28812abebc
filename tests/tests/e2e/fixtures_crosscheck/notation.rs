//! Notary Project (notation) envelopes: the signature with jwcrypto 1.6.1 (JWS) or pycose 1.1.0
//! (COSE), the chain, the leaf's extensions and the RFC 3161 countersignature with openssl.

use super::*;

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
