//! One namespace's policy objects are charged to that namespace: a tenant
//! whose NIVPs are over its byte budget, or so large that the component
//! cannot load them, has its own objects refused (each denying on its own
//! namespace's routes), while the cluster's policies and other namespaces'
//! still load, and `serve` neither exits nor stops reloading.

use super::{allowed, cluster, deny_unless, pod_in, serve, SOON};
use ivpol_tests::kube_api::KubeApi;
use ivpol_tests::Server;
use serde_json::{json, Value};

/// An NIVP named `name` in `namespace` that denies every Pod, padded with
/// `variables` to about `bytes` of JSON.
fn nivp(namespace: &str, name: &str, bytes: usize) -> Value {
    let mut policy = deny_unless(name, "false", "");
    policy["kind"] = json!("NamespacedImageValidatingPolicy");
    policy["metadata"]["namespace"] = json!(namespace);
    let one = format!("object.metadata.name + '{}'", "p".repeat(200));
    let count = bytes / (one.len() + 30);
    let variables: Vec<Value> = (0..count)
        .map(|i| json!({"name": format!("v{i}"), "expression": one}))
        .collect();
    policy["spec"]["variables"] = json!(variables);
    policy
}

fn apply_all(api: &KubeApi, objects: Vec<Value>) {
    for o in objects {
        api.apply(o).expect("apply");
    }
}

fn message(s: &Server, path: &str, namespace: &str) -> String {
    s.review(path, &pod_in(namespace))["status"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_namespace_over_its_budget_has_its_own_policies_refused() {
    let api = cluster();
    api.create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "greedy"}}))
        .expect("namespace");
    apply_all(
        &api,
        vec![
            deny_unless("cluster-gate", "object.metadata.name != 'blocked'", ""),
            nivp("team", "team-rule", 500),
            nivp("greedy", "g1", 3000),
            nivp("greedy", "g2", 3000),
        ],
    );
    let (s, _dir) = serve(&api, &["--namespace-policy-bytes", "4000"]);
    // The greedy namespace's policies deny, saying why, on their own routes.
    let greedy = message(&s, "/nivpol/validate/g1", "greedy");
    assert!(
        greedy.starts_with("Policy g1 error: policy failed to load: namespace \"greedy\"'s policies and exceptions take"),
        "{greedy}"
    );
    // Everyone else's still load: the team's NIVP judges (and denies) as
    // written, and the cluster policy admits an ordinary pod.
    assert_eq!(
        message(&s, "/nivpol/validate/team-rule", "team"),
        "Policy team-rule failed: team-rule says no"
    );
    assert!(allowed(&s, "/ivpol/validate", &pod_in("greedy")));
    let (_, ready) = s.get("/health/readiness");
    assert_eq!(ready["policies"], 2, "{ready}");
}

/// Policies so large that an instance cannot hold them: `serve` starts
/// anyway, with those that cannot be compiled on their own refused (each
/// denying on its own routes, without a wasm backtrace) and the others
/// enforcing, and says why in readiness.
#[test]
fn a_policy_set_the_component_cannot_load_does_not_stop_serve() {
    let api = cluster();
    apply_all(
        &api,
        vec![deny_unless(
            "cluster-gate",
            "object.metadata.name != 'blocked'",
            "",
        )],
    );
    for i in 0..6 {
        api.apply(nivp("team", &format!("huge-{i}"), 900_000))
            .expect("apply");
    }
    let (s, _dir) = serve(
        &api,
        &[
            "--instance-memory-mib",
            "16",
            "--policy-set-bytes",
            "100000000",
            "--namespace-policy-bytes",
            "100000000",
        ],
    );
    let (_, ready) = s.get("/health/readiness");
    let error = ready["lastReloadError"].as_str().unwrap_or_default();
    assert!(
        error.contains("could not be compiled on their own and are refused"),
        "{ready}\n{}",
        s.log()
    );
    assert!(allowed(&s, "/ivpol/validate", &pod_in("team")));
    let huge = message(&s, "/nivpol/validate/huge-0", "team");
    assert!(
        huge.starts_with("Policy huge-0 error: policy failed to load: the component could not compile this document (it needs more than the 16 MiB an instance may use)"),
        "{huge}"
    );
    assert!(!huge.contains("wasm"), "{huge}");
    // Reloads go on: deleting the huge policies loads the set whole again.
    for i in 0..6 {
        api.delete(
            "policies.kyverno.io/v1",
            "NamespacedImageValidatingPolicy",
            Some("team"),
            &format!("huge-{i}"),
        );
    }
    let recovered = s.eventually(SOON * 3, |s| {
        s.get("/health/readiness").1["lastReloadError"].is_null()
    });
    assert!(recovered, "{}", s.log());
}
