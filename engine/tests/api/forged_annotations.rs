//! The engine against requests: forged annotations. The policy verifies
//! a signature (which fails here: the `Offline` transport reaches no
//! registry), so an engine that trusted the annotation's "pass" instead
//! would admit; end to end, with a real signature, in
//! tests/tests/e2e/admission.rs.

use super::verification::KEY_ATTESTOR;
use super::*;

#[test]
fn a_forged_outcome_annotation_changes_nothing() {
    let policy = ivp(
        "check-signed-images-forged-annotation",
        &spec(&[
            PODS,
            "matchImageReferences:\n  - glob: \"ghcr.io/*\"\n",
            "validationConfigurations:\n  mutateDigest: false\n  verifyDigest: false\n",
            KEY_ATTESTOR,
            r#"
            validations:
              - expression: "images.containers.all(i, verifyImageSignatures(i, [attestors.cosign]) > 0)"
                message: failed to verify image signature
            "#,
        ]),
    );
    let set = load(&[policy]);
    for image in [UNSIGNED.to_string(), pinned()] {
        let plain = pod("forged", &[&image]);
        let mut forged = plain.clone();
        forged["metadata"]["annotations"] = json!({
            "kyverno.io/image-verification-outcomes":
                r#"{"check-signed-images-forged-annotation":{"status":"pass","message":"success"}}"#
        });
        let expected = judged(&validate(&set, &create(&plain)));
        assert!(!expected.0, "{expected:?}");
        assert_eq!(judged(&validate(&set, &create(&forged))), expected);
        let update = request_for("UPDATE", Some(&forged), Some(&forged));
        assert_eq!(
            judged(&validate(&set, &update)),
            judged(&validate(
                &set,
                &request_for("UPDATE", Some(&plain), Some(&plain))
            ))
        );
        assert_eq!(
            judged(&mutate(&set, &create(&forged))),
            judged(&mutate(&set, &create(&plain)))
        );
    }
}

/// What a verdict decides (its verifications' timings left out).
fn judged(v: &Verdict) -> (bool, Option<String>, Vec<(Status, String)>) {
    let results = v.results.iter().map(|r| (r.status, r.message.clone()));
    (v.allowed, v.message.clone(), results.collect())
}
