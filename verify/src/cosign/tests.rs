//! The containers/image cosign fixtures (conformance/cosign), positive and
//! negative, plus a negative per check.

use std::collections::BTreeMap;

use super::*;
use crate::encoding::{b64decode, b64encode, pem_encode};
use crate::x509::tests::{certs, read, DERIVED, FIXTURES};
use crate::Reason;

const NOW: i64 = 1_796_169_600; // 2026-12-01
const DIGEST_VALID: &str =
    "sha256:634a8f35b5f16dcf4aaa0822adc0b1964bb786fca12f6831de8ddc45e5986a00";
const DIGEST_REKOR: &str =
    "sha256:0489474da8ea22426ece86ace6c1c0026ab2fd3cdfbbd62b7e94650266c37d9a";
const DIGEST_PKI: &str = "sha256:253c890b744fe3efa923b68e3a1be07bd007eb44ba29da1e7deb1d4c53b3e212";

fn derived(case: &str) -> Layer {
    let desc: serde_json::Value =
        serde_json::from_str(&read(&format!("{DERIVED}{case}/sig-layer-descriptor.json"))).unwrap();
    Layer {
        media_type: desc["mediaType"].as_str().unwrap().to_string(),
        payload: std::fs::read(format!("{DERIVED}{case}/simplesigning-layer.json")).unwrap(),
        annotations: serde_json::from_value(desc["annotations"].clone()).unwrap(),
    }
}

/// A containers/image `sigstore-json` signature file.
fn sigstore_json(path: &str) -> Layer {
    let raw = std::fs::read(format!("{FIXTURES}{path}")).unwrap();
    let json = raw.strip_prefix(b"\x00sigstore-json\n").unwrap();
    let v: serde_json::Value = serde_json::from_slice(json).unwrap();
    Layer {
        media_type: v["mimeType"].as_str().unwrap().to_string(),
        payload: b64decode("", v["payload"].as_str().unwrap()).unwrap(),
        annotations: serde_json::from_value(v["annotations"].clone()).unwrap(),
    }
}

fn key(name: &str) -> PublicKey {
    PublicKey::from_pem(&read(&format!("{FIXTURES}{name}"))).unwrap()
}

fn rekor() -> Vec<LogKey> {
    vec![LogKey::from_key(key("rekor.pub"))]
}

fn opts(verifier: Verifier) -> Options {
    Options {
        verifier,
        hash: None,
        tlogs: Vec::new(),
        ctlogs: Vec::new(),
        ignore_tlog: true,
        ignore_sct: true,
        tsa: Vec::new(),
        annotations: BTreeMap::new(),
        now: NOW,
    }
}

fn keys(names: &[&str]) -> Options {
    opts(Verifier::Keys(names.iter().map(|n| key(n)).collect()))
}

fn err(r: Result<Verified, crate::VerifyError>) -> String {
    r.expect_err("must be rejected").to_string()
}

/// Why `r` was rejected, by class: a test that names the class fails when
/// verification fails for some other reason.
fn reason<T: std::fmt::Debug>(r: Result<T, crate::VerifyError>) -> Reason {
    r.expect_err("must be rejected").reason()
}

#[test]
fn key_only() {
    for case in [
        "dir-img-cosign-valid",
        "dir-img-cosign-valid-2",
        "dir-img-cosign-valid-with-tag",
    ] {
        let layer = derived(case);
        let v = verify_signature(&layer, DIGEST_VALID, &keys(&["cosign.pub"])).unwrap();
        assert_eq!(v.trusted_time, NOW);
        assert!(!v.tlog_verified && v.identity.is_none());
        verify_signature(&layer, DIGEST_VALID, &keys(&["cosign2.pub", "cosign.pub"])).unwrap();
        assert!(err(verify_signature(
            &layer,
            DIGEST_VALID,
            &keys(&["cosign2.pub"])
        ))
        .contains("does not verify"));
    }
    // Both signatures of dir-img-cosign-valid-2 and the mixed case's valid one.
    for file in [
        "dir-img-cosign-valid-2/signature-1",
        "dir-img-cosign-valid-2/signature-2",
        "dir-img-cosign-mixed/signature-2",
    ] {
        verify_signature(&sigstore_json(file), DIGEST_VALID, &keys(&["cosign.pub"])).unwrap();
    }
}

