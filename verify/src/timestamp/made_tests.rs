use super::made::*;
use super::*;

const MESSAGE: &[u8] = b"the envelope's signature bytes";

fn notary(
    token_der: &[u8],
    hash: HashAlgorithm,
    roots: &[Certificate],
) -> Result<i64, TimestampError> {
    let token = TimeStampToken::parse_token(token_der)?;
    verify_with_roots(&token, MESSAGE, hash, roots).map(|(t, _)| t)
}

fn notary_err(token_der: &[u8], want: &str) {
    let cert = tsa_cert(&key(), "made TSA", 1);
    let e = notary(token_der, HashAlgorithm::Sha256, &[cert]).unwrap_err();
    assert!(e.to_string().contains(want), "want {want:?}, got {e}");
}

#[test]
fn signing_certificate_v2_binds_the_signer() {
    let (k, cert) = (key(), tsa_cert(&key(), "made TSA", 1));
    let roots = std::slice::from_ref(&cert);
    let sha256 = HashAlgorithm::Sha256;
    // The default form (SHA-256 implied, no issuerSerial).
    let t = token(&k, &cert, MESSAGE, sha256, &[v2_for(&cert)]);
    assert_eq!(notary(&t, sha256, roots).unwrap(), GEN_TIME);
    // An explicit SHA-512 certHash and an issuerSerial naming the signer.
    let id = ess_cert_id_v2(
        Some(ID_SHA512),
        &HashAlgorithm::Sha512.digest(cert.der()),
        Some(issuer_serial(&cert)),
    );
    let t = token(&k, &cert, MESSAGE, sha256, &[v2_attr(&[id])]);
    assert_eq!(notary(&t, sha256, roots).unwrap(), GEN_TIME);

    // No signing-certificate attribute at all.
    notary_err(
        &token(&k, &cert, MESSAGE, sha256, &[]),
        "failed to get SigningCertificateV2 from signed attributes: attribute not found",
    );
    // Only the SHA-1 v1 attribute: tspclient-go does not accept it.
    notary_err(
        &token(&k, &cert, MESSAGE, sha256, &[v1_attr()]),
        "attribute not found (the token has only the SHA-1 signing-certificate v1 attribute",
    );
    // The hash of another certificate.
    let other = tsa_cert(&key(), "another TSA", 2);
    notary_err(
        &token(&k, &cert, MESSAGE, sha256, &[v2_for(&other)]),
        "signing certificate hash does not match CertHash in signed attribute",
    );
    // A SHA-256 hash labelled SHA-384.
    let id = ess_cert_id_v2(Some(ID_SHA384), &sha256.digest(cert.der()), None);
    notary_err(
        &token(&k, &cert, MESSAGE, sha256, &[v2_attr(&[id])]),
        "signing certificate hash does not match CertHash in signed attribute",
    );
    // Only the first ESSCertIDv2 counts.
    let ids = [
        ess_cert_id_v2(None, &sha256.digest(other.der()), None),
        ess_cert_id_v2(None, &sha256.digest(cert.der()), None),
    ];
    notary_err(
        &token(&k, &cert, MESSAGE, sha256, &[v2_attr(&ids)]),
        "signing certificate hash does not match CertHash in signed attribute",
    );
    // SHA-1 certHash in a v2 attribute.
    let id = ess_cert_id_v2(Some(ID_SHA1), &[0u8; 20], None);
    notary_err(
        &token(&k, &cert, MESSAGE, sha256, &[v2_attr(&[id])]),
        "unsupported certificate hash algorithm in SigningCertificateV2 attribute (1.3.14.3.2.26)",
    );
    // No ESSCertIDv2.
    notary_err(
        &token(&k, &cert, MESSAGE, sha256, &[v2_attr(&[])]),
        "signingCertificateV2 does not contain any certificate",
    );
    // The right hash, but an issuerSerial naming another certificate.
    let id = ess_cert_id_v2(
        None,
        &sha256.digest(cert.der()),
        Some(issuer_serial(&other)),
    );
    notary_err(
        &token(&k, &cert, MESSAGE, sha256, &[v2_attr(&[id])]),
        "the SigningCertificateV2 IssuerSerial does not name the timestamp's signing certificate",
    );
    // An issuerSerial whose first GeneralName is not a directoryName.
    let serial = seq(&[&[0x02, 0x01, 0x01]]);
    let dns = seq(&[&crate::x509::der_wrap(0x82, b"tsa.example")]);
    let odd = seq(&[&dns, &serial[2..]]);
    let id = ess_cert_id_v2(None, &sha256.digest(cert.der()), Some(odd));
    notary_err(
        &token(&k, &cert, MESSAGE, sha256, &[v2_attr(&[id])]),
        "issuer name is missing in IssuerSerial",
    );
    // Two v2 attributes.
    notary_err(
        &token(&k, &cert, MESSAGE, sha256, &[v2_for(&cert), v2_for(&other)]),
        "the timestamp signer has 2 SigningCertificateV2 attributes; exactly one is allowed",
    );
    // A malformed value.
    let bad = seq(&[
        &oid(ID_AA_SIGNING_CERTIFICATE_V2),
        &crate::x509::der_wrap(0x31, &seq(&[&[0x04, 0x00]])),
    ]);
    notary_err(
        &token(&k, &cert, MESSAGE, sha256, &[bad]),
        "failed to get SigningCertificateV2 from signed attributes:",
    );
}

