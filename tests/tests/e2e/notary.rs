//! Notary verification end to end: images in the local registry signed by
//! the fixture generator's Notary CA (JWS and COSE envelopes, own TSA),
//! SBOMs attached as signed referrers, Kyverno ImageValidatingPolicies with
//! Notary attestors, and the real `ivpol serve` deciding.

use ivpol_tests::notary_cases::{notary_cases, notary_file, NotaryCase};
use ivpol_tests::policy::notary_attestor;
use ivpol_tests::policy::{
    indent, notary_signatures_policy as signatures_policy, verifying_policy,
};
use ivpol_tests::sign::notary::{attach_referrer, Format, NotaryCa, NotaryLeaf, NotaryOpts};
use ivpol_tests::sign::notary::{NotarySigner, NotaryTamper};
use ivpol_tests::sign::tsa::Tsa;
use ivpol_tests::sign::{now, KeyKind, KeyPair, Window};
use ivpol_tests::verifying::{
    assert_admitted, assert_denied, example_policy, readme_answers, run_fixture_bin, validate,
    Setup,
};
use serde_json::{json, Value};

use ivpol_tests::policy::NOTARY_NOT_SIGNED as NOT_SIGNED;
const SBOM_TYPE: &str = "sbom/cyclone-dx";
const SBOM_LAYER: &str = "application/vnd.cyclonedx+json";
const HOUR: i64 = 3600;

/// A signer whose leaf is valid for an hour either side of now.
fn signer(ca: &NotaryCa, kind: KeyKind) -> NotarySigner {
    let t = now();
    NotarySigner::new(ca.leaf(NotaryLeaf::new(kind, Window::new(t - HOUR, t + HOUR))))
}

fn cyclonedx(serial: &str) -> Value {
    json!({"bomFormat": "CycloneDX", "specVersion": "1.5", "serialNumber": serial, "components": []})
}

#[test]
fn notary_signatures_admit_the_signed_and_deny_everything_else() {
    let setup = Setup::new();
    let p = setup.pusher();
    let ca = NotaryCa::new("ivpol-notary");
    let other_ca = NotaryCa::new("ivpol-notary-other");
    let jws = NotaryOpts::new(Format::Jws);
    let cose = NotaryOpts::new(Format::Cose);
    let sign = |repo: &str, signer: &NotarySigner, opts: &NotaryOpts| {
        let (image, digest) = setup.image(repo);
        signer.sign(&p, repo, &digest, opts);
        image
    };
    let p256 = signer(&ca, KeyKind::P256);
    let signed = [
        sign("jws-es256", &p256, &jws),
        sign("cose-es256", &p256, &cose),
        sign("cose-es384", &signer(&ca, KeyKind::P384), &cose),
        sign("jws-ps256", &signer(&ca, KeyKind::Rsa2048Pss), &jws),
    ];
    let unsigned = setup.image("unsigned").0;
    let t = now();
    let expired_leaf = NotarySigner::new(ca.leaf(NotaryLeaf::new(
        KeyKind::P256,
        Window::new(t - 3 * HOUR, t - 2 * HOUR),
    )));
    let denied = [
        unsigned.clone(),
        sign("wrong-root", &signer(&other_ca, KeyKind::P256), &jws),
        sign(
            "expired-envelope",
            &p256,
            &NotaryOpts::new(Format::Jws)
                .signing_time(t - 2 * HOUR)
                .expiry(t - HOUR),
        ),
        sign(
            "expired-certificate",
            &expired_leaf,
            &NotaryOpts::new(Format::Cose).signing_time(t - 150 * 60),
        ),
        sign(
            "tampered-payload",
            &p256,
            &NotaryOpts::new(Format::Jws).tamper(NotaryTamper::PayloadAfterSigning),
        ),
        sign(
            "tampered-cose",
            &p256,
            &NotaryOpts::new(Format::Cose).tamper(NotaryTamper::PayloadAfterSigning),
        ),
        sign(
            "other-digest",
            &p256,
            &NotaryOpts::new(Format::Jws).tamper(NotaryTamper::OtherDigest),
        ),
        sign(
            "wrong-key",
            &p256,
            &NotaryOpts::new(Format::Cose).tamper(NotaryTamper::WrongKey(KeyPair::from_seed(
                KeyKind::P256,
                "not the leaf's",
            ))),
        ),
    ];
    let s = setup.serve(&[signatures_policy(
        "notary",
        &notary_attestor("notary", &ca.root_pem(), None),
    )]);
    for image in &signed {
        assert_admitted(&s, "notary", image);
    }
    for image in &denied {
        assert_denied(&s, "notary", image, NOT_SIGNED);
    }
}

