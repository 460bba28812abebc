//! The engine against requests: actions and the verdict.

use super::*;

#[test]
fn deny_fail_denies_with_policy_name_and_message() {
    let set = load(&[with_actions("check-name", "[Deny]")]);
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert_denied(&v, "Policy check-name failed: pod name must not be bad");
    assert!(v.warnings.is_empty());
    assert_eq!(
        outcomes(&v),
        one("check-name", Status::Fail, "pod name must not be bad")
    );
    assert_eq!(v.results[0].actions, vec!["Deny".to_string()]);
}

#[test]
fn pass_is_allowed_with_success() {
    let set = load(&[with_actions("check-name", "[Deny]")]);
    let v = validate(&set, &create(&pod("good", &[SIGNED])));
    assert_allowed_silently(&v);
    assert_eq!(outcomes(&v), one("check-name", Status::Pass, "success"));
}

#[test]
fn unset_validation_actions_mean_deny() {
    let set = load(&[simple("check-name", NAME_IS_NOT_BAD)]);
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert_denied(&v, "Policy check-name failed: pod name must not be bad");
    assert_eq!(v.results[0].actions, vec!["Deny".to_string()]);
}

#[test]
fn warn_fail_admits_with_a_warning() {
    let set = load(&[with_actions("check-name", "[Warn]")]);
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert!(v.allowed);
    assert_eq!(v.message, None);
    assert_eq!(
        v.warnings,
        vec!["Policy check-name failed: pod name must not be bad".to_string()]
    );
    assert_eq!(
        outcomes(&v),
        one("check-name", Status::Fail, "pod name must not be bad")
    );
}

#[test]
fn audit_fail_admits_silently_but_keeps_the_result() {
    let set = load(&[with_actions("check-name", "[Audit]")]);
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert_allowed_silently(&v);
    assert_eq!(
        outcomes(&v),
        one("check-name", Status::Fail, "pod name must not be bad")
    );
}

#[test]
fn deny_and_warn_together_deny_and_warn() {
    let set = load(&[with_actions("check-name", "[Deny, Warn]")]);
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert_denied(&v, "Policy check-name failed: pod name must not be bad");
    assert_eq!(
        v.warnings,
        vec!["Policy check-name failed: pod name must not be bad".to_string()]
    );
}

#[test]
fn audit_and_warn_together_only_warn() {
    let set = load(&[with_actions("check-name", "[Audit, Warn]")]);
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert!(v.allowed);
    assert_eq!(v.message, None);
    assert_eq!(v.warnings.len(), 1);
}

#[test]
fn failure_policy_ignore_does_not_soften_an_error_under_deny() {
    let set = load(&[simple(
        "ivpol-sample",
        r#"
        failurePolicy: Ignore
        validationActions: [Deny]
        validations:
          - expression: "object.spec.nothing.here == 'x'"
            message: never reached
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert!(!v.allowed);
    let message = v.message.as_deref().unwrap_or_default();
    assert!(
        message.starts_with("Policy ivpol-sample error: failed to evaluate policy: "),
        "{message}"
    );
    assert_eq!(v.results[0].status, Status::Error);
    assert_eq!(
        message,
        format!("Policy ivpol-sample error: {}", v.results[0].message)
    );
}

#[test]
fn an_error_under_warn_is_a_warning() {
    let set = load(&[simple(
        "warn-only",
        r#"
        validationActions: [Warn]
        validations:
          - expression: "object.spec.nothing.here == 'x'"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert!(v.allowed);
    assert_eq!(v.warnings.len(), 1);
    assert!(
        v.warnings[0].starts_with("Policy warn-only error: failed to evaluate policy: "),
        "{:?}",
        v.warnings
    );
}

#[test]
fn several_failing_policies_are_joined_by_semicolons_in_name_order() {
    let zeta = simple(
        "zeta",
        "validations:\n  - expression: \"false\"\n    message: z failed\n",
    );
    let alpha = simple(
        "alpha",
        "validations:\n  - expression: \"false\"\n    message: a failed\n",
    );
    let middle = simple(
        "middle",
        "validationActions: [Warn]\nvalidations:\n  - expression: \"false\"\n    message: m failed\n",
    );
    let passing = simple("beta", "validations:\n  - expression: \"true\"\n");
    let set = load(&[zeta, middle, passing, alpha]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_denied(
        &v,
        "Policy alpha failed: a failed; Policy zeta failed: z failed",
    );
    assert_eq!(
        v.warnings,
        vec!["Policy middle failed: m failed".to_string()]
    );
    assert_eq!(
        outcomes(&v),
        vec![
            ("alpha".into(), Status::Fail, "a failed".into()),
            ("beta".into(), Status::Pass, "success".into()),
            ("middle".into(), Status::Fail, "m failed".into()),
            ("zeta".into(), Status::Fail, "z failed".into()),
        ]
    );
}
