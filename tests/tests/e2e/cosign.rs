//! Cosign verification end to end: images in the local registry signed by
//! the fixture generator, Kyverno ImageValidatingPolicies with cosign
//! attestors, and the real `ivpol serve` deciding.
//!
//! Each test starts one registry and one server with several policies, and
//! asks about one policy at a time through its route (`/ivpol/validate/<name>`).

mod keyless;
mod trust;

use ivpol_tests::policy::{indent, key_attestor, verifying_policy as policy_with};
use ivpol_tests::sign::{
    now, AttOpts, BundleOpts, Content, CtLog, Fulcio, Identity, KeyKind, KeyPair, Leaf, Rekor,
    SigHash, SignOpts, Signer, Tamper, TrustedRoot, Window,
};
use ivpol_tests::verifying::{
    assert_admitted, assert_denied, example_policy, readme_answers, run_fixture_bin, validate,
    Setup,
};
use serde_json::json;

const ISSUER: &str = "https://issuer.ivpol.test";
const IDENTITY: &str = "dev@ivpol.test";
const REKOR_URL: &str = "https://rekor.ivpol.test";

/// A pods policy with cosign attestors and one validation.
fn policy(name: &str, attestors: &str, validation: &str, message: &str) -> String {
    policy_with(name, attestors, "", validation, message)
}

/// The usual check: every container verified by `attestors`.
fn verified_by(attestors: &[&str]) -> String {
    let list: Vec<String> = attestors.iter().map(|a| format!("attestors.{a}")).collect();
    format!(
        "images.containers.map(i, verifyImageSignatures(i, [{}])).all(n, n > 0)",
        list.join(", ")
    )
}

/// A key attestor whose signatures must be in `rekor`.
fn key_attestor_with_rekor(name: &str, pem: &str, rekor: &Rekor) -> String {
    format!(
        "- name: {name}\n  cosign:\n    key:\n      data: |\n        {}\n    ctlog:\n      url: {REKOR_URL}\n      rekorPubKey: |\n        {}",
        indent(pem, 8),
        indent(&rekor.public_pem(), 8)
    )
}

fn keyless_attestor(name: &str, identity: &str, root: &TrustedRoot) -> String {
    format!(
        "- name: {name}\n  cosign:\n    keyless:\n      identities:\n        - issuer: {ISSUER}\n          subject: {identity}\n    ctlog:\n      url: {REKOR_URL}\n    trustedRoot:\n      value: |\n        {}",
        indent(&root.to_string_pretty(), 8)
    )
}

/// A Fulcio-style leaf for `IDENTITY`, issued for a signature at `t`.
fn leaf_at(ca: &Fulcio, t: i64) -> Leaf {
    ca.leaf(
        Identity::Email(IDENTITY.into()),
        ISSUER,
        Window::fulcio_at(t),
    )
}

#[test]
fn key_signatures_of_every_key_type() {
    let setup = Setup::new();
    let mut policies = Vec::new();
    let mut images = Vec::new();
    for (i, kind) in KeyKind::ALL.iter().enumerate() {
        let (image, digest) = setup.image(&format!("keys/{i}"));
        let signer = Signer::keyed(*kind);
        signer.sign_image(
            &setup.pusher(),
            &format!("keys/{i}"),
            &digest,
            &SignOpts::default(),
        );
        let name = format!("key-{i}");
        let attestor = key_attestor("cosign", &signer.public_pem());
        policies.push((
            name.clone(),
            policy(&name, &attestor, &verified_by(&["cosign"]), "not signed"),
        ));
        images.push((name, image));
    }
    let s = setup.serve(&policies);
    for (name, image) in &images {
        assert_admitted(&s, name, image);
    }
}

