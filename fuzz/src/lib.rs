//! Shared pieces of ivpol's fuzz targets: fixed trust material (read from
//! the vendored conformance fixtures at compile time, so a run needs no
//! files) and the splitting of one fuzz input into several documents.
//!
//! Every target asserts only "no panic, bounded work": a panic is a crash,
//! and libFuzzer's `-timeout` and `-rss_limit_mb` (set by `cargo xtask
//! fuzz`) turn unbounded time or memory into one.

use std::sync::OnceLock;

use ivpol_guest::notary::{self, Target, Trust};
use ivpol_guest::verify::keys::PublicKey;
use ivpol_guest::verify::trust::{LogKey, TrustMaterial};
use ivpol_guest::verify::x509::Certificate;

/// 2026-12-01T00:00:00Z: the "now" of every verification.
pub const NOW: i64 = 1_796_169_600;

/// `conformance/sigstore/a.txt`, the artifact of the Sigstore conformance
/// bundles.
pub const A_TXT: &[u8] = include_bytes!("../../conformance/sigstore/a.txt");

/// The SHA-256 of [`A_TXT`].
pub fn a_txt_sha256() -> [u8; 32] {
    let hex = ivpol_guest::oci::digest::sha256(A_TXT);
    let bytes = ivpol_guest::verify::encoding::unhex("digest", &hex["sha256:".len()..])
        .expect("hex digest");
    bytes.try_into().expect("32 bytes")
}

/// The image digest the containers/image `dir-img-cosign-key-rekor-valid`
/// signature signs.
pub const COSIGN_DIGEST: &str =
    "sha256:0489474da8ea22426ece86ace6c1c0026ab2fd3cdfbbd62b7e94650266c37d9a";

/// Splits `data` at NUL bytes into at most `n` parts (the last part keeps
/// any further NULs). Used by targets whose input is several documents;
/// text documents hold no NUL, so seeds are the documents joined by `\0`.
pub fn split(data: &[u8], n: usize) -> Vec<&[u8]> {
    data.splitn(n, |&b| b == 0).collect()
}

/// Sigstore's public-good trusted root, as embedded in the guest.
pub fn public_good() -> &'static TrustMaterial {
    static T: OnceLock<TrustMaterial> = OnceLock::new();
    T.get_or_init(|| TrustMaterial::public_good().expect("public good trusted root"))
}

/// A conformance trusted root with a timestamp authority and Rekor v2 logs.
pub fn custom_root() -> &'static TrustMaterial {
    static T: OnceLock<TrustMaterial> = OnceLock::new();
    T.get_or_init(|| {
        TrustMaterial::from_trusted_root_json(include_str!(
            "../../conformance/sigstore/rekor2-timestamp-with-embedded-cert/trusted_root.json"
        ))
        .expect("conformance trusted root")
    })
}

/// The cosign fixtures' signing key (containers/image `cosign.pub`).
pub fn cosign_key() -> &'static PublicKey {
    static K: OnceLock<PublicKey> = OnceLock::new();
    K.get_or_init(|| {
        PublicKey::from_pem(include_str!(
            "../../conformance/cosign/containers-image/signature/fixtures/cosign.pub"
        ))
        .expect("cosign.pub")
    })
}

/// The Rekor key of the cosign fixtures.
pub fn rekor_keys() -> &'static [LogKey] {
    static K: OnceLock<Vec<LogKey>> = OnceLock::new();
    K.get_or_init(|| {
        vec![LogKey::from_key(
            PublicKey::from_pem(include_str!(
                "../../conformance/cosign/containers-image/signature/fixtures/rekor.pub"
            ))
            .expect("rekor.pub"),
        )]
    })
}

/// The Fulcio CA certificates of the public-good instance.
pub fn fulcio_roots() -> &'static [Certificate] {
    static C: OnceLock<Vec<Certificate>> = OnceLock::new();
    C.get_or_init(|| public_good().ca_certificates())
}

