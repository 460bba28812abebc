//! The vendored notation conformance data (`conformance/notary/CASES.tsv`)
//! and focused negatives.
//!
//! Time: every case is judged at [`NOW`], 2026-12-02T00:00:00Z (the day this
//! was written), as notation would judge it on that day. Cases whose
//! upstream test ran while a certificate or an expiry was still valid
//! (e.g. `e2e-with-timestamped-signature`, `blob.jws.sig`) are expected to
//! fail the way notation fails them now: expired signature or expired
//! certificate.
//!
//! Trust: Kyverno's policy (strict, identities `*`). Where upstream's
//! trust anchor is not in the repository, the envelope's own root is used
//! as the trust anchor, so the other checks are what is exercised.
//!
//! Plugins: Kyverno installs none, so every envelope that names a
//! verification plugin fails with notation's "plugin not found" text,
//! including the `ca_compatible_pluginver_*` cases that pass upstream only
//! because a mock plugin is installed there.

use std::path::PathBuf;

use super::*;
use crate::verify::keys::HashAlgorithm;

/// 2026-12-02T00:00:00Z.
const NOW: i64 = 1_796_169_600;

const DOCKER_V2: &str = "application/vnd.docker.distribution.manifest.v2+json";
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance/notary")
}

fn read(path: &str) -> Vec<u8> {
    std::fs::read(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A blob of an OCI layout by digest prefix.
fn blob(layout: &str, prefix: &str) -> Vec<u8> {
    let dir = root().join(format!(
        "notation/test/e2e/testdata/registry/oci_layout/{layout}/blobs/sha256"
    ));
    for entry in std::fs::read_dir(&dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name().to_string_lossy().starts_with(prefix) {
            return std::fs::read(entry.path()).unwrap();
        }
    }
    panic!("no blob {prefix} in {layout}")
}

fn certs(path: &str) -> Vec<Certificate> {
    let bytes = read(path);
    match std::str::from_utf8(&bytes) {
        Ok(text) if text.contains("-----BEGIN") => Certificate::parse_pem(text).unwrap(),
        _ => vec![Certificate::from_der(&bytes).unwrap()],
    }
}

const NOTATION_ROOT: &str =
    "notation-go/verifier/testdata/truststore/x509/ca/valid-trust-store/NotationTestRoot.pem";
const SA_ROOT: &str = "notation-go/verifier/testdata/truststore/x509/signingAuthority/valid-trust-store/NotationTestRoot.pem";
const GLOBALSIGN_ROOT_R3: &str =
    "notation-go/verifier/testdata/truststore/x509/ca/valid-trust-store-2/GlobalSignRootCA.crt";
const TSA_ROOT: &str =
    "notation-go/verifier/testdata/truststore/x509/tsa/test-timestamp/globalsignRoot.cer";
const TSA_MISMATCH: &str =
    "notation-go/verifier/testdata/truststore/x509/tsa/test-mismatch/DigiCertTSARootSHA384.cer";
const TEST_TIMESTAMP: &str =
    "notation-go/verifier/testdata/truststore/x509/ca/valid-trust-store/TestTimestamp.crt";
const WABBIT: &str =
    "notation-go/verifier/testdata/truststore/x509/ca/valid-trust-store/wabbit-networks.io.crt";
const E2E_CRT: &str = "notation/test/e2e/testdata/config/localkeys/e2e.crt";

fn target(digest: &str, media_type: &str, size: u64) -> Target {
    Target {
        digest: digest.into(),
        media_type: media_type.into(),
        size,
    }
}

fn mock_target() -> Target {
    target(
        "sha256:60043cf45eaebc4c0867fea485a039b598f52fd09fd5b07b0b2d2f88fad9d74e",
        DOCKER_V2,
        528,
    )
}

fn wabbit_target() -> Target {
    target(
        "sha256:fe7e9333395060c2f5e63cf36a38fba10176f183b4163a5794e081a480abba5f",
        DOCKER_V2,
        942,
    )
}

fn ts_target() -> Target {
    target(
        "sha256:c0669ef34cdc14332c0f1ab0c2c01acb91d96014b172f1a76f3a39e63d1f0bda",
        DOCKER_V2,
        528,
    )
}

fn e2e_target() -> Target {
    target(
        "sha256:b8479de3f88fb259a0a9ea82a5b2a052a1ef3c4ebbcfc61482d5ae4c831f8af9",
        OCI_MANIFEST,
        517,
    )
}

fn blob_target() -> Target {
    target(
        "sha256:c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4",
        "application/octet-stream",
        11357,
    )
}

fn ca(roots: &[&str]) -> Trust {
    Trust {
        roots: roots.iter().flat_map(|p| certs(p)).collect(),
        ..Trust::default()
    }
}

fn ca_tsa(roots: &[&str], tsa: &[&str]) -> Trust {
    Trust {
        tsa_roots: tsa.iter().flat_map(|p| certs(p)).collect(),
        ..ca(roots)
    }
}

/// The last certificate of the envelope's own chain, as a trust anchor.
fn own_root(envelope: &[u8], media_type: &str) -> Vec<Certificate> {
    let env = match media_type {
        MEDIA_TYPE_JWS => jws::parse(envelope),
        _ => cose::parse(envelope),
    }
    .unwrap();
    vec![Certificate::from_der(env.certs.last().unwrap()).unwrap()]
}

fn media_type_of(path: &str) -> &'static str {
    let bytes = read(path);
    if bytes.first() == Some(&b'{') {
        MEDIA_TYPE_JWS
    } else {
        MEDIA_TYPE_COSE
    }
}

#[track_caller]
fn ok(envelope: &[u8], media_type: &str, t: &Target, trust: &Trust) -> Verified {
    match verify(envelope, media_type, t, trust, NOW) {
        Ok(v) => v,
        Err(e) => panic!("expected success, got: {e}"),
    }
}

#[track_caller]
fn fails(envelope: &[u8], media_type: &str, t: &Target, trust: &Trust, want: &str) {
    match verify(envelope, media_type, t, trust, NOW) {
        Ok(_) => panic!("expected failure containing {want:?}, got success"),
        Err(e) => assert!(e.0.contains(want), "expected {want:?} in error, got: {e}"),
    }
}

#[test]
fn rfc1123z_and_rfc3339() {
    let t = parse_rfc3339("2022-07-29T23:59:00Z").unwrap();
    assert_eq!(fmt_rfc1123z(t), "Fri, 29 Jul 2022 23:59:00 +0000");
    assert_eq!(
        parse_rfc3339("2023-06-27T13:30:33+08:00"),
        parse_rfc3339("2023-06-27T05:30:33Z")
    );
    assert_eq!(
        parse_rfc3339("2025-01-21T09:17:46.641Z"),
        parse_rfc3339("2025-01-21T09:17:46Z")
    );
    assert!(parse_rfc3339("2022-07-29 23:59:00Z").is_none());
    assert!(parse_rfc3339("2022-13-29T23:59:00Z").is_none());
    assert_eq!(NOW, parse_rfc3339("2026-12-02T00:00:00Z").unwrap());
}

// ---- notation-go/internal/mock/testdata ----

const MOCK: &str = "notation-go/internal/mock/testdata/";

fn mock(name: &str) -> Vec<u8> {
    read(&format!("{MOCK}{name}"))
}

#[test]
fn ca_valid_sig_env() {
    let env = mock("ca_valid_sig_env.json");
    let v = ok(&env, MEDIA_TYPE_JWS, &mock_target(), &ca(&[NOTATION_ROOT]));
    assert_eq!(v.chain.len(), 2);
    assert_eq!(v.signing_time, None);
    assert_eq!(v.payload["targetArtifact"]["size"], 528);
    // trustStores=[ca:valid-trust-store-2]
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &mock_target(),
        &ca(&[GLOBALSIGN_ROOT_R3]),
        "the signature's certificate chain does not contain any trusted certificate",
    );
}