/// An image signed with several envelopes verifies when one of them does,
/// and a signature on another image of the repository does not count.
#[test]
fn any_verified_envelope_is_enough_and_signatures_are_per_digest() {
    let setup = Setup::new();
    let p = setup.pusher();
    let ca = NotaryCa::new("ivpol-notary");
    let (image, digest) = setup.image("several");
    signer(&NotaryCa::new("ivpol-notary-other"), KeyKind::P256).sign(
        &p,
        "several",
        &digest,
        &NotaryOpts::new(Format::Jws),
    );
    signer(&ca, KeyKind::P256).sign(&p, "several", &digest, &NotaryOpts::new(Format::Cose));
    // `v2` of the same repository is signed; `v1` of "other" is not.
    let signed_digest = p.image("other", "v2", ivpol_tests::fixtures::OCI_MANIFEST, "arm64");
    signer(&ca, KeyKind::P256).sign(&p, "other", &signed_digest, &NotaryOpts::new(Format::Jws));
    let (unsigned, _) = setup.image("other");
    let s = setup.serve(&[signatures_policy(
        "notary",
        &notary_attestor("notary", &ca.root_pem(), None),
    )]);
    assert_admitted(&s, "notary", &image);
    assert_denied(&s, "notary", &unsigned, NOT_SIGNED);
}

/// With `tsaCerts`, the chain is checked at the countersignature's time, so
/// a certificate that expired after signing still verifies; without them
/// every certificate must be valid now, and a timestamp from another TSA,
/// or none, does not do.
#[test]
fn timestamps_let_certificates_expire_after_signing() {
    let setup = Setup::new();
    let p = setup.pusher();
    let ca = NotaryCa::new("ivpol-notary");
    let tsa = Tsa::new("ivpol-tsa");
    let other_tsa = Tsa::new("ivpol-tsa-other");
    let t = now();
    let past = NotarySigner::new(ca.leaf(NotaryLeaf::new(
        KeyKind::P256,
        Window::new(t - 72 * HOUR, t - 48 * HOUR),
    )));
    let at = t - 60 * HOUR;
    let mut images = Vec::new();
    for (repo, format, stamp) in [
        ("stamped-jws", Format::Jws, Some(&tsa)),
        ("stamped-cose", Format::Cose, Some(&tsa)),
        ("other-tsa", Format::Jws, Some(&other_tsa)),
        ("unstamped", Format::Jws, None),
    ] {
        let (image, digest) = setup.image(repo);
        let mut opts = NotaryOpts::new(format).signing_time(at);
        if let Some(stamp) = stamp {
            opts = opts.timestamp(stamp);
        }
        past.sign(&p, repo, &digest, &opts);
        images.push(image);
    }
    // A current certificate must be covered by a timestamp too once
    // `tsaCerts` is set.
    let (current, digest) = setup.image("current-unstamped");
    signer(&ca, KeyKind::P256).sign(
        &p,
        "current-unstamped",
        &digest,
        &NotaryOpts::new(Format::Jws),
    );
    let root = ca.root_pem();
    let s = setup.serve(&[
        signatures_policy(
            "with-tsa",
            &notary_attestor("notary", &root, Some(&tsa.root_pem())),
        ),
        signatures_policy("without-tsa", &notary_attestor("notary", &root, None)),
    ]);
    assert_admitted(&s, "with-tsa", &images[0]);
    assert_admitted(&s, "with-tsa", &images[1]);
    for image in &images[2..] {
        assert_denied(&s, "with-tsa", image, NOT_SIGNED);
    }
    assert_denied(&s, "with-tsa", &current, NOT_SIGNED);
    for image in &images {
        assert_denied(&s, "without-tsa", image, NOT_SIGNED);
    }
    assert_admitted(&s, "without-tsa", &current);
}

