//! Notary envelopes from `notation-go/verifier/testdata/timestamp`.

use super::*;

const SIG_ENV: &str = "notation-go/verifier/testdata/timestamp/sigEnv/";

fn sig_env(name: &str) -> Vec<u8> {
    read(&format!("{SIG_ENV}{name}"))
}

#[test]
fn with_timestamp() {
    let trust = ca_tsa(&[TEST_TIMESTAMP], &[TSA_ROOT]);
    let v = ok(
        &sig_env("jwsWithTimestamp.sig"),
        MEDIA_TYPE_JWS,
        &ts_target(),
        &trust,
    );
    assert_eq!(v.signing_time, parse_rfc3339("2024-06-18T06:29:37Z"));
    let v = ok(
        &sig_env("coseWithTimestamp.sig"),
        MEDIA_TYPE_COSE,
        &ts_target(),
        &trust,
    );
    assert_eq!(v.signing_time, parse_rfc3339("2024-06-18T06:27:16Z"));
    // tsa:test-mismatch (a DigiCert root): the TSA chain does not verify.
    fails(
        &sig_env("jwsWithTimestamp.sig"),
        MEDIA_TYPE_JWS,
        &ts_target(),
        &ca_tsa(&[TEST_TIMESTAMP], &[TSA_MISMATCH]),
        "failed to verify the timestamp countersignature with error:",
    );
}

#[test]
fn expired_with_timestamp() {
    for (name, mt) in [
        ("jwsExpiredWithTimestamp.sig", MEDIA_TYPE_JWS),
        ("coseExpiredWithTimestamp.sig", MEDIA_TYPE_COSE),
    ] {
        let env = sig_env(name);
        let roots = own_root(&env, mt);
        let with_tsa = Trust {
            roots: roots.clone(),
            tsa_roots: certs(TSA_ROOT),
            ..Trust::default()
        };
        ok(&env, mt, &ts_target(), &with_tsa);
        let without = Trust {
            roots,
            ..Trust::default()
        };
        fails(
            &env,
            mt,
            &ts_target(),
            &without,
            "verification time is after certificate \"CN=testTSA,O=Notary,L=Seattle,ST=WA,C=US\" validity period, it was expired at \"Tue, 18 Jun 2024 07:30:31 +0000\"",
        );
    }
}

#[test]
fn timestamp_outside_certificate_validity() {
    fails(
        &sig_env("timestampBeforeNotBefore.sig"),
        MEDIA_TYPE_JWS,
        &ts_target(),
        &ca_tsa(
            &["notation-go/verifier/testdata/truststore/x509/ca/valid-trust-store/TestTimestampNotYetValid.crt"],
            &[TSA_ROOT],
        ),
        "timestamp can be before certificate \"CN=testTSA,O=Notary,L=Seattle,ST=WA,C=US\" validity period, it will be valid from \"Fri, 18 Sep 2099 11:54:34 +0000\"",
    );
    let env = sig_env("timestampAfterNotAfter.sig");
    let trust = Trust {
        roots: own_root(&env, MEDIA_TYPE_COSE),
        tsa_roots: certs(TSA_ROOT),
        ..Trust::default()
    };
    fails(
        &env,
        MEDIA_TYPE_COSE,
        &ts_target(),
        &trust,
        "timestamp can be after certificate \"CN=testTSA,O=Notary,L=Seattle,ST=WA,C=US\" validity period, it was expired at \"Tue, 18 Sep 2001 11:54:34 +0000\"",
    );
}

/// `withoutTimestamp.sig` with a countersignature spliced into its
/// (unsigned) unprotected header, as upstream's tests do.
fn splice_timestamp(p7s: &str) -> Vec<u8> {
    let mut env: serde_json::Value =
        serde_json::from_slice(&sig_env("withoutTimestamp.sig")).unwrap();
    let token = read(&format!(
        "notation-go/verifier/testdata/timestamp/countersignature/{p7s}"
    ));
    env["header"]["io.cncf.notary.timestampSignature"] =
        serde_json::Value::String(ivpol_verify::encoding::b64encode(&token));
    serde_json::to_vec(&env).unwrap()
}

#[test]
fn without_timestamp() {
    let env = sig_env("withoutTimestamp.sig");
    let trust = ca_tsa(&[TEST_TIMESTAMP], &[TSA_ROOT]);
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &ts_target(),
        &trust,
        "no timestamp countersignature was found in the signature envelope",
    );
    // Without a tsa trust store no timestamp is needed.
    ok(&env, MEDIA_TYPE_JWS, &ts_target(), &ca(&[TEST_TIMESTAMP]));

    fails(
        &splice_timestamp("TimeStampTokenWithInvalideContentType.p7s"),
        MEDIA_TYPE_JWS,
        &ts_target(),
        &trust,
        "failed to parse timestamp countersignature with error:",
    );
    fails(
        &splice_timestamp("TimeStampTokenWithInvalidTSTInfo.p7s"),
        MEDIA_TYPE_JWS,
        &ts_target(),
        &trust,
        "failed to parse timestamp countersignature with error:",
    );
    // A token for other bytes.
    fails(
        &splice_timestamp("TimeStampToken.p7s"),
        MEDIA_TYPE_JWS,
        &ts_target(),
        &trust,
        "invalid TSTInfo: mismatched message",
    );
    // Upstream checks these two tokens against the bytes "mismatch" and
    // "notation" in place of the envelope's signature.
    let token = |name: &str| {
        TimeStampToken::parse_token(&read(&format!(
            "notation-go/verifier/testdata/timestamp/countersignature/{name}"
        )))
        .unwrap()
    };
    let e = timestamp::verify_with_roots(
        &token("TimeStampToken.p7s"),
        b"mismatch",
        HashAlgorithm::Sha256,
        &trust.tsa_roots,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("invalid TSTInfo: mismatched message"),
        "{e}"
    );
    let e = timestamp::verify_with_roots(
        &token("TimeStampTokenWithoutCertificate.p7s"),
        b"notation",
        HashAlgorithm::Sha256,
        &trust.tsa_roots,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("signing certificate not found in the timestamp token"),
        "{e}"
    );
}