#[test]
fn key_signatures_admit_the_signed_and_deny_everything_else() {
    let setup = Setup::new();
    let p = setup.pusher();
    let signer = Signer::keyed(KeyKind::P256);
    let (signed, digest) = setup.image("app/signed");
    signer.sign_image(&p, "app/signed", &digest, &SignOpts::default());
    let (unsigned, _) = setup.image("app/unsigned");
    let (tampered, digest) = setup.image("app/tampered");
    signer.sign_image(
        &p,
        "app/tampered",
        &digest,
        &SignOpts::default().tamper(Tamper::PayloadAfterSigning),
    );
    let (other, digest) = setup.image("app/other-digest");
    let (_, elsewhere) = setup.image("app/elsewhere");
    signer.sign_image(
        &p,
        "app/other-digest",
        &digest,
        &SignOpts::default().tamper(Tamper::OtherDigest(elsewhere)),
    );
    let (wrong, digest) = setup.image("app/wrong-key");
    let other_key = KeyPair::from_seed(KeyKind::P256, "someone else");
    signer.sign_image(
        &p,
        "app/wrong-key",
        &digest,
        &SignOpts::default().tamper(Tamper::wrong_key(other_key.clone())),
    );

    let attestor = key_attestor("cosign", &signer.public_pem());
    let message = "failed to verify image with the cosign key";
    let s = setup.serve(&[
        (
            "verify-key".into(),
            policy("verify-key", &attestor, &verified_by(&["cosign"]), message),
        ),
        (
            "someone-elses-key".into(),
            policy(
                "someone-elses-key",
                &key_attestor("cosign", &other_key.public_pem()),
                &verified_by(&["cosign"]),
                message,
            ),
        ),
    ]);
    assert_admitted(&s, "verify-key", &signed);
    for image in [&unsigned, &tampered, &other, &wrong] {
        assert_denied(&s, "verify-key", image, message);
    }
    assert_denied(&s, "someone-elses-key", &signed, message);
}

#[test]
fn transparency_log_is_required_unless_ignored() {
    let setup = Setup::new();
    let p = setup.pusher();
    let rekor = Rekor::new();
    let signer = Signer::keyed(KeyKind::P256);
    let (logged, digest) = setup.image("tlog/logged");
    signer.sign_image(
        &p,
        "tlog/logged",
        &digest,
        &SignOpts::default().rekor(&rekor),
    );
    let (unlogged, digest) = setup.image("tlog/unlogged");
    signer.sign_image(&p, "tlog/unlogged", &digest, &SignOpts::default());
    let (bad_set, digest) = setup.image("tlog/bad-set");
    signer.sign_image(
        &p,
        "tlog/bad-set",
        &digest,
        &SignOpts::default().rekor(&rekor).tamper(Tamper::Set),
    );
    let (bad_body, digest) = setup.image("tlog/bad-body");
    signer.sign_image(
        &p,
        "tlog/bad-body",
        &digest,
        &SignOpts::default().rekor(&rekor).tamper(Tamper::LogBody),
    );
    let other_rekor = Rekor::with_seed("another log", 3);

    let message = "not signed and logged";
    let s = setup.serve(&[
        (
            "rekor".into(),
            policy(
                "rekor",
                &key_attestor_with_rekor("cosign", &signer.public_pem(), &rekor),
                &verified_by(&["cosign"]),
                message,
            ),
        ),
        (
            "other-rekor".into(),
            policy(
                "other-rekor",
                &key_attestor_with_rekor("cosign", &signer.public_pem(), &other_rekor),
                &verified_by(&["cosign"]),
                message,
            ),
        ),
    ]);
    assert_admitted(&s, "rekor", &logged);
    for image in [&unlogged, &bad_set, &bad_body] {
        assert_denied(&s, "rekor", image, message);
    }
    assert_denied(&s, "other-rekor", &logged, message);
}

#[test]
fn bundles_attached_as_referrers_are_verified() {
    let setup = Setup::new();
    let p = setup.pusher();
    let (ca, ct, rekor) = (Fulcio::new(), CtLog::default(), Rekor::new());
    let root = TrustedRoot::of(&ca, &rekor, &ct);
    let t = now() - 600;
    let leaf = leaf_at(&ca, t);
    let (keyless, digest) = setup.image("bundle/keyless");
    Signer::keyless(&leaf).bundle_image(
        &p,
        "bundle/keyless",
        &digest,
        &BundleOpts::new(Content::cosign_sign())
            .rekor(&rekor)
            .time(t + 30),
    );
    let (broken, digest) = setup.image("bundle/broken-proof");
    Signer::keyless(&leaf).bundle_image(
        &p,
        "bundle/broken-proof",
        &digest,
        &BundleOpts::new(Content::cosign_sign())
            .rekor(&rekor)
            .time(t + 30)
            .tamper(Tamper::InclusionProof),
    );
    let message = "no valid bundle";
    let s = setup.serve(&[(
        "bundle".into(),
        policy(
            "bundle",
            &keyless_attestor("fulcio", IDENTITY, &root),
            &verified_by(&["fulcio"]),
            message,
        ),
    )]);
    assert_admitted(&s, "bundle", &keyless);
    assert_denied(&s, "bundle", &broken, message);
}