#[test]
fn ca_invalid_sig_env() {
    fails(
        &mock("ca_invalid_sig_env.json"),
        MEDIA_TYPE_JWS,
        &mock_target(),
        &ca(&[NOTATION_ROOT]),
        "signature is invalid. Error: illegal base64 data at input byte 242",
    );
}

#[test]
fn ca_expired_sig_env() {
    fails(
        &mock("ca_expired_sig_env.json"),
        MEDIA_TYPE_JWS,
        &mock_target(),
        &ca(&[NOTATION_ROOT]),
        "digital signature has expired on \"Fri, 29 Jul 2022 23:59:00 +0000\"",
    );
}

fn sa_trust() -> Trust {
    Trust {
        signing_authority_roots: certs(SA_ROOT),
        ..Trust::default()
    }
}

#[test]
fn sa_sig_envs() {
    let v = ok(
        &mock("sa_valid_sig_env.json"),
        MEDIA_TYPE_JWS,
        &mock_target(),
        &sa_trust(),
    );
    assert_eq!(v.signing_time, parse_rfc3339("2020-11-09T07:00:00Z"));
    fails(
        &mock("sa_invalid_sig_env.json"),
        MEDIA_TYPE_JWS,
        &mock_target(),
        &sa_trust(),
        "signature is invalid. Error: illegal base64 data at input byte 242",
    );
    fails(
        &mock("sa_expired_sig_env.json"),
        MEDIA_TYPE_JWS,
        &mock_target(),
        &sa_trust(),
        "digital signature has expired on \"Fri, 29 Jul 2022 23:59:00 +0000\"",
    );
    // Kyverno's policy has only a `ca` trust store: a signingAuthority
    // signature has nothing to be trusted by, even with the same root.
    fails(
        &mock("sa_valid_sig_env.json"),
        MEDIA_TYPE_JWS,
        &mock_target(),
        &ca(&[NOTATION_ROOT]),
        "no trusted certificates are found to verify authenticity",
    );
}

