use super::*;
use std::path::Path;

const ISSUER: &str = "https://issuer.ivpol.test";
const IDENTITY: &str = "dev@ivpol.test";

/// Pushes the embedded component to `repo:v1` with an annotation that
/// makes its manifest digest this test's own (signatures are kept by
/// digest, in the cache the test servers share); returns the tag
/// reference and the digest.
fn push_unique(p: &Pusher, repo: &str) -> (String, String) {
    let component = std::fs::read(component_file()).expect("component");
    let unique = format!("{repo} {:?}", std::time::SystemTime::now());
    let digest = push_edited(p, repo, "v1", &component, |m| {
        m["annotations"] = serde_json::json!({ "ivpol.test/unique": unique.clone() })
    });
    (format!("oci://{}/{repo}:v1", p.addr), digest)
}

fn write(dir: &Path, name: &str, content: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, content).expect("write");
    path.display().to_string()
}

/// `ivpol serve` that must refuse to start with `message`, with the
/// shared cache (the embedded verifier is compiled once).
fn refused(component: &str, flags: &[&str], message: &str) -> String {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("p.yaml"), registry_rule()).expect("policy");
    let policies = dir.path().display().to_string();
    let cache = precompile_cache_dir().display().to_string();
    let mut args = vec!["serve", "--listen", "127.0.0.1:0", "--policies", &policies];
    args.extend(["--cache-dir", cache.as_str(), "--component", component]);
    args.extend(flags);
    let run = ivpol(&args);
    run.expect_err(&format!("serve --component {component} {flags:?}"), message);
    run.stderr
}

/// A registry, a test Rekor with a trusted root naming it, a key
/// signer, and the public keys of that signer and of someone else, as
/// files in `dir`.
struct KeySigning {
    reg: Registry,
    dir: tempfile::TempDir,
    rekor: Rekor,
    root: String,
    signer: Signer,
    key: String,
    wrong: String,
}

impl KeySigning {
    fn new() -> KeySigning {
        let dir = tempfile::tempdir().expect("dir");
        let rekor = Rekor::new();
        let trusted = TrustedRoot::new().rekor(&rekor).to_string_pretty();
        let root = write(dir.path(), "root.json", &trusted);
        let signer = Signer::keyed(KeyKind::P256);
        let key = write(dir.path(), "cosign.pub", &signer.public_pem());
        let other = Signer::with_key(KeyPair::from_seed(KeyKind::P256, "someone else"));
        let wrong = write(dir.path(), "other.pub", &other.public_pem());
        KeySigning {
            reg: Registry::start(),
            dir,
            rekor,
            root,
            signer,
            key,
            wrong,
        }
    }
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn flags<'a>(net: &'a [&'a str], more: &[&'a str]) -> Vec<&'a str> {
    net.iter().chain(more).copied().collect()
}

