//! The engine against requests: matchConditions.

use super::*;

#[test]
fn false_match_condition_gives_no_result() {
    let set = load(&[simple(
        "prod-only",
        &format!("{}{}", dedent(PROD_ONLY), dedent(NAME_IS_NOT_BAD)),
    )]);
    assert_no_results(&validate(&set, &create(&pod("bad", &[SIGNED]))));
    let v = validate(&set, &create(&prod_pod("bad")));
    assert_eq!(
        outcomes(&v),
        one("prod-only", Status::Fail, "pod name must not be bad")
    );
}

const ERRORING_CONDITION: &str = r#"
matchConditions:
  - name: boom
    expression: "object.metadata.labels.missing == 'x'"
"#;

#[test]
fn match_condition_error_under_fail_is_an_error_result() {
    let set = load(&[simple(
        "strict",
        &format!(
            "failurePolicy: Fail\n{}{}",
            dedent(ERRORING_CONDITION),
            dedent(NAME_IS_NOT_BAD)
        ),
    )]);
    let v = validate(&set, &create(&pod("good", &[SIGNED])));
    assert!(!v.allowed);
    assert_eq!(v.results[0].status, Status::Error);
    let message = only_message(&v);
    assert!(
        message.starts_with("failed to evaluate policy: matchCondition boom: "),
        "{message}"
    );
    assert_eq!(
        v.message.as_deref(),
        Some(format!("Policy strict error: {message}").as_str())
    );
}

#[test]
fn match_condition_error_under_default_failure_policy_is_an_error_result() {
    let set = load(&[simple(
        "strict",
        &format!("{}{}", dedent(ERRORING_CONDITION), dedent(NAME_IS_NOT_BAD)),
    )]);
    let v = validate(&set, &create(&pod("good", &[SIGNED])));
    assert!(!v.allowed);
    assert_eq!(v.results[0].status, Status::Error);
}

#[test]
fn match_condition_error_under_ignore_is_not_matched() {
    let set = load(&[simple(
        "lenient",
        &format!(
            "failurePolicy: Ignore\n{}{}",
            dedent(ERRORING_CONDITION),
            dedent(NAME_IS_NOT_BAD)
        ),
    )]);
    assert_no_results(&validate(&set, &create(&pod("bad", &[SIGNED]))));
}

#[test]
fn a_false_match_condition_wins_over_an_erroring_one() {
    // Kyverno collects condition errors and still returns "not matched" when
    // any condition is false, whatever the order.
    let set = load(&[simple(
        "strict",
        r#"
        matchConditions:
          - name: boom
            expression: "object.metadata.labels.missing == 'x'"
          - name: never
            expression: "false"
        validations:
          - expression: "false"
        "#,
    )]);
    assert_no_results(&validate(&set, &create(&pod("p", &[SIGNED]))));
}

#[test]
fn match_conditions_see_request_and_namespace_object() {
    let set = load(&[simple(
        "create-in-prod",
        r#"
        matchConditions:
          - name: create
            expression: "request.operation == 'CREATE' && request.userInfo.username == 'kubernetes-admin'"
          - name: prod-namespace
            expression: "namespaceObject.metadata.labels.env == 'prod'"
        validations:
          - expression: "false"
            message: matched
        "#,
    )]);
    let request = create(&pod("p", &[SIGNED]));
    let prod = namespace_object("default", json!({"env": "prod"}));
    let dev = namespace_object("default", json!({"env": "dev"}));
    let v = admit_with(
        &set,
        Phase::Validate,
        &Scope::Cluster,
        &[],
        &request,
        Some(&prod),
    );
    assert_eq!(outcomes(&v), one("create-in-prod", Status::Fail, "matched"));
    let v = admit_with(
        &set,
        Phase::Validate,
        &Scope::Cluster,
        &[],
        &request,
        Some(&dev),
    );
    assert_no_results(&v);
}