#[test]
fn attestations_are_filtered_by_predicate_type_and_extracted_after_verification() {
    let setup = Setup::new();
    let p = setup.pusher();
    let rekor = Rekor::new();
    let signer = Signer::keyed(KeyKind::P256);
    let (image, digest) = setup.image("att/app");
    signer.attest_image(
        &p,
        "att/app",
        &digest,
        &AttOpts::new(
            "https://slsa.dev/provenance/v0.2",
            json!({"builder": {"id": "https://builder.ivpol.test"}}),
        ),
        &SignOpts::default().rekor(&rekor),
    );
    let attestor = key_attestor_with_rekor("cosign", &signer.public_pem(), &rekor);
    let attestations = "- name: slsa\n  intoto:\n    type: https://slsa.dev/provenance/v0.2\n- name: sbom\n  intoto:\n    type: https://spdx.dev/Document";
    let verified_slsa = "images.containers.map(i, verifyAttestationSignatures(i, attestations.slsa, [attestors.cosign])).all(n, n > 0)";
    let builder = "images.containers.all(i, verifyAttestationSignatures(i, attestations.slsa, [attestors.cosign]) > 0 && extractPayload(i, attestations.slsa).predicate.builder.id == 'https://builder.ivpol.test')";
    let verified_sbom = "images.containers.map(i, verifyAttestationSignatures(i, attestations.sbom, [attestors.cosign])).all(n, n > 0)";
    let early =
        "images.containers.all(i, extractPayload(i, attestations.slsa).predicate.builder.id != '')";
    let with = |name: &str, validation: &str, message: &str| {
        let yaml = policy_with(name, &attestor, attestations, validation, message);
        (name.to_string(), yaml)
    };
    let s = setup.serve(&[
        with("slsa", verified_slsa, "no provenance"),
        with("builder", builder, "wrong builder"),
        with("sbom", verified_sbom, "no sbom"),
        with("early", early, "unused"),
    ]);
    assert_admitted(&s, "slsa", &image);
    assert_admitted(&s, "builder", &image);
    assert_denied(&s, "sbom", &image, "no sbom");
    let r = validate(&s, "early", &image);
    assert_eq!(r["allowed"], false);
    let message = r["status"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("Policy early error: ")
            && message.contains(
                "intoto attestation payload cannot be fetch before verifying intoto attestation"
            ),
        "{message}"
    );
}

#[test]
fn several_attestors_are_counted_and_signatures_can_live_elsewhere() {
    let setup = Setup::new();
    let p = setup.pusher();
    let (a, b, c) = (
        Signer::with_key(KeyPair::from_seed(KeyKind::P256, "a")),
        Signer::with_key(KeyPair::from_seed(KeyKind::P384, "b")),
        Signer::with_key(KeyPair::from_seed(KeyKind::Ed25519, "c")),
    );
    let (image, digest) = setup.image("multi/app");
    a.sign_image(&p, "multi/app", &digest, &SignOpts::default());
    c.sign_image(&p, "multi/app", &digest, &SignOpts::default());
    let (moved, digest) = setup.image("multi/moved");
    a.sign_image(
        &p,
        "multi/moved",
        &digest,
        &SignOpts::default()
            .repository("multi/signatures")
            .tag_prefix("v2-"),
    );
    let attestors = [
        key_attestor("a", &a.public_pem()),
        key_attestor("b", &b.public_pem()),
        key_attestor("c", &c.public_pem()),
    ]
    .join("\n");
    let two = "images.containers.all(i, verifyImageSignatures(i, [attestors.a, attestors.b, attestors.c]) == 2)";
    let repository = format!(
        "- name: a\n  cosign:\n    key:\n      data: |\n        {}\n    source:\n      repository: {}/multi/signatures\n      tagPrefix: v2-\n    ctlog:\n      insecureIgnoreTlog: true",
        indent(&a.public_pem(), 8),
        setup.reg.addr
    );
    let s = setup.serve(&[
        (
            "two-of-three".into(),
            policy("two-of-three", &attestors, two, "not exactly two"),
        ),
        (
            "elsewhere".into(),
            policy("elsewhere", &repository, &verified_by(&["a"]), "not signed"),
        ),
    ]);
    assert_admitted(&s, "two-of-three", &image);
    assert_admitted(&s, "elsewhere", &moved);
    assert_denied(&s, "elsewhere", &image, "not signed");
}

