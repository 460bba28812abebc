//! The RBAC in `deploy/`: every binding names what exists, tenants get
//! namespaced policies through aggregated roles (exceptions only through an
//! explicit one), and every role grants the least ivpol needs.

use super::{manifests, named, strings, text};
use ivpol_tests::kustomize::deploy_dir;
use serde_json::Value;

/// Every RoleBinding and ClusterRoleBinding names a role and ServiceAccounts
/// the install holds.
#[test]
fn every_binding_names_a_role_and_accounts_that_exist() {
    let all = manifests();
    for (what, b) in all
        .iter()
        .filter(|(_, v)| text(&v["kind"]).ends_with("Binding"))
    {
        let role = &b["roleRef"];
        named(&all, text(&role["kind"]), text(&role["name"]));
        for s in b["subjects"].as_array().expect("subjects") {
            assert_eq!(s["kind"], "ServiceAccount", "{what}");
            let sa = named(&all, "ServiceAccount", text(&s["name"]));
            assert_eq!(sa["metadata"]["namespace"], s["namespace"], "{what}");
        }
    }
}

/// Tenants: `admin` and `edit` (aggregated) may write NamespacedImage-
/// ValidatingPolicies, `view` may read them and the Reports; none of the
/// aggregated roles touches PolicyExceptions or cluster policies, which
/// only the explicit, unaggregated exception role may write.
#[test]
fn tenants_get_namespaced_policies_through_aggregation_and_exceptions_only_explicitly() {
    use ivpol_tests::rbac::{role_allows, Attributes};
    let all = manifests();
    let ask = |verb: &str, group: &str, resource: &str| Attributes {
        verb: verb.into(),
        group: group.into(),
        resource: resource.into(),
        namespace: Some("team".into()),
        name: None,
    };
    let aggregated_to = |to: &str| -> Vec<&Value> {
        (all.iter().map(|(_, v)| v))
            .filter(|v| v["kind"] == "ClusterRole")
            .filter(|v| {
                v["metadata"]["labels"][format!("rbac.authorization.k8s.io/aggregate-to-{to}")]
                    == "true"
            })
            .collect()
    };
    let may = |to: &str, a: &Attributes| aggregated_to(to).iter().any(|r| role_allows(r, a));
    let kyverno = "policies.kyverno.io";
    for to in ["admin", "edit"] {
        for verb in ["create", "update", "delete", "get", "list"] {
            assert!(
                may(to, &ask(verb, kyverno, "namespacedimagevalidatingpolicies")),
                "{to} {verb}"
            );
        }
    }
    assert!(may(
        "view",
        &ask("list", kyverno, "namespacedimagevalidatingpolicies")
    ));
    assert!(may("view", &ask("get", "openreports.io", "reports")));
    assert!(may("view", &ask("get", "wgpolicyk8s.io", "policyreports")));
    assert!(!may(
        "view",
        &ask("create", kyverno, "namespacedimagevalidatingpolicies")
    ));
    for to in ["admin", "edit", "view"] {
        for verb in ["create", "update", "patch", "delete"] {
            assert!(
                !may(to, &ask(verb, kyverno, "policyexceptions")),
                "{to} {verb} policyexceptions"
            );
            assert!(
                !may(to, &ask(verb, kyverno, "imagevalidatingpolicies")),
                "{to} {verb} cluster policies"
            );
        }
    }
    let exceptions = named(&all, "ClusterRole", "ivpol-policy-exception-editor");
    assert!(exceptions["metadata"]["labels"]
        .as_object()
        .is_none_or(|l| l.keys().all(|k| !k.contains("aggregate"))));
    assert!(role_allows(
        exceptions,
        &ask("create", kyverno, "policyexceptions")
    ));
    let readme = std::fs::read_to_string(deploy_dir().join("README.md")).expect("README");
    assert!(
        readme.contains("ivpol-policy-exception-editor"),
        "the explicit role is documented"
    );
}

