//! `ivpol serve --kubernetes` against the test API server
//! (`ivpol_tests::kube_api`, real kube-rs on the ivpol side): policies,
//! namespaces, registry Secrets and granted ConfigMaps come from the
//! cluster and reach admission within seconds, and a dropped or expired
//! watch recovers.

#[path = "kubernetes/admission_reports.rs"]
mod admission_reports;
#[path = "kubernetes/budgets.rs"]
mod budgets;
#[path = "kubernetes/kms_keys.rs"]
mod kms_keys;
#[path = "kubernetes/reports.rs"]
mod reports;
#[path = "kubernetes/writers.rs"]
mod writers;

use base64::Engine as _;
use ivpol_tests::fixtures::{Pusher, OCI_MANIFEST};
use ivpol_tests::kube_api::KubeApi;
use ivpol_tests::kyverno::conformance_dir;
use ivpol_tests::policy::pod_policy;
use ivpol_tests::registry::Registry;
use ivpol_tests::review::{pod, review};
use ivpol_tests::{Options, Server};
use serde_json::{json, Value};
use std::time::Duration;

/// How long a cluster change may take to reach admission.
const SOON: Duration = Duration::from_secs(5);

fn yaml(text: &str) -> Value {
    serde_yaml_ng::from_str(text).expect("YAML")
}

/// A test API server with ivpol's own namespace and `team`.
fn cluster() -> KubeApi {
    let api = KubeApi::start();
    for ns in ["ivpol", "team"] {
        api.create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .expect("namespace");
    }
    api
}

/// `ivpol serve --kubeconfig` against `api`, with no policy files.
fn serve(api: &KubeApi, extra: &[&str]) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("dir");
    let kubeconfig = api.write_kubeconfig(dir.path());
    let mut extra_args = vec!["--kubeconfig".to_string(), kubeconfig.display().to_string()];
    extra_args.extend(extra.iter().map(|a| a.to_string()));
    let server = Server::start_with(
        &[],
        Options {
            extra_args,
            ..Options::default()
        },
    );
    (server, dir)
}

/// A Pod policy whose one validation is `expression`.
fn deny_unless(name: &str, expression: &str, head: &str) -> Value {
    yaml(&pod_policy(
        name,
        "\"CREATE\"",
        &format!("{head}  validationConfigurations: {{mutateDigest: false, verifyDigest: false, required: false}}\n  attestors: []\n  validations:\n    - expression: {expression:?}\n      message: {name} says no\n"),
    ))
}

/// A Pod CREATE as the API server sends it (the object carries its namespace).
fn pod_in(namespace: &str) -> Value {
    let mut object = pod("p", &["ghcr.io/a/b:1"]);
    object["metadata"]["namespace"] = json!(namespace);
    review("CREATE", namespace, &object)
}

fn allowed(s: &Server, path: &str, r: &Value) -> bool {
    s.review(path, r)["allowed"] == true
}

#[test]
fn a_policy_applied_through_the_api_is_enforced_within_seconds() {
    let api = cluster();
    let (s, _dir) = serve(&api, &[]);
    assert!(allowed(&s, "/ivpol/validate", &pod_in("team")));
    api.apply(deny_unless("no-pods", "false", ""))
        .expect("apply");
    assert!(
        s.eventually(SOON, |s| !allowed(s, "/ivpol/validate", &pod_in("team"))),
        "the applied policy is not enforced"
    );
    let r = s.review("/ivpol/validate", &pod_in("team"));
    assert_eq!(
        r["status"]["message"], "Policy no-pods failed: no-pods says no",
        "{r}"
    );
    // A namespaced policy, in its namespace only.
    let mut nivp = deny_unless("team-rule", "false", "");
    nivp["kind"] = json!("NamespacedImageValidatingPolicy");
    nivp["metadata"]["namespace"] = json!("team");
    api.apply(nivp).expect("apply");
    assert!(s.eventually(SOON, |s| !allowed(s, "/nivpol/validate", &pod_in("team"))));
    assert!(allowed(&s, "/nivpol/validate", &pod_in("default")));
    // Deleting it lifts it.
    api.delete(
        "policies.kyverno.io/v1",
        "ImageValidatingPolicy",
        None,
        "no-pods",
    );
    assert!(
        s.eventually(SOON, |s| allowed(s, "/ivpol/validate", &pod_in("team"))),
        "the deleted policy still denies"
    );
    // A PolicyException from the cluster applies too, from ivpol's own
    // namespace; a tenant's, in its own namespace, exempts nobody from a
    // cluster policy (Kyverno's GO-2024-3230) and is reported as refused.
    api.apply(deny_unless("no-pods", "false", ""))
        .expect("apply");
    assert!(s.eventually(SOON, |s| !allowed(s, "/ivpol/validate", &pod_in("team"))));
    let exception = |namespace: &str| {
        yaml(&format!(
            "apiVersion: policies.kyverno.io/v1beta1\nkind: PolicyException\nmetadata: {{name: team-ok, namespace: {namespace}}}\nspec:\n  policyRefs: [{{name: no-pods, kind: ImageValidatingPolicy}}]\n  matchConditions: [{{name: team, expression: \"object.metadata.namespace == 'team'\"}}]\n"
        ))
    };
    api.apply(exception("team")).expect("tenant's exception");
    let refused = s.eventually(SOON, |s| s.get("/health/readiness").1["rejected"] == 1);
    assert!(refused, "{}", s.log());
    assert!(!allowed(&s, "/ivpol/validate", &pod_in("team")));
    api.apply(exception("ivpol")).expect("exception");
    let excepted = s.eventually(SOON, |s| allowed(s, "/ivpol/validate", &pod_in("team")));
    assert!(excepted, "the exception is not applied");
    assert!(!allowed(&s, "/ivpol/validate", &pod_in("default")));
}