#[test]
fn key_only_negatives() {
    // Unknown key signature.
    for file in [
        "unknown-cosign-key.signature",
        "dir-img-cosign-mixed/signature-1",
    ] {
        assert!(err(verify_signature(
            &sigstore_json(file),
            DIGEST_VALID,
            &keys(&["cosign.pub"])
        ))
        .contains("does not verify"));
    }
    // Modified manifest: the engine's digest is of the modified manifest.
    let manifest = std::fs::read(format!(
        "{FIXTURES}dir-img-cosign-modified-manifest/manifest.json"
    ))
    .unwrap();
    let digest = format!(
        "sha256:{}",
        crate::encoding::hex(&<sha2::Sha256 as sha2::Digest>::digest(&manifest))
    );
    assert_ne!(digest, DIGEST_VALID);
    let layer = sigstore_json("dir-img-cosign-modified-manifest/signature-1");
    assert!(err(verify_signature(&layer, &digest, &keys(&["cosign.pub"]))).contains("not sha256"),);
    // Other attachment media type.
    let layer = sigstore_json("dir-img-cosign-other-attachment/signature-1");
    assert!(err(verify_signature(
        &layer,
        DIGEST_VALID,
        &keys(&["cosign.pub"])
    ))
    .contains("media type"));
    // Required Rekor but no bundle.
    let mut o = keys(&["cosign.pub"]);
    o.ignore_tlog = false;
    o.tlogs = rekor();
    assert!(err(verify_signature(
        &derived("dir-img-cosign-valid"),
        DIGEST_VALID,
        &o
    ))
    .contains("no Rekor bundle"));
    // Tampered payload, missing / bad signature annotation, malformed digest.
    let mut layer = derived("dir-img-cosign-valid");
    layer.payload = String::from_utf8(layer.payload)
        .unwrap()
        .replace("single-sample", "single-sampl3")
        .into_bytes();
    assert!(err(verify_signature(
        &layer,
        DIGEST_VALID,
        &keys(&["cosign.pub"])
    ))
    .contains("does not verify"));
    let mut layer = derived("dir-img-cosign-valid");
    layer.annotations.remove(ANNOTATION_SIGNATURE);
    assert!(err(verify_signature(
        &layer,
        DIGEST_VALID,
        &keys(&["cosign.pub"])
    ))
    .contains("annotation"));
    let mut layer = derived("dir-img-cosign-valid");
    layer
        .annotations
        .insert(ANNOTATION_SIGNATURE.into(), "!!".into());
    assert!(err(verify_signature(
        &layer,
        DIGEST_VALID,
        &keys(&["cosign.pub"])
    ))
    .contains("base64"));
    assert!(err(verify_signature(
        &derived("dir-img-cosign-valid"),
        "sha256:abc",
        &keys(&["cosign.pub"])
    ))
    .contains("not sha256:<hex>"));
    let wrong = DIGEST_VALID.replace("634a", "634b");
    assert!(err(verify_signature(
        &derived("dir-img-cosign-valid"),
        &wrong,
        &keys(&["cosign.pub"])
    ))
    .contains("not sha256:634b"));
    // Payload type.
    let mut layer = derived("dir-img-cosign-valid");
    layer.payload = String::from_utf8(layer.payload)
        .unwrap()
        .replace(
            "cosign container image signature",
            "atomic container signature",
        )
        .into_bytes();
    assert!(err(verify_signature(
        &layer,
        DIGEST_VALID,
        &keys(&["cosign.pub"])
    ))
    .contains("payload type"));
}

