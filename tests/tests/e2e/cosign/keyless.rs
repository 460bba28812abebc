//! Keyless signatures: Fulcio certificates checked at the time Rekor logged
//! the signature, against the policy's identities, with an embedded SCT
//! unless the policy ignores it.

use super::{keyless_attestor, leaf_at, policy, verified_by, IDENTITY, ISSUER};
use ivpol_tests::sign::{
    now, CtLog, Fulcio, Identity, LeafSpec, Rekor, SignOpts, Signer, TrustedRoot, Window,
};
use ivpol_tests::verifying::{assert_admitted, assert_denied, Setup};

#[test]
fn keyless_signatures_are_checked_at_the_integrated_time() {
    let setup = Setup::new();
    let p = setup.pusher();
    let (ca, ct, rekor) = (Fulcio::new(), CtLog::default(), Rekor::new());
    let root = TrustedRoot::of(&ca, &rekor, &ct);
    // Signed two hours ago: the ten-minute certificate has expired since.
    let t = now() - 7200;
    let leaf = leaf_at(&ca, t);
    let signer = Signer::keyless(&leaf);
    let (signed, digest) = setup.image("keyless/signed");
    signer.sign_image(
        &p,
        "keyless/signed",
        &digest,
        &SignOpts::default().rekor(&rekor).time(t),
    );
    // A certificate that was not yet valid when the entry was logged.
    let late = leaf_at(&ca, t + 3600);
    let (early, digest) = setup.image("keyless/outside-validity");
    Signer::keyless(&late).sign_image(
        &p,
        "keyless/outside-validity",
        &digest,
        &SignOpts::default().rekor(&rekor).time(t),
    );
    let (unlogged, digest) = setup.image("keyless/unlogged");
    signer.sign_image(&p, "keyless/unlogged", &digest, &SignOpts::default());

    let message = "not signed by the expected identity";
    let s = setup.serve(&[
        (
            "keyless".into(),
            policy(
                "keyless",
                &keyless_attestor("fulcio", IDENTITY, &root),
                &verified_by(&["fulcio"]),
                message,
            ),
        ),
        (
            "keyless-other-identity".into(),
            policy(
                "keyless-other-identity",
                &keyless_attestor("fulcio", "someone@ivpol.test", &root),
                &verified_by(&["fulcio"]),
                message,
            ),
        ),
    ]);
    assert_admitted(&s, "keyless", &signed);
    assert_denied(&s, "keyless", &early, message);
    assert_denied(&s, "keyless", &unlogged, message);
    assert_denied(&s, "keyless-other-identity", &signed, message);
}

/// A keyless certificate without an embedded SCT fails unless the policy
/// sets `insecureIgnoreSCT`, as in Kyverno; the Rekor entry is still needed.
#[test]
fn keyless_certificates_need_an_sct_unless_ignored() {
    let setup = Setup::new();
    let p = setup.pusher();
    let (ca, ct, rekor) = (Fulcio::new(), CtLog::default(), Rekor::new());
    let root = TrustedRoot::of(&ca, &rekor, &ct);
    let t = now() - 600;
    let spec = LeafSpec::new(
        Identity::Email(IDENTITY.into()),
        ISSUER,
        Window::fulcio_at(t),
    );
    let leaf = ca.issue(spec);
    let (image, digest) = setup.image("sct/none");
    Signer::keyless(&leaf).sign_image(
        &p,
        "sct/none",
        &digest,
        &SignOpts::default().rekor(&rekor).time(t),
    );
    let ignoring = keyless_attestor("fulcio", IDENTITY, &root).replace(
        "      url: https://rekor.ivpol.test",
        "      url: https://rekor.ivpol.test\n      insecureIgnoreSCT: true",
    );
    let s = setup.serve(&[
        (
            "sct".into(),
            policy(
                "sct",
                &keyless_attestor("fulcio", IDENTITY, &root),
                &verified_by(&["fulcio"]),
                "no sct",
            ),
        ),
        (
            "ignore-sct".into(),
            policy(
                "ignore-sct",
                &ignoring,
                &verified_by(&["fulcio"]),
                "not signed",
            ),
        ),
    ]);
    assert_denied(&s, "sct", &image, "no sct");
    assert_admitted(&s, "ignore-sct", &image);
}
