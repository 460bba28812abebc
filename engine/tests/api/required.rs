//! The engine against requests: required.

use super::*;

fn required_policy(name: &str, config: &str, extra: &str) -> String {
    ivp(
        name,
        &spec(&[
            PODS,
            config,
            "matchImageReferences:\n  - glob: \"ghcr.io/*\"\n",
            NO_ATTESTORS,
            extra,
            "validations:\n  - expression: \"true\"\n",
        ]),
    )
}

#[test]
fn required_defaults_to_true_and_fails_unverified_matched_images() {
    let set = load(&[required_policy(
        "catch-all",
        "validationConfigurations:\n  verifyDigest: false\n",
        "",
    )]);
    let v = validate(&set, &create(&pod("p", &[NGINX, SIGNED])));
    assert_denied(
        &v,
        &format!("Policy catch-all failed: {}", not_verified(SIGNED)),
    );
    assert_eq!(
        outcomes(&v),
        one("catch-all", Status::Fail, &not_verified(SIGNED))
    );
}

#[test]
fn required_applies_with_every_default_to_pinned_images() {
    let set = load(&[required_policy("defaults", "", "")]);
    let image = pinned();
    let v = validate(&set, &create(&pod("p", &[&image])));
    assert_eq!(
        outcomes(&v),
        one("defaults", Status::Fail, &not_verified(&image))
    );
}

#[test]
fn required_failure_keeps_audit_annotations_and_follows_actions() {
    let set = load(&[required_policy(
        "catch-all",
        "validationConfigurations:\n  verifyDigest: false\n",
        "validationActions: [Warn]\nauditAnnotations:\n  - key: images\n    valueExpression: \"images.containers.join(',')\"\n",
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert!(v.allowed);
    assert_eq!(
        v.warnings,
        vec![format!("Policy catch-all failed: {}", not_verified(SIGNED))]
    );
    assert_eq!(v.results[0].audit_annotations, pairs(&[("images", SIGNED)]));
}

#[test]
fn required_false_keeps_the_pass() {
    let set = load(&[required_policy(
        "optional",
        "validationConfigurations:\n  verifyDigest: false\n  required: false\n",
        "",
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(outcomes(&v), one("optional", Status::Pass, "success"));
}

#[test]
fn a_policy_matching_no_images_passes_required() {
    let set = load(&[required_policy("catch-all", "", "")]);
    let v = validate(&set, &create(&pod("p", &[NGINX])));
    assert_eq!(outcomes(&v), one("catch-all", Status::Pass, "success"));
}

#[test]
fn a_failing_policy_is_not_rewritten_by_required() {
    let set = load(&[ivp(
        "fails-first",
        &spec(&[
            PODS,
            "validationConfigurations:\n  verifyDigest: false\n",
            NO_ATTESTORS,
            "validations:\n  - expression: \"false\"\n    message: own failure\n",
        ]),
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(
        outcomes(&v),
        one("fails-first", Status::Fail, "own failure")
    );
}