#[test]
fn relabelling_a_namespace_changes_the_verdict() {
    let api = cluster();
    let policy = deny_unless(
        "prod-locked",
        "false",
        "    namespaceSelector: {matchLabels: {env: prod}}\n",
    );
    api.apply(policy).expect("apply");
    let (s, _dir) = serve(&api, &[]);
    let path = "/ivpol/validate/prod-locked";
    assert!(allowed(&s, path, &pod_in("team")), "team is not prod yet");
    // A namespace the cluster does not have: its labels are unknown.
    let r = s.review(path, &pod_in("ghost"));
    assert!(
        r["status"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("namespace \"ghost\" is not known to ivpol")),
        "{r}"
    );
    api.apply(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "team", "labels": {"env": "prod"}}}))
        .expect("relabel");
    assert!(
        s.eventually(SOON, |s| !allowed(s, path, &pod_in("team"))),
        "the new label is not seen"
    );
}

/// A NamespacedImageValidatingPolicy in `team` naming the secret `regcred`.
fn team_policy_naming_regcred() -> Value {
    let mut nivp = yaml(&pod_policy(
        "team-pin",
        "\"CREATE\"",
        "  credentials: {secrets: [regcred]}\n  attestors: []\n  validations:\n    - expression: \"true\"\n",
    ));
    nivp["kind"] = json!("NamespacedImageValidatingPolicy");
    nivp["metadata"]["namespace"] = json!("team");
    nivp
}

#[test]
fn a_secret_rotation_reaches_registry_authentication() {
    const PASSWORD: &str = "rotated-in-only-the-host-knows";
    let dir = tempfile::tempdir().expect("dir");
    let (plain, reg, crt) = Registry::start_basic_auth(dir.path(), "bob", PASSWORD);
    let digest = Pusher {
        addr: &plain.addr,
        auth: None,
    }
    .image("app", "v1", OCI_MANIFEST, "amd64");
    let api = cluster();
    let secret = |password: &str| {
        let config =
            json!({"auths": {reg.addr.clone(): {"username": "bob", "password": password}}});
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
            "metadata": {"name": "regcred", "namespace": "ivpol"},
            "data": {".dockerconfigjson": base64::engine::general_purpose::STANDARD.encode(config.to_string())}})
    };
    api.apply(secret("stale")).expect("secret");
    let policy = yaml(&pod_policy(
        "pin",
        "\"CREATE\"",
        "  credentials: {secrets: [regcred]}\n  attestors: []\n  validations:\n    - expression: \"true\"\n",
    ));
    api.apply(policy).expect("policy");
    let crt = crt.display().to_string();
    let (s, _kube) = serve(
        &api,
        &["--allow-registry", &reg.addr, "--registry-ca", &crt],
    );
    let image = format!("{}/app:v1", reg.addr);
    let create = review("CREATE", "team", &pod("p", &[&image]));
    let r = s.review("/ivpol/mutate/pin", &create);
    assert!(
        r["status"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("registry answered HTTP 401")),
        "{r}"
    );
    api.apply(secret(PASSWORD)).expect("rotate");
    assert!(
        s.eventually(SOON, |s| s.review("/ivpol/mutate/pin", &create)["allowed"]
            == true),
        "the rotated secret is not used"
    );
    let r = s.review("/ivpol/mutate/pin", &create);
    let patch = base64::engine::general_purpose::STANDARD
        .decode(r["patch"].as_str().unwrap_or_default())
        .expect("patch");
    assert!(String::from_utf8_lossy(&patch).contains(&format!("{image}@{digest}")));
    // A namespaced policy's secrets come from its own namespace.
    api.apply(team_policy_naming_regcred()).expect("nivp");
    let team_secret = "/api/v1/namespaces/team/secrets/regcred";
    assert!(
        s.eventually(SOON, |_| api
            .requests()
            .iter()
            .any(|r| r.path == team_secret)),
        "the NIVP's secret is not read from its namespace"
    );
    // Secrets are fetched by name, never listed, and only where allowed.
    let reads: Vec<_> = api
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/secrets"))
        .collect();
    assert!(!reads.is_empty());
    for r in reads {
        assert_eq!(r.method, "GET", "{r:?}");
        assert!(
            [team_secret, "/api/v1/namespaces/ivpol/secrets/regcred"].contains(&r.path.as_str()),
            "{r:?}"
        );
    }
}