/// Kyverno's Notary test policy, with the generator's root: the image is
/// signed, its SBOM referrer is signed, and the SBOM says CycloneDX.
fn sbom_policy(name: &str, root: &str) -> (String, String) {
    let attestation = format!("- name: sbom\n  referrer:\n    type: {SBOM_TYPE}");
    let check = "images.containers.map(i, verifyImageSignatures(i, [attestors.notary]) > 0 && verifyAttestationSignatures(i, attestations.sbom, [attestors.notary]) > 0 && extractPayload(i, attestations.sbom).serialNumber == 'urn:uuid:signed').all(ok, ok)";
    (
        name.to_string(),
        verifying_policy(
            name,
            &notary_attestor("notary", root, None),
            &attestation,
            check,
            "the image has no signed CycloneDX SBOM",
        ),
    )
}

/// A policy that extracts the SBOM without verifying it first.
fn extract_only_policy(name: &str, root: &str) -> (String, String) {
    let attestation = format!("- name: sbom\n  referrer:\n    type: {SBOM_TYPE}");
    let check =
        "images.containers.all(i, extractPayload(i, attestations.sbom).bomFormat == 'CycloneDX')";
    (
        name.to_string(),
        verifying_policy(
            name,
            &notary_attestor("notary", root, None),
            &attestation,
            check,
            "unreachable",
        ),
    )
}