#[test]
fn certificates_annotations_and_bundles_signed_with_keys() {
    let setup = Setup::new();
    let p = setup.pusher();
    let (ca, ct, rekor) = (Fulcio::new(), CtLog::default(), Rekor::new());
    // A certificate valid now: with the tlog ignored, now is the trusted time.
    let leaf = ca.leaf(
        Identity::Email(IDENTITY.into()),
        ISSUER,
        Window::new(now() - 3600, now() + 3600),
    );
    let (certified, digest) = setup.image("cert/app");
    Signer::keyless(&leaf).sign_image(
        &p,
        "cert/app",
        &digest,
        &SignOpts::default().annotation("env", "prod"),
    );
    let certificate = |name: &str, chain: &str| {
        format!(
            "- name: {name}\n  cosign:\n    certificate:\n      cert:\n        value: |\n          {}\n      certChain:\n        value: |\n          {}\n    ctlog:\n      insecureIgnoreTlog: true\n      ctLogPubKey: |\n        {}",
            indent(&leaf.pem(), 10),
            indent(chain, 10),
            indent(&ct.public_pem(), 8)
        )
    };
    let other_ca = Fulcio::with_seed("another CA", Window::new(now() - 86_400, now() + 86_400));
    let annotated = |value: &str| {
        format!(
            "{}\n    annotations:\n      env: {value}",
            key_attestor("cosign", &Signer::keyless(&leaf).public_pem())
        )
    };

    let keyed = Signer::keyed(KeyKind::P256);
    let (bundled, digest) = setup.image("bundle/keyed");
    keyed.bundle_image(
        &p,
        "bundle/keyed",
        &digest,
        &BundleOpts::new(Content::cosign_sign()).rekor(&rekor),
    );
    let (attested, digest) = setup.image("bundle/attested");
    keyed.bundle_image(
        &p,
        "bundle/attested",
        &digest,
        &BundleOpts::new(Content::attestation(
            "https://slsa.dev/provenance/v1",
            json!({"buildDefinition": {"buildType": "https://actions.github.io/buildtypes/workflow/v1"}}),
        ))
        .rekor(&rekor),
    );
    let key_with_rekor = key_attestor_with_rekor("cosign", &keyed.public_pem(), &rekor);
    let provenance = "images.containers.all(i, verifyAttestationSignatures(i, attestations.slsa, [attestors.cosign]) > 0 && extractPayload(i, attestations.slsa).predicate.buildDefinition.buildType.startsWith('https://actions.github.io/'))";
    let slsa = "- name: slsa\n  intoto:\n    type: https://slsa.dev/provenance/v1";

    let s = setup.serve(&[
        (
            "certificate".into(),
            policy(
                "certificate",
                &certificate("cosign", &ca.chain_pem()),
                &verified_by(&["cosign"]),
                "not certified",
            ),
        ),
        (
            "other-chain".into(),
            policy(
                "other-chain",
                &certificate("cosign", &other_ca.chain_pem()),
                &verified_by(&["cosign"]),
                "not certified",
            ),
        ),
        (
            "prod".into(),
            policy(
                "prod",
                &annotated("prod"),
                &verified_by(&["cosign"]),
                "not for prod",
            ),
        ),
        (
            "dev".into(),
            policy(
                "dev",
                &annotated("dev"),
                &verified_by(&["cosign"]),
                "not for dev",
            ),
        ),
        (
            "key-bundle".into(),
            policy(
                "key-bundle",
                &key_with_rekor,
                &verified_by(&["cosign"]),
                "not signed",
            ),
        ),
        (
            "provenance".into(),
            policy_with(
                "provenance",
                &key_with_rekor,
                slsa,
                provenance,
                "no provenance",
            ),
        ),
    ]);
    assert_admitted(&s, "certificate", &certified);
    assert_denied(&s, "other-chain", &certified, "not certified");
    assert_admitted(&s, "prod", &certified);
    assert_denied(&s, "dev", &certified, "not for dev");
    assert_admitted(&s, "key-bundle", &bundled);
    assert_denied(&s, "key-bundle", &attested, "not signed");
    assert_admitted(&s, "provenance", &attested);
    assert_denied(&s, "provenance", &bundled, "no provenance");
}

