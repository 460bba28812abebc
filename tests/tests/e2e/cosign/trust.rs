//! Trust from outside the policy's own data: the trusted root fetched from
//! a TUF mirror (or read from a root on disk), and signed timestamps by the
//! authority `ctlog.tsaCertChain` names.

use super::{leaf_at, policy, verified_by, IDENTITY, ISSUER, REKOR_URL};
use ivpol_tests::faulty::{Answer, Faulty};
use ivpol_tests::policy::{indent, key_attestor};
use ivpol_tests::sign::{now, tuf, CtLog, Fulcio, KeyKind, Rekor, SignOpts, Signer, TrustedRoot};
use ivpol_tests::verifying::{assert_admitted, assert_denied, validate, Setup};

/// `tuf`: the trusted root comes from a TUF mirror (here plain HTTP on
/// loopback, allowed with `--insecure-registry`), verified from the root
/// metadata the policy holds; a mirror serving another target is refused.
#[test]
fn tuf_mirrors_supply_the_trusted_root_from_data_or_a_file() {
    let setup = Setup::new();
    let p = setup.pusher();
    let (ca, ct, rekor) = (Fulcio::new(), CtLog::default(), Rekor::new());
    let t = now() - 600;
    let leaf = leaf_at(&ca, t);
    let (image, digest) = setup.image("tuf/app");
    Signer::keyless(&leaf).sign_image(
        &p,
        "tuf/app",
        &digest,
        &SignOpts::default().rekor(&rekor).time(t),
    );
    let root = TrustedRoot::of(&ca, &rekor, &ct).to_string_pretty();
    let mirror = |repo: &tuf::TufRepo| {
        let m = Faulty::start();
        for (path, bytes) in &repo.files {
            m.on(
                path,
                Answer::Bytes {
                    content_type: "application/json".into(),
                    body: bytes.clone(),
                },
            );
        }
        m
    };
    let good_repo = tuf::repository(&root);
    let good = mirror(&good_repo);
    // A mirror whose target is not the one its signed targets list names.
    let bad = mirror(&good_repo);
    let (target_path, _) = good_repo.files.last().expect("target");
    bad.on(
        target_path,
        Answer::Bytes {
            content_type: "application/json".into(),
            body: b"{}".to_vec(),
        },
    );
    let attestor = |m: &Faulty| {
        format!(
            "- name: fulcio\n  cosign:\n    keyless:\n      identities:\n        - issuer: {ISSUER}\n          subject: {IDENTITY}\n    ctlog:\n      url: {REKOR_URL}\n    tuf:\n      mirror: http://{}\n      root:\n        data: {}",
            m.addr,
            ivpol_tests::sign::b64(&good_repo.root)
        )
    };
    let files: Vec<(String, String)> = vec![
        (
            "good-mirror.yaml".into(),
            policy(
                "good-mirror",
                &attestor(&good),
                &verified_by(&["fulcio"]),
                "not signed",
            ),
        ),
        (
            "bad-mirror.yaml".into(),
            policy(
                "bad-mirror",
                &attestor(&bad),
                &verified_by(&["fulcio"]),
                "not signed",
            ),
        ),
    ];
    // `tuf.root.path`: the same root on disk, read by the host from a
    // directory the operator lists, and nowhere else.
    let trust = tempfile::tempdir().expect("trust dir");
    let on_disk = trust.path().join("root.json");
    std::fs::write(&on_disk, &good_repo.root).expect("root.json");
    let elsewhere = tempfile::tempdir().expect("elsewhere");
    let outside = elsewhere.path().join("root.json");
    std::fs::write(&outside, &good_repo.root).expect("root.json");
    let by_path = |name: &str, file: &std::path::Path| {
        let attestor = attestor(&good).replace(
            &format!("data: {}", ivpol_tests::sign::b64(&good_repo.root)),
            &format!("path: {}", file.display()),
        );
        let message = "not signed";
        (
            format!("{name}.yaml"),
            policy(name, &attestor, &verified_by(&["fulcio"]), message),
        )
    };
    let mut files = files;
    files.push(by_path("root-on-disk", &on_disk));
    files.push(by_path("root-outside", &outside));
    let trust_dir = trust.path().display().to_string();
    let s = setup.serve_with(
        &files,
        &[
            "--insecure-registry",
            &good.addr,
            "--insecure-registry",
            &bad.addr,
            "--trust-root-dir",
            &trust_dir,
        ],
    );
    assert_admitted(&s, "good-mirror", &image);
    assert_denied(&s, "bad-mirror", &image, "not signed");
    assert_admitted(&s, "root-on-disk", &image);
    let r = validate(&s, "root-outside", &image);
    assert_eq!(r["allowed"], false, "{r}");
    let why = r["status"]["message"].as_str().unwrap_or_default();
    assert!(why.contains("tuf.root.path"), "{why}");
    assert!(why.contains("--trust-root-dir"), "{why}");
}

/// `ctlog.tsaCertChain`: cosign's `UseSignedTimestamps`. A signature must
/// carry an RFC 3161 timestamp (`cosign sign --timestamp-server-url`) by
/// that authority over its bytes; one without, or stamped by another
/// authority, fails. The same key without the field admits all three.
#[test]
fn tsa_cert_chain_requires_a_timestamp_by_that_authority() {
    use ivpol_tests::sign::Tsa;
    let setup = Setup::new();
    let p = setup.pusher();
    let signer = Signer::keyed(KeyKind::P256);
    let (tsa, stranger) = (Tsa::new("ivpol"), Tsa::new("stranger"));
    let mut images = Vec::new();
    for (repo, stamp) in [
        ("tsa/stamped", Some(&tsa)),
        ("tsa/unstamped", None),
        ("tsa/stranger", Some(&stranger)),
    ] {
        let (image, digest) = setup.image(repo);
        let opts = match stamp {
            Some(t) => SignOpts::default().timestamped(t),
            None => SignOpts::default(),
        };
        signer.sign_image(&p, repo, &digest, &opts);
        images.push(image);
    }
    let chain = format!("{}{}", tsa.cert_pem(), tsa.root_pem());
    let stamped_key = format!(
        "- name: k\n  cosign:\n    key:\n      data: |\n        {}\n    ctlog:\n      insecureIgnoreTlog: true\n      tsaCertChain: |\n        {}",
        indent(&signer.public_pem(), 8),
        indent(&chain, 8)
    );
    let policies = [
        (
            "stamped".to_string(),
            policy(
                "stamped",
                &stamped_key,
                &verified_by(&["k"]),
                "not timestamped",
            ),
        ),
        (
            "plain".to_string(),
            policy(
                "plain",
                &key_attestor("k", &signer.public_pem()),
                &verified_by(&["k"]),
                "not signed",
            ),
        ),
    ];
    let s = setup.serve(&policies);
    assert_admitted(&s, "stamped", &images[0]);
    for image in &images[1..] {
        assert_denied(&s, "stamped", image, "not timestamped");
        assert_admitted(&s, "plain", image);
    }
    // The audit annotation says why.
    let unstamped = validate(&s, "stamped", &images[1]).to_string();
    assert!(
        unstamped.contains("rfc3161timestamp annotation"),
        "{unstamped}"
    );
    let stranger = validate(&s, "stamped", &images[2]).to_string();
    assert!(stranger.contains("timestamp"), "{stranger}");
}
