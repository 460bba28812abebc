//! Bundles read from the vendored sigstore-conformance cases, each
//! version, and the malformed, inconsistent and oversized ones refused.

use super::*;
use crate::Reason;

fn case(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/../conformance/sigstore/{name}/bundle.sigstore.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn edit(name: &str, f: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_slice(&case(name)).unwrap();
    f(&mut v);
    serde_json::to_vec(&v).unwrap()
}

#[test]
fn parses_each_bundle_version() {
    let b = Bundle::parse(&case("happy-path-v0.1")).unwrap();
    assert_eq!(b.version, BundleVersion::V01);
    assert!(matches!(b.material, Material::Chain(ref c) if c.len() == 1));
    let e = &b.tlog_entries[0];
    assert_eq!(
        (e.kind.as_str(), e.version.as_str()),
        ("hashedrekord", "0.0.1")
    );
    assert_eq!(e.integrated_time, Some(1_689_177_396));
    assert!(e.set.is_some() && e.proof.is_some());

    let b = Bundle::parse(&case("happy-path-v0.3-new-mediaType")).unwrap();
    assert_eq!(b.version, BundleVersion::V03);
    assert!(matches!(b.material, Material::Certificate(_)));

    let b = Bundle::parse(&case("rekor2-happy-path")).unwrap();
    let e = &b.tlog_entries[0];
    assert!(e.is_rekor_v2() && e.set.is_none() && e.integrated_time.is_none());
    assert_eq!(b.timestamps.len(), 1);
    let p = e.proof.as_ref().unwrap();
    assert_eq!((p.log_index, p.tree_size, p.hashes.len()), (735, 736, 8));

    let b = Bundle::parse(&case("happy-path-intoto-in-dsse-v3")).unwrap();
    assert!(
        matches!(b.content, Content::Dsse(ref d) if d.payload_type == "application/vnd.in-toto+json")
    );

    let b = Bundle::parse(&case("managed-key-happy-path")).unwrap();
    assert!(matches!(b.material, Material::PublicKey { hint: Some(_) }));
}

#[test]
fn rejects_malformed_bundles() {
    type Is = fn(&BundleError) -> bool;
    let cases: [(&str, &str, Is); 7] = [
        ("bundle-malformed-json_fail", "not valid JSON", |e| {
            matches!(e, BundleError::Json(_))
        }),
        ("bundle-unknown-version_fail", "media type", |e| {
            matches!(e, BundleError::MediaType(_))
        }),
        (
            "bundle-empty-certificate-chain_fail",
            "empty certificate chain",
            |e| matches!(e, BundleError::EmptyChain),
        ),
        ("bundle-invalid-base64-signature_fail", "base64", |e| {
            matches!(
                e,
                BundleError::Base64 {
                    what: "messageSignature.signature",
                    ..
                }
            )
        }),
        ("bundle-negative-log-index_fail", "negative", |e| {
            matches!(e, BundleError::Negative { .. })
        }),
        (
            "intoto-missing-inclusion-proof_fail",
            "no inclusion proof",
            |e| matches!(e, BundleError::NoProof(_)),
        ),
        (
            "rekor2-no-inclusion-proof_fail",
            "no inclusion proof",
            |e| matches!(e, BundleError::NoProof(_)),
        ),
    ];
    for (name, why, is) in cases {
        let e = Bundle::parse(&case(name)).unwrap_err();
        assert!(is(&e), "{name}: {e:?}");
        assert!(e.to_string().contains(why), "{name}: {e}");
    }
}

#[test]
fn rejects_inconsistent_content_and_material() {
    let e = Bundle::parse(&edit("happy-path-v0.3", |v| {
        v["dsseEnvelope"] = serde_json::json!({"payload":"", "payloadType":"x", "signatures":[]});
    }))
    .unwrap_err();
    assert_eq!(e, BundleError::BothContents);
    let e = Bundle::parse(&edit("happy-path-v0.3", |v| {
        v.as_object_mut().unwrap().remove("messageSignature");
    }))
    .unwrap_err();
    assert_eq!(e, BundleError::NoContent);
    // a v0.3 bundle with a chain, and a v0.1 bundle with a bare certificate
    let e = Bundle::parse(&edit("happy-path-v0.1", |v| {
        v["mediaType"] = "application/vnd.dev.sigstore.bundle.v0.3+json".into();
    }))
    .unwrap_err();
    assert_eq!(e, BundleError::ChainInV03);
    let e = Bundle::parse(&edit("happy-path-v0.3", |v| {
        v["mediaType"] = "application/vnd.dev.sigstore.bundle+json;version=0.1".into();
    }))
    .unwrap_err();
    assert_eq!(e, BundleError::CertificateInV02);
    // two kinds of material
    let e = Bundle::parse(&edit("happy-path-v0.3", |v| {
        v["verificationMaterial"]["publicKey"] = serde_json::json!({"hint": "x"});
    }))
    .unwrap_err();
    assert_eq!(e, BundleError::MaterialKinds);
    // a DSSE envelope with two signatures
    let e = Bundle::parse(&edit("happy-path-intoto-in-dsse-v3", |v| {
        let s = v["dsseEnvelope"]["signatures"][0].clone();
        v["dsseEnvelope"]["signatures"]
            .as_array_mut()
            .unwrap()
            .push(s);
    }))
    .unwrap_err();
    assert_eq!(e, BundleError::DsseSignatures(2));
    // a v0.1 entry without a SET
    let e = Bundle::parse(&edit("happy-path-v0.1", |v| {
        v["verificationMaterial"]["tlogEntries"][0]
            .as_object_mut()
            .unwrap()
            .remove("inclusionPromise");
    }))
    .unwrap_err();
    assert_eq!(e, BundleError::NoPromise);
    assert_eq!(e.reason(), Reason::TransparencyLog);
    // a root hash that is not 32 bytes
    let e = Bundle::parse(&edit("happy-path-v0.3", |v| {
        v["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["rootHash"] = "AAAA".into();
    }))
    .unwrap_err();
    assert!(matches!(
        e,
        BundleError::HashLength {
            what: "inclusion proof rootHash",
            len: 3
        }
    ));
}

#[test]
fn enforces_the_size_limits() {
    let big = vec![b' '; MAX_BUNDLE_BYTES + 1];
    let e = Bundle::parse(&big).unwrap_err();
    assert_eq!(e, BundleError::TooLarge(MAX_BUNDLE_BYTES + 1));
    assert!(e.to_string().contains("allowed"), "{e}");
    let e = Bundle::parse(&edit("happy-path-v0.3", |v| {
        let entry = v["verificationMaterial"]["tlogEntries"][0].clone();
        v["verificationMaterial"]["tlogEntries"] = vec![entry; MAX_TLOG_ENTRIES + 1].into();
    }))
    .unwrap_err();
    assert_eq!(e, BundleError::TooManyEntries(MAX_TLOG_ENTRIES + 1));
    assert!(e.to_string().contains("allowed"), "{e}");
    let e = Bundle::parse(&edit("happy-path-v0.3", |v| {
        let p = &mut v["verificationMaterial"]["tlogEntries"][0]["inclusionProof"];
        let h = p["hashes"][0].clone();
        p["hashes"] = vec![h; MAX_PROOF_HASHES + 1].into();
    }))
    .unwrap_err();
    assert_eq!(e, BundleError::TooManyProofHashes(MAX_PROOF_HASHES + 1));
    assert!(e.to_string().contains("allowed"), "{e}");
    let e = Bundle::parse(&edit("rekor2-happy-path", |v| {
        let t = &mut v["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"];
        let one = t[0].clone();
        *t = vec![one; 2].into();
    }))
    .unwrap_err();
    assert_eq!(e, BundleError::DuplicateTimestamp);
    assert!(e.to_string().contains("twice"), "{e}");
}