#[test]
fn plugin_sig_envs() {
    let want = "error while locating the verification plugin \"plugin-name\", make sure the plugin is installed successfully before verifying the signature. error: plugin not found";
    fails(
        &mock("ca_plugin_sig_env.json"),
        MEDIA_TYPE_JWS,
        &mock_target(),
        &ca(&[NOTATION_ROOT]),
        want,
    );
    fails(
        &mock("sa_plugin_sig_env.json"),
        MEDIA_TYPE_JWS,
        &mock_target(),
        &sa_trust(),
        want,
    );
}

#[test]
fn plugin_version_sig_envs() {
    // Upstream installs a mock plugin at version 1.0.0; without plugin
    // support every one fails at locating the plugin.
    let want =
        "error while locating the verification plugin \"io.cncf.notary.plugin.unittest.mock\"";
    for v in [
        "ca_incompatible_pluginver_sig_env_1.0.9.json",
        "ca_incompatible_pluginver_sig_env_1.0.1.json",
        "ca_incompatible_pluginver_sig_env_1.2.3.json",
        "ca_incompatible_pluginver_sig_env_1.1.0-alpha.json",
        "ca_compatible_pluginver_sig_env_0.0.9.json",
        "ca_compatible_pluginver_sig_env_1.0.0-alpha.json",
        "ca_compatible_pluginver_sig_env_1.0.0-alpha.beta.json",
        "ca_compatible_pluginver_sig_env_1.0.0.json",
    ] {
        fails(
            &mock(v),
            MEDIA_TYPE_JWS,
            &wabbit_target(),
            &ca(&[WABBIT]),
            want,
        );
    }
}

#[test]
fn sig_env_with_metadata() {
    // Upstream runs it at audit level; under strict the self-signed leaf
    // (2023-01-11..2023-01-12) is both unknown to the trust store and expired.
    let env = mock("sig_env_with_metadata.json");
    let t = target(
        "sha256:5a07385af4e6b6af81b0ebfd435aedccdfa3507f0609c658209e1aba57159b2b",
        DOCKER_V2,
        942,
    );
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &t,
        &ca(&[NOTATION_ROOT]),
        "the signature's certificate chain does not contain any trusted certificate",
    );
    let own = Trust {
        roots: own_root(&env, MEDIA_TYPE_JWS),
        ..Trust::default()
    };
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &t,
        &own,
        "verification time is after certificate",
    );
}

// ---- notation-go/verifier/testdata/timestamp ----

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
        serde_json::Value::String(crate::verify::encoding::b64encode(&token));
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
    assert!(e.0.contains("invalid TSTInfo: mismatched message"), "{e}");
    let e = timestamp::verify_with_roots(
        &token("TimeStampTokenWithoutCertificate.p7s"),
        b"notation",
        HashAlgorithm::Sha256,
        &trust.tsa_roots,
    )
    .unwrap_err();
    assert!(
        e.0.contains("signing certificate not found in the timestamp token"),
        "{e}"
    );
}

// ---- notation-go/internal/testdata ----

#[test]
fn internal_jws_and_cose_signatures() {
    let t = target(
        "sha256:19dbd2e48e921426ee8ace4dc892edfb2ecdc1d1a72d5416c83670c30acecef0",
        OCI_MANIFEST,
        481,
    );
    for (path, mt) in [
        (
            "notation-go/internal/testdata/jws_signature.sig",
            MEDIA_TYPE_JWS,
        ),
        (
            "notation-go/internal/testdata/cose_signature.sig",
            MEDIA_TYPE_COSE,
        ),
    ] {
        assert_eq!(media_type_of(path), mt);
        let env = read(path);
        let trust = Trust {
            roots: own_root(&env, mt),
            ..Trust::default()
        };
        ok(&env, mt, &t, &trust);
    }
}

