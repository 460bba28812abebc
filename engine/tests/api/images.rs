//! The engine against requests: images.

use super::*;

#[test]
fn pod_images_by_category() {
    let set = load(&[images_probe("probe", "")]);
    let mut p = pod("p", &[SIGNED, NGINX]);
    p["spec"]["initContainers"] = containers(&["busybox:1.36"], "i");
    p["spec"]["ephemeralContainers"] = containers(&["ghcr.io/debug/tools:1"], "e");
    let v = validate(&set, &create(&p));
    assert_eq!(
        only_message(&v),
        format!("{SIGNED},{NGINX}|busybox:1.36|ghcr.io/debug/tools:1")
    );
    // Every category is present even when the pod spec lacks it.
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(only_message(&v), format!("{SIGNED}||"));
}

fn probe_for(resources: &str, group: &str) -> String {
    let mut out = images_probe("probe", "");
    out = out.replace("apiGroups: ['']", &format!("apiGroups: ['{group}']"));
    out.replace("resources: [pods]", &format!("resources: [{resources}]"))
}

#[test]
fn deployment_images_come_from_the_pod_template() {
    let set = load(&[probe_for("deployments", "apps")]);
    let mut d = deployment("web", json!({}), json!({"app": "web"}), &[SIGNED]);
    d["spec"]["template"]["spec"]["initContainers"] = containers(&[NGINX], "i");
    let v = validate(&set, &create(&d));
    assert_eq!(only_message(&v), format!("{SIGNED}|{NGINX}|"));
}

#[test]
fn cronjob_images_come_from_the_job_template() {
    let set = load(&[probe_for("cronjobs", "batch")]);
    let v = validate(
        &set,
        &create(&cronjob("nightly", json!({}), &[UNSIGNED, NGINX])),
    );
    assert_eq!(only_message(&v), format!("{UNSIGNED},{NGINX}||"));
}

#[test]
fn resources_without_a_pod_spec_have_no_builtin_images() {
    let set = load(&[ivp(
        "configmaps",
        &spec(&[
            r#"
            matchConstraints:
              resourceRules:
                - apiGroups: ['']
                  apiVersions: [v1]
                  operations: [CREATE]
                  resources: [configmaps]
            "#,
            RELAXED,
            NO_ATTESTORS,
            r#"
            validations:
              - expression: "!has(images.containers) && images.size() == 0"
                message: unexpected images
            "#,
        ]),
    )]);
    let cm = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "default"},
        "data": {"image": SIGNED}
    });
    let v = validate(&set, &create(&cm));
    assert_eq!(outcomes(&v), one("configmaps", Status::Pass, "success"));
}

#[test]
fn custom_image_extractors_are_filtered_too() {
    let set = load(&[simple(
        "custom",
        r#"
        matchImageReferences:
          - glob: "ghcr.io/*"
        images:
          - name: annotated
            expression: "object.metadata.annotations['images'].split(',')"
        validations:
          - expression: "false"
            messageExpression: "images.annotated.join(',') + '|' + images.containers.join(',')"
        "#,
    )]);
    let mut p = pod("p", &[NGINX]);
    p["metadata"]["annotations"] = json!({"images": format!("{SIGNED},{NGINX},{UNSIGNED}")});
    let v = validate(&set, &create(&p));
    assert_eq!(only_message(&v), format!("{SIGNED},{UNSIGNED}|"));
}

/// A policy's own list named for a built-in category takes its place; the
/// others stay beside it.
#[test]
fn a_custom_extractor_named_for_a_category_replaces_it() {
    let set = load(&[simple(
        "replaced",
        r#"
        images:
          - name: containers
            expression: "object.metadata.annotations['images'].split(',')"
        validations:
          - expression: "false"
            messageExpression: "images.containers.join(',') + '|' + images.initContainers.join(',')"
        "#,
    )]);
    let mut p = pod("p", &[NGINX]);
    p["spec"]["initContainers"] = containers(&["busybox:1.36"], "i");
    p["metadata"]["annotations"] = json!({"images": format!("{SIGNED},{UNSIGNED}")});
    let v = validate(&set, &create(&p));
    assert_eq!(
        only_message(&v),
        format!("{SIGNED},{UNSIGNED}|busybox:1.36")
    );
}

#[test]
fn a_custom_extractor_that_is_not_a_string_list_is_an_error() {
    let set = load(&[simple(
        "custom",
        r#"
        images:
          - name: wrong
            expression: "object.metadata.name"
        validations:
          - expression: "true"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Error);
    assert!(only_message(&v).starts_with("failed to evaluate policy: "));
}

#[test]
fn glob_star_crosses_slashes_and_unmatched_images_are_left_out() {
    let set = load(&[images_probe(
        "probe",
        "matchImageReferences:\n  - glob: \"ghcr.io/*\"\n",
    )]);
    let mut p = pod("p", &[NGINX, SIGNED, "ghcr.io/a/b/c/d:1"]);
    p["spec"]["initContainers"] = containers(&["quay.io/ghcr.io/x:1"], "i");
    let v = validate(&set, &create(&p));
    assert_eq!(only_message(&v), format!("{SIGNED},ghcr.io/a/b/c/d:1||"));
}

#[test]
fn several_references_match_if_any_matches() {
    let set = load(&[images_probe(
        "probe",
        r#"
        matchImageReferences:
          - glob: "docker.io/*"
          - expression: "ref.endsWith(':unsigned')"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED, NGINX, UNSIGNED])));
    assert_eq!(only_message(&v), format!("{NGINX},{UNSIGNED}||"));
}

#[test]
fn expression_references_see_ref_and_the_image_library() {
    let set = load(&[images_probe(
        "probe",
        r#"
        matchImageReferences:
          - expression: "parseImageReference(ref).registry() == 'ghcr.io'"
        "#,
    )]);
    let v = validate(&set, &create(&pod("p", &[SIGNED, NGINX])));
    assert_eq!(only_message(&v), format!("{SIGNED}||"));
}

/// An image escapes no glob by spelling its host as runtimes would still
/// resolve it (case, the default port, a trailing dot): each is matched,
/// and listed as written; other hosts are not.
#[test]
fn a_host_spelled_differently_still_matches_its_glob() {
    let set = load(&[images_probe(
        "probe",
        "matchImageReferences:\n  - glob: \"registry.example.com/*\"\n",
    )]);
    let spelled = [
        "REGISTRY.EXAMPLE.COM/team/app:1",
        "registry.example.com:443/team/app:1",
        "registry.example.com./team/app:1",
    ];
    let others = [
        "registry.example.com.evil.io/team/app:1",
        "registry.example.com:5000/team/app:1",
    ];
    let all: Vec<&str> = spelled.iter().chain(others.iter()).copied().collect();
    let v = validate(&set, &create(&pod("p", &all)));
    assert_eq!(only_message(&v), format!("{}||", spelled.join(",")));
}

/// The same for a `matchImageReferences` expression.
#[test]
fn an_expression_sees_the_host_as_runtimes_resolve_it_too() {
    let set = load(&[images_probe(
        "probe",
        "matchImageReferences:\n  - expression: \"ref.startsWith('registry.example.com/')\"\n",
    )]);
    let v = validate(
        &set,
        &create(&pod("p", &["REGISTRY.EXAMPLE.COM/team/app:1"])),
    );
    assert_eq!(only_message(&v), "REGISTRY.EXAMPLE.COM/team/app:1||");
}
