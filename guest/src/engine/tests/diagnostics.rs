//! The engine against requests: diagnostics.

use super::*;

#[test]
fn a_broken_policy_is_a_diagnostic_and_the_others_still_apply() {
    let broken = simple("broken", "validations:\n  - expression: \"object.(\"\n");
    let good = with_actions("check-name", "[Deny]");
    let set = PolicySet::load(&[
        SourceDocument {
            source: "broken.yaml".into(),
            content: broken,
        },
        SourceDocument {
            source: "good.yaml".into(),
            content: good,
        },
    ]);
    assert_eq!(set.diagnostics().len(), 1);
    let d = &set.diagnostics()[0];
    assert_eq!(d.source, "broken.yaml");
    assert_eq!(d.policy.as_deref(), Some("broken"));
    assert!(
        d.message.starts_with("spec.validations[0].expression"),
        "{}",
        d.message
    );
    // The broken policy still judges: it denies on the unnamed route
    // (ivpol cannot know what it would have matched); the good one runs.
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert_eq!(policies_of(&v), vec!["broken", "check-name"]);
    let broken = &v.results[0];
    assert_eq!(broken.status, Status::Error);
    assert!(
        broken
            .message
            .starts_with("policy failed to load: spec.validations[0].expression"),
        "{}",
        broken.message
    );
    assert!(!v.allowed);
}
