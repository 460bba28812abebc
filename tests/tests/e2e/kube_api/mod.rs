//! The fake Kubernetes API server (`ivpol_tests::kube_api`) driven by the
//! real kube-rs client, watcher and reflector: what ivpol will do to it.

use futures_util::StreamExt;
use ivpol_tests::kube_api::KubeApi;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::Status;
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::{Client, ResourceExt};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use tokio::sync::mpsc;

mod watches;
mod writes;

/// A client built the way ivpol builds one: from the server's kubeconfig.
async fn client(kube: &KubeApi) -> Client {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = kube.write_kubeconfig(dir.path());
    let kubeconfig = Kubeconfig::read_from(&path).expect("the kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a client config from the kubeconfig");
    Client::try_from(config).expect("a client")
}

/// The Status of a request the server refused.
fn refused<T: Debug>(result: Result<T, kube::Error>) -> Box<Status> {
    match result {
        Err(kube::Error::Api(status)) => status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        ..Default::default()
    }
}

fn namespace(name: &str) -> Namespace {
    Namespace {
        metadata: meta(name),
        ..Default::default()
    }
}

fn config_map(name: &str, labels: &[(&str, &str)], data: &[(&str, &str)]) -> ConfigMap {
    let map = |kv: &[(&str, &str)]| -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    ConfigMap {
        metadata: ObjectMeta {
            labels: Some(map(labels)),
            ..meta(name)
        },
        data: Some(map(data)),
        ..Default::default()
    }
}

/// Creates a namespace through the control API.
fn make_namespace(kube: &KubeApi, name: &str) {
    kube.create(serde_json::to_value(namespace(name)).expect("namespace JSON"))
        .expect("create the namespace");
}

/// A policy YAML from Kyverno's vendored tests, as JSON at `api_version`.
fn kyverno_policy(rel: &str, api_version: &str) -> Value {
    let path = ivpol_tests::kyverno::conformance_dir().join(rel);
    let text = std::fs::read_to_string(&path).expect("a vendored Kyverno policy");
    let mut policy: Value = serde_yaml_ng::from_str(&text).expect("policy YAML");
    policy["apiVersion"] = json!(api_version);
    policy
}

const IVP: &str = "test/cli/test-image-validating-policy/sample-policy/policy.yaml";
const NIVP: &str =
    "test/conformance/chainsaw/namespaced-image-validating-policies/validation-rules/reject/policy.yaml";

fn ivp_resource(version: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("policies.kyverno.io", version, "ImageValidatingPolicy"),
        "imagevalidatingpolicies",
    )
}

