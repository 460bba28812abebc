//! Attestor fields that were parsed and never checked (issue 13, item 2),
//! end to end through `ivpol serve`: `keyless.additionalExtensions`,
//! `keyless.identities[].subjectExpression` and `cosign.annotations` on
//! Sigstore bundles. Each case admitted on the main branch before the fix.

use ivpol_tests::policy::{indent, key_attestor, verifying_policy};
use ivpol_tests::sign::{
    now, BundleOpts, Content, CtLog, Fulcio, Identity, LeafSpec, Rekor, SignOpts, Signer,
    TrustedRoot, Window,
};
use ivpol_tests::verifying::{assert_admitted, assert_denied, validate, Setup};

const ISSUER: &str = "https://token.actions.githubusercontent.com";
/// The SAN of a GitHub workflow certificate; its owner is the pod's
/// namespace, `default`, so `subjectExpression` can build it from the request.
const WORKFLOW: &str =
    "https://github.com/default/app/.github/workflows/release.yml@refs/heads/main";
const REPOSITORY: &str = "default/app";
const SHA: &str = "0123456789abcdef0123456789abcdef01234567";
const REKOR_URL: &str = "https://rekor.ivpol.test";
const MESSAGE: &str = "not signed as required";
const VERIFIED: &str =
    "images.containers.map(i, verifyImageSignatures(i, [attestors.fulcio])).all(n, n > 0)";

fn policy(name: &str, attestor: &str) -> (String, String) {
    (
        name.to_string(),
        verifying_policy(name, attestor, "", VERIFIED, MESSAGE),
    )
}

/// A keyless attestor trusting `root`; `identity` and `keyless_extra` are
/// YAML under `identities[0]` and `keyless`.
fn keyless(root: &TrustedRoot, identity: &str, keyless_extra: &str) -> String {
    format!(
        "- name: fulcio\n  cosign:\n    keyless:\n      identities:\n        - issuer: {ISSUER}\n          {identity}\n{keyless_extra}    ctlog:\n      url: {REKOR_URL}\n    trustedRoot:\n      value: |\n        {}",
        indent(&root.to_string_pretty(), 8)
    )
}

/// `additionalExtensions` pinning `repository`, plus the SHA.
fn extensions(repository: &str) -> String {
    format!(
        "      additionalExtensions:\n        githubWorkflowRepository: {repository}\n        githubWorkflowSha: \"{SHA}\"\n"
    )
}

/// A workflow certificate from `repository` signs `repo` (a legacy `.sig`
/// and, under `<repo>-bundle`, a cosign v3 bundle); returns both images.
fn sign_workflow(
    setup: &Setup,
    ca: &Fulcio,
    rekor: &Rekor,
    repo: &str,
    repository: Option<&str>,
) -> (String, String) {
    let p = setup.pusher();
    let t = now() - 600;
    let mut spec = LeafSpec::new(Identity::Uri(WORKFLOW.into()), ISSUER, Window::fulcio_at(t))
        .sct(&CtLog::default());
    if let Some(r) = repository {
        spec = spec.github_workflow(r, SHA);
    }
    let leaf = ca.issue(spec);
    let signer = Signer::keyless(&leaf);
    let (sig, digest) = setup.image(repo);
    signer.sign_image(
        &p,
        repo,
        &digest,
        &SignOpts::default().rekor(rekor).time(t + 30),
    );
    let bundle_repo = format!("{repo}-bundle");
    let (bundle, digest) = setup.image(&bundle_repo);
    signer.bundle_image(
        &p,
        &bundle_repo,
        &digest,
        &BundleOpts::new(Content::cosign_sign())
            .rekor(rekor)
            .time(t + 30),
    );
    (sig, bundle)
}

