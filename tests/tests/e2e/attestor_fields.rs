//! Attestor fields that were once parsed and never checked,
//! end to end through `ivpol serve`: `keyless.additionalExtensions`,
//! `keyless.identities[].subjectExpression` and `cosign.annotations` on
//! Sigstore bundles. Each case admitted on the main branch before the fix.

use ivpol_tests::policy::{indent, key_attestor, verifying_policy};
use ivpol_tests::sign::notary::{Format, NotaryCa, NotaryLeaf, NotaryOpts, NotarySigner};
use ivpol_tests::sign::tsa::Tsa;
use ivpol_tests::sign::{
    now, BundleOpts, Content, CtLog, Fulcio, Identity, KeyKind, LeafSpec, Rekor, SignOpts, Signer,
    TrustedRoot, Window,
};
use ivpol_tests::verifying::{assert_admitted, assert_denied, Setup};

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
        // The attestor cannot be resolved, so it verifies nothing.
        assert_denied(&s, "not-a-string", image, MESSAGE);
    }
}

/// `subject`, `issuer`, `subjectRegExp`, `issuerRegExp`, `keyless.roots`
/// and `trustedRoot.value` each decide, for `.sig` layers and bundles alike.
#[test]
fn identity_regexps_and_roots() {
    let setup = Setup::new();
    let (ca, ct, rekor) = (Fulcio::new(), CtLog::default(), Rekor::new());
    let root = TrustedRoot::of(&ca, &rekor, &ct);
    let other = Fulcio::with_seed("another CA", Window::new(now() - 86_400, now() + 86_400));
    let other_root = TrustedRoot::of(&other, &rekor, &ct);
    let (sig, bundle) = sign_workflow(&setup, &ca, &rekor, "regexp/app", Some(REPOSITORY));
    let roots = |ca: &Fulcio| {
        format!(
            "      roots: |\n        {}\n",
            indent(&format!("{}{}", ca.intermediate.pem(), ca.root.pem()), 8)
        )
    };
    let s = setup.serve(&[
        policy(
            "subject-re",
            &keyless(&root, "subjectRegExp: '^https://github[.]com/default/'", ""),
        ),
        policy(
            "other-subject-re",
            &keyless(&root, "subjectRegExp: '^https://github[.]com/mallory/'", ""),
        ),
        policy(
            "issuer-re",
            &keyless(&root, "issuerRegExp: 'githubusercontent[.]com$'", ""),
        ),
        policy(
            "other-issuer-re",
            &keyless(&root, "issuerRegExp: 'gitlab'", ""),
        ),
        policy(
            "roots",
            &keyless(&root, &format!("subject: {WORKFLOW}"), &roots(&ca)),
        ),
        policy(
            "other-roots",
            &keyless(&root, &format!("subject: {WORKFLOW}"), &roots(&other)),
        ),
        policy(
            "subject",
            &keyless(&root, &format!("subject: {WORKFLOW}"), ""),
        ),
        policy(
            "other-subject",
            &keyless(&root, &format!("subject: {WORKFLOW}x"), ""),
        ),
        policy(
            "other-issuer",
            &keyless(&root, &format!("subject: {WORKFLOW}"), "")
                .replace(ISSUER, "https://gitlab.com"),
        ),
        policy(
            "other-trusted-root",
            &keyless(&other_root, &format!("subject: {WORKFLOW}"), ""),
        ),
    ]);
    for image in [&sig, &bundle] {
        for (good, bad) in [
            ("subject-re", "other-subject-re"),
            ("issuer-re", "other-issuer-re"),
            ("roots", "other-roots"),
            ("subject", "other-subject"),
            ("subject", "other-issuer"),
            ("subject", "other-trusted-root"),
        ] {
            assert_admitted(&s, good, image);
            assert_denied(&s, bad, image, MESSAGE);
        }
    }
}

/// A CEL string literal holding `text`, as YAML.
fn cel_string(text: &str) -> String {
    let literal = format!("'{}'", text.trim().replace('\n', "\\n"));
    serde_json::to_string(&literal).expect("json")
}