#[test]
fn sbom_referrers_are_verified_before_they_are_extracted() {
    let setup = Setup::new();
    let p = setup.pusher();
    let ca = NotaryCa::new("ivpol-notary");
    let good = signer(&ca, KeyKind::P256);
    let stranger = signer(&NotaryCa::new("ivpol-notary-other"), KeyKind::P256);
    let jws = NotaryOpts::new(Format::Jws);
    let image_signed = |repo: &str| {
        let (image, digest) = setup.image(repo);
        good.sign(&p, repo, &digest, &jws);
        (image, digest)
    };
    let sbom = |repo: &str, digest: &str, serial: &str| {
        attach_referrer(&p, repo, digest, SBOM_TYPE, SBOM_LAYER, &cyclonedx(serial)).0
    };

    // A signed image with a signed SBOM (COSE, to cover both formats).
    let (with_sbom, digest) = image_signed("with-sbom");
    let sbom_digest = sbom("with-sbom", &digest, "urn:uuid:signed");
    good.sign(
        &p,
        "with-sbom",
        &sbom_digest,
        &NotaryOpts::new(Format::Cose),
    );

    // A signed image whose SBOMs are unsigned or signed by a stranger, and
    // whose other referrer types are not SBOMs.
    let (unsigned_sbom, digest) = image_signed("unsigned-sbom");
    sbom("unsigned-sbom", &digest, "urn:uuid:signed");
    let stranger_sbom = sbom("unsigned-sbom", &digest, "urn:uuid:stranger");
    stranger.sign(&p, "unsigned-sbom", &stranger_sbom, &jws);
    let other_type = attach_referrer(
        &p,
        "unsigned-sbom",
        &digest,
        "application/vnd.example.other",
        SBOM_LAYER,
        &cyclonedx("urn:uuid:signed"),
    )
    .0;
    good.sign(&p, "unsigned-sbom", &other_type, &jws);

    // Unsigned forgeries listed before the signed SBOM: the signed one is
    // extracted, whatever the order.
    // Referrers are tried in digest order, so pick a repository where the
    // signed SBOM's digest is in the upper half, then add forgeries until
    // one sorts before it (all of this is deterministic).
    let (repo, mixed, digest, signed_sbom) = (0..32)
        .map(|n| {
            let repo = format!("mixed-{n}");
            let (image, digest) = image_signed(&repo);
            let signed = sbom(&repo, &digest, "urn:uuid:signed");
            (repo, image, digest, signed)
        })
        .find(|(.., signed)| signed.as_str() >= "sha256:8")
        .expect("a signed SBOM digest in the upper half");
    good.sign(&p, &repo, &signed_sbom, &jws);
    let forged_first = (0..16)
        .map(|n| sbom(&repo, &digest, &format!("urn:uuid:forged-{n}")))
        .any(|forged| forged < signed_sbom);
    assert!(
        forged_first,
        "no forgery sorts before the signed SBOM {signed_sbom}"
    );

    // An unsigned image with a signed SBOM.
    let (unsigned_image, digest) = setup.image("unsigned-image");
    let sbom_digest = sbom("unsigned-image", &digest, "urn:uuid:signed");
    good.sign(&p, "unsigned-image", &sbom_digest, &jws);

    let root = ca.root_pem();
    let s = setup.serve(&[
        sbom_policy("sbom", &root),
        extract_only_policy("extract-only", &root),
    ]);
    assert_admitted(&s, "sbom", &with_sbom);
    assert_admitted(&s, "sbom", &mixed);
    let message = "the image has no signed CycloneDX SBOM";
    assert_denied(&s, "sbom", &unsigned_sbom, message);
    assert_denied(&s, "sbom", &unsigned_image, message);
    for image in [&with_sbom, &unsigned_sbom] {
        let r = validate(&s, "extract-only", image);
        assert_eq!(r["allowed"], false, "{r}");
        let text = r["status"]["message"].as_str().unwrap_or_default();
        assert!(
            text.contains(&format!(
                "failed to get payload: no verified referrer of type {SBOM_TYPE}"
            )),
            "{text}"
        );
    }
}

/// Kyverno's kind rules hold end to end: a Notary attestor cannot verify
/// an in-toto attestation.
#[test]
fn notary_attestors_reject_intoto_attestations() {
    let setup = Setup::new();
    let ca = NotaryCa::new("ivpol-notary");
    let (image, _) = setup.image("app");
    let policy = verifying_policy(
        "intoto",
        &notary_attestor("notary", &ca.root_pem(), None),
        "- name: slsa\n  intoto:\n    type: https://slsa.dev/provenance/v1",
        "images.containers.all(i, verifyAttestationSignatures(i, attestations.slsa, [attestors.notary]) > 0)",
        "unreachable",
    );
    let s = setup.serve(&[("intoto".into(), policy)]);
    let r = validate(&s, "intoto", &image);
    assert_eq!(r["allowed"], false, "{r}");
    let text = r["status"]["message"].as_str().unwrap_or_default();
    assert!(
        text.contains("notary verifier only supports oci 1.1 referrers as attestations"),
        "{text}"
    );
}