/// One of Kyverno's `context/*` chainsaw cases, with `grant` granted: the
/// vendored policy and the object it reads (created in `team`), then the
/// verdicts its chainsaw test expects for the positive and negative
/// Deployments. Returns the API, the server and the object.
fn context_case(
    dir: &str,
    object: &str,
    grant: &str,
) -> (KubeApi, Server, tempfile::TempDir, Value) {
    let case = conformance_dir()
        .join("test/conformance/chainsaw/image-validating-policies/context")
        .join(dir);
    let read = |f: &str| yaml(&std::fs::read_to_string(case.join(f)).expect("case file"));
    let api = cluster();
    let mut policy = read("policy.yaml");
    let name = policy["metadata"]["name"]
        .as_str()
        .expect("name")
        .to_string();
    // The cases' images are not reachable here and no validation verifies
    // them; Kyverno 1.19 requires digests by default, so those checks,
    // which the cases do not test, are off (as `context/resource` has it).
    policy["spec"]["validationConfigurations"] =
        json!({"mutateDigest": false, "verifyDigest": false, "required": false});
    api.apply(policy).expect("policy");
    let mut read_object = read(object);
    read_object["metadata"]["namespace"] = json!("team");
    api.apply(read_object.clone())
        .expect("the object the policy reads");
    let (s, dir) = serve(&api, &["--grant-resource", grant]);
    let path = format!("/ivpol/validate/{name}");
    let r = s.review(&path, &deployment(&case, "positive.yaml"));
    assert_eq!(r["allowed"], true, "{r}");
    let r = s.review(&path, &deployment(&case, "negative.yaml"));
    assert_eq!(
        r["status"]["message"],
        format!("Policy {name} failed: Deployment labels must be env=prod"),
        "{r}"
    );
    (api, s, dir, read_object)
}

/// A case's Deployment CREATE in `team`, as the API server sends it.
fn deployment(case: &std::path::Path, file: &str) -> Value {
    let mut object = yaml(&std::fs::read_to_string(case.join(file)).expect("case file"));
    object["metadata"]["namespace"] = json!("team");
    review("CREATE", "team", &object)
}

/// Kyverno's `context/configmap` case; then a ConfigMap edit reaches
/// `resource.get` within its cache's few seconds.
#[test]
fn a_config_map_change_reaches_resource_get() {
    let (api, s, _dir, mut cm) = context_case("configmap", "configmap.yaml", "configmaps");
    let case = conformance_dir()
        .join("test/conformance/chainsaw/image-validating-policies/context/configmap");
    let path = "/ivpol/validate/check-deployment-labels";
    cm["data"]["env"] = json!("testing");
    api.apply(cm).expect("edit");
    assert!(
        s.eventually(SOON, |s| s
            .review(path, &deployment(&case, "negative.yaml"))["allowed"]
            == true),
        "the edited ConfigMap is not read"
    );
    assert_eq!(
        s.review(path, &deployment(&case, "positive.yaml"))["allowed"],
        false
    );
}

/// Kyverno's `context/resource` case: the policy reads a Pod.
#[test]
fn kyvernos_context_resource_case_reads_a_granted_pod() {
    let (api, _s, _dir, _pod) = context_case("resource", "pod.yaml", "pods");
    let reads: Vec<String> = api
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/pods"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(
        reads,
        ["GET /api/v1/namespaces/team/pods/policy-pod"],
        "cached, by name"
    );
}

#[test]
fn without_a_grant_resource_policies_deny_with_the_load_diagnostic() {
    let api = cluster();
    let mut policy = deny_unless("reads", "variables.cm.data.ok == 'yes'", "");
    policy["spec"]["variables"] =
        json!([{"name": "cm", "expression": "resource.get('v1', 'configmaps', 'team', 'x')"}]);
    api.apply(policy).expect("policy");
    let (s, _dir) = serve(&api, &[]);
    let r = s.review("/ivpol/validate", &pod_in("team"));
    let message = r["status"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("Policy reads error: policy failed to load:")
            && message.contains("--grant-resource"),
        "{r}"
    );
}

