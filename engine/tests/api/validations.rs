//! The engine against requests: validations.

use super::*;

#[test]
fn the_first_false_validation_wins() {
    let set = load(&[simple(
        "ordered",
        r#"
        validations:
          - expression: "true"
            message: first
          - expression: "object.metadata.name == 'other'"
            message: second
          - expression: "false"
            message: third
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(outcomes(&v), one("ordered", Status::Fail, "second"));
}

#[test]
fn message_expression_is_used_and_wins_over_message() {
    let set = load(&[simple(
        "dynamic",
        r#"
        validations:
          - expression: "object.metadata.name != 'bad'"
            message: static message
            messageExpression: "'pod ' + object.metadata.name + ' uses ' + images.containers[0]"
        "#,
    )]);
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert_denied(
        &v,
        "Policy dynamic failed: pod bad uses ghcr.io/kyverno/test-verify-image:signed",
    );
}

#[test]
fn message_expression_errors_become_the_message() {
    let set = load(&[simple(
        "dynamic",
        r#"
        validations:
          - expression: "false"
            message: static message
            messageExpression: "string(object.metadata.nothing.here)"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Fail);
    assert!(
        only_message(&v).starts_with("failed to evaluate message expression: "),
        "{}",
        only_message(&v)
    );
}

#[test]
fn an_empty_message_names_the_validation_index() {
    let set = load(&[simple(
        "silent",
        r#"
        validations:
          - expression: "true"
          - expression: "false"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_denied(
        &v,
        "Policy silent failed: CEL expression validation failed at index 1",
    );
    // An empty messageExpression result falls back the same way.
    let set = load(&[simple(
        "silent",
        "validations:\n  - expression: \"false\"\n    messageExpression: \"''\"\n",
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(
        only_message(&v),
        "CEL expression validation failed at index 0"
    );
}

#[test]
fn a_validation_runtime_error_is_an_error() {
    let set = load(&[simple(
        "runtime",
        r#"
        validations:
          - expression: "true"
          - expression: "object.spec.containers[5].image == 'x'"
            message: never
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Error);
    assert!(
        only_message(&v).starts_with("failed to evaluate policy: "),
        "{}",
        only_message(&v)
    );
}

const AUDIT_ANNOTATIONS: &str = r#"
auditAnnotations:
  - key: image-count
    valueExpression: "string(images.containers.size())"
  - key: empty
    valueExpression: "''"
  - key: pod
    valueExpression: "string(object.metadata.name)"
"#;

#[test]
fn audit_annotations_are_set_on_pass_and_fail_without_empty_values() {
    let set = load(&[simple(
        "annotated",
        &format!("{}{}", dedent(AUDIT_ANNOTATIONS), dedent(NAME_IS_NOT_BAD)),
    )]);
    let v = validate(&set, &create(&pod("good", &[SIGNED, NGINX])));
    assert_eq!(v.results[0].status, Status::Pass);
    assert_eq!(
        v.results[0].audit_annotations,
        pairs(&[("image-count", "2"), ("pod", "good")])
    );
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Fail);
    assert_eq!(
        v.results[0].audit_annotations,
        pairs(&[("image-count", "1"), ("pod", "bad")])
    );
}

#[test]
fn a_failing_audit_annotation_is_an_error() {
    let set = load(&[simple(
        "annotated",
        r#"
        auditAnnotations:
          - key: broken
            valueExpression: "string(object.metadata.nothing.here)"
        validations:
          - expression: "true"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Error);
    assert!(
        only_message(&v).starts_with(
            "failed to evaluate policy: failed to evaluate auditAnnotation 'broken': "
        ),
        "{}",
        only_message(&v)
    );
}