/// The README's Notary example, command for command.
#[test]
fn readme_example_verifies_a_notary_signature_and_an_sbom() {
    let setup = Setup::new();
    let reg = &setup.reg;
    let out = tempfile::tempdir().expect("temp dir");
    let dir = out.path().display().to_string();
    let image = |path: &str| format!("{}/{path}", reg.addr);
    let sign = env!("CARGO_BIN_EXE_sign-image");
    let app = image("notary/app:v1");
    run_fixture_bin(sign, &[&app, "--push", "--notary", "--sbom", "--out", &dir]);
    let nosbom = image("notary/nosbom:v1");
    run_fixture_bin(sign, &[&nosbom, "--push", "--notary", "--out", &dir]);
    run_fixture_bin(
        env!("CARGO_BIN_EXE_push-image"),
        &[&image("notary/unsigned:v1")],
    );
    let policy = example_policy("verify-local-notary", &reg.addr);
    let root = std::fs::read_to_string(out.path().join("notary-root.pem")).expect("root");
    assert!(
        policy.1.contains(&indent(&root, 12)),
        "verify-local-notary.yaml must trust the root sign-image writes"
    );
    let s = setup.serve(&[policy]);
    let answers = readme_answers(
        &s,
        &reg.addr,
        &["notary/app:v1", "notary/nosbom:v1", "notary/unsigned:v1"],
    );
    assert_eq!(
        answers,
        vec![
            json!([true, null]),
            json!([
                false,
                "Policy verify-local-notary failed: the image has no signed CycloneDX SBOM"
            ]),
            json!([
                false,
                "Policy verify-local-notary failed: image is not signed by the example Notary CA"
            ]),
        ]
    );
}

/// Runs `ivpol notary verify`: whether it exited 0, and all it printed.
fn notary_verify(mut cmd: std::process::Command) -> (bool, String) {
    let out = cmd.output().expect("run ivpol notary verify");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn ivpol_notary_verify_checks_vendored_envelopes_offline() {
    let [jws, cose] = notary_cases();
    for case in [&jws, &cose] {
        let mut cmd = case.command();
        cmd.args(["--repeat", "3", case.target_digest]);
        let (ok, text) = notary_verify(cmd);
        assert!(ok, "{}: {text}", case.name);
        assert!(
            text.contains(&format!("OK: {}", case.target_digest)),
            "{text}"
        );
        assert!(text.contains("µs (mean of 3)"), "{text}");
    }
    let fails = |case: NotaryCase, digest: &str, why: &str| {
        let mut cmd = case.command();
        cmd.arg(digest);
        let (ok, text) = notary_verify(cmd);
        assert!(!ok, "{}: verified, expected {why:?}: {text}", case.name);
        assert!(
            text.contains(why),
            "{}: expected {why:?}: {text}",
            case.name
        );
        assert!(!text.contains("OK:"), "{text}");
    };
    let untrusted = NotaryCase {
        certs: cose.certs.clone(),
        ..jws.clone()
    };
    fails(
        untrusted,
        jws.target_digest,
        "the signature's certificate chain does not contain any trusted certificate",
    );
    let mismatch = "signature does not match the given artifact";
    fails(jws.clone(), cose.target_digest, mismatch);
    let resized = NotaryCase {
        target_size: jws.target_size + 1,
        ..jws.clone()
    };
    fails(resized, jws.target_digest, mismatch);
    // notation-go's tampered envelope: its signature is not base64url.
    let tampered = NotaryCase {
        envelope: notary_file("notation-go/internal/mock/testdata/ca_invalid_sig_env.json"),
        ..jws.clone()
    };
    fails(tampered, jws.target_digest, "signature is invalid");
    let mistyped = NotaryCase {
        format: Format::Cose,
        ..jws.clone()
    };
    fails(
        mistyped,
        jws.target_digest,
        "not a COSE_Sign1_Tagged message",
    );
    let other_tsa = NotaryCase {
        tsa_certs: vec![notary_file(
            "notation-go/verifier/testdata/truststore/x509/tsa/test-mismatch/DigiCertTSARootSHA384.cer",
        )],
        ..cose.clone()
    };
    fails(
        other_tsa,
        cose.target_digest,
        "failed to verify the timestamp countersignature",
    );
    let empty = tempfile::NamedTempFile::new().unwrap();
    let no_tsa_certs = NotaryCase {
        tsa_certs: vec![empty.path().to_path_buf()],
        ..cose.clone()
    };
    fails(no_tsa_certs, cose.target_digest, "is empty: no certificate");
}