/// Least privilege: no wildcard, nothing that lists or writes Secrets, no
/// cluster-wide Secret access bound to ivpol, and no verb beyond the
/// issue's list for each resource.
#[test]
fn the_rbac_is_least_privilege() {
    use ivpol_tests::rbac::{allows, Attributes};
    let all = ivpol_tests::rbac::deploy_manifests();
    for role in all
        .iter()
        .filter(|v| v["kind"] == "ClusterRole" || v["kind"] == "Role")
    {
        for rule in role["rules"].as_array().expect("rules") {
            for field in ["apiGroups", "resources", "verbs"] {
                assert!(
                    !strings(&rule[field]).contains(&"*".to_string()),
                    "{}: a wildcard in {field}",
                    role["metadata"]["name"]
                );
            }
        }
    }
    let may =
        |verb: &str, group: &str, resource: &str, namespace: Option<&str>, name: Option<&str>| {
            allows(
                &all,
                "ivpol",
                "ivpol",
                &Attributes {
                    verb: verb.into(),
                    group: group.into(),
                    resource: resource.into(),
                    namespace: namespace.map(String::from),
                    name: name.map(String::from),
                },
            )
        };
    // What it needs.
    assert!(may(
        "watch",
        "policies.kyverno.io",
        "imagevalidatingpolicies",
        None,
        None
    ));
    assert!(may("list", "", "namespaces", None, None));
    assert!(may("get", "", "secrets", Some("ivpol"), Some("regcred")));
    assert!(may(
        "update",
        "coordination.k8s.io",
        "leases",
        Some("ivpol"),
        Some("ivpol")
    ));
    assert!(may(
        "get",
        "rbac.authorization.k8s.io",
        "clusterroles",
        None,
        Some("ivpol")
    ));
    // The scan writes and deletes reports under its own account; serve
    // (components/admission-reports) only adds admission results to the
    // resources' PolicyReports, and hands them over in its own namespace.
    for verb in ["get", "create", "patch"] {
        assert!(may(
            verb,
            "wgpolicyk8s.io",
            "policyreports",
            Some("team"),
            Some("x")
        ));
    }
    for verb in ["delete", "list"] {
        assert!(!may(
            verb,
            "wgpolicyk8s.io",
            "policyreports",
            Some("team"),
            Some("x")
        ));
    }
    for verb in ["create", "patch", "delete", "list"] {
        assert!(
            !may(verb, "openreports.io", "reports", Some("team"), Some("x")),
            "serve never writes openreports"
        );
    }
    for verb in ["create", "list", "delete"] {
        assert!(may(
            verb,
            "reports.ivpol.dev",
            "admissionresults",
            Some("ivpol"),
            None
        ));
        assert!(!may(
            verb,
            "reports.ivpol.dev",
            "admissionresults",
            Some("team"),
            None
        ));
    }
    for (verb, name) in [
        ("get", Some("admin")),
        ("list", None),
        ("update", Some("ivpol")),
    ] {
        assert!(
            !may(
                verb,
                "rbac.authorization.k8s.io",
                "clusterroles",
                None,
                name
            ),
            "{verb} clusterroles"
        );
    }
    assert!(may(
        "patch",
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        None,
        Some("ivpol-resource-validating-webhook-cfg")
    ));
    // What it must not have.
    for verb in ["list", "watch", "create", "update", "patch", "delete"] {
        assert!(
            !may(verb, "", "secrets", Some("ivpol"), None),
            "{verb} secrets"
        );
    }
    assert!(
        !may("get", "", "secrets", Some("team"), Some("regcred")),
        "another namespace's secrets"
    );
    assert!(
        !may("get", "", "secrets", None, Some("regcred")),
        "secrets cluster-wide"
    );
    assert!(!may(
        "update",
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        None,
        Some("ivpol-resource-mutating-webhook-cfg")
    ));
    // Webhook configurations: its own, by name, and no verb it never uses.
    let hooks = "validatingwebhookconfigurations";
    let admission = "admissionregistration.k8s.io";
    for verb in ["create", "get", "patch"] {
        assert!(may(
            verb,
            admission,
            hooks,
            None,
            Some("ivpol-policy-validating-webhook-cfg")
        ));
        assert!(
            !may(verb, admission, hooks, None, Some("someone-else")),
            "{verb} on another's configuration"
        );
    }
    for verb in ["update", "delete", "list"] {
        assert!(
            !may(
                verb,
                admission,
                hooks,
                None,
                Some("ivpol-resource-validating-webhook-cfg")
            ),
            "{verb} is never used on the configurations"
        );
    }
    assert!(!may(
        "delete",
        "policies.kyverno.io",
        "imagevalidatingpolicies",
        None,
        Some("p")
    ));
    assert!(
        !may("get", "", "configmaps", Some("team"), Some("x")),
        "nothing is granted by default"
    );
    assert!(!may(
        "update",
        "coordination.k8s.io",
        "leases",
        Some("kube-system"),
        Some("x")
    ));
}