/// The roots of the cosign fixtures: their Fulcio v1 root and PKI root.
pub fn cosign_roots() -> &'static [Certificate] {
    static C: OnceLock<Vec<Certificate>> = OnceLock::new();
    C.get_or_init(|| {
        let mut roots = Certificate::parse_pem(include_str!(
            "../../conformance/cosign/containers-image/signature/fixtures/fulcio_v1.crt.pem"
        ))
        .expect("fulcio_v1.crt.pem");
        roots.extend(
            Certificate::parse_pem(include_str!(
                "../../conformance/cosign/containers-image/signature/fixtures/pki_root_crts.pem"
            ))
            .expect("pki_root_crts.pem"),
        );
        roots
    })
}

/// The Notary Project trust stores of the conformance cases: `ca` (the
/// notation e2e key, notation-go's test root and its timestamped signer),
/// `tsa` (the test TSA's root) and `signingAuthority`.
pub fn notary_trust() -> &'static Trust {
    static T: OnceLock<Trust> = OnceLock::new();
    T.get_or_init(|| {
        let pem = |text: &str| Certificate::parse_pem(text).expect("PEM certificate");
        let mut roots = pem(include_str!(
            "../../conformance/notary/notation/test/e2e/testdata/config/localkeys/e2e.crt"
        ));
        roots.extend(pem(include_str!(
            "../../conformance/notary/notation-go/verifier/testdata/truststore/x509/ca/valid-trust-store/NotationTestRoot.pem"
        )));
        roots.extend(pem(include_str!(
            "../../conformance/notary/notation-go/verifier/testdata/truststore/x509/ca/valid-trust-store/TestTimestamp.crt"
        )));
        Trust {
            roots,
            tsa_roots: tsa_roots().to_vec(),
            signing_authority_roots: pem(include_str!(
                "../../conformance/notary/notation-go/verifier/testdata/truststore/x509/signingAuthority/valid-trust-store/NotationTestRoot.pem"
            )),
        }
    })
}

/// The artifacts the Notary conformance signatures sign: the notation e2e
/// image and notation-go's timestamped test image.
pub fn notary_targets() -> [Target; 2] {
    [
        Target {
            digest: "sha256:b8479de3f88fb259a0a9ea82a5b2a052a1ef3c4ebbcfc61482d5ae4c831f8af9"
                .into(),
            media_type: "application/vnd.oci.image.manifest.v1+json".into(),
            size: 517,
        },
        Target {
            digest: "sha256:c0669ef34cdc14332c0f1ab0c2c01acb91d96014b172f1a76f3a39e63d1f0bda"
                .into(),
            media_type: "application/vnd.docker.distribution.manifest.v2+json".into(),
            size: 528,
        },
    ]
}

/// Verifies a Notary envelope of `media_type` for each conformance target,
/// with and without a TSA trust store.
pub fn notary_verify(envelope: &[u8], media_type: &str) {
    let trust = notary_trust();
    let no_tsa = Trust {
        tsa_roots: Vec::new(),
        ..trust.clone()
    };
    for target in &notary_targets() {
        let _ = notary::verify(envelope, media_type, target, trust, NOW);
    }
    let _ = notary::verify(envelope, media_type, &notary_targets()[0], &no_tsa, NOW);
}

/// The TSA roots of the Notary Project conformance data.
pub fn tsa_roots() -> &'static [Certificate] {
    static C: OnceLock<Vec<Certificate>> = OnceLock::new();
    C.get_or_init(|| {
        [
            &include_bytes!(
                "../../conformance/notary/notation-core-go/internal/timestamp/testdata/tsaRootCert.cer"
            )[..],
            include_bytes!("../../conformance/notary/notation-core-go/x509/testdata/timestamp_root.crt"),
            include_bytes!(
                "../../conformance/notary/notation/test/e2e/testdata/config/timestamp/DigiCertTSARootSHA384.cer"
            ),
            include_bytes!(
                "../../conformance/notary/notation/test/e2e/testdata/config/timestamp/globalsignTSARoot.cer"
            ),
            include_bytes!(
                "../../conformance/notary/notation-go/verifier/testdata/truststore/x509/tsa/test-timestamp/globalsignRoot.cer"
            ),
        ]
        .iter()
        .map(|der| Certificate::from_der(der).expect("TSA root"))
        .collect()
    })
}