#[test]
fn annotations() {
    let layer = derived("dir-img-cosign-valid-with-tag");
    let mut o = keys(&["cosign.pub"]);
    o.annotations
        .insert("creator".into(), "containers/image 5.21.2-dev".into());
    verify_signature(&layer, DIGEST_VALID, &o).unwrap();
    o.annotations
        .insert("creator".into(), "someone else".into());
    assert!(err(verify_signature(&layer, DIGEST_VALID, &o)).contains("creator"));
    let mut o = keys(&["cosign.pub"]);
    o.annotations.insert("missing".into(), "x".into());
    assert!(err(verify_signature(&layer, DIGEST_VALID, &o)).contains("missing"));
    // Non-string values never equal a string.
    let mut o = keys(&["cosign.pub"]);
    o.annotations
        .insert("timestamp".into(), "1657296609".into());
    assert_eq!(
        reason(verify_signature(&layer, DIGEST_VALID, &o)),
        Reason::PayloadMismatch
    );
    // optional: null
    let mut o = keys(&["cosign.pub"]);
    o.annotations.insert("a".into(), "b".into());
    assert_eq!(
        reason(verify_signature(
            &derived("dir-img-cosign-valid"),
            DIGEST_VALID,
            &o
        )),
        Reason::PayloadMismatch
    );
}

#[test]
fn key_and_rekor() {
    let layer = derived("dir-img-cosign-key-rekor-valid");
    for names in [
        &["cosign2.pub"][..],
        &["cosign2.pub", "cosign.pub"],
        &["cosign.pub", "cosign2.pub"],
    ] {
        for tlogs in [
            rekor(),
            vec![LogKey::from_key(key("cosign.pub")), rekor()[0].clone()],
        ] {
            let mut o = keys(names);
            o.ignore_tlog = false;
            o.tlogs = tlogs;
            let v = verify_signature(&layer, DIGEST_REKOR, &o).unwrap();
            assert_eq!(v.trusted_time, 1674251859);
            assert!(v.tlog_verified);
        }
    }
    let mut o = keys(&["cosign2.pub"]);
    o.ignore_tlog = false;
    // cosign.pub as the Rekor key.
    o.tlogs = vec![LogKey::from_key(key("cosign.pub"))];
    assert!(err(verify_signature(&layer, DIGEST_REKOR, &o)).contains("not trusted"));
    // No Rekor key.
    o.tlogs = Vec::new();
    assert!(err(verify_signature(&layer, DIGEST_REKOR, &o)).contains("no trusted Rekor"));
    // SET tampered.
    o.tlogs = rekor();
    let mut bad = layer.clone();
    let b = bad.annotations[ANNOTATION_BUNDLE]
        .replace("\"logIndex\":11608800", "\"logIndex\":11608801");
    bad.annotations.insert(ANNOTATION_BUNDLE.into(), b);
    assert!(err(verify_signature(&bad, DIGEST_REKOR, &o)).contains("SET"));
    let mut bad = layer.clone();
    bad.annotations.insert(ANNOTATION_BUNDLE.into(), "{".into());
    assert!(err(verify_signature(&bad, DIGEST_REKOR, &o)).contains("bundle"));
    // The key-only layer with this layer's bundle: body hash and signature differ.
    let mut bad = derived("dir-img-cosign-valid");
    bad.annotations.insert(
        ANNOTATION_BUNDLE.into(),
        layer.annotations[ANNOTATION_BUNDLE].clone(),
    );
    let mut o2 = keys(&["cosign.pub"]);
    o2.ignore_tlog = false;
    o2.tlogs = rekor();
    assert!(err(verify_signature(&bad, DIGEST_VALID, &o2)).contains("Rekor entry"));
}

fn keyless(email: &str) -> Options {
    let mut o = opts(Verifier::Keyless {
        identities: vec![IdentityRule {
            issuer: Some("https://github.com/login/oauth".into()),
            subject: Some(email.into()),
            ..IdentityRule::default()
        }],
        roots: certs(&format!("{FIXTURES}fulcio_v1.crt.pem")),
    });
    o.ignore_tlog = false;
    o.tlogs = rekor();
    o
}

