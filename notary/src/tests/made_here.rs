//! Notary envelopes: focused negatives on envelopes made here.

use super::*;

mod made {
    use super::*;
    use base64::Engine;
    use ivpol_verify::x509::der_wrap;
    use p256::ecdsa::signature::Signer;
    use p256::pkcs8::EncodePublicKey;

    pub(super) fn key() -> p256::ecdsa::SigningKey {
        p256::ecdsa::SigningKey::from_slice(&[9u8; 32]).unwrap()
    }

    fn seq(parts: &[&[u8]]) -> Vec<u8> {
        der_wrap(0x30, &parts.concat())
    }

    /// A self-signed P-256 code-signing leaf (KU critical digitalSignature),
    /// valid 2025..2100.
    pub(super) fn cert(key: &p256::ecdsa::SigningKey) -> Certificate {
        let alg = seq(&[&[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02]]);
        let cn = der_wrap(0x0c, b"made here");
        let atv = seq(&[&[0x06, 0x03, 0x55, 0x04, 0x03], &cn]);
        let name = seq(&[&der_wrap(0x31, &atv)]);
        let validity = seq(&[
            &der_wrap(0x17, b"250101000000Z"),
            &der_wrap(0x18, b"21000101000000Z"),
        ]);
        let spki = key.verifying_key().to_public_key_der().unwrap();
        let ku = seq(&[
            &[0x06, 0x03, 0x55, 0x1d, 0x0f],
            &[0x01, 0x01, 0xff],
            &der_wrap(0x04, &[0x03, 0x02, 0x07, 0x80]),
        ]);
        let exts = der_wrap(0xa3, &seq(&[&ku]));
        let tbs = seq(&[
            &[0xa0, 0x03, 0x02, 0x01, 0x02],
            &[0x02, 0x01, 0x01],
            &alg,
            &name,
            &validity,
            &name,
            spki.as_bytes(),
            &exts,
        ]);
        let sig: p256::ecdsa::Signature = key.sign(&tbs);
        let mut bits = vec![0u8];
        bits.extend_from_slice(sig.to_der().as_bytes());
        let der = seq(&[&tbs, &alg, &der_wrap(0x03, &bits)]);
        Certificate::from_der(&der).unwrap()
    }

    fn b64url(b: &[u8]) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
    }

    /// A JWS envelope over `payload` with `protected`, signed with SHA-`bits`.
    pub(super) fn jws(protected: &serde_json::Value, payload: &serde_json::Value) -> Vec<u8> {
        let key = key();
        let p = b64url(&serde_json::to_vec(protected).unwrap());
        let body = b64url(&serde_json::to_vec(payload).unwrap());
        let input = format!("{p}.{body}");
        let sig: p256::ecdsa::Signature = if protected["alg"] == "ES384" {
            use p256::ecdsa::signature::hazmat::PrehashSigner;
            let digest = ivpol_verify::keys::HashAlgorithm::Sha384.digest(input.as_bytes());
            key.sign_prehash(&digest).unwrap()
        } else {
            key.sign(input.as_bytes())
        };
        serde_json::to_vec(&serde_json::json!({
            "payload": body,
            "protected": p,
            "header": {"x5c": [ivpol_verify::encoding::b64encode(cert(&key).der())]},
            "signature": b64url(&sig.to_bytes()),
        }))
        .unwrap()
    }

    pub(super) fn protected() -> serde_json::Value {
        serde_json::json!({
            "alg": "ES256",
            "cty": MEDIA_TYPE_PAYLOAD,
            "crit": ["io.cncf.notary.signingScheme"],
            "io.cncf.notary.signingScheme": "notary.x509",
            "io.cncf.notary.signingTime": "2026-01-01T00:00:00Z",
        })
    }

    pub(super) fn payload() -> serde_json::Value {
        serde_json::json!({"targetArtifact": {
            "mediaType": OCI_MANIFEST,
            "digest": e2e_target().digest,
            "size": 517,
        }})
    }

    pub(super) fn trust() -> Trust {
        Trust {
            roots: vec![cert(&key())],
            ..Trust::default()
        }
    }
}

#[test]
fn made_envelope_verifies() {
    let env = made::jws(&made::protected(), &made::payload());
    let v = ok(&env, MEDIA_TYPE_JWS, &e2e_target(), &made::trust());
    assert_eq!(v.chain.len(), 1);
}

