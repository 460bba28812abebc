//! The engine against requests: bad requests.

use super::*;

#[test]
fn malformed_requests_are_errors() {
    let set = load(&[simple("check-name", NAME_IS_NOT_BAD)]);
    let run = |request: &str, namespace: Option<&str>| {
        set.admit(
            Phase::Validate,
            &Scope::Cluster,
            &[],
            request,
            namespace,
            std::sync::Arc::new(Offline),
        )
    };
    assert!(run("{not json", None).is_err());
    let mut missing_resource = create(&pod("p", &[SIGNED]));
    missing_resource
        .as_object_mut()
        .map(|o| o.remove("resource"));
    assert!(run(&missing_resource.to_string(), None).is_err());
    let mut bad_operation = create(&pod("p", &[SIGNED]));
    bad_operation["operation"] = json!("PATCH");
    assert!(run(&bad_operation.to_string(), None).is_err());
    let mut missing_operation = create(&pod("p", &[SIGNED]));
    missing_operation
        .as_object_mut()
        .map(|o| o.remove("operation"));
    assert!(run(&missing_operation.to_string(), None).is_err());
    let good = create(&pod("p", &[SIGNED])).to_string();
    // The namespace object is only read for a policy that needs it.
    assert!(run(&good, Some("{not json")).is_ok());
    let selecting = load(&[ivp(
        "selected",
        &spec(&[
            "matchConstraints:\n  namespaceSelector:\n    matchLabels:\n      env: prod\n  resourceRules:\n    - apiGroups: ['']\n      apiVersions: [v1]\n      operations: [CREATE]\n      resources: [pods]\n",
            RELAXED,
            NO_ATTESTORS,
            "validations:\n  - expression: \"false\"\n    message: checked\n",
        ]),
    )]);
    let bad_namespace = selecting.admit(
        Phase::Validate,
        &Scope::Cluster,
        &[],
        &good,
        Some("{not json"),
        std::sync::Arc::new(Offline),
    );
    assert!(bad_namespace.is_err());
    assert!(set
        .admit(
            Phase::Mutate,
            &Scope::Cluster,
            &[],
            "[]",
            None,
            std::sync::Arc::new(Offline)
        )
        .is_err());
    assert!(run(&good, None).is_ok());
}
