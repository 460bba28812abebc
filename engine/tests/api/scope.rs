//! The engine against requests: scope.

use super::*;

fn scoped_set() -> PolicySet {
    let body = spec(&[
        PODS,
        RELAXED,
        NO_ATTESTORS,
        "validations:\n  - expression: \"false\"\n    message: checked\n",
    ]);
    load(&[
        ivp("cluster-a", &body),
        ivp("cluster-b", &body),
        nivp("team-a-policy", "team-a", &body),
        nivp("team-b-policy", "team-b", &body),
    ])
}

#[test]
fn cluster_scope_sees_only_cluster_policies() {
    let set = scoped_set();
    let mut p = pod("p", &[SIGNED]);
    p["metadata"]["namespace"] = json!("team-a");
    let v = admit_with(
        &set,
        Phase::Validate,
        &Scope::Cluster,
        &[],
        &create(&p),
        None,
    );
    assert_eq!(policies_of(&v), vec!["cluster-a", "cluster-b"]);
    assert_eq!(v.results[0].namespace, None);
}

#[test]
fn namespaced_scope_sees_only_that_namespaces_policies() {
    let set = scoped_set();
    let mut p = pod("p", &[SIGNED]);
    p["metadata"]["namespace"] = json!("team-a");
    let scope = Scope::Namespaced("team-a".into());
    let v = admit_with(&set, Phase::Validate, &scope, &[], &create(&p), None);
    assert_eq!(policies_of(&v), vec!["team-a-policy"]);
    assert_eq!(v.results[0].namespace.as_deref(), Some("team-a"));
    assert_denied(&v, "Policy team-a-policy failed: checked");
    let scope = Scope::Namespaced("team-c".into());
    assert_no_results(&admit_with(
        &set,
        Phase::Validate,
        &scope,
        &[],
        &create(&p),
        None,
    ));
}

#[test]
fn url_names_filter_policies() {
    let set = scoped_set();
    let request = create(&pod("p", &[SIGNED]));
    let v = admit_with(
        &set,
        Phase::Validate,
        &Scope::Cluster,
        &["cluster-b"],
        &request,
        None,
    );
    assert_eq!(policies_of(&v), vec!["cluster-b"]);
    // A namespaced policy's name on the cluster route selects nothing.
    let v = admit_with(
        &set,
        Phase::Validate,
        &Scope::Cluster,
        &["team-a-policy", "no-such-policy"],
        &request,
        None,
    );
    assert_no_results(&v);
}

#[test]
fn disabled_admission_is_not_evaluated() {
    let set = load(&[simple(
        "background-only",
        "evaluation:\n  admission:\n    enabled: false\nvalidations:\n  - expression: \"false\"\n",
    )]);
    assert_no_results(&validate(&set, &create(&pod("p", &[SIGNED]))));
}