#[test]
fn fulcio_keyless() {
    let layer = derived("dir-img-cosign-fulcio-rekor-valid");
    let v = verify_signature(&layer, DIGEST_REKOR, &keyless("mitr@redhat.com")).unwrap();
    assert_eq!(v.trusted_time, 1674247893);
    let id = v.identity.unwrap();
    assert_eq!(id.sans, vec!["mitr@redhat.com"]);
    assert_eq!(id.issuer.as_deref(), Some("https://github.com/login/oauth"));
    assert!(v.certificate.is_some());
    // Wrong email.
    assert!(err(verify_signature(
        &layer,
        DIGEST_REKOR,
        &keyless("this-does-not-match@example.com")
    ))
    .contains("none of the expected identities"));
    // cosign.pub as Rekor key; no Rekor key.
    let mut o = keyless("mitr@redhat.com");
    o.tlogs = vec![LogKey::from_key(key("cosign.pub"))];
    assert_eq!(
        reason(verify_signature(&layer, DIGEST_REKOR, &o)),
        Reason::TransparencyLog
    );
    o.tlogs = Vec::new();
    assert_eq!(
        reason(verify_signature(&layer, DIGEST_REKOR, &o)),
        Reason::TransparencyLog
    );
    // Without the log the trusted time is now, when the certificate has expired.
    let mut o = keyless("mitr@redhat.com");
    o.ignore_tlog = true;
    assert!(err(verify_signature(&layer, DIGEST_REKOR, &o)).contains("not valid at"));
    // Certificate annotation removed.
    let mut bad = layer.clone();
    bad.annotations.remove(ANNOTATION_CERTIFICATE);
    assert!(err(verify_signature(
        &bad,
        DIGEST_REKOR,
        &keyless("mitr@redhat.com")
    ))
    .contains("certificate annotation"));
    // Chain annotation removed and no intermediate configured.
    let mut bad = layer.clone();
    bad.annotations.remove(ANNOTATION_CHAIN);
    assert!(err(verify_signature(
        &bad,
        DIGEST_REKOR,
        &keyless("mitr@redhat.com")
    ))
    .contains("chain"));
    // Wrong root.
    let mut o = keyless("mitr@redhat.com");
    o.verifier = Verifier::Keyless {
        identities: vec![],
        roots: certs(&format!("{FIXTURES}pki_root_crts.pem")),
    };
    assert_eq!(
        reason(verify_signature(&layer, DIGEST_REKOR, &o)),
        Reason::UntrustedChain
    );
    // SCT required: the fixture has none.
    let mut o = keyless("mitr@redhat.com");
    o.ignore_sct = false;
    assert!(err(verify_signature(&layer, DIGEST_REKOR, &o)).contains("SCT"));
    // A different certificate than the one logged.
    let mut bad = layer.clone();
    bad.annotations.insert(
        ANNOTATION_CERTIFICATE.into(),
        read(&format!("{DERIVED}dir-img-cosign-pki-valid/cert.pem")),
    );
    assert_eq!(
        reason(verify_signature(
            &bad,
            DIGEST_REKOR,
            &keyless("mitr@redhat.com")
        )),
        Reason::BadSignature
    );
}

fn pki(roots_and: &[&str]) -> Options {
    let mut roots = Vec::new();
    for f in roots_and {
        roots.extend(certs(&format!("{FIXTURES}{f}")));
    }
    opts(Verifier::Keyless {
        identities: vec![IdentityRule {
            subject: Some("qiwan@redhat.com".into()),
            ..IdentityRule::default()
        }],
        roots,
    })
}

#[test]
fn own_pki() {
    let layer = derived("dir-img-cosign-pki-valid");
    let both = pki(&["pki_root_crts.pem", "pki_intermediate_crts.pem"]);
    let v = verify_signature(&layer, DIGEST_PKI, &both).unwrap();
    assert!(v
        .identity
        .unwrap()
        .sans
        .contains(&"myhost.example.com".to_string()));
    // Roots only works while the chain annotation carries the intermediate.
    verify_signature(&layer, DIGEST_PKI, &pki(&["pki_root_crts.pem"])).unwrap();
    let mut no_chain = layer.clone();
    no_chain.annotations.remove(ANNOTATION_CHAIN);
    verify_signature(&no_chain, DIGEST_PKI, &both).unwrap();
    assert!(err(verify_signature(
        &no_chain,
        DIGEST_PKI,
        &pki(&["pki_root_crts.pem"])
    ))
    .contains("does not chain"));
    let mut no_cert = layer.clone();
    no_cert.annotations.remove(ANNOTATION_CERTIFICATE);
    assert_eq!(
        reason(verify_signature(&no_cert, DIGEST_PKI, &both)),
        Reason::Malformed
    );
    // Wrong email.
    let mut o = both.clone();
    if let Verifier::Keyless { identities, .. } = &mut o.verifier {
        identities[0].subject = Some("someone@example.com".into());
    }
    assert!(err(verify_signature(&layer, DIGEST_PKI, &o)).contains("qiwan@redhat.com"));
}

