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

/// What the watcher reported, in order.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Init,
    InitDone,
    Apply(String),
    Delete(String),
    Error(u16),
    OtherError(String),
}

/// Runs a watcher, reflected into a store, on ConfigMaps of `ns`; what it
/// reports arrives on the channel.
fn watch_config_maps(
    client: Client,
    ns: &str,
) -> (
    reflector::Store<ConfigMap>,
    mpsc::UnboundedReceiver<Seen>,
    tokio::task::JoinHandle<()>,
) {
    let api: Api<ConfigMap> = Api::namespaced(client, ns);
    let (reader, writer) = reflector::store();
    let (tx, rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        let stream = watcher(api, watcher::Config::default())
            .default_backoff()
            .reflect(writer);
        futures_util::pin_mut!(stream);
        while let Some(item) = stream.next().await {
            let seen = match item {
                Ok(watcher::Event::Init) => Seen::Init,
                Ok(watcher::Event::InitDone) => Seen::InitDone,
                Ok(watcher::Event::InitApply(o) | watcher::Event::Apply(o)) => {
                    Seen::Apply(o.name_any())
                }
                Ok(watcher::Event::Delete(o)) => Seen::Delete(o.name_any()),
                Err(watcher::Error::WatchError(status)) => Seen::Error(status.code),
                Err(other) => Seen::OtherError(other.to_string()),
            };
            if tx.send(seen).is_err() {
                return;
            }
        }
    });
    (reader, rx, task)
}

/// Receives until `want` is seen (10 s at most); everything seen up to it.
async fn until(rx: &mut mpsc::UnboundedReceiver<Seen>, want: Seen) -> Vec<Seen> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(s)) => {
                let done = s == want;
                seen.push(s);
                if done {
                    return seen;
                }
            }
            other => panic!("waiting for {want:?}: {other:?}; seen {seen:?}"),
        }
    }
}

/// Polls `check` every 20 ms for at most 10 s.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..500 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting until {what}");
}

fn store_names(store: &reflector::Store<ConfigMap>) -> Vec<String> {
    let mut names: Vec<String> = store.state().iter().map(|c| c.name_any()).collect();
    names.sort();
    names
}

