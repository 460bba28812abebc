//! The engine against requests: bad requests.

use super::*;
use ivpol_engine::engine::{InputError, NamespaceError};
use ivpol_policy::admission::RequestError;

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
    assert_eq!(
        run("{not json", None).unwrap_err(),
        InputError::Request(RequestError::NotJson(
            "key must be a string at line 1 column 2".into()
        ))
    );
    let mut missing_resource = create(&pod("p", &[SIGNED]));
    missing_resource
        .as_object_mut()
        .map(|o| o.remove("resource"));
    assert_eq!(
        run(&missing_resource.to_string(), None).unwrap_err(),
        InputError::Request(RequestError::Missing("resource"))
    );
    let mut bad_operation = create(&pod("p", &[SIGNED]));
    bad_operation["operation"] = json!("PATCH");
    assert_eq!(
        run(&bad_operation.to_string(), None).unwrap_err(),
        InputError::Request(RequestError::Operation("PATCH".into()))
    );
    let mut missing_operation = create(&pod("p", &[SIGNED]));
    missing_operation
        .as_object_mut()
        .map(|o| o.remove("operation"));
    assert_eq!(
        run(&missing_operation.to_string(), None).unwrap_err(),
        InputError::Request(RequestError::Missing("operation"))
    );
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
    assert_eq!(
        bad_namespace.unwrap_err(),
        InputError::Namespace(NamespaceError(
            "key must be a string at line 1 column 2".into()
        ))
    );
    // JSON, but not an object: serde's wording (which counts the request's
    // fields) is not the point.
    let not_a_request = set.admit(
        Phase::Mutate,
        &Scope::Cluster,
        &[],
        "[]",
        None,
        std::sync::Arc::new(Offline),
    );
    assert!(
        matches!(
            not_a_request,
            Err(InputError::Request(RequestError::NotAdmissionRequest(_)))
        ),
        "{:?}",
        not_a_request.err()
    );
    assert!(run(&good, None).is_ok());
}