#[test]
fn tampered_payload_fails() {
    let env = mock("ca_valid_sig_env.json");
    let mut v: serde_json::Value = serde_json::from_slice(&env).unwrap();
    let forged = serde_json::json!({"targetArtifact": {
        "mediaType": DOCKER_V2,
        "digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000",
        "size": 528,
    }});
    v["payload"] = serde_json::Value::String(base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        serde_json::to_vec(&forged).unwrap(),
    ));
    let forged_target = target(
        "sha256:0000000000000000000000000000000000000000000000000000000000000000",
        DOCKER_V2,
        528,
    );
    fails(
        &serde_json::to_vec(&v).unwrap(),
        MEDIA_TYPE_JWS,
        &forged_target,
        &ca(&[NOTATION_ROOT]),
        "signature is invalid. Error: PS384 signature does not verify",
    );
}

#[test]
fn wrong_target_fails() {
    let env = mock("ca_valid_sig_env.json");
    let trust = ca(&[NOTATION_ROOT]);
    let mut t = mock_target();
    t.digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111".into();
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &t,
        &trust,
        "signature does not match the given artifact",
    );
    let mut t = mock_target();
    t.size = 529;
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &t,
        &trust,
        "signature does not match the given artifact",
    );
    let mut t = mock_target();
    t.media_type = OCI_MANIFEST.into();
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &t,
        &trust,
        "signature does not match the given artifact",
    );
}

#[test]
fn unknown_critical_header_fails() {
    let mut p = made::protected();
    p["crit"] = serde_json::json!(["io.cncf.notary.signingScheme", "com.example.mustUnderstand"]);
    p["com.example.mustUnderstand"] = serde_json::json!("yes");
    fails(
        &made::jws(&p, &made::payload()),
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &made::trust(),
        "signature has the critical header \"com.example.mustUnderstand\"",
    );
    // Marked critical but absent.
    let mut p = made::protected();
    p["crit"] = serde_json::json!(["io.cncf.notary.signingScheme", "absent"]);
    fails(
        &made::jws(&p, &made::payload()),
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &made::trust(),
        "\"absent\" header is marked critical but not present",
    );
    // Expiry not marked critical.
    let mut p = made::protected();
    p["io.cncf.notary.expiry"] = serde_json::json!("2099-01-01T00:00:00Z");
    fails(
        &made::jws(&p, &made::payload()),
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &made::trust(),
        "these required headers are not marked as critical: [io.cncf.notary.expiry]",
    );
    // No crit at all.
    let mut p = made::protected();
    p.as_object_mut().unwrap().remove("crit");
    fails(
        &made::jws(&p, &made::payload()),
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &made::trust(),
        "missing \"crit\" header",
    );
}

#[test]
fn alg_key_mismatch_fails() {
    let mut p = made::protected();
    p["alg"] = serde_json::json!("ES384");
    fails(
        &made::jws(&p, &made::payload()),
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &made::trust(),
        "mismatch between signature algorithm derived from signing certificate (ES256) and signing algorithm specified (ES384)",
    );
    let mut p = made::protected();
    p["alg"] = serde_json::json!("none");
    fails(
        &made::jws(&p, &made::payload()),
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &made::trust(),
        "signature algorithm \"none\" is not supported",
    );
}

#[test]
fn expired_signature_fails() {
    let mut p = made::protected();
    p["crit"] = serde_json::json!(["io.cncf.notary.signingScheme", "io.cncf.notary.expiry"]);
    p["io.cncf.notary.expiry"] = serde_json::json!("2026-06-01T00:00:00Z");
    fails(
        &made::jws(&p, &made::payload()),
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &made::trust(),
        "digital signature has expired on \"Mon, 01 Jun 2026 00:00:00 +0000\"",
    );
}