#[test]
fn a_dropped_or_expired_watch_recovers() {
    let api = cluster();
    let (s, _dir) = serve(&api, &[]);
    assert!(
        s.eventually(SOON, |_| api.watch_count() >= 3),
        "watches not open"
    );
    api.drop_watches();
    api.apply(deny_unless("after-drop", "false", ""))
        .expect("apply");
    assert!(
        s.eventually(SOON * 2, |s| !allowed(
            s,
            "/ivpol/validate/after-drop",
            &pod_in("team")
        )),
        "a policy applied after a dropped watch is not seen"
    );
    api.expire_watches();
    api.delete(
        "policies.kyverno.io/v1",
        "ImageValidatingPolicy",
        None,
        "after-drop",
    );
    assert!(
        s.eventually(SOON * 2, |s| allowed(
            s,
            "/ivpol/validate/after-drop",
            &pod_in("team")
        )),
        "a deletion after an expired watch (410, relist) is not seen"
    );
}

/// deploy/'s RBAC lets ivpol make every request it made here (plus the
/// RoleBinding deploy/README.md tells teams to add for their namespaced
/// policies' secrets): a cluster running deploy/ never answers it 403.
#[test]
fn deploy_rbac_allows_every_request_ivpol_makes() {
    use ivpol_tests::rbac::{allows, attributes, deploy_manifests};
    let api = cluster();
    api.apply(team_policy_naming_regcred()).expect("nivp");
    let mut own = deny_unless("own", "true", "");
    own["spec"]["credentials"] = json!({"secrets": ["regcred"]});
    api.apply(own).expect("policy");
    // The leader's writes too: the Lease, webhooks, policy status.
    let certs = tempfile::tempdir().expect("dir");
    let ca = ivpol_tests::certs::ca_file(certs.path())
        .display()
        .to_string();
    // The owner ClusterRole is read too, as the Deployment's flags say.
    api.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "ivpol"}, "rules": []}))
        .expect("role");
    let args = [
        "--register-webhooks",
        "--ca-bundle",
        &ca,
        "--webhook-owner-cluster-role",
        "ivpol",
    ];
    let (s, _dir) = serve(&api, &args);
    assert!(allowed(&s, "/ivpol/validate", &pod_in("team")));
    let written = |verb: &str, what: &str| {
        api.requests()
            .iter()
            .any(|r| r.method == verb && r.path.contains(what))
    };
    assert!(
        s.eventually(SOON * 2, |_| written("PATCH", "/status")
            && written("PATCH", "validatingwebhookconfigurations")
            && written("GET", "/clusterroles/ivpol")
            && written("POST", "/leases")),
        "the leader wrote nothing"
    );
    let mut manifests = deploy_manifests();
    manifests.push(yaml(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: ivpol-registry-secrets, namespace: team}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ivpol-registry-secrets}\nsubjects: [{kind: ServiceAccount, name: ivpol, namespace: ivpol}]\n",
    ));
    let requests = api.requests();
    assert!(requests.iter().any(|r| r.path.contains("/secrets/")));
    for r in requests {
        let Some(a) = attributes(&r) else { continue };
        assert!(
            allows(&manifests, "ivpol", "ivpol", &a),
            "deploy/ RBAC refuses {} {} ({a:?})",
            r.method,
            r.path
        );
    }
}

/// `resource.List` reads a page at a time and stops as soon as the list is
/// over the 1 MiB a policy may read, instead of reading every object
/// first; the failure is remembered for a second, so a burst of requests
/// does not repeat the read.
#[test]
fn an_oversized_list_stops_after_its_first_page_and_is_not_read_again_at_once() {
    let api = cluster();
    let filler = "x".repeat(100_000);
    for i in 0..20 {
        api.create(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": format!("big-{i}"), "namespace": "team"},
            "data": {"filler": filler},
        }))
        .expect("configmap");
    }
    api.apply(deny_unless(
        "lister",
        "size(resource.List('v1', 'configmaps', 'team').items) > 0",
        "",
    ))
    .expect("policy");
    let (s, _dir) = serve(&api, &["--grant-resource", "configmaps"]);
    api.clear_requests();
    let lists = |api: &KubeApi| {
        api.requests()
            .into_iter()
            .filter(|r| r.method == "GET" && r.path.ends_with("/namespaces/team/configmaps"))
            .collect::<Vec<_>>()
    };
    for _ in 0..2 {
        let r = s.review("/ivpol/validate/lister", &pod_in("team"));
        assert_eq!(r["allowed"], false, "{r}");
        let message = r["status"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("more than the 1048576 bytes a policy may read at once"),
            "{message}"
        );
    }
    let reads = lists(&api);
    assert_eq!(reads.len(), 1, "{reads:?}");
    assert!(reads[0].query.contains("limit=16"), "{:?}", reads[0]);
}