#[test]
fn a_component_loads_only_with_a_valid_key_signature() {
    let KeySigning {
        reg,
        dir: _dir,
        rekor,
        root,
        signer,
        key,
        wrong,
    } = KeySigning::new();
    let p = Pusher {
        addr: &reg.addr,
        auth: None,
    };
    let net = ["--insecure-registry", reg.addr.as_str()];
    let with_key = flags(
        &net,
        &["--component-key", &key, "--component-trusted-root", &root],
    );

    let (unsigned, _) = push_unique(&p, "comp/unsigned");
    let err = refused(&unsigned, &with_key, "no signature found");
    assert!(err.contains("refusing the component"), "{err}");
    assert!(
        err.contains(&format!("not signed by the key {key}")),
        "{err}"
    );

    let (signed, digest) = push_unique(&p, "comp/signed");
    signer.sign_image(
        &p,
        "comp/signed",
        &digest,
        &SignOpts::default().rekor(&rekor),
    );
    let s = serve(&signed, &with_key);
    assert_serves_verdicts(&s);
    assert!(
        s.log().contains("component signature verified"),
        "{}",
        s.log()
    );
    refused(
        &signed,
        &flags(
            &net,
            &["--component-key", &wrong, "--component-trusted-root", &root],
        ),
        "signature does not verify",
    );
    // The public-good root does not hold the test Rekor's key.
    refused(
        &signed,
        &flags(&net, &["--component-key", &key]),
        "is not trusted (no matching Rekor public key)",
    );

    // Not logged: refused unless the log is explicitly ignored.
    let (unlogged, digest) = push_unique(&p, "comp/unlogged");
    signer.sign_image(&p, "comp/unlogged", &digest, &SignOpts::default());
    refused(&unlogged, &with_key, "no Rekor bundle");
    let ignoring = flags(
        &net,
        &["--component-key", &key, "--component-insecure-ignore-tlog"],
    );
    assert_serves_verdicts(&serve(&unlogged, &ignoring));
    let ignoring_wrong = flags(
        &net,
        &[
            "--component-key",
            &wrong,
            "--component-insecure-ignore-tlog",
        ],
    );
    refused(&unlogged, &ignoring_wrong, "signature does not verify");

    // A cosign v3 bundle referrer signed with the key.
    let (bundled, digest) = push_unique(&p, "comp/key-bundle");
    signer.bundle_image(
        &p,
        "comp/key-bundle",
        &digest,
        &BundleOpts::new(Content::cosign_sign()).rekor(&rekor),
    );
    assert_serves_verdicts(&serve(&bundled, &with_key));
    refused(
        &bundled,
        &flags(
            &net,
            &["--component-key", &wrong, "--component-trusted-root", &root],
        ),
        "bundle 1:",
    );
}

#[test]
fn a_keyless_component_signature_must_name_the_identity() {
    let reg = Registry::start();
    let p = Pusher {
        addr: &reg.addr,
        auth: None,
    };
    let dir = tempfile::tempdir().expect("dir");
    let (ca, ct, rekor) = (Fulcio::new(), CtLog::default(), Rekor::new());
    let root = write(
        dir.path(),
        "root.json",
        &TrustedRoot::of(&ca, &rekor, &ct).to_string_pretty(),
    );
    let t = now() - 600;
    let leaf = ca.leaf(
        Identity::Email(IDENTITY.into()),
        ISSUER,
        Window::fulcio_at(t),
    );
    let signer = Signer::keyless(&leaf);
    let identity = |identity: &'static str, issuer: &'static str| {
        let net = ["--insecure-registry", reg.addr.as_str()];
        let trust = ["--component-trusted-root", root.as_str()];
        let id = [
            "--component-identity",
            identity,
            "--component-issuer",
            issuer,
        ];
        [net.as_slice(), &trust, &id].concat()
    };
    let right = identity(IDENTITY, ISSUER);
    let other_identity = identity("mallory@ivpol.test", ISSUER);
    let other_issuer = identity(IDENTITY, "https://other.ivpol.test");

    // cosign v2: a `.sig` image with the certificate and Rekor bundle.
    let (legacy, digest) = push_unique(&p, "comp/keyless");
    signer.sign_image(
        &p,
        "comp/keyless",
        &digest,
        &SignOpts::default().rekor(&rekor).time(t),
    );
    assert_serves_verdicts(&serve(&legacy, &right));
    let mismatch = "none of the expected identities matched";
    let got = "got subjects [dev@ivpol.test] with issuer https://issuer.ivpol.test";
    for flags in [&other_identity, &other_issuer] {
        let err = refused(&legacy, flags, mismatch);
        assert!(err.contains(got), "{err}");
    }

    // cosign v3: a bundle referrer (the tag-schema fallback here).
    let (bundled, digest) = push_unique(&p, "comp/keyless-bundle");
    signer.bundle_image(
        &p,
        "comp/keyless-bundle",
        &digest,
        &BundleOpts::new(Content::cosign_sign())
            .rekor(&rekor)
            .time(t),
    );
    assert_serves_verdicts(&serve(&bundled, &right));
    refused(&bundled, &other_identity, &format!("bundle 1: {mismatch}"));

    // An attestation bundle is not a signature.
    let (attested, digest) = push_unique(&p, "comp/attested");
    signer.bundle_image(
        &p,
        "comp/attested",
        &digest,
        &BundleOpts::new(Content::attestation(
            "https://slsa.dev/provenance/v1",
            serde_json::json!({}),
        ))
        .rekor(&rekor)
        .time(t),
    );
    refused(&attested, &right, "not a signature");
}