fn cm_value(ns: &str, name: &str, data: &[(&str, &str)]) -> Value {
    let mut v = serde_json::to_value(config_map(name, &[], data)).expect("JSON");
    v["apiVersion"] = json!("v1");
    v["kind"] = json!("ConfigMap");
    v["metadata"]["namespace"] = json!(ns);
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reflector_follows_changes_and_survives_dropped_and_expired_watches() {
    let kube = KubeApi::start();
    make_namespace(&kube, "ivpol");
    kube.create(cm_value("ivpol", "before", &[]))
        .expect("create");
    let client = client(&kube).await;
    let (store, mut rx, task) = watch_config_maps(client, "ivpol");
    until(&mut rx, Seen::InitDone).await;
    assert_eq!(store_names(&store), ["before"]);
    eventually("the watch is open", || kube.watch_count() == 1).await;

    // What the default watcher asked for: a paged list of now, then a watch
    // from the list's version, with bookmarks and no watch-list streaming.
    let reqs = kube.requests();
    let list = reqs
        .iter()
        .find(|r| r.method == "GET" && !r.watch)
        .expect("a list");
    assert_eq!(list.path, "/api/v1/namespaces/ivpol/configmaps");
    assert_eq!(list.param("limit").as_deref(), Some("500"));
    assert_eq!(list.param("resourceVersion"), None);
    let watch = reqs.iter().find(|r| r.watch).expect("a watch");
    assert_eq!(watch.param("allowWatchBookmarks").as_deref(), Some("true"));
    assert_eq!(watch.param("timeoutSeconds").as_deref(), Some("290"));
    assert_eq!(watch.param("sendInitialEvents"), None);
    assert!(watch.param("resourceVersion").is_some());

    // ADDED, MODIFIED, DELETED.
    kube.create(cm_value("ivpol", "a", &[("k", "1")]))
        .expect("create a");
    until(&mut rx, Seen::Apply("a".into())).await;
    kube.apply(cm_value("ivpol", "a", &[("k", "2")]))
        .expect("modify a");
    until(&mut rx, Seen::Apply("a".into())).await;
    let a = store
        .get(&reflector::ObjectRef::new("a").within("ivpol"))
        .expect("a in the store");
    assert_eq!(
        a.data.as_ref().and_then(|d| d.get("k")).map(String::as_str),
        Some("2")
    );
    kube.delete("v1", "ConfigMap", Some("ivpol"), "before")
        .expect("delete");
    until(&mut rx, Seen::Delete("before".into())).await;
    assert_eq!(store_names(&store), ["a"]);
    // Elsewhere: not seen by a watch on namespace ivpol.
    kube.create(cm_value("default", "elsewhere", &[]))
        .expect("create elsewhere");

    // A dropped watch resumes from the last version it saw: no relist.
    let lists_before = kube.requests().iter().filter(|r| !r.watch).count();
    kube.clear_requests();
    assert_eq!(kube.drop_watches(), 1);
    eventually("the watch is reopened", || kube.watch_count() == 1).await;
    kube.create(cm_value("ivpol", "b", &[])).expect("create b");
    until(&mut rx, Seen::Apply("b".into())).await;
    let resumed = kube.requests();
    assert!(
        resumed.iter().all(|r| r.watch),
        "no list after a drop: {resumed:?}"
    );
    assert!(lists_before > 0);

    // An expired version: the watch answers ERROR 410; the watcher lists again.
    kube.clear_requests();
    assert_eq!(kube.expire_watches(), 1);
    kube.create(cm_value("ivpol", "c", &[])).expect("create c");
    let seen = until(&mut rx, Seen::InitDone).await;
    assert!(seen.contains(&Seen::Error(410)), "{seen:?}");
    assert_eq!(
        seen.iter().filter(|s| **s == Seen::Init).count(),
        1,
        "{seen:?}"
    );
    let after = kube.requests();
    let relist = after.iter().position(|r| !r.watch && r.method == "GET");
    let expired_watch = after.iter().position(|r| r.watch);
    assert!(
        expired_watch < relist && relist.is_some(),
        "a watch (410), then a list: {after:?}"
    );
    eventually("the store holds a, b and c", || {
        store_names(&store) == ["a", "b", "c"]
    })
    .await;
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_resumes_from_its_last_bookmark() {
    let kube = KubeApi::start();
    make_namespace(&kube, "ivpol");
    let (_store, mut rx, task) = watch_config_maps(client(&kube).await, "ivpol");
    until(&mut rx, Seen::InitDone).await;
    eventually("the watch is open", || kube.watch_count() == 1).await;

    // Other writes move the version on; a bookmark tells the watcher.
    kube.create(cm_value("default", "elsewhere", &[]))
        .expect("create");
    let now = kube.resource_version();
    kube.request_bookmarks();
    // Time for the bookmark to reach the watcher (or a periodic one, every second).
    tokio::time::sleep(Duration::from_millis(1200)).await;
    kube.clear_requests();
    kube.drop_watches();
    eventually("the watch is reopened", || kube.watch_count() == 1).await;
    let resumed = kube
        .requests()
        .into_iter()
        .find(|r| r.watch)
        .expect("a watch");
    assert_eq!(resumed.param("resourceVersion"), Some(now.to_string()));
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_watches_get_bookmarks_selector_transitions_and_timeouts() {
    let kube = KubeApi::start();
    make_namespace(&kube, "ivpol");
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&kube).await);
    let start = kube.resource_version().to_string();
    let params = WatchParams::default().labels("watched=yes").timeout(3);
    let stream = cms.watch(&params, &start).await.expect("watch");
    futures_util::pin_mut!(stream);

    kube.create(cm_value("ivpol", "x", &[]))
        .expect("not selected yet");
    let mut selected = cm_value("ivpol", "x", &[]);
    selected["metadata"]["labels"] = json!({"watched": "yes"});
    kube.apply(selected).expect("now selected");
    kube.apply(cm_value("ivpol", "x", &[]))
        .expect("no longer selected");
    kube.request_bookmarks();

    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        match event.expect("an event") {
            WatchEvent::Added(o) => events.push(format!("ADDED {}", o.name_any())),
            WatchEvent::Modified(o) => events.push(format!("MODIFIED {}", o.name_any())),
            WatchEvent::Deleted(o) => events.push(format!("DELETED {}", o.name_any())),
            WatchEvent::Bookmark(b) => {
                events.push("BOOKMARK".into());
                assert_eq!(b.types.kind, "ConfigMap");
                assert!(b.metadata.resource_version.parse::<u64>().is_ok());
            }
            WatchEvent::Error(e) => panic!("watch error {e:?}"),
        }
    }
    // The stream ended by itself, after timeoutSeconds; periodic bookmarks
    // may come anywhere, the requested one after the changes.
    let changes: Vec<&String> = events.iter().filter(|e| *e != "BOOKMARK").collect();
    assert_eq!(changes, ["ADDED x", "DELETED x"], "{events:?}");
    assert_eq!(
        events.last().map(String::as_str),
        Some("BOOKMARK"),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_stores_reports_as_sent_and_records_the_manager() {
    let kube = KubeApi::start();
    make_namespace(&kube, "ivpol");
    let reports = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("openreports.io", "v1alpha1", "Report"),
        "reports",
    );
    let api: Api<DynamicObject> = Api::default_namespaced_with(client(&kube).await, &reports);
    let report = json!({
        "apiVersion": "openreports.io/v1alpha1",
        "kind": "Report",
        "metadata": {"name": "pod-web", "namespace": "ivpol", "labels": {"app.kubernetes.io/managed-by": "ivpol"}},
        "scope": {"apiVersion": "v1", "kind": "Pod", "name": "web", "namespace": "ivpol"},
        "summary": {"pass": 1, "fail": 0, "warn": 0, "error": 0, "skip": 0},
        "results": [{"policy": "ivpol-sample", "result": "pass", "source": "ivpol"}],
    });
    let params = PatchParams::apply("ivpol").force();
    let stored = api
        .patch("pod-web", &params, &Patch::Apply(&report))
        .await
        .expect("apply creates");
    assert_eq!(stored.data["results"], report["results"]);
    assert_eq!(stored.metadata.generation, Some(1));
    let created = kube.requests().pop().expect("the apply");
    assert_eq!(created.status, 201);
    assert_eq!(
        created.content_type.as_deref(),
        Some("application/apply-patch+yaml")
    );
    assert_eq!(created.field_manager.as_deref(), Some("ivpol"));
    assert_eq!(created.param("force").as_deref(), Some("true"));

    // Re-applying the same thing changes nothing: no new version.
    let same = api
        .patch("pod-web", &params, &Patch::Apply(&report))
        .await
        .expect("apply again");
    assert_eq!(
        same.metadata.resource_version,
        stored.metadata.resource_version
    );

    let mut failing = report.clone();
    failing["summary"]["fail"] = json!(1);
    failing["results"][0]["result"] = json!("fail");
    let updated = api
        .patch("pod-web", &params, &Patch::Apply(&failing))
        .await
        .expect("apply a change");
    assert_eq!(updated.data["summary"]["fail"], 1);
    assert_eq!(updated.metadata.generation, Some(2));
    let in_store = kube
        .get(
            "openreports.io/v1alpha1",
            "Report",
            Some("ivpol"),
            "pod-web",
        )
        .expect("stored");
    assert_eq!(in_store["results"], failing["results"]);

    // An apply must name its manager.
    let anonymous = refused(
        api.patch("pod-web", &PatchParams::default(), &Patch::Apply(&report))
            .await,
    );
    assert_eq!(
        (anonymous.code, anonymous.reason.as_str()),
        (422, "Invalid")
    );
    assert!(
        anonymous.message.contains("fieldManager: Required value"),
        "{}",
        anonymous.message
    );
    // Reports have no status subresource.
    assert_eq!(
        refused(
            api.patch_status("pod-web", &params, &Patch::Apply(&report))
                .await
        )
        .code,
        404
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_subresource_owns_status() {
    let kube = KubeApi::start();
    let policies: Api<DynamicObject> = Api::all_with(client(&kube).await, &ivp_resource("v1"));
    let mut policy = kyverno_policy(IVP, "policies.kyverno.io/v1");
    policy["status"] = json!({"conditionStatus": {"ready": true}});
    let created = policies
        .create(&PostParams::default(), &dynamic(policy.clone()))
        .await
        .expect("create");
    assert!(
        created.data.get("status").is_none(),
        "status is dropped at creation"
    );

    let ready = json!({"status": {"conditionStatus": {"ready": true, "message": "compiled"}}});
    let with_status = policies
        .patch_status(
            "ivpol-sample",
            &PatchParams::default(),
            &Patch::Merge(&ready),
        )
        .await
        .expect("patch status");
    assert_eq!(with_status.data["status"], ready["status"]);
    assert_eq!(
        with_status.metadata.generation,
        Some(1),
        "status is not spec"
    );

    // A write to the object keeps the stored status and bumps generation.
    let mut edited = with_status.clone();
    edited.data["spec"]["validationActions"] = json!(["Audit"]);
    edited.data["status"] = json!({"conditionStatus": {"ready": false}});
    let replaced = policies
        .replace("ivpol-sample", &PostParams::default(), &edited)
        .await
        .expect("replace");
    assert_eq!(replaced.data["status"], ready["status"]);
    assert_eq!(replaced.data["spec"]["validationActions"], json!(["Audit"]));
    assert_eq!(replaced.metadata.generation, Some(2));

    // Server-side apply on /status changes only status.
    let applied = json!({
        "apiVersion": "policies.kyverno.io/v1", "kind": "ImageValidatingPolicy",
        "metadata": {"name": "ivpol-sample"},
        "spec": {"validationActions": ["Warn"]},
        "status": {"conditionStatus": {"ready": false, "message": "by ivpol"}},
    });
    let applied = policies
        .patch_status(
            "ivpol-sample",
            &PatchParams::apply("ivpol"),
            &Patch::Apply(&applied),
        )
        .await
        .expect("apply status");
    assert_eq!(
        applied.data["status"]["conditionStatus"]["message"],
        "by ivpol"
    );
    assert_eq!(applied.data["spec"]["validationActions"], json!(["Audit"]));
    assert_eq!(applied.metadata.generation, Some(2));

    // A custom resource cannot be replaced without a resourceVersion.
    let mut unconditional = applied.clone();
    unconditional.metadata.resource_version = None;
    let invalid = refused(
        policies
            .replace("ivpol-sample", &PostParams::default(), &unconditional)
            .await,
    );
    assert_eq!((invalid.code, invalid.reason.as_str()), (422, "Invalid"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_update_with_a_stale_resource_version_conflicts() {
    let kube = KubeApi::start();
    let client = client(&kube).await;
    let leases: Api<Lease> = Api::default_namespaced(client.clone());
    let lease = Lease {
        metadata: meta("ivpol-leader"),
        spec: Some(LeaseSpec {
            holder_identity: Some("pod-a".into()),
            lease_duration_seconds: Some(15),
            ..Default::default()
        }),
    };
    let missing_ns = refused(leases.create(&PostParams::default(), &lease).await);
    assert_eq!(
        missing_ns.code, 404,
        "no namespace ivpol yet: {}",
        missing_ns.message
    );
    make_namespace(&kube, "ivpol");
    let held = leases
        .create(&PostParams::default(), &lease)
        .await
        .expect("create the lease");

    // Two candidates read the same version; the first write wins.
    let mut by_b = held.clone();
    by_b.spec.as_mut().expect("spec").holder_identity = Some("pod-b".into());
    let mut by_c = held.clone();
    by_c.spec.as_mut().expect("spec").holder_identity = Some("pod-c".into());
    leases
        .replace("ivpol-leader", &PostParams::default(), &by_b)
        .await
        .expect("pod-b takes the lease");
    let lost = refused(
        leases
            .replace("ivpol-leader", &PostParams::default(), &by_c)
            .await,
    );
    assert_eq!((lost.code, lost.reason.as_str()), (409, "Conflict"));
    let holder = leases.get("ivpol-leader").await.expect("get");
    assert_eq!(
        holder.spec.and_then(|s| s.holder_identity).as_deref(),
        Some("pod-b")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merge_json_and_strategic_patches() {
    let kube = KubeApi::start();
    make_namespace(&kube, "ivpol");
    let client = client(&kube).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    cms.create(
        &PostParams::default(),
        &config_map("c", &[], &[("a", "1"), ("b", "2")]),
    )
    .await
    .expect("create");
    let data = |c: &ConfigMap| c.data.clone().unwrap_or_default();

    let merged = cms
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": null, "c": "3"}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(
        data(&merged),
        BTreeMap::from([("b".into(), "2".into()), ("c".into(), "3".into())])
    );

    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "replace", "path": "/data/b", "value": "20"},
        {"op": "add", "path": "/data/d", "value": "4"},
        {"op": "remove", "path": "/data/c"},
    ]))
    .expect("a JSON patch");
    let patched = cms
        .patch("c", &PatchParams::default(), &Patch::Json::<()>(ops))
        .await
        .expect("JSON patch");
    assert_eq!(
        data(&patched),
        BTreeMap::from([("b".into(), "20".into()), ("d".into(), "4".into())])
    );
    let failing: json_patch::Patch =
        serde_json::from_value(json!([{"op": "remove", "path": "/data/nope"}])).expect("patch");
    let invalid = refused(
        cms.patch("c", &PatchParams::default(), &Patch::Json::<()>(failing))
            .await,
    );
    assert_eq!(invalid.code, 422);

    let strategic = cms
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Strategic(json!({"data": {"e": "5"}})),
        )
        .await
        .expect("strategic merge patch on a builtin");
    assert_eq!(data(&strategic).get("e").map(String::as_str), Some("5"));
    assert!(kube
        .requests()
        .iter()
        .any(|r| r.content_type.as_deref() == Some("application/strategic-merge-patch+json")));

    // Custom resources have no strategic merge patch.
    let policies: Api<DynamicObject> = Api::all_with(client, &ivp_resource("v1"));
    policies
        .create(
            &PostParams::default(),
            &dynamic(kyverno_policy(IVP, "policies.kyverno.io/v1")),
        )
        .await
        .expect("create");
    let unsupported = refused(
        policies
            .patch(
                "ivpol-sample",
                &PatchParams::default(),
                &Patch::Strategic(json!({"spec": {}})),
            )
            .await,
    );
    assert_eq!(
        (unsupported.code, unsupported.reason.as_str()),
        (415, "UnsupportedMediaType")
    );
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