// ---- notation e2e ----

#[test]
fn e2e_valid_signature() {
    let env = blob("e2e-valid-signature", "c9af07e0");
    ok(&env, MEDIA_TYPE_JWS, &e2e_target(), &ca(&[E2E_CRT]));
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &ca(&["notation/test/e2e/testdata/config/localkeys/new_e2e.crt"]),
        "the signature's certificate chain does not contain any trusted certificate",
    );
}

#[test]
fn e2e_expired_signature() {
    fails(
        &blob("e2e-expired-signature", "b5f92756"),
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &ca(&[E2E_CRT]),
        "digital signature has expired on",
    );
}

#[test]
fn e2e_with_expired_cert() {
    fails(
        &blob("e2e-with-expired-cert", "8513a5ba"),
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &ca(&["notation/test/e2e/testdata/config/localkeys/expired_e2e.crt"]),
        "verification time is after certificate \"O=Internet Widgits Pty Ltd,ST=Some-State,C=AU\" validity period, it was expired at \"Tue, 27 Jun 2023 06:10:00 +0000\"",
    );
}

#[test]
fn e2e_invalid_signature() {
    let env = blob("e2e-invalid-signature", "9a8decdf");
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &ca(&[E2E_CRT]),
        "unable to parse the digital signature",
    );
}

#[test]
fn e2e_valid_multiple_signatures() {
    let layout = "e2e-valid-multiple-signatures";
    ok(
        &blob(layout, "c9af07e0"),
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &ca(&[E2E_CRT]),
    );
    // testcert11: no anchor in the repository, and expired in 2025.
    let other = blob(layout, "a5433363");
    fails(
        &other,
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &ca(&[E2E_CRT]),
        "the signature's certificate chain does not contain any trusted certificate",
    );
    let own = Trust {
        roots: own_root(&other, MEDIA_TYPE_JWS),
        ..Trust::default()
    };
    fails(
        &other,
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &own,
        "verification time is after certificate",
    );
}

#[test]
fn e2e_timestamped_signatures() {
    let t = target(
        "sha256:53b0191218aed9a3c1f7c661736ac40cfc8eb928642348fd843ba3f0483c0c20",
        OCI_MANIFEST,
        582,
    );
    let env = blob("e2e-with-timestamped-signature", "603ff134");
    let own = Trust {
        roots: own_root(&env, MEDIA_TYPE_JWS),
        ..Trust::default()
    };
    // Expiry 2025-01-21T12:39:46Z has passed: strict fails on it first.
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &t,
        &own,
        "digital signature has expired on \"Tue, 21 Jan 2025 12:39:46 +0000\"",
    );

    let t = target(
        "sha256:f1da8cd70d6d851fa2313c8d6618f79508cf1e86877edf1c0bfe49a1b0a6467a",
        OCI_MANIFEST,
        582,
    );
    let env = blob("e2e-with-invalid-timestamped-signature", "8d2e70ff");
    let roots = own_root(&env, MEDIA_TYPE_JWS);
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &t,
        &Trust {
            roots: roots.clone(),
            tsa_roots: certs(TSA_ROOT),
            ..Trust::default()
        },
        "failed to parse timestamp countersignature with error:",
    );
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &t,
        &Trust {
            roots,
            ..Trust::default()
        },
        "verification time is after certificate",
    );
}

#[test]
fn e2e_blob_signatures() {
    for (path, mt) in [
        (
            "notation/test/e2e/testdata/signatures/blob.jws.sig",
            MEDIA_TYPE_JWS,
        ),
        (
            "notation/test/e2e/testdata/signatures/blob.cose.sig",
            MEDIA_TYPE_COSE,
        ),
    ] {
        let env = read(path);
        let roots = own_root(&env, mt);
        // The leaves expired in January 2025; the Microsoft TSA root that
        // would vouch for the signing time is not in the repository.
        fails(
            &env,
            mt,
            &blob_target(),
            &Trust {
                roots: roots.clone(),
                ..Trust::default()
            },
            "verification time is after certificate",
        );
        // Integrity holds: only the time check fails. A different TSA
        // root does not verify the countersignature.
        if mt == MEDIA_TYPE_JWS {
            fails(
                &env,
                mt,
                &blob_target(),
                &Trust {
                    roots,
                    tsa_roots: certs(TSA_ROOT),
                    ..Trust::default()
                },
                "failed to verify the timestamp countersignature with error:",
            );
        }
    }
}