#[test]
fn sigstore_timestamps_do_not_need_signing_certificate_v2() {
    let (k, cert) = (key(), tsa_cert(&key(), "made TSA", 1));
    let t = token(&k, &cert, MESSAGE, HashAlgorithm::Sha256, &[]);
    let tsa = CertificateAuthority {
        certs: vec![cert.clone(), cert.clone()],
        validity: crate::trust::Validity {
            start: None,
            end: None,
        },
        uri: String::new(),
    };
    let token = TimeStampToken::parse_token(&t).unwrap();
    assert_eq!(verify(&token, MESSAGE, &[tsa]).unwrap(), GEN_TIME);
}

#[test]
fn the_imprint_must_use_the_signature_hash() {
    let (k, cert) = (key(), tsa_cert(&key(), "made TSA", 1));
    let roots = std::slice::from_ref(&cert);
    let v2 = [v2_for(&cert)];
    for h in [
        HashAlgorithm::Sha256,
        HashAlgorithm::Sha384,
        HashAlgorithm::Sha512,
    ] {
        let t = token(&k, &cert, MESSAGE, h, &v2);
        assert_eq!(notary(&t, h, roots).unwrap(), GEN_TIME, "{h:?}");
    }
    // A SHA-384 imprint over the right bytes, for an ES256/PS256 signature.
    let t = token(&k, &cert, MESSAGE, HashAlgorithm::Sha384, &v2);
    let e = notary(&t, HashAlgorithm::Sha256, roots).unwrap_err();
    assert_eq!(
            e.to_string(),
            "invalid TSTInfo: the message imprint is a sha384 digest, but the signature algorithm hashes with sha256 (the timestamp must hash the signature with the same algorithm)"
        );
    // A SHA-256 imprint for an ES512/PS512 signature.
    let t = token(&k, &cert, MESSAGE, HashAlgorithm::Sha256, &v2);
    let e = notary(&t, HashAlgorithm::Sha512, roots).unwrap_err();
    assert!(
            e.to_string().contains("the message imprint is a sha256 digest, but the signature algorithm hashes with sha512"),
            "{e}"
        );
    // The right algorithm over other bytes is still a mismatch.
    let t = token(&k, &cert, b"other bytes", HashAlgorithm::Sha256, &v2);
    let e = notary(&t, HashAlgorithm::Sha256, roots).unwrap_err();
    assert!(
        e.to_string()
            .contains("invalid TSTInfo: mismatched message"),
        "{e}"
    );
}
