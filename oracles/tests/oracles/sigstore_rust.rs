//! sigstore-rust's verifier (`sigstore-verify` 0.15, on aws-lc-rs) as a
//! native, in-process oracle for Sigstore bundles: an implementation
//! independent of ivpol's, of sigstore-python and of sigstore-js.
//!
//! It cannot be the component's verifier (aws-lc-rs does not build for
//! wasm32; docs/architecture.md), but it builds natively, so the tests use
//! it here: over every sigstore-conformance bundle case that the root's
//! end-to-end tests run through ivpol (`tests/tests/e2e/
//! sigstore_conformance.rs`; the cases come from `ivpol_tests::conformance`),
//! below, and over every bundle the fixture generator makes
//! (`fixtures_crosscheck::sigstore_rust`).
//!
//! Nothing is fetched: the trusted root is the JSON given, the policy is
//! the one given, and nothing is relaxed (certificate chain, SCT, identity
//! and issuer, transparency log inclusion and timestamps are all checked).

use ivpol_tests::conformance::{cases, sha256_of, Signer};
use sigstore_verify::trust_root::TrustedRoot;
use sigstore_verify::types::{Artifact, Bundle, DerPublicKey, Sha256Hash};
use sigstore_verify::{PublicKeyVerificationPolicy, VerificationPolicy, Verifier};

/// What a bundle is checked against.
#[derive(Clone, Copy)]
pub enum Input<'a> {
    /// The artifact's bytes (a message signature's artifact, or the
    /// subject of a DSSE statement).
    Bytes(&'a [u8]),
    /// Only its SHA-256 (the conformance suite's DIGEST mode).
    Sha256([u8; 32]),
}

/// Who must have signed.
#[derive(Clone, Copy)]
pub enum Expect<'a> {
    /// A managed key (PEM SubjectPublicKeyInfo).
    Key(&'a str),
    /// A Fulcio certificate for exactly this SAN and OIDC issuer.
    Identity { identity: &'a str, issuer: &'a str },
}

/// Verifies `bundle` (JSON) against `trusted_root` (JSON) with
/// sigstore-verify; Ok when it verifies, Err(why) when it is refused
/// (unreadable inputs included).
pub fn verify(
    trusted_root: &str,
    bundle: &str,
    input: Input,
    expect: Expect,
) -> Result<(), String> {
    let root = TrustedRoot::from_json(trusted_root).map_err(|e| format!("trusted root: {e}"))?;
    let verifier = Verifier::new(&root).map_err(|e| format!("trusted root: {e}"))?;
    let bundle = Bundle::from_json(bundle).map_err(|e| format!("bundle: {e}"))?;
    let artifact: Artifact = match input {
        Input::Bytes(bytes) => bytes.into(),
        Input::Sha256(digest) => Sha256Hash::new(digest).into(),
    };
    match expect {
        Expect::Key(pem) => {
            let key = DerPublicKey::from_pem(pem).map_err(|e| format!("key: {e}"))?;
            let result = verifier
                .verify(artifact, &bundle, &PublicKeyVerificationPolicy::new(key))
                .map_err(|e| e.to_string())?;
            assert!(result.tlog_verified(), "{result:?}");
        }
        Expect::Identity { identity, issuer } => {
            let result = verifier
                .verify(
                    artifact,
                    &bundle,
                    &VerificationPolicy::new(identity, issuer),
                )
                .map_err(|e| e.to_string())?;
            assert!(
                result.certificate_verified()
                    && result.sct_verified()
                    && result.tlog_verified()
                    && result.identity_policy_checked(),
                "a full policy verified less than everything: {result:?}"
            );
        }
    }
    Ok(())
}

/// Runs where sigstore-verify 0.15.1's verdict differs from the one the
/// conformance suite expects (and ivpol gives): (case, mode, why). Each is
/// a documented limitation of sigstore-verify; the test below fails when
/// one of them stops disagreeing as much as when a new one appears.
/// None at 0.15.1: it agrees on all 70 cases in both modes.
const DISAGREEMENTS: &[(&str, &str, &str)] = &[];

/// `_fail` cases sigstore-verify 0.15.1 refuses, but before it reaches the
/// defect the case is about, so its agreement there confirms nothing about
/// that defect: (case, text its refusal holds, why). Asserted, so that a
/// change of reason shows. Every other `_fail` case is refused for its own
/// defect (the log of this test prints each reason).
const OTHER_REASON: &[(&str, &str, &str)] = &[
    (
        "bundle-empty-certificate-chain_fail",
        "inclusion proof has no checkpoint",
        "its v0.1 bundle's inclusion proof has no checkpoint, which sigstore-verify requires \
         before it looks at the (empty) chain",
    ),
    (
        "bundle-with-root-cert_fail",
        "inclusion proof has no checkpoint",
        "as above, before it looks at the root certificate in the chain",
    ),
    (
        "invalid-inclusion-proof_fail",
        "inclusion proof has no checkpoint",
        "as above, before it computes the (stale) inclusion proof",
    ),
    (
        "managed-key-wrong-key_fail",
        "failed to parse PEM",
        "the case's key.pub ends in `wrongkey==`, base64 whose last symbol has bits left over; \
         sigstore-verify's PEM reader refuses that key instead of finding it is the wrong one",
    ),
    (
        "rekor2-timestamp-with-incorrect-time_fail",
        "invalid base64",
        "the case's RFC 3161 timestamp is base64 wrapped at 76 columns (made with `base64`); \
         sigstore-verify refuses the line breaks when parsing, before it checks the time",
    ),
];