/// The README's verification example, command for command, with the
/// registry on a free port: `sign-image` and `push-image` as the README runs
/// them, the policies in `tests/examples/verify/`, and the README's output.
#[test]
fn readme_example_verifies_key_and_keyless_signatures() {
    let setup = Setup::new();
    let reg = &setup.reg;
    let out = tempfile::tempdir().expect("temp dir");
    let image = |path: &str| format!("{}/{path}", reg.addr);
    let dir = |name: &str| out.path().join(name).display().to_string();
    let sign = env!("CARGO_BIN_EXE_sign-image");
    run_fixture_bin(
        sign,
        &[&image("key/app:v1"), "--push", "--out", &dir("key")],
    );
    run_fixture_bin(
        sign,
        &[
            &image("keyless/app:v1"),
            "--push",
            "--keyless",
            "--out",
            &dir("keyless"),
        ],
    );
    run_fixture_bin(
        env!("CARGO_BIN_EXE_push-image"),
        &[&image("key/unsigned:v1")],
    );
    let s = setup.serve(&[
        example_policy("verify-local-key", &reg.addr),
        example_policy("verify-local-keyless", &reg.addr),
    ]);
    let answers = readme_answers(
        &s,
        &reg.addr,
        &["key/app:v1", "keyless/app:v1", "key/unsigned:v1"],
    );
    assert_eq!(
        answers,
        vec![
            json!([true, null]),
            json!([true, null]),
            json!([
                false,
                "Policy verify-local-key failed: image is not signed with the example key"
            ]),
        ]
    );
}

/// `key.expression`, `certificate.cert.expression` and
/// `trustedRoot.expression` supply what `data` / `value` would, and
/// `hashAlgorithm` picks the signature hash.
#[test]
fn attestor_expressions_and_hash_algorithms() {
    let setup = Setup::new();
    let p = setup.pusher();
    let (ca, ct, rekor) = (Fulcio::new(), CtLog::default(), Rekor::new());
    let cel_string = |text: &str| format!("'{}'", text.trim().replace('\n', "\\n"));

    let sha384 =
        Signer::with_key(KeyPair::from_seed(KeyKind::P256, "sha384").with_hash(SigHash::Sha384));
    let (hashed, digest) = setup.image("expr/sha384");
    sha384.sign_image(&p, "expr/sha384", &digest, &SignOpts::default());
    let with_hash = |name: &str, hash: &str| {
        format!(
            "- name: {name}\n  cosign:\n    key:\n      expression: {}\n      hashAlgorithm: {hash}\n    ctlog:\n      insecureIgnoreTlog: true",
            serde_json::to_string(&cel_string(&sha384.public_pem())).expect("json")
        )
    };
    let not_a_string = "- name: bad\n  cosign:\n    key:\n      expression: '42'\n    ctlog:\n      insecureIgnoreTlog: true";

    let t = now() - 600;
    let leaf = leaf_at(&ca, t);
    let (keyless, digest) = setup.image("expr/keyless");
    Signer::keyless(&leaf).sign_image(
        &p,
        "expr/keyless",
        &digest,
        &SignOpts::default().rekor(&rekor).time(t),
    );
    let root_json: serde_json::Value =
        serde_json::from_str(&TrustedRoot::of(&ca, &rekor, &ct).to_string_pretty()).expect("json");
    let root_expression = format!(
        "- name: fulcio\n  cosign:\n    keyless:\n      identities:\n        - issuer: {ISSUER}\n          subject: {IDENTITY}\n    ctlog:\n      url: {REKOR_URL}\n    trustedRoot:\n      expression: {}",
        serde_json::to_string(&cel_string(&root_json.to_string())).expect("json")
    );

    let s = setup.serve(&[
        (
            "sha384".into(),
            policy(
                "sha384",
                &with_hash("cosign", "sha384"),
                &verified_by(&["cosign"]),
                "not signed",
            ),
        ),
        (
            "sha256".into(),
            policy(
                "sha256",
                &with_hash("cosign", "sha256"),
                &verified_by(&["cosign"]),
                "not signed",
            ),
        ),
        (
            "not-a-string".into(),
            policy(
                "not-a-string",
                not_a_string,
                &verified_by(&["bad"]),
                "not signed",
            ),
        ),
        (
            "root-expression".into(),
            policy(
                "root-expression",
                &root_expression,
                &verified_by(&["fulcio"]),
                "not signed",
            ),
        ),
    ]);
    assert_admitted(&s, "sha384", &hashed);
    assert_denied(&s, "sha256", &hashed, "not signed");
    assert_denied(&s, "not-a-string", &hashed, "not signed");
    assert_admitted(&s, "root-expression", &keyless);
}