#[test]
fn certificate_verifier() {
    let layer = derived("dir-img-cosign-pki-valid");
    let cert = certs(&format!("{DERIVED}dir-img-cosign-pki-valid/cert.pem")).remove(0);
    let mut chain = certs(&format!("{FIXTURES}pki_intermediate_crts.pem"));
    chain.extend(certs(&format!("{FIXTURES}pki_root_crts.pem")));
    let v = verify_signature(
        &layer,
        DIGEST_PKI,
        &opts(Verifier::Certificate {
            cert: cert.clone(),
            chain: Vec::new(),
        }),
    )
    .unwrap();
    assert!(v.certificate.is_some());
    verify_signature(
        &layer,
        DIGEST_PKI,
        &opts(Verifier::Certificate {
            cert: cert.clone(),
            chain: chain.clone(),
        }),
    )
    .unwrap();
    // A chain that does not lead to the cert's issuer.
    let fulcio = certs(&format!("{FIXTURES}fulcio_v1.crt.pem"));
    assert_eq!(
        reason(verify_signature(
            &layer,
            DIGEST_PKI,
            &opts(Verifier::Certificate {
                cert: cert.clone(),
                chain: fulcio
            })
        )),
        Reason::UntrustedChain
    );
    // Another certificate's key.
    let other = certs(&format!(
        "{DERIVED}dir-img-cosign-fulcio-rekor-valid/cert.pem"
    ))
    .remove(0);
    assert_eq!(
        reason(verify_signature(
            &layer,
            DIGEST_PKI,
            &opts(Verifier::Certificate {
                cert: other,
                chain: Vec::new()
            })
        )),
        Reason::BadSignature
    );
}