/// `certificate.cert` / `certChain` and Notary's `certs` / `tsaCerts`
/// given by `expression`: the evaluated PEM decides.
#[test]
fn expressions_supply_certificates_and_notary_trust() {
    let setup = Setup::new();
    let p = setup.pusher();
    let (ca, ct) = (Fulcio::new(), CtLog::default());
    let other = Fulcio::with_seed("another CA", Window::new(now() - 86_400, now() + 86_400));
    let window = Window::new(now() - 3600, now() + 3600);
    let leaf = ca.leaf(Identity::Email("dev@ivpol.test".into()), ISSUER, window);
    let stranger = other.leaf(Identity::Email("dev@ivpol.test".into()), ISSUER, window);
    let (certified, digest) = setup.image("expr/cert");
    Signer::keyless(&leaf).sign_image(&p, "expr/cert", &digest, &SignOpts::default());
    let certificate = |cert: &str, chain: &str| {
        format!(
            "- name: fulcio\n  cosign:\n    certificate:\n      cert:\n        expression: {}\n      certChain:\n        expression: {}\n    ctlog:\n      insecureIgnoreTlog: true\n      ctLogPubKey: |\n        {}",
            cel_string(cert),
            cel_string(chain),
            indent(&ct.public_pem(), 8)
        )
    };

    // Notary: a current signature, and one whose certificate expired
    // after a timestamped signing.
    let notary_ca = NotaryCa::new("ivpol-notary");
    let other_notary = NotaryCa::new("ivpol-notary-other");
    let (tsa, other_tsa) = (Tsa::new("ivpol-tsa"), Tsa::new("ivpol-tsa-other"));
    let t = now();
    let current = NotarySigner::new(notary_ca.leaf(NotaryLeaf::new(
        KeyKind::P256,
        Window::new(t - 3600, t + 3600),
    )));
    let (notarised, digest) = setup.image("expr/notary");
    current.sign(&p, "expr/notary", &digest, &NotaryOpts::new(Format::Jws));
    let past = NotarySigner::new(notary_ca.leaf(NotaryLeaf::new(
        KeyKind::P256,
        Window::new(t - 72 * 3600, t - 48 * 3600),
    )));
    let (stamped, digest) = setup.image("expr/stamped");
    past.sign(
        &p,
        "expr/stamped",
        &digest,
        &NotaryOpts::new(Format::Jws)
            .signing_time(t - 60 * 3600)
            .timestamp(&tsa),
    );
    let notary = |certs: &str, tsa: Option<&str>| {
        let mut a = format!(
            "- name: fulcio\n  notary:\n    certs:\n      expression: {}",
            cel_string(certs)
        );
        if let Some(tsa) = tsa {
            a.push_str(&format!(
                "\n    tsaCerts:\n      expression: {}",
                cel_string(tsa)
            ));
        }
        a
    };

    let s = setup.serve(&[
        policy("cert", &certificate(&leaf.pem(), &leaf.chain_pem())),
        policy(
            "other-cert",
            &certificate(&stranger.pem(), &leaf.chain_pem()),
        ),
        policy(
            "other-chain",
            &certificate(&leaf.pem(), &stranger.chain_pem()),
        ),
        policy("certs", &notary(&notary_ca.root_pem(), None)),
        policy("other-certs", &notary(&other_notary.root_pem(), None)),
        policy("tsa", &notary(&notary_ca.root_pem(), Some(&tsa.root_pem()))),
        policy(
            "other-tsa",
            &notary(&notary_ca.root_pem(), Some(&other_tsa.root_pem())),
        ),
    ]);
    assert_admitted(&s, "cert", &certified);
    assert_denied(&s, "other-cert", &certified, MESSAGE);
    assert_denied(&s, "other-chain", &certified, MESSAGE);
    assert_admitted(&s, "certs", &notarised);
    assert_denied(&s, "other-certs", &notarised, MESSAGE);
    assert_admitted(&s, "tsa", &stamped);
    assert_denied(&s, "other-tsa", &stamped, MESSAGE);
}

/// `cosign.annotations` on a cosign v3 bundle: the annotations `cosign
/// sign -a` writes on the in-toto statement's subject must match.
#[test]
fn bundle_annotations_must_match() {
    let setup = Setup::new();
    let p = setup.pusher();
    let signer = Signer::keyed(KeyKind::P256);
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

/// `ctlog.insecureIgnoreTlog` and `ctlog.url` flip verdicts: an unlogged
/// signature passes only with the log ignored, and a logged one needs the
/// log's URL once the log is not ignored (Kyverno: "rekor URL must be
/// provided").
#[test]
fn transparency_log_switches() {
    let setup = Setup::new();
    let p = setup.pusher();
    let rekor = Rekor::new();
    let signer = Signer::keyed(KeyKind::P256);
    let (logged, digest) = setup.image("tlog-fields/logged");
    signer.sign_image(
        &p,
        "tlog-fields/logged",
        &digest,
        &SignOpts::default().rekor(&rekor),
    );
    let (unlogged, digest) = setup.image("tlog-fields/unlogged");
    signer.sign_image(&p, "tlog-fields/unlogged", &digest, &SignOpts::default());
    let ctlog = |lines: &str| {
        format!(
            "- name: fulcio\n  cosign:\n    key:\n      data: |\n        {}\n    ctlog:\n{lines}      rekorPubKey: |\n        {}",
            indent(&signer.public_pem(), 8),
            indent(&rekor.public_pem(), 8)
        )
    };
    let s = setup.serve(&[
        policy("ignored", &ctlog("      insecureIgnoreTlog: true\n")),
        policy(
            "required",
            &ctlog(&format!(
                "      insecureIgnoreTlog: false\n      url: {REKOR_URL}\n"
            )),
        ),
        policy("no-url", &ctlog("      insecureIgnoreTlog: false\n")),
    ]);
    assert_admitted(&s, "ignored", &unlogged);
    assert_denied(&s, "required", &unlogged, MESSAGE);
    assert_admitted(&s, "required", &logged);
    assert_denied(&s, "no-url", &logged, MESSAGE);
}