/// A certificate issued to another repository's workflow, or to no
/// workflow at all, does not pass a policy pinning the repository: for
/// `.sig` layers and for bundles.
#[test]
fn additional_extensions_pin_the_workflow() {
    let setup = Setup::new();
    let (ca, ct, rekor) = (Fulcio::new(), CtLog::default(), Rekor::new());
    let root = TrustedRoot::of(&ca, &rekor, &ct);
    let subject = format!("subject: {WORKFLOW}");
    let ours = sign_workflow(&setup, &ca, &rekor, "ext/ours", Some(REPOSITORY));
    let theirs = sign_workflow(&setup, &ca, &rekor, "ext/theirs", Some("mallory/app"));
    let none = sign_workflow(&setup, &ca, &rekor, "ext/none", None);
    let s = setup.serve(&[
        policy("pinned", &keyless(&root, &subject, &extensions(REPOSITORY))),
        policy("unpinned", &keyless(&root, &subject, "")),
    ]);
    for image in [&ours.0, &ours.1] {
        assert_admitted(&s, "pinned", image);
    }
    for image in [&theirs.0, &theirs.1, &none.0, &none.1] {
        assert_admitted(&s, "unpinned", image);
        assert_denied(&s, "pinned", image, MESSAGE);
    }
}

/// `subjectExpression` is evaluated per request and its result is a
/// regular expression over the certificate's SANs: one that matches nobody
/// denies, one built from the request that matches admits, and a result
/// that is not a string is an error.
#[test]
fn subject_expression_is_a_per_request_regexp() {
    let setup = Setup::new();
    let (ca, ct, rekor) = (Fulcio::new(), CtLog::default(), Rekor::new());
    let root = TrustedRoot::of(&ca, &rekor, &ct);
    let (sig, bundle) = sign_workflow(&setup, &ca, &rekor, "subject/app", Some(REPOSITORY));
    let expression = |e: &str| format!("subjectExpression: {}", serde_json::json!(e));
    let s = setup.serve(&[
        policy(
            "matches",
            &keyless(
                &root,
                &expression("'^https://github.com/' + request.namespace + '/app/'"),
                "",
            ),
        ),
        policy(
            "nobody",
            &keyless(&root, &expression("'^https://nobody.invalid/'"), ""),
        ),
        policy(
            "not-a-string",
            &keyless(&root, &expression("request.namespace.size()"), ""),
        ),
    ]);
    for image in [&sig, &bundle] {
        assert_admitted(&s, "matches", image);
        assert_denied(&s, "nobody", image, MESSAGE);
        let r = validate(&s, "not-a-string", image);
        assert_eq!(r["allowed"], false, "{r}");
        let m = r["status"]["message"].as_str().unwrap_or_default();
        assert!(m.contains("must return a string"), "{m}");
    }
}

/// `cosign.annotations` on a cosign v3 bundle: the annotations `cosign
/// sign -a` writes on the in-toto statement's subject must match.
#[test]
fn bundle_annotations_must_match() {
    let setup = Setup::new();
    let p = setup.pusher();
    let signer = Signer::keyed(ivpol_tests::sign::KeyKind::P256);
    let (prod, digest) = setup.image("annotated/prod");
    signer.bundle_image(
        &p,
        "annotated/prod",
        &digest,
        &BundleOpts::new(Content::cosign_sign()).annotation("env", "prod"),
    );
    let (dev, digest) = setup.image("annotated/dev");
    signer.bundle_image(
        &p,
        "annotated/dev",
        &digest,
        &BundleOpts::new(Content::cosign_sign()).annotation("env", "dev"),
    );
    let (bare, digest) = setup.image("annotated/none");
    signer.bundle_image(
        &p,
        "annotated/none",
        &digest,
        &BundleOpts::new(Content::cosign_sign()),
    );
    let annotated = format!(
        "{}\n    annotations:\n      env: prod",
        key_attestor("fulcio", &signer.public_pem())
    );
    let s = setup.serve(&[
        policy("prod-only", &annotated),
        policy("any", &key_attestor("fulcio", &signer.public_pem())),
    ]);
    assert_admitted(&s, "prod-only", &prod);
    for image in [&prod, &dev, &bare] {
        assert_admitted(&s, "any", image);
    }
    assert_denied(&s, "prod-only", &dev, MESSAGE);
    assert_denied(&s, "prod-only", &bare, MESSAGE);
}