fn dynamic(value: Value) -> DynamicObject {
    serde_json::from_value(value).expect("a dynamic object")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_round_trip_through_the_typed_client() {
    let kube = KubeApi::start();
    let client = client(&kube).await;
    assert_eq!(
        client.default_namespace(),
        "ivpol",
        "the kubeconfig's namespace"
    );
    let namespaces: Api<Namespace> = Api::all(client.clone());

    let created = namespaces
        .create(&PostParams::default(), &namespace("team-a"))
        .await
        .expect("create");
    let uid = created.metadata.uid.clone().expect("a uid");
    assert!(created.metadata.creation_timestamp.is_some());
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(
        created
            .labels()
            .get("kubernetes.io/metadata.name")
            .map(String::as_str),
        Some("team-a"),
        "the server labels namespaces"
    );
    let phase = created.status.as_ref().and_then(|s| s.phase.as_deref());
    assert_eq!(phase, Some("Active"));

    let again = refused(
        namespaces
            .create(&PostParams::default(), &namespace("team-a"))
            .await,
    );
    assert_eq!((again.code, again.reason.as_str()), (409, "AlreadyExists"));

    let names: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .iter()
        .map(|n| n.name_any())
        .collect();
    assert_eq!(
        names,
        [
            "default",
            "kube-node-lease",
            "kube-public",
            "kube-system",
            "team-a"
        ],
        "sorted by name, with a new cluster's namespaces"
    );

    // Replace: with the stored resourceVersion, then with a stale one.
    let mut edited = namespaces.get("team-a").await.expect("get");
    edited.labels_mut().insert("tier".into(), "gold".into());
    let replaced = namespaces
        .replace("team-a", &PostParams::default(), &edited)
        .await
        .expect("replace");
    assert_ne!(
        replaced.metadata.resource_version,
        edited.metadata.resource_version
    );
    assert_eq!(replaced.metadata.uid.as_deref(), Some(uid.as_str()));
    let stale = refused(
        namespaces
            .replace("team-a", &PostParams::default(), &edited)
            .await,
    );
    assert_eq!((stale.code, stale.reason.as_str()), (409, "Conflict"));

    // Server-side apply of a label.
    let applied = json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "team-a", "labels": {"owner": "ivpol"}},
    });
    let patched = namespaces
        .patch(
            "team-a",
            &PatchParams::apply("ivpol-test"),
            &Patch::Apply(&applied),
        )
        .await
        .expect("apply");
    assert_eq!(
        patched.labels().get("owner").map(String::as_str),
        Some("ivpol")
    );
    assert_eq!(
        patched
            .labels()
            .get("kubernetes.io/metadata.name")
            .map(String::as_str),
        Some("team-a"),
        "the server's label survives an apply"
    );

    namespaces
        .delete("team-a", &DeleteParams::default())
        .await
        .expect("delete");
    let gone = refused(namespaces.get("team-a").await);
    assert_eq!((gone.code, gone.reason.as_str()), (404, "NotFound"));
    assert_eq!(gone.message, "namespaces \"team-a\" not found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_bearer_token_gets_401() {
    let kube = KubeApi::start();
    let client = client(&kube).await;
    let namespaces: Api<Namespace> = Api::all(client);
    namespaces.get("default").await.expect("the right token");

    kube.set_token("another-token");
    let denied = refused(namespaces.get("default").await);
    assert_eq!((denied.code, denied.reason.as_str()), (401, "Unauthorized"));
    let last = kube.requests().pop().expect("a request");
    assert_eq!((last.method.as_str(), last.status), ("GET", 401));

    // No Authorization header at all.
    let bare = ureq::get(&format!("{}/api/v1/namespaces", kube.url())).call();
    let Err(ureq::Error::Status(401, resp)) = bare else {
        panic!("no token: {bare:?}");
    };
    let status: Value = resp.into_json().expect("a Status body");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["code"], 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_validating_policies_answer_at_each_served_version() {
    let kube = KubeApi::start();
    let client = client(&kube).await;
    let v1: Api<DynamicObject> = Api::all_with(client.clone(), &ivp_resource("v1"));
    let created = v1
        .create(
            &PostParams::default(),
            &dynamic(kyverno_policy(IVP, "policies.kyverno.io/v1")),
        )
        .await
        .expect("create an IVP at v1");
    assert_eq!(created.name_any(), "ivpol-sample");
    assert_eq!(created.data["spec"]["validationActions"], json!(["Deny"]));

    for version in ["v1alpha1", "v1beta1"] {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &ivp_resource(version));
        let read = api.get("ivpol-sample").await.expect("the same object");
        let type_meta = read.types.expect("apiVersion and kind");
        assert_eq!(
            type_meta.api_version,
            format!("policies.kyverno.io/{version}")
        );
        assert_eq!(read.metadata.uid, created.metadata.uid);
    }
    let unserved: Api<DynamicObject> = Api::all_with(client.clone(), &ivp_resource("v2"));
    let missing = refused(unserved.get("ivpol-sample").await);
    assert_eq!((missing.code, missing.reason.as_str()), (404, "NotFound"));

    // Namespaced policies: v1 and v1beta1 are served, v1alpha1 is not.
    make_namespace(&kube, "ivpol");
    let nivp = |version: &str| {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(
                "policies.kyverno.io",
                version,
                "NamespacedImageValidatingPolicy",
            ),
            "namespacedimagevalidatingpolicies",
        )
    };
    let nivps: Api<DynamicObject> = Api::default_namespaced_with(client.clone(), &nivp("v1"));
    nivps
        .create(
            &PostParams::default(),
            &dynamic(kyverno_policy(NIVP, "policies.kyverno.io/v1")),
        )
        .await
        .expect("create a NIVP in the kubeconfig's namespace");
    let everywhere: Api<DynamicObject> = Api::all_with(client.clone(), &nivp("v1beta1"));
    let listed = everywhere.list(&ListParams::default()).await.expect("list");
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].namespace().as_deref(), Some("ivpol"));
    let alpha: Api<DynamicObject> = Api::all_with(client, &nivp("v1alpha1"));
    assert_eq!(refused(alpha.list(&ListParams::default()).await).code, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_page_with_limit_and_continue_and_select() {
    let kube = KubeApi::start();
    make_namespace(&kube, "ivpol");
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&kube).await);
    for i in 0..7 {
        let app = if i % 2 == 0 { "even" } else { "odd" };
        cms.create(
            &PostParams::default(),
            &config_map(&format!("cm-{i}"), &[("app", app)], &[]),
        )
        .await
        .expect("create");
    }
    let first = cms
        .list(&ListParams::default().limit(3))
        .await
        .expect("page 1");
    let names = |l: &kube::core::ObjectList<ConfigMap>| -> Vec<String> {
        l.items.iter().map(|c| c.name_any()).collect()
    };
    assert_eq!(names(&first), ["cm-0", "cm-1", "cm-2"]);
    assert_eq!(first.metadata.remaining_item_count, Some(4));
    let token = first.metadata.continue_.clone().expect("a continue token");

    // A change after the first page is not in the later ones: one snapshot.
    cms.delete("cm-4", &DeleteParams::default())
        .await
        .expect("delete");
    let second = cms
        .list(&ListParams::default().limit(3).continue_token(&token))
        .await
        .expect("page 2");
    assert_eq!(names(&second), ["cm-3", "cm-4", "cm-5"]);
    assert_eq!(
        second.metadata.resource_version,
        first.metadata.resource_version
    );
    let third = cms
        .list(
            &ListParams::default()
                .limit(3)
                .continue_token(second.metadata.continue_.as_deref().expect("token 2")),
        )
        .await
        .expect("page 3");
    assert_eq!(names(&third), ["cm-6"]);
    assert_eq!(third.metadata.continue_, None);

    // Selectors.
    let odd = cms
        .list(&ListParams::default().labels("app in (odd),app!=even"))
        .await
        .expect("label selector");
    assert_eq!(names(&odd), ["cm-1", "cm-3", "cm-5"]);
    let one = cms
        .list(&ListParams::default().fields("metadata.name=cm-6"))
        .await
        .expect("field selector");
    assert_eq!(names(&one), ["cm-6"]);
    let bad = refused(cms.list(&ListParams::default().fields("data.x=1")).await);
    assert_eq!((bad.code, bad.reason.as_str()), (400, "BadRequest"));

    // A token whose snapshot was compacted away.
    kube.compact();
    let expired = refused(
        cms.list(&ListParams::default().limit(3).continue_token(&token))
            .await,
    );
    assert_eq!((expired.code, expired.reason.as_str()), (410, "Expired"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_list_streaming_is_refused_like_a_server_without_the_feature() {
    let kube = KubeApi::start();
    let api: Api<Namespace> = Api::all(client(&kube).await);
    let stream = watcher(api, watcher::Config::default().streaming_lists());
    futures_util::pin_mut!(stream);
    let first = stream.next().await.expect("an item");
    let Err(watcher::Error::WatchStartFailed(kube::Error::Api(status))) = first else {
        panic!("expected a refused watch, got {first:?}");
    };
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert!(
        status.message.contains("WatchList feature gate"),
        "{}",
        status.message
    );
    let asked = kube.requests().pop().expect("the watch");
    assert_eq!(asked.param("sendInitialEvents").as_deref(), Some("true"));
    assert_eq!(
        asked.param("resourceVersionMatch").as_deref(),
        Some("NotOlderThan")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_read_by_name_leave_a_trace_of_paths() {
    let kube = KubeApi::start();
    make_namespace(&kube, "ivpol");
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "pull", "namespace": "ivpol"},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": "e30="},
    });
    kube.create(secret).expect("create the secret");
    let secrets: Api<Secret> = Api::default_namespaced(client(&kube).await);
    let read = secrets.get("pull").await.expect("get by name");
    assert_eq!(
        read.type_.as_deref(),
        Some("kubernetes.io/dockerconfigjson")
    );
    let paths: Vec<String> = kube.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/api/v1/namespaces/ivpol/secrets/pull"]);
    assert!(
        !paths.iter().any(|p| p == "/api/v1/secrets"),
        "never listed cluster-wide"
    );
}

#[test]
fn oversized_bodies_are_refused_with_413() {
    let kube = KubeApi::start();
    let addr = kube.url().trim_start_matches("http://").to_string();
    let mut conn = TcpStream::connect(addr).expect("connect");
    write!(
        conn,
        "POST /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        kube.token(),
        5 << 20
    )
    .expect("send the head");
    let mut answer = String::new();
    conn.read_to_string(&mut answer)
        .expect("the answer, then close");
    assert!(answer.starts_with("HTTP/1.1 413 "), "{answer}");
    assert!(
        answer.contains(r#""reason":"RequestEntityTooLarge""#),
        "{answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_lists_the_served_types_and_versions() {
    let kube = KubeApi::start();
    let client = client(&kube).await;
    let version = client.apiserver_version().await.expect("/version");
    assert_eq!(
        (version.major.as_str(), version.minor.as_str()),
        ("1", "35")
    );

    let discovery = kube::Discovery::new(client.clone())
        .run()
        .await
        .expect("discovery");
    let policies = discovery
        .get("policies.kyverno.io")
        .expect("the Kyverno group");
    assert_eq!(policies.preferred_version_or_latest(), "v1");
    let gvk = GroupVersionKind::gvk("policies.kyverno.io", "v1alpha1", "ImageValidatingPolicy");
    let (ar, caps) = discovery.resolve_gvk(&gvk).expect("IVP at v1alpha1");
    assert_eq!(ar.plural, "imagevalidatingpolicies");
    assert_eq!(caps.scope, kube::discovery::Scope::Cluster);
    assert!(caps.subresources.iter().any(|(s, _)| s.plural == "status"));
    let unserved = GroupVersionKind::gvk(
        "policies.kyverno.io",
        "v1alpha1",
        "NamespacedImageValidatingPolicy",
    );
    assert!(discovery.resolve_gvk(&unserved).is_none());

    let report = GroupVersionKind::gvk("openreports.io", "v1alpha1", "Report");
    let (ar, caps) = kube::discovery::pinned_kind(&client, &report)
        .await
        .expect("pinned Report");
    assert_eq!(ar.plural, "reports");
    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
    assert!(caps.subresources.is_empty(), "Reports have no /status");
    let lease = discovery
        .resolve_gvk(&GroupVersionKind::gvk("coordination.k8s.io", "v1", "Lease"))
        .expect("Lease");
    assert_eq!(lease.0.plural, "leases");
}
