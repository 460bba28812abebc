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
use ivpol_verify::keys::HashAlgorithm;

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
        Err(e) => assert!(
            e.to_string().contains(want),
            "expected {want:?} in error, got: {e}"
        ),
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

const MOCK: &str = "notation-go/internal/mock/testdata/";

fn mock(name: &str) -> Vec<u8> {
    read(&format!("{MOCK}{name}"))
}

/// Every row of CASES.tsv is judged by a test of one of the modules below
/// (its file name appears quoted there), or listed here with why it is not
/// an envelope case.
#[test]
fn every_case_is_covered() {
    let tsv = String::from_utf8(read("CASES.tsv")).unwrap();
    let source = [
        include_str!("tests/notation_e2e.rs"),
        include_str!("tests/notation_go_internal.rs"),
        include_str!("tests/notation_go_mock.rs"),
        include_str!("tests/notation_go_timestamp.rs"),
        include_str!("tests/made_here.rs"),
    ]
    .concat();
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

mod made_here;
mod notation_e2e;
mod notation_go_internal;
mod notation_go_mock;
mod notation_go_timestamp;
