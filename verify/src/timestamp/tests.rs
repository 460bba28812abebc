use super::*;

fn conformance_timestamp(case: &str) -> Vec<u8> {
    let path = format!(
        "{}/../conformance/sigstore/{case}/bundle.sigstore.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let b64 = json["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"][0]
        ["signedTimestamp"]
        .as_str()
        .unwrap();
    crate::sigstore_bundle::bundle::b64(b64, "t").unwrap()
}

#[test]
fn generalized_time() {
    assert_eq!(parse_generalized_time(b"19700101000000Z").unwrap(), 0);
    assert_eq!(
        parse_generalized_time(b"20250612120217Z").unwrap(),
        1_749_729_737
    );
    assert_eq!(
        parse_generalized_time(b"20250612120217.123Z").unwrap(),
        1_749_729_737
    );
    assert_eq!(
        parse_generalized_time(b"20000229235959Z").unwrap(),
        951_868_799
    );
    for bad in [
        &b"20250612120217"[..],
        b"2025061212021Z",
        b"20250612120217.Z",
        b"20250612120217.10Z",
        b"20250612120217+0100",
        b"20251312120217Z",
        b"20250230120217Z",
        b"20250612240000Z",
        b"2025061212021aZ",
        b"",
    ] {
        assert_eq!(
            parse_generalized_time(bad),
            Err(TimestampError::GenTime(
                String::from_utf8_lossy(bad).into_owned()
            ))
        );
    }
}

#[test]
fn parses_a_sigstore_tsa_response() {
    let der = conformance_timestamp("rekor2-happy-path");
    let t = TimeStampToken::parse(&der).unwrap();
    assert_eq!(t.tst_info.imprint_hash, HashAlgorithm::Sha256);
    assert_eq!(t.tst_info.imprint.len(), 32);
    // the bundle's certificate is valid 2025-06-12T12:02:16..12:12:16
    assert!((1_749_729_736..1_749_730_336).contains(&t.tst_info.gen_time));
    assert_eq!(t.signed_attrs_der.first(), Some(&0x31));
}

#[test]
fn parses_a_response_with_an_embedded_certificate() {
    let der = conformance_timestamp("rekor2-timestamp-with-embedded-cert");
    let t = TimeStampToken::parse(&der).unwrap();
    assert!(!t.certificates.is_empty());
    assert!(t.certificates.iter().any(|c| t.signer_is(c)));
}

#[test]
fn rejects_damaged_responses() {
    let der = conformance_timestamp("rekor2-happy-path");
    // The outer TimeStampResp does not read: `detail` is the DER parser's.
    let unreadable = |d: &[u8], detail: &str| match TimeStampToken::parse(d) {
        Err(TimestampError::Der { what, source }) => {
            assert_eq!(what, "TimeStampResp");
            assert!(source.to_string().contains(detail), "{source}");
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("accepted"),
    };
    unreadable(&[], "incomplete");
    unreadable(&der[..der.len() - 1], "incomplete");
    let mut longer = der.clone();
    longer.push(0);
    unreadable(&longer, "trailing data");
    // Flip every byte in turn: parsing must never panic, and a flip in
    // the TSTInfo must be caught: by the TSTInfo's own parsing if it no
    // longer reads, else by the message-digest check.
    let t = TimeStampToken::parse(&der).unwrap();
    let start = der
        .windows(t.tst_info_der.len())
        .position(|w| w == t.tst_info_der.as_slice())
        .unwrap();
    for i in 0..der.len() {
        let mut d = der.clone();
        d[i] ^= 0x01;
        let r = TimeStampToken::parse(&d);
        let tst = start..start + t.tst_info_der.len();
        if tst.contains(&i) {
            let Err(e) = r else {
                panic!("flip at {i} inside TSTInfo was accepted");
            };
            let want = match parse_tst_info(&d[tst]) {
                Ok(_) => TimestampError::MessageDigest,
                Err(unreadable) => unreadable,
            };
            assert_eq!(e, want, "flip at {i}");
        }
    }
    // a rejected status
    let rejection = [0x30, 0x05, 0x30, 0x03, 0x02, 0x01, 0x02];
    let e = TimeStampToken::parse(&rejection).unwrap_err();
    assert!(
        matches!(&e, TimestampError::NotGranted(status) if status == &[2]),
        "{e}"
    );
    // granted, but no token
    let empty = [0x30, 0x05, 0x30, 0x03, 0x02, 0x01, 0x00];
    assert_eq!(
        TimeStampToken::parse(&empty).unwrap_err(),
        TimestampError::NoToken
    );
}
