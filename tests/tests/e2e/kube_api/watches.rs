//! Watches: the kube-rs watcher and reflector against the fake server's
//! watch streams, bookmarks, expiry and selector transitions.

use super::*;

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
