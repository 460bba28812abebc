//! The engine against requests: matchConstraints.

use super::*;

#[test]
fn resource_rule_operations_are_respected() {
    let set = load(&[ivp(
        "create-only",
        &spec(&[POD_CREATE, RELAXED, NO_ATTESTORS, NAME_IS_NOT_BAD]),
    )]);
    let bad = pod("bad", &[SIGNED]);
    let update = request_for("UPDATE", Some(&bad), Some(&pod("bad", &[SIGNED])));
    assert_no_results(&validate(&set, &update));
    assert!(!validate(&set, &create(&bad)).allowed);
}

#[test]
fn delete_requests_read_images_from_the_old_object() {
    let set = load(&[ivp(
        "on-delete",
        &spec(&[
            &PODS.replace("[CREATE, UPDATE]", "[DELETE]"),
            RELAXED,
            NO_ATTESTORS,
            r#"
            validations:
              - expression: "object == null && oldObject.metadata.name == 'p'"
                message: unexpected objects
              - expression: "false"
                messageExpression: "images.containers.join(',')"
            "#,
        ]),
    )]);
    let v = validate(
        &set,
        &request_for("DELETE", None, Some(&pod("p", &[SIGNED, NGINX]))),
    );
    assert_eq!(only_message(&v), format!("{SIGNED},{NGINX}"));
}

#[test]
fn exclude_resource_rules_exclude() {
    let set = load(&[ivp(
        "exclude-system",
        &spec(&[
            r#"
            matchConstraints:
              resourceRules:
                - apiGroups: ['']
                  apiVersions: [v1]
                  operations: [CREATE]
                  resources: [pods]
              excludeResourceRules:
                - apiGroups: ['']
                  apiVersions: [v1]
                  operations: [CREATE]
                  resources: [pods]
                  resourceNames: [bad]
            "#,
            RELAXED,
            NO_ATTESTORS,
            "validations:\n  - expression: \"false\"\n    message: checked\n",
        ]),
    )]);
    assert_no_results(&validate(&set, &create(&pod("bad", &[SIGNED]))));
    let v = validate(&set, &create(&pod("other", &[SIGNED])));
    assert_eq!(outcomes(&v), one("exclude-system", Status::Fail, "checked"));
}

#[test]
fn namespace_selector_uses_the_namespace_object_labels() {
    let policy = ivp(
        "selected",
        &spec(&[
            r#"
            matchConstraints:
              namespaceSelector:
                matchLabels:
                  env: prod
              resourceRules:
                - apiGroups: ['']
                  apiVersions: [v1]
                  operations: [CREATE]
                  resources: [pods]
            "#,
            RELAXED,
            NO_ATTESTORS,
            "validations:\n  - expression: \"false\"\n    message: checked\n",
        ]),
    );
    let set = load(&[policy]);
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
    assert_eq!(outcomes(&v), one("selected", Status::Fail, "checked"));
    let v = admit_with(
        &set,
        Phase::Validate,
        &Scope::Cluster,
        &[],
        &request,
        Some(&dev),
    );
    assert_no_results(&v);
    // Unknown namespace: its labels are needed, so an error that denies
    // (Kyverno's stand-in namespace would not match, admitting the pod).
    let v = validate(&set, &request);
    assert!(!v.allowed, "{v:?}");
    assert_eq!(v.results[0].status, Status::Error);
    assert!(
        only_message(&v).contains("namespace \"default\" is not known to ivpol"),
        "{v:?}"
    );
}

#[test]
fn an_unknown_namespace_still_carries_its_name_label() {
    // Kyverno stands in a namespace labelled only `kubernetes.io/metadata.name`.
    let policy = ivp(
        "by-name",
        &spec(&[
            r#"
            matchConstraints:
              namespaceSelector:
                matchExpressions:
                  - key: kubernetes.io/metadata.name
                    operator: In
                    values: [default]
              resourceRules:
                - apiGroups: ['']
                  apiVersions: [v1]
                  operations: [CREATE]
                  resources: [pods]
            "#,
            RELAXED,
            NO_ATTESTORS,
            "validations:\n  - expression: \"false\"\n    message: checked\n",
        ]),
    );
    let set = load(&[policy]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(outcomes(&v), one("by-name", Status::Fail, "checked"));
    let mut elsewhere = pod("p", &[SIGNED]);
    elsewhere["metadata"]["namespace"] = json!("kube-system");
    assert_no_results(&validate(&set, &create(&elsewhere)));
}

#[test]
fn object_selector_uses_the_object_labels() {
    let policy = ivp(
        "labelled",
        &spec(&[
            r#"
            matchConstraints:
              objectSelector:
                matchExpressions:
                  - key: app
                    operator: In
                    values: [web]
              resourceRules:
                - apiGroups: ['']
                  apiVersions: [v1]
                  operations: [CREATE, UPDATE]
                  resources: [pods]
            "#,
            RELAXED,
            NO_ATTESTORS,
            "validations:\n  - expression: \"false\"\n    message: checked\n",
        ]),
    );
    let set = load(&[policy]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(outcomes(&v), one("labelled", Status::Fail, "checked"));
    let mut other = pod("p", &[SIGNED]);
    other["metadata"]["labels"] = json!({"app": "db"});
    assert_no_results(&validate(&set, &create(&other)));
    // UPDATE: the old object's labels count too.
    let update = request_for("UPDATE", Some(&other), Some(&pod("p", &[SIGNED])));
    assert_eq!(validate(&set, &update).results.len(), 1);
}

fn ephemeral_request(resources: &str) -> (PolicySet, Value) {
    let policy = ivp(
        "block-ephemeral-containers",
        &spec(&[
            &PODS.replace("[pods]", resources),
            "matchImageReferences:\n  - glob: \"*\"\n",
            RELAXED,
            NO_ATTESTORS,
            r#"
            validations:
              - expression: >-
                  object.spec.?ephemeralContainers.orValue([]).size() == 0
                message: "Ephemeral (debug) containers are not permitted."
            "#,
        ]),
    );
    let set = load(&[policy]);
    let old = pod("p", &[SIGNED]);
    let mut new = old.clone();
    new["spec"]["ephemeralContainers"] = json!([
        {"name": "debugger", "image": "busybox:1.36", "targetContainerName": "c0"}
    ]);
    let mut request = request_for("UPDATE", Some(&new), Some(&old));
    request["subResource"] = json!("ephemeralcontainers");
    request["requestSubResource"] = json!("ephemeralcontainers");
    (set, request)
}

#[test]
fn the_ephemeral_containers_subresource_must_be_listed() {
    let (set, request) = ephemeral_request("[pods, pods/ephemeralcontainers]");
    let v = validate(&set, &request);
    assert_denied(
        &v,
        "Policy block-ephemeral-containers failed: Ephemeral (debug) containers are not permitted.",
    );
    let (set, request) = ephemeral_request("[pods]");
    assert_no_results(&validate(&set, &request));
}