#[test]
fn e2e_malformed() {
    fails(
        &read("notation/test/e2e/testdata/signatures/malformed.jws.sig"),
        MEDIA_TYPE_JWS,
        &blob_target(),
        &ca(&[E2E_CRT]),
        "unable to parse the digital signature",
    );
}

#[test]
fn core_format_conformance_envelopes_have_no_chain() {
    // notation-core-go's format conformance vectors carry no x5c (their key
    // is generated at test time), so they cannot be verified; they must be
    // refused, not accepted.
    let jws = read("notation-core-go/signature/jws/testdata/conformance.json");
    let v: serde_json::Value = serde_json::from_slice(&jws).unwrap();
    let env = serde_json::json!({
        "payload": v["payload"], "protected": v["protected"],
        "header": {}, "signature": "AAAA",
    });
    let e = verify(
        &serde_json::to_vec(&env).unwrap(),
        MEDIA_TYPE_JWS,
        &blob_target(),
        &ca(&[E2E_CRT]),
        NOW,
    )
    .unwrap_err();
    assert!(e.0.contains("certificate chain is not present"), "{e}");
}

/// Every row of CASES.tsv is judged by a test above (its file name appears
/// quoted in this file), or listed here with why it is not an envelope case.
#[test]
fn every_case_is_covered() {
    let tsv = String::from_utf8(read("CASES.tsv")).unwrap();
    let source = include_str!("tests.rs");
    let not_judged = [
        // An image with no signature: the registry side's "no signature".
        "notation/test/e2e/testdata/registry/oci_layout/e2e",
        // Format vectors whose key is generated at test time and not kept
        // (no x5c): nothing to verify; the JWS one is checked to be refused
        // above.
        "notation-core-go/signature/cose/testdata/conformance.json",
    ];
    let mut n = 0;
    for line in tsv.lines().skip(1) {
        n += 1;
        let key = line.split_whitespace().next().unwrap();
        let name = key.rsplit('/').next().unwrap();
        let covered = not_judged.contains(&key) || source.contains(&format!("{name}\""));
        assert!(covered, "case {key} is not covered");
    }
    assert_eq!(n, 39);
}

// ---- focused negatives on envelopes made here ----

mod made {
    use super::*;
    use crate::verify::x509::der_wrap;
    use base64::Engine;
    use p256::ecdsa::signature::Signer;
    use p256::pkcs8::EncodePublicKey;

    pub fn key() -> p256::ecdsa::SigningKey {
        p256::ecdsa::SigningKey::from_slice(&[9u8; 32]).unwrap()
    }

    fn seq(parts: &[&[u8]]) -> Vec<u8> {
        der_wrap(0x30, &parts.concat())
    }

    /// A self-signed P-256 code-signing leaf (KU critical digitalSignature),
    /// valid 2025..2100.
    pub fn cert(key: &p256::ecdsa::SigningKey) -> Certificate {
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
    pub fn jws(protected: &serde_json::Value, payload: &serde_json::Value) -> Vec<u8> {
        let key = key();
        let p = b64url(&serde_json::to_vec(protected).unwrap());
        let body = b64url(&serde_json::to_vec(payload).unwrap());
        let input = format!("{p}.{body}");
        let sig: p256::ecdsa::Signature = if protected["alg"] == "ES384" {
            use p256::ecdsa::signature::hazmat::PrehashSigner;
            let digest = crate::verify::keys::HashAlgorithm::Sha384.digest(input.as_bytes());
            key.sign_prehash(&digest).unwrap()
        } else {
            key.sign(input.as_bytes())
        };
        serde_json::to_vec(&serde_json::json!({
            "payload": body,
            "protected": p,
            "header": {"x5c": [crate::verify::encoding::b64encode(cert(&key).der())]},
            "signature": b64url(&sig.to_bytes()),
        }))
        .unwrap()
    }

    pub fn protected() -> serde_json::Value {
        serde_json::json!({
            "alg": "ES256",
            "cty": MEDIA_TYPE_PAYLOAD,
            "crit": ["io.cncf.notary.signingScheme"],
            "io.cncf.notary.signingScheme": "notary.x509",
            "io.cncf.notary.signingTime": "2026-01-01T00:00:00Z",
        })
    }

    pub fn payload() -> serde_json::Value {
        serde_json::json!({"targetArtifact": {
            "mediaType": OCI_MANIFEST,
            "digest": e2e_target().digest,
            "size": 517,
        }})
    }

    pub fn trust() -> Trust {
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
    use crate::verify::timestamp::made as tsa;
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
        serde_json::Value::String(crate::verify::encoding::b64encode(&token));
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
        Some(crate::verify::timestamp::made::GEN_TIME)
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
