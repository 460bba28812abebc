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

/// What cannot have the type its field needs, whatever the request holds,
/// is refused at load with Kyverno's words (`pkg/cel/compiler`), and an
/// operator no overload takes with cel-go's. What reads the request is
/// `dyn` and judged when it runs (`validations.rs`).
#[test]
fn type_errors_are_load_diagnostics_with_their_field_path() {
    for (extra, want) in [
        (
            "validations:\n  - expression: \"1 + 1\"\n",
            "spec.validations[0].expression: Invalid value: \"1 + 1\": output is expected to be of type bool",
        ),
        (
            "validations:\n  - expression: \"false\"\n    messageExpression: \"42\"\n",
            "spec.validations[0].messageExpression: Invalid value: \"42\": output is expected to be of type string",
        ),
        (
            "matchConditions:\n  - name: c\n    expression: \"'yes'\"\nvalidations:\n  - expression: \"true\"\n",
            "spec.matchConditions[0].expression: Invalid value: \"'yes'\": output is expected to be of type bool",
        ),
        (
            "auditAnnotations:\n  - key: k\n    valueExpression: \"1\"\nvalidations:\n  - expression: \"true\"\n",
            "spec.auditAnnotations[0].valueExpression: Invalid value: \"1\": output is expected to be either of type string or null_type",
        ),
        (
            "validations:\n  - expression: \"size(object.spec.containers) + 'a' == 'b'\"\n",
            "spec.validations[0].expression: expression `size(object.spec.containers) + 'a' == 'b'`: found no matching overload for '_+_' applied to '(int, string)'",
        ),
    ] {
        let set = PolicySet::load(&[SourceDocument {
            source: "typed.yaml".into(),
            content: simple("typed", extra),
        }]);
        let messages: Vec<&str> = set.diagnostics().iter().map(|d| d.message.as_str()).collect();
        assert_eq!(messages, vec![want], "{extra}");
    }
}
