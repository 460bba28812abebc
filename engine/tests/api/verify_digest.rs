//! The engine against requests: verifyDigest.

use super::*;

fn digest_policy(config: &str) -> String {
    ivp(
        "require-digests",
        &spec(&[
            PODS,
            config,
            "matchImageReferences:\n  - glob: \"ghcr.io/*\"\n",
            NO_ATTESTORS,
            "validations:\n  - expression: \"false\"\n    message: validations ran\n",
        ]),
    )
}

#[test]
fn verify_digest_defaults_to_true_and_fails_before_validations() {
    let set = load(&[digest_policy(
        "validationConfigurations:\n  required: false\n",
    )]);
    let image = pinned();
    let v = validate(&set, &create(&pod("p", &[NGINX, &image, UNSIGNED, SIGNED])));
    assert_denied(
        &v,
        "Policy require-digests failed: image ghcr.io/kyverno/test-verify-image:unsigned does not have a digest",
    );
    assert!(v.results[0].audit_annotations.is_empty());
}

#[test]
fn verify_digest_passes_pinned_images_to_the_validations() {
    let set = load(&[digest_policy(
        "validationConfigurations:\n  required: false\n",
    )]);
    let image = pinned();
    let v = validate(&set, &create(&pod("p", &[NGINX, &image])));
    // Only the unmatched NGINX is unpinned: the validations run.
    assert_eq!(
        outcomes(&v),
        one("require-digests", Status::Fail, "validations ran")
    );
    let tagged_and_pinned = format!("{SIGNED}@{DIGEST}");
    let v = validate(&set, &create(&pod("p", &[&tagged_and_pinned])));
    assert_eq!(only_message(&v), "validations ran");
}

#[test]
fn verify_digest_false_skips_the_check() {
    let set = load(&[digest_policy(
        "validationConfigurations:\n  verifyDigest: false\n  required: false\n",
    )]);
    let v = validate(&set, &create(&pod("p", &[UNSIGNED])));
    assert_eq!(only_message(&v), "validations ran");
}

#[test]
fn an_unparsable_matched_image_is_an_evaluation_error() {
    let set = load(&[digest_policy(
        "validationConfigurations:\n  required: false\n",
    )]);
    let v = validate(&set, &create(&pod("p", &["ghcr.io/Kyverno/App:1"])));
    assert_eq!(
        outcomes(&v),
        one(
            "require-digests",
            Status::Error,
            "failed to evaluate policy: failed to parse image reference ghcr.io/Kyverno/App:1: could not parse reference: ghcr.io/Kyverno/App:1"
        )
    );
}
