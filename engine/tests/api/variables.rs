//! The engine against requests: variables.

use super::*;

#[test]
fn an_unused_erroring_variable_does_not_fail_the_policy() {
    let set = load(&[simple(
        "lazy",
        r#"
        variables:
          - name: broken
            expression: "object.spec.nothing.here"
          - name: podName
            expression: "object.metadata.name"
        validations:
          - expression: "variables.podName != 'bad'"
            message: bad pod
        "#,
    )]);
    let v = validate(&set, &create(&pod("good", &[SIGNED])));
    assert_eq!(outcomes(&v), one("lazy", Status::Pass, "success"));
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert_eq!(outcomes(&v), one("lazy", Status::Fail, "bad pod"));
}

#[test]
fn a_used_erroring_variable_fails_the_validation_reading_it() {
    let set = load(&[simple(
        "lazy",
        r#"
        variables:
          - name: broken
            expression: "object.spec.nothing.here"
        validations:
          - expression: "variables.broken == 'x'"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Error);
}

#[test]
fn variables_can_use_images_and_each_other() {
    let set = load(&[simple(
        "image-vars",
        r#"
        matchImageReferences:
          - glob: "ghcr.io/*"
        variables:
          - name: first
            expression: "images.containers[0]"
          - name: fromGhcr
            expression: "variables.first.startsWith('ghcr.io/')"
        validations:
          - expression: "variables.fromGhcr && images.containers.size() == 1"
            messageExpression: "'unexpected images: ' + images.containers.join(',')"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[NGINX, SIGNED])));
    assert_eq!(outcomes(&v), one("image-vars", Status::Pass, "success"));
    let v = validate(&set, &create(&pod("p", &[SIGNED, UNSIGNED])));
    assert_eq!(
        outcomes(&v),
        one(
            "image-vars",
            Status::Fail,
            &format!("unexpected images: {SIGNED},{UNSIGNED}")
        )
    );
}
