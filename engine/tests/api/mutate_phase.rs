//! The engine against requests: mutate phase.

use super::*;

fn unresolved(image: &str) -> String {
    format!("failed to update digest: failed to resolve digest for image {image}: ")
}

#[test]
fn mutate_digest_false_gives_no_results() {
    let set = load(&[mutate_policy(
        "ivpol-mutate-digest-disabled",
        RELAXED,
        "[Deny]",
    )]);
    assert_no_results(&mutate(&set, &create(&pod("p", &[SIGNED]))));
}

/// `verifyDigest` alone pins at mutate too: otherwise validate's digest
/// check would fail every tagged image.
#[test]
fn verify_digest_alone_pins_at_mutate() {
    let verify_only =
        "validationConfigurations:\n  mutateDigest: false\n  verifyDigest: true\n  required: false\n";
    let set = load(&[mutate_policy("ivpol-verify-digest", verify_only, "[Deny]")]);
    let image = "ghcr.io/kyverno/test-verify-image:signed-keyless";
    let v = mutate(&set, &create(&pod("p", &[image])));
    assert_eq!(v.results.len(), 1, "{v:?}");
    assert!(
        v.results[0].message.starts_with(&unresolved(image)),
        "{}",
        v.results[0].message
    );
}

#[test]
fn an_unpinned_matched_image_is_an_error_that_denies_under_deny() {
    let set = load(&[mutate_policy("ivpol-mutate-digest", PIN, "[Deny]")]);
    let image = "ghcr.io/kyverno/test-verify-image:signed-keyless";
    let v = mutate(&set, &create(&pod("p", &[image])));
    assert!(!v.allowed);
    assert_eq!(v.patch, None);
    assert_eq!(v.results.len(), 1);
    assert_eq!(v.results[0].status, Status::Error);
    assert!(
        v.results[0].message.starts_with(&unresolved(image)),
        "{}",
        v.results[0].message
    );
    assert_eq!(
        v.message.as_deref(),
        Some(format!("Policy ivpol-mutate-digest error: {}", v.results[0].message).as_str())
    );
}

#[test]
fn mutate_digest_is_the_default_and_warns_under_warn() {
    let set = load(&[mutate_policy("pin-warn", "", "[Warn]")]);
    let v = mutate(&set, &create(&pod("p", &[SIGNED])));
    assert!(v.allowed);
    assert_eq!(v.message, None);
    assert_eq!(v.warnings.len(), 1);
    assert!(
        v.warnings[0].starts_with(&format!("Policy pin-warn error: {}", unresolved(SIGNED))),
        "{:?}",
        v.warnings
    );
}

#[test]
fn every_unresolved_image_is_reported() {
    let set = load(&[mutate_policy("ivpol-mutate-digest", PIN, "[Deny]")]);
    let mut p = pod("p", &[SIGNED]);
    p["spec"]["initContainers"] = containers(&[UNSIGNED], "i");
    let v = mutate(&set, &create(&p));
    let message = only_message(&v);
    assert!(message.starts_with(&unresolved(SIGNED)), "{message}");
    assert!(
        message.contains(&format!(
            "; failed to resolve digest for image {UNSIGNED}: "
        )),
        "{message}"
    );
}

#[test]
fn pinned_or_unmatched_images_need_no_mutation() {
    let set = load(&[mutate_policy("ivpol-mutate-digest", PIN, "[Deny]")]);
    let image = pinned();
    let v = mutate(&set, &create(&pod("p", &[&image, NGINX])));
    assert_no_results(&v);
}

/// A workload whose every image names its digest, in every container list,
/// needs nothing; one tag among them, in any list, is still found.
#[test]
fn only_a_tag_in_any_list_is_pinned() {
    let set = load(&[mutate_policy("ivpol-mutate-digest", PIN, "[Deny]")]);
    let image = pinned();
    let mut p = pod("p", &[&image, &image]);
    p["spec"]["initContainers"] = containers(&[&image], "i");
    assert_no_results(&mutate(&set, &create(&p)));
    p["spec"]["ephemeralContainers"] = containers(&[SIGNED], "e");
    assert!(only_message(&mutate(&set, &create(&p))).starts_with(&unresolved(SIGNED)));
    let d = deployment("d", json!({}), json!({}), &[&image]);
    assert_no_results(&mutate(&set, &create(&d)));
    let d = deployment("d", json!({}), json!({}), &[&image, SIGNED]);
    assert!(only_message(&mutate(&set, &create(&d))).starts_with(&unresolved(SIGNED)));
}

#[test]
fn mutation_follows_match_constraints_and_conditions() {
    let policy = mutate_policy("ivpol-mutate-digest", PIN, "[Deny]").replace(
        "  validations:\n",
        "  matchConditions:\n    - name: prod\n      expression: \"has(object.metadata.labels.prod)\"\n  validations:\n",
    );
    let set = load(&[policy]);
    assert_no_results(&mutate(&set, &create(&pod("p", &[SIGNED]))));
    let p = prod_pod("p");
    assert!(!mutate(&set, &create(&p)).allowed);
    let update = request_for("UPDATE", Some(&p), Some(&p));
    assert_no_results(&mutate(&set, &update));
}

#[test]
fn a_match_condition_error_under_fail_is_a_mutation_error() {
    let policy = mutate_policy("ivpol-mutate-digest", PIN, "[Deny]").replace(
        "  validations:\n",
        "  matchConditions:\n    - name: boom\n      expression: \"object.metadata.labels.missing == 'x'\"\n  validations:\n",
    );
    let set = load(std::slice::from_ref(&policy));
    let v = mutate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Error);
    assert!(
        only_message(&v).starts_with("failed to update digest: matchCondition boom: "),
        "{}",
        only_message(&v)
    );
    let lenient = policy.replace("failurePolicy: Fail", "failurePolicy: Ignore");
    let set = load(&[lenient]);
    assert_no_results(&mutate(&set, &create(&pod("p", &[SIGNED]))));
}

#[test]
fn the_validate_phase_does_not_pin_digests() {
    let set = load(&[mutate_policy("ivpol-mutate-digest", PIN, "[Deny]")]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(
        outcomes(&v),
        one("ivpol-mutate-digest", Status::Pass, "success")
    );
}