#[test]
fn untrusted_root_and_bad_inputs_fail() {
    let env = made::jws(&made::protected(), &made::payload());
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &ca(&[NOTATION_ROOT]),
        "the signature's certificate chain does not contain any trusted certificate",
    );
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &Trust::default(),
        "no trusted certificates are found to verify authenticity",
    );
    fails(
        &env,
        "application/json",
        &e2e_target(),
        &made::trust(),
        "not supported",
    );
    fails(
        &vec![b' '; MAX_ENVELOPE_BYTES + 1],
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &made::trust(),
        "more than the",
    );
    // An extra top-level member.
    let mut v: serde_json::Value = serde_json::from_slice(&env).unwrap();
    v["signatures"] = serde_json::json!([]);
    fails(
        &serde_json::to_vec(&v).unwrap(),
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &made::trust(),
        "only payload, protected, header and signature are allowed",
    );
    // A JWS handed over as COSE, and garbage CBOR.
    fails(
        &env,
        MEDIA_TYPE_COSE,
        &e2e_target(),
        &made::trust(),
        "not a COSE_Sign1_Tagged",
    );
    fails(
        &[0xd2, 0x84, 0x40],
        MEDIA_TYPE_COSE,
        &e2e_target(),
        &made::trust(),
        "not a COSE_Sign1_Tagged",
    );
    // Wrong cty.
    let mut p = made::protected();
    p["cty"] = serde_json::json!("application/json");
    fails(
        &made::jws(&p, &made::payload()),
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &made::trust(),
        "payload content type \"application/json\" not supported",
    );
    // An unknown signing scheme.
    let mut p = made::protected();
    p["io.cncf.notary.signingScheme"] = serde_json::json!("notary.default");
    fails(
        &made::jws(&p, &made::payload()),
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &made::trust(),
        "unsupported SigningScheme: `notary.default`",
    );
}

#[test]
fn tampered_cose_fails() {
    let path = "notation-go/internal/testdata/cose_signature.sig";
    let mut env = read(path);
    let trust = Trust {
        roots: own_root(&env, MEDIA_TYPE_COSE),
        ..Trust::default()
    };
    // Flip a byte of the payload's digest text.
    let at = env
        .windows(7)
        .position(|w| w == b"sha256:")
        .expect("payload digest");
    env[at + 10] ^= 1;
    let t = target(
        "sha256:19dbd2e48e921426ee8ace4dc892edfb2ecdc1d1a72d5416c83670c30acecef0",
        OCI_MANIFEST,
        481,
    );
    fails(&env, MEDIA_TYPE_COSE, &t, &trust, "signature is invalid");
}

/// `made::jws` with a made RFC 3161 token over its signature (SHA-`imprint`
/// imprint, with or without signing-certificate-v2) in its unprotected
/// header, and the trust that makes the TSA trusted.
fn made_timestamped(imprint: HashAlgorithm, v2: bool) -> (Vec<u8>, Trust) {
    use ivpol_verify::timestamp::made as tsa;
    let env = made::jws(&made::protected(), &made::payload());
    let mut v: serde_json::Value = serde_json::from_slice(&env).unwrap();
    let signature = base64::Engine::decode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        v["signature"].as_str().unwrap(),
    )
    .unwrap();
    let (key, cert) = (tsa::key(), tsa::tsa_cert(&tsa::key(), "made TSA", 1));
    let attrs = if v2 { vec![tsa::v2_for(&cert)] } else { vec![] };
    let token = tsa::token(&key, &cert, &signature, imprint, &attrs);
    v["header"]["io.cncf.notary.timestampSignature"] =
        serde_json::Value::String(ivpol_verify::encoding::b64encode(&token));
    let trust = Trust {
        tsa_roots: vec![cert],
        ..made::trust()
    };
    (serde_json::to_vec(&v).unwrap(), trust)
}

#[test]
fn made_timestamp_verifies_with_signing_certificate_v2_and_the_leaf_hash() {
    let (env, trust) = made_timestamped(HashAlgorithm::Sha256, true);
    let v = ok(&env, MEDIA_TYPE_JWS, &e2e_target(), &trust);
    assert_eq!(
        v.signing_time,
        Some(ivpol_verify::timestamp::made::GEN_TIME)
    );
}

#[test]
fn made_timestamp_without_signing_certificate_v2_fails() {
    let (env, trust) = made_timestamped(HashAlgorithm::Sha256, false);
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &trust,
        "failed to verify the timestamp countersignature with error: failed to get SigningCertificateV2 from signed attributes: attribute not found",
    );
}