#[test]
fn a_cached_component_is_verified_again_without_the_registry() {
    let KeySigning {
        reg,
        dir: _dir,
        rekor,
        root,
        signer,
        key,
        wrong,
    } = KeySigning::new();
    let p = Pusher {
        addr: &reg.addr,
        auth: None,
    };
    let (_, digest) = push_unique(&p, "comp/cached");
    signer.sign_image(
        &p,
        "comp/cached",
        &digest,
        &SignOpts::default().rekor(&rekor),
    );
    let pinned = format!("oci://{}/comp/cached@{digest}", reg.addr);
    let addr = reg.addr.clone();
    let with = |key: &str| {
        let net = ["--insecure-registry", addr.as_str()];
        let signer = [
            "--component-key",
            key,
            "--component-trusted-root",
            root.as_str(),
        ];
        [net.as_slice(), &signer]
            .concat()
            .into_iter()
            .map(String::from)
            .collect::<Vec<String>>()
    };

    let first = serve(&pinned, &refs(&with(&key)));
    assert_serves_verdicts(&first);
    drop(first);
    let kept = precompile_cache_dir()
        .join("components")
        .join(format!("{}.signatures.json", digest.replace(':', "-")));
    assert!(kept.exists(), "{} is not kept", kept.display());
    drop(reg);

    let offline = serve(&pinned, &refs(&with(&key)));
    assert!(offline.log().contains("using cached"), "{}", offline.log());
    assert!(
        offline.log().contains("kept in the cache"),
        "{}",
        offline.log()
    );
    assert_serves_verdicts(&offline);
    let err = refused(&pinned, &refs(&with(&wrong)), "signature does not verify");
    assert!(err.contains("could not be asked"), "{err}");
    // Kept signatures that were tampered with verify nothing.
    let mut edited: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&kept).expect("kept")).expect("json");
    edited["sigLayers"] = serde_json::json!([]);
    std::fs::write(&kept, edited.to_string()).expect("edit");
    refused(&pinned, &refs(&with(&key)), "its blob was not fetched");
}

#[test]
fn signature_flags_are_checked() {
    let dir = tempfile::tempdir().expect("dir");
    let key = write(
        dir.path(),
        "cosign.pub",
        &Signer::keyed(KeyKind::P256).public_pem(),
    );
    let file = component_file().display().to_string();
    std::fs::write(dir.path().join("p.yaml"), registry_rule()).expect("policy");
    let policies = dir.path().display().to_string();
    let run = |args: &[&str]| {
        let mut all = vec!["serve", "--listen", "127.0.0.1:0", "--policies", &policies];
        all.extend(args);
        ivpol(&all)
    };
    run(&["--component-key", &key]).expect_err("key without component", "--component <");
    run(&["--component", &file, "--component-key", &key])
        .expect_err("key with a file", "is a file");
    let oci = "oci://127.0.0.1:1/a/b:v1";
    run(&["--component", oci, "--component-identity", IDENTITY])
        .expect_err("identity without issuer", "--component-issuer");
    run(&[
        "--component",
        oci,
        "--component-key",
        &key,
        "--component-identity",
        IDENTITY,
        "--component-issuer",
        ISSUER,
    ])
    .expect_err("key and identity", "cannot be used with");
    run(&["--component", oci, "--component-trusted-root", &key])
        .expect_err("trusted root without a signer", "required");
    run(&[
        "--component",
        oci,
        "--component-identity",
        IDENTITY,
        "--component-issuer",
        ISSUER,
        "--component-insecure-ignore-tlog",
    ])
    .expect_err("ignore tlog with an identity", "cannot be used with");
    run(&["--component", oci, "--component-insecure-ignore-tlog"])
        .expect_err("ignore tlog without a key", "--component-key");
}