#[test]
fn attestation_with_key() {
    use p256::ecdsa::signature::Signer;
    use spki::EncodePublicKey;
    let sk = p256::ecdsa::SigningKey::from_slice(&[11u8; 32]).unwrap();
    let pk = PublicKey::from_pem(&pem_encode(
        "PUBLIC KEY",
        sk.verifying_key().to_public_key_der().unwrap().as_bytes(),
    ))
    .unwrap();
    let hex = DIGEST_VALID.strip_prefix("sha256:").unwrap();
    let make = |statement: &str| -> Layer {
        let pae = crate::dsse::Envelope::pae("application/vnd.in-toto+json", statement.as_bytes());
        let sig: p256::ecdsa::Signature = sk.sign(&pae);
        let env = format!(
            r#"{{"payloadType":"application/vnd.in-toto+json","payload":"{}","signatures":[{{"keyid":"","sig":"{}"}}]}}"#,
            b64encode(statement.as_bytes()),
            b64encode(sig.to_der().as_bytes())
        );
        Layer {
            media_type: MEDIA_TYPE_DSSE.into(),
            payload: env.into_bytes(),
            annotations: [(ANNOTATION_SIGNATURE.to_string(), String::new())].into(),
        }
    };
    let o = opts(Verifier::Keys(vec![pk]));
    for t in [
        "https://in-toto.io/Statement/v0.1",
        "https://in-toto.io/Statement/v1",
    ] {
        let st = format!(
            r#"{{"_type":"{t}","subject":[{{"name":"x","digest":{{"sha256":"{hex}"}}}}],"predicateType":"https://slsa.dev/provenance/v1","predicate":{{}}}}"#
        );
        let v = verify_attestation(&make(&st), DIGEST_VALID, &o).unwrap();
        assert_eq!(v["predicateType"], "https://slsa.dev/provenance/v1");
    }
    let st = format!(
        r#"{{"_type":"https://in-toto.io/Statement/v1","subject":[{{"digest":{{"sha256":"{hex}"}}}}]}}"#
    );
    let layer = make(&st);
    // Wrong digest, wrong key, wrong media type, wrong _type, tampered, needs tlog.
    assert!(verify_attestation(&layer, DIGEST_REKOR, &o)
        .unwrap_err()
        .to_string()
        .contains("subjects"));
    assert_eq!(
        reason(verify_attestation(
            &layer,
            DIGEST_VALID,
            &keys(&["cosign.pub"])
        )),
        Reason::BadSignature
    );
    let mut bad = layer.clone();
    bad.media_type = MEDIA_TYPE_SIMPLESIGNING.into();
    assert!(verify_attestation(&bad, DIGEST_VALID, &o)
        .unwrap_err()
        .to_string()
        .contains("media type"));
    let bad = make(&st.replace("Statement/v1", "Statement/v9"));
    assert!(verify_attestation(&bad, DIGEST_VALID, &o)
        .unwrap_err()
        .to_string()
        .contains("_type"));
    let mut bad = layer.clone();
    bad.payload = String::from_utf8(bad.payload)
        .unwrap()
        .replacen("eyJ", "eyK", 1)
        .into_bytes();
    assert_eq!(
        reason(verify_attestation(&bad, DIGEST_VALID, &o)),
        Reason::BadSignature
    );
    let mut o2 = o.clone();
    o2.ignore_tlog = false;
    o2.tlogs = rekor();
    assert!(verify_attestation(&layer, DIGEST_VALID, &o2)
        .unwrap_err()
        .to_string()
        .contains("no Rekor bundle"));
    // A signature layer is not an attestation and vice versa.
    assert_eq!(
        reason(verify_signature(&layer, DIGEST_VALID, &o)),
        Reason::Malformed
    );
    // `annotations` are the statement subject's, as cosign's
    // IntotoSubjectClaimVerifier reads them.
    let st = format!(
        r#"{{"_type":"https://in-toto.io/Statement/v1","subject":[{{"digest":{{"sha256":"{hex}"}},"annotations":{{"env":"prod"}}}}]}}"#
    );
    let annotated = make(&st);
    let mut want = o.clone();
    want.annotations.insert("env".into(), "prod".into());
    verify_attestation(&annotated, DIGEST_VALID, &want).unwrap();
    assert!(verify_attestation(&layer, DIGEST_VALID, &want)
        .unwrap_err()
        .to_string()
        .contains("\"env\" is missing"));
    want.annotations.insert("env".into(), "dev".into());
    assert!(verify_attestation(&annotated, DIGEST_VALID, &want)
        .unwrap_err()
        .to_string()
        .contains("required \"dev\""));
}

#[test]
fn subject_annotations() {
    let hex = DIGEST_VALID.strip_prefix("sha256:").unwrap();
    let statement = serde_json::json!({
        "subject": [
            {"digest": {"sha256": "00"}, "annotations": {"env": "prod"}},
            {"digest": {"sha256": hex}, "annotations": {"env": "dev", "n": 1}},
        ]
    });
    let want = |k: &str, v: &str| BTreeMap::from([(k.to_string(), v.to_string())]);
    let check = |w| check_subject_annotations(&statement, DIGEST_VALID, &w);
    assert!(check(BTreeMap::new()).is_ok());
    assert!(check(want("env", "dev")).is_ok());
    // Only the image's own subject counts, and non-strings never match.
    let differs = |key: &str, have: &str, want: &str| {
        Err(LayerError::SubjectAnnotation {
            key: key.into(),
            have: have.into(),
            want: want.into(),
        }
        .into())
    };
    assert_eq!(
        check(want("env", "prod")),
        differs("env", "\"dev\"", "prod")
    );
    assert_eq!(check(want("n", "1")), differs("n", "1", "1"));
    assert!(
        check_subject_annotations(&statement, DIGEST_REKOR, &want("env", "dev"))
            .unwrap_err()
            .to_string()
            .contains("no subject")
    );
}