#[test]
fn made_timestamp_with_another_imprint_hash_fails() {
    // ES256 signs with SHA-256; a SHA-384 imprint over the same bytes is refused.
    let (env, trust) = made_timestamped(HashAlgorithm::Sha384, true);
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &trust,
        "failed to verify the timestamp countersignature with error: invalid TSTInfo: the message imprint is a sha384 digest, but the signature algorithm hashes with sha256",
    );
}

/// Where a made COSE envelope puts its x5chain (label 33).
enum X5 {
    /// Unprotected, as this value.
    Unprotected(coset::cbor::value::Value),
    /// Protected only, as an array.
    Protected,
}

/// A COSE_Sign1 counterpart of `made::jws` (ES256, `notary.x509`).
fn made_cose(x5: X5) -> Vec<u8> {
    use coset::cbor::value::Value;
    use coset::TaggedCborSerializable;
    use coset::{iana, CoseSign1Builder, HeaderBuilder, RegisteredLabelWithPrivate};
    use p256::ecdsa::signature::Signer;
    let key = made::key();
    let leaf = Value::Bytes(made::cert(&key).der().to_vec());
    let mut protected = HeaderBuilder::new()
        .algorithm(iana::Algorithm::ES256)
        .content_type(MEDIA_TYPE_PAYLOAD.to_string())
        .add_critical_label(RegisteredLabelWithPrivate::Text(
            "io.cncf.notary.signingScheme".to_string(),
        ))
        .text_value(
            "io.cncf.notary.signingScheme".to_string(),
            Value::Text("notary.x509".to_string()),
        )
        .text_value(
            "io.cncf.notary.signingTime".to_string(),
            Value::Tag(1, Box::new(Value::Integer(1_767_225_600.into()))),
        );
    let mut unprotected = HeaderBuilder::new();
    match x5 {
        X5::Unprotected(v) => unprotected = unprotected.value(33, v),
        X5::Protected => protected = protected.value(33, Value::Array(vec![leaf])),
    }
    CoseSign1Builder::new()
        .protected(protected.build())
        .unprotected(unprotected.build())
        .payload(serde_json::to_vec(&made::payload()).unwrap())
        .create_signature(b"", |tbs| {
            let sig: p256::ecdsa::Signature = key.sign(tbs);
            sig.to_bytes().to_vec()
        })
        .build()
        .to_tagged_vec()
        .unwrap()
}

#[test]
fn cose_x5chain_forms() {
    use coset::cbor::value::Value;
    let leaf = || Value::Bytes(made::cert(&made::key()).der().to_vec());
    let (t, trust) = (e2e_target(), made::trust());
    // RFC 9360: an array of bstr, or one certificate as a single bstr.
    let v = ok(
        &made_cose(X5::Unprotected(Value::Array(vec![leaf()]))),
        MEDIA_TYPE_COSE,
        &t,
        &trust,
    );
    assert_eq!(v.chain.len(), 1);
    let v = ok(
        &made_cose(X5::Unprotected(leaf())),
        MEDIA_TYPE_COSE,
        &t,
        &trust,
    );
    assert_eq!(v.chain, vec![made::cert(&made::key())]);
    // notation-core-go reads the chain from the unprotected header only.
    fails(
        &made_cose(X5::Protected),
        MEDIA_TYPE_COSE,
        &t,
        &trust,
        "certificate chain is not present",
    );
    // Neither an array nor a bstr, an array holding a non-bstr, an empty
    // array.
    for bad in [
        Value::Text("MIIB".to_string()),
        Value::Array(vec![leaf(), Value::Integer(1.into())]),
        Value::Array(vec![]),
    ] {
        fails(
            &made_cose(X5::Unprotected(bad)),
            MEDIA_TYPE_COSE,
            &t,
            &trust,
            "certificate chain is not present",
        );
    }
    // The MAX_CHAIN_CERTS bound holds for the array form.
    fails(
        &made_cose(X5::Unprotected(Value::Array(vec![
            leaf();
            MAX_CHAIN_CERTS + 1
        ]))),
        MEDIA_TYPE_COSE,
        &t,
        &trust,
        "certificate chain has 11 certificates, more than the 10 allowed",
    );
    // A single bstr that is not a certificate.
    fails(
        &made_cose(X5::Unprotected(Value::Bytes(vec![0x30, 0x00]))),
        MEDIA_TYPE_COSE,
        &t,
        &trust,
        "invalid X.509 certificate",
    );
}