#[test]
fn sigstore_rust_gives_every_conformance_case_its_expected_outcome_but_the_listed_ones() {
    let mut disagree = Vec::new();
    let mut refused_fail_cases = 0;
    for case in &cases() {
        let root = std::fs::read_to_string(case.trusted_root_or_production()).expect("root");
        // Unreadable bytes are a bundle a client refuses.
        let bundle =
            String::from_utf8_lossy(&std::fs::read(&case.bundle).expect("bundle")).into_owned();
        let key = match &case.signer {
            Signer::Key(path) => Some(std::fs::read_to_string(path).expect("key.pub")),
            Signer::Identity { .. } => None,
        };
        let expect = || match (&case.signer, &key) {
            (Signer::Key(_), Some(pem)) => Expect::Key(pem),
            (Signer::Identity { identity, issuer }, _) => Expect::Identity { identity, issuer },
            (Signer::Key(_), None) => unreachable!("key read above"),
        };
        let bytes = std::fs::read(&case.artifact).expect("artifact");
        for (mode, input) in [
            ("PATH", Input::Bytes(&bytes)),
            ("DIGEST", Input::Sha256(sha256_of(&case.artifact))),
        ] {
            let verdict = verify(&root, &bundle, input, expect());
            eprintln!("sigstore-rust {mode}-{}: {verdict:?}", case.name);
            if let Some((_, text, why)) = OTHER_REASON.iter().find(|(c, ..)| *c == case.name) {
                let refusal = verdict.as_ref().err().map(String::as_str).unwrap_or("");
                assert!(
                    refusal.contains(text),
                    "{mode}-{}: expected a refusal holding {text:?} ({why}), got {verdict:?}",
                    case.name
                );
            }
            if verdict.is_ok() != case.expect_pass {
                disagree.push((
                    case.name.clone(),
                    mode,
                    verdict.err().unwrap_or_else(|| "verified".into()),
                ));
            } else if verdict.is_err() {
                refused_fail_cases += 1;
            }
        }
    }
    assert!(
        refused_fail_cases >= 60,
        "only {refused_fail_cases} runs of _fail cases were refused"
    );
    let unexpected: Vec<String> = disagree
        .iter()
        .filter(|(case, mode, _)| !DISAGREEMENTS.iter().any(|(c, m, _)| c == case && m == mode))
        .map(|(case, mode, got)| format!("{mode}-{case}: {got}"))
        .collect();
    let stale: Vec<String> = DISAGREEMENTS
        .iter()
        .filter(|(c, m, _)| {
            !disagree
                .iter()
                .any(|(case, mode, _)| c == case && m == mode)
        })
        .map(|(c, m, why)| format!("{m}-{c} ({why})"))
        .collect();
    assert!(
        unexpected.is_empty() && stale.is_empty(),
        "sigstore-verify disagrees with the conformance suite where it is not listed:\n{}\n\
         listed but now agrees:\n{}",
        unexpected.join("\n"),
        stale.join("\n")
    );
}

/// The oracle checks what it is told, not only the bundle: good cases are
/// refused under another identity, issuer, key or artifact.
#[test]
fn sigstore_rust_refuses_good_conformance_cases_under_other_inputs() {
    let all = cases();
    let case = |name: &str| all.iter().find(|c| c.name == name).expect(name);
    let read = |p: &std::path::Path| std::fs::read_to_string(p).expect("read");
    for name in ["happy-path-v0.3", "rekor2-dsse-happy-path"] {
        let c = case(name);
        let (root, bundle) = (read(&c.trusted_root_or_production()), read(&c.bundle));
        let artifact = std::fs::read(&c.artifact).expect("artifact");
        let Signer::Identity { identity, issuer } = &c.signer else {
            panic!("{name} is keyless")
        };
        let run = |input, identity, issuer| {
            verify(&root, &bundle, input, Expect::Identity { identity, issuer })
        };
        run(Input::Bytes(&artifact), identity, issuer).expect(name);
        let err = run(Input::Bytes(&artifact), "https://github.com/evil", issuer)
            .expect_err("another identity");
        assert!(err.contains("identity mismatch"), "{name}: {err}");
        let err = run(
            Input::Bytes(&artifact),
            identity,
            "https://accounts.google.com",
        )
        .expect_err("another issuer");
        assert!(err.contains("issuer mismatch"), "{name}: {err}");
        let err =
            run(Input::Bytes(b"another artifact"), identity, issuer).expect_err("another artifact");
        assert!(err.contains("artifact"), "{name}: {err}");
        let err = run(Input::Sha256([7; 32]), identity, issuer).expect_err("another digest");
        assert!(err.contains("artifact"), "{name}: {err}");
    }
    let c = case("managed-key-happy-path");
    let (root, bundle) = (read(&c.trusted_root_or_production()), read(&c.bundle));
    let artifact = std::fs::read(&c.artifact).expect("artifact");
    let Signer::Key(key) = &c.signer else {
        panic!("managed-key-happy-path has a key")
    };
    verify(
        &root,
        &bundle,
        Input::Bytes(&artifact),
        Expect::Key(&read(key)),
    )
    .expect("managed-key-happy-path");
    let other = ivpol_tests::sign::KeyPair::new(ivpol_tests::sign::KeyKind::P256).public_pem();
    let err = verify(&root, &bundle, Input::Bytes(&artifact), Expect::Key(&other))
        .expect_err("another key");
    assert!(err.contains("invalid signature"), "{err}");
}
