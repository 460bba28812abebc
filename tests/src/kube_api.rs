//! An in-memory Kubernetes API server for the tests: the part of the API
//! protocol kube-rs (`kube` 5, client and runtime watchers) speaks, served
//! over plain HTTP/1.1 on 127.0.0.1, so `ivpol serve --kubernetes` can be
//! run against it with a kubeconfig ([`KubeApi::write_kubeconfig`]).
//!
//! # What is served
//!
//! - **Types.** Builtins from k8s-openapi's `Resource` constants (group,
//!   version, kind, plural, scope): Namespace, Secret, ConfigMap, Pod,
//!   Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, Lease,
//!   Mutating- and ValidatingWebhookConfiguration. Custom resources from
//!   CRD YAML ([`default_crd_files`], [`KubeApi::install_crd`]): group,
//!   plural, kind, scope and the versions with `served: true` (any other
//!   version is 404). Versions share one stored object, re-labelled with
//!   the version read, as with the CRD conversion strategy `None`.
//! - **URLs.** `/api/v1/...` and `/apis/{group}/{version}/...`, then
//!   `namespaces/{ns}/{plural}[/{name}[/status]]` or
//!   `{plural}[/{name}[/status]]` (cluster-scoped, or a namespaced type
//!   listed or watched across namespaces).
//! - **Authentication.** Every request needs `Authorization: Bearer
//!   <token>`, else 401 `Unauthorized`. Every error is a `metav1.Status`
//!   with the API server's reason and code (NotFound, AlreadyExists,
//!   Conflict, Expired 410, BadRequest, Invalid 422, MethodNotAllowed,
//!   UnsupportedMediaType, RequestEntityTooLarge (bodies over 4 MiB),
//!   Timeout 504, Unauthorized).
//! - **Bookkeeping.** One global resource version counter; `uid`,
//!   `creationTimestamp`, `generation` (1 at creation, +1 when anything but
//!   metadata, and status where it is a subresource, changes). A write
//!   that changes nothing stores nothing: no new version, no event.
//!   Namespaces get the `kubernetes.io/metadata.name` label and
//!   `status.phase: Active`; namespaced objects can only be created in an
//!   existing namespace (404 otherwise); deleting a namespace deletes its
//!   objects at once. The server starts with `default`, `kube-system`,
//!   `kube-public` and `kube-node-lease`.
//! - **Status subresource**, where the type has one: PUT and PATCH on
//!   `/status` change only `.status`; writes to the object keep the stored
//!   `.status`, and creation drops it.
//! - **GET**, **LIST** (`{Kind}List`, items sorted by namespace and name,
//!   `metadata.resourceVersion`), with `labelSelector` (`=`, `==`, `!=`,
//!   `in`, `notin`, `key`, `!key`), `fieldSelector` (`metadata.name`,
//!   `metadata.namespace`; `=`, `==`, `!=`), `limit` and `continue` (a
//!   token naming a snapshot, served consistently; 410 once compacted;
//!   `remainingItemCount` without selectors), `resourceVersion` and
//!   `resourceVersionMatch` validated as the API server does (422 for the
//!   combinations it refuses); unset, `0` and `NotOlderThan` read the
//!   latest state, `Exact` reads the state then from the history.
//! - **WATCH** (`watch=true` or `1`): a chunked stream of `{"type",
//!   "object"}` lines. No `resourceVersion` (or `0`): ADDED for what exists,
//!   then changes; `resourceVersion=N`: every change after N from the
//!   history; a version older than the history gives one ERROR event with
//!   a 410 `Expired` Status and the stream ends (what the API server does).
//!   Selectors apply to changes as there: an object that starts matching
//!   is ADDED, one that stops matching DELETED. `timeoutSeconds` ends the
//!   stream cleanly; `allowWatchBookmarks=true` gets a BOOKMARK (apiVersion,
//!   kind, metadata.resourceVersion) every second (see
//!   [`KubeApi::set_bookmark_interval`]) and on
//!   [`KubeApi::request_bookmarks`]. `sendInitialEvents` is refused with
//!   the 422 of an API server without the WatchList feature; kube-rs'
//!   default watcher (list, then watch) does not send it.
//! - **Writes.** POST (201; 409 AlreadyExists; `generateName`), PUT (a
//!   differing `metadata.resourceVersion` is 409 Conflict; a custom
//!   resource needs one, 422 otherwise, as with the CRD strategy), DELETE
//!   (preconditions `uid` and `resourceVersion`; DELETED carries the
//!   final object; answers a Success Status), PATCH:
//!   `application/apply-patch+yaml` (server-side apply: `fieldManager`
//!   required, 422 otherwise; `force` accepted; creates if absent),
//!   `application/merge-patch+json` (RFC 7386), `application/json-patch+json`
//!   (RFC 6902), `application/strategic-merge-patch+json` for builtins
//!   (custom resources answer 415, as there). A patch that sets
//!   `metadata.resourceVersion` is conditional on it.
//!
//! # What is simplified
//!
//! - **Server-side apply** keeps no field ownership: the applied object's
//!   top-level fields replace the stored ones, and `metadata`'s keys
//!   replace one by one (so applying `labels` replaces the whole map). No
//!   apply conflicts, so `force` changes nothing; `managedFields` are not
//!   kept. The field manager of every request is in [`KubeApi::requests`].
//! - **Strategic merge patch** is a JSON merge patch: no `patchStrategy`
//!   or merge keys, so lists are replaced.
//! - **No validation** against CRD `openAPIV3Schema` or builtin schemas,
//!   no defaulting, no pruning; `fieldValidation` is ignored; `dryRun`
//!   is refused (400).
//! - **Discovery** is the legacy kind only (`/version`, `/api`, `/apis`,
//!   `/apis/{group}`, `/api/v1`, `/apis/{group}/{version}`, made from the
//!   served types; enough for `kube::Discovery::run` and
//!   `discovery::pinned_kind`), not aggregated discovery (`run_aggregated`).
//! - No protobuf, tables, `deletecollection`, graceful deletion or
//!   finalizers, admission, RBAC, or subresources other than `/status`.
//! - `generation` is kept for every type (the real one leaves it off
//!   e.g. ConfigMaps and Secrets).
//! - `fieldSelector` serves only `metadata.name` and `metadata.namespace`.
//! - History is bounded (10 000 events); [`KubeApi::compact`] discards it
//!   and moves the version counter on, so every version handed out before
//!   is expired: watches and continue tokens from before get 410.

mod discovery;
mod error;
mod handler;
mod http;
mod ops;
mod resources;
mod selector;
mod server;
mod store;
mod watch;

pub use error::ApiError;
pub use resources::{from_crd, ResourceType, ServedVersion};

use ops::{Api, ListAt, ListQuery, Target};
use serde_json::{json, Value};
use server::Shared;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How many change events the server keeps for watches and snapshots.
const HISTORY: usize = 10_000;

/// The namespaces a new cluster has.
const SYSTEM_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// One HTTP request the server answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    pub method: String,
    /// The path, still percent-encoded.
    pub path: String,
    /// The raw query string, without `?`.
    pub query: String,
    /// The media type of the body, without parameters.
    pub content_type: Option<String>,
    /// The `fieldManager` query parameter.
    pub field_manager: Option<String>,
    /// Whether it opened a watch stream.
    pub watch: bool,
    /// The response's status code.
    pub status: u16,
}

impl RequestRecord {
    fn of(req: &http::Request, status: u16, watch: bool) -> RequestRecord {
        RequestRecord {
            method: req.method.clone(),
            path: req.path.clone(),
            query: req.query.clone(),
            content_type: req.content_type(),
            field_manager: req.param("fieldManager").map(str::to_string),
            watch,
            status,
        }
    }

    /// A decoded query parameter.
    pub fn param(&self, name: &str) -> Option<String> {
        form_urlencoded::parse(self.query.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }
}

/// A running fake API server; stopped, with every connection closed, on drop.
pub struct KubeApi {
    shared: Arc<Shared>,
    addr: SocketAddr,
}

/// The CRD files every server starts with: the ones `deploy/crds/` installs
/// (Kyverno's ImageValidatingPolicy, NamespacedImageValidatingPolicy and
/// PolicyException, and openreports' Report), so that the tests run
/// against the schemas a cluster gets.
pub fn default_crd_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("CRD directory {}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .filter(|p| !p.ends_with("kustomization.yaml"))
        .collect();
    files.sort();
    files
}

/// The default CRDs, parsed once per test process (they are large).
fn default_crds() -> &'static [ResourceType] {
    static CRDS: OnceLock<Vec<ResourceType>> = OnceLock::new();
    CRDS.get_or_init(|| {
        default_crd_files()
            .iter()
            .map(|p| {
                let text =
                    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                from_crd(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            })
            .collect()
    })
}

impl KubeApi {
    /// Starts a server with the builtin types, the default CRDs, the
    /// system namespaces and a random bearer token.
    pub fn start() -> KubeApi {
        let types = resources::builtins()
            .into_iter()
            .chain(default_crds().iter().cloned());
        let api = Api {
            store: store::Store::new(HISTORY),
            resources: resources::Resources::new(types),
        };
        let token = crate::sign::hex(&ops::random_bytes::<24>());
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake API server");
        let addr = listener.local_addr().expect("its address");
        let shared = Arc::new(Shared::new(api, token));
        let accepting = shared.clone();
        std::thread::spawn(move || server::accept_loop(listener, accepting));
        let server = KubeApi { shared, addr };
        for ns in SYSTEM_NAMESPACES {
            server
                .create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
                .expect("a system namespace");
        }
        server
    }

    /// `http://127.0.0.1:<port>`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bearer token requests must carry.
    pub fn token(&self) -> String {
        self.shared.lock().token.clone()
    }

    /// Changes the token: requests with the old one get 401 from now on.
    pub fn set_token(&self, token: &str) {
        self.shared.lock().token = token.to_string();
    }

    /// Writes `dir/kubeconfig`: this server, its token, and a current
    /// context whose default namespace is `ivpol`.
    pub fn write_kubeconfig(&self, dir: &Path) -> PathBuf {
        let config = json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "ivpol-fake", "cluster": {"server": self.url()}}],
            "users": [{"name": "ivpol-test", "user": {"token": self.token()}}],
            "contexts": [{"name": "ivpol-fake", "context": {
                "cluster": "ivpol-fake", "user": "ivpol-test", "namespace": "ivpol",
            }}],
            "current-context": "ivpol-fake",
            "preferences": {},
        });
        let path = dir.join("kubeconfig");
        let yaml = serde_yaml_ng::to_string(&config).expect("kubeconfig YAML");
        std::fs::write(&path, yaml).expect("write the kubeconfig");
        path
    }

    /// Serves the custom resource a CRD (YAML or JSON) defines, from now on.
    pub fn install_crd(&self, crd: &str) -> Result<(), String> {
        let rt = from_crd(crd)?;
        self.shared.lock().api.resources.add(rt);
        Ok(())
    }

    /// Runs a write under the lock and wakes the watches.
    fn write<T>(&self, f: impl FnOnce(&mut Api) -> Result<T, ApiError>) -> Result<T, ApiError> {
        let result = f(&mut self.shared.lock().api);
        self.shared.notify();
        result
    }

    /// Creates an object (its apiVersion, kind and metadata say where), as
    /// a POST would.
    pub fn create(&self, obj: Value) -> Result<Value, ApiError> {
        self.write(|api| {
            let t = object_target(api, &obj, false)?;
            api.create(&t, obj)
        })
    }

    /// Creates the object, or replaces it (as a GET then PUT would; its
    /// `.status` is kept where status is a subresource).
    pub fn apply(&self, mut obj: Value) -> Result<Value, ApiError> {
        self.write(|api| {
            let t = object_target(api, &obj, false)?;
            match api.get(&t) {
                Err(e) if e.code == 404 => api.create(&t, obj),
                Err(e) => Err(e),
                Ok(current) => {
                    obj["metadata"]["resourceVersion"] =
                        current["metadata"]["resourceVersion"].clone();
                    api.replace(&t, obj)
                }
            }
        })
    }

    /// Replaces an existing object's `.status`, as a PUT on `/status` would.
    pub fn replace_status(&self, mut obj: Value) -> Result<Value, ApiError> {
        self.write(|api| {
            let t = object_target(api, &obj, true)?;
            let current = api.get(&t)?;
            obj["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
            api.replace(&t, obj)
        })
    }

    /// The object, as read at `api_version`; `kind` may be the plural.
    /// Panics if the server serves no such type.
    pub fn get(
        &self,
        api_version: &str,
        kind: &str,
        ns: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let st = self.shared.lock();
        let t = control_target(&st.api, api_version, kind, ns, Some(name))
            .unwrap_or_else(|e| panic!("{e}"));
        st.api.get(&t).ok()
    }

    /// Every object of the type (in `ns`, or in all namespaces), sorted
    /// by namespace and name. Panics if the server serves no such type.
    pub fn list(&self, api_version: &str, kind: &str, ns: Option<&str>) -> Vec<Value> {
        let st = self.shared.lock();
        let t =
            control_target(&st.api, api_version, kind, ns, None).unwrap_or_else(|e| panic!("{e}"));
        let q = ListQuery {
            selectors: Default::default(),
            limit: None,
            resume: None,
            at: ListAt::Latest,
        };
        let list = st.api.list(&t, &q).expect("a list of now");
        list["items"].as_array().cloned().unwrap_or_default()
    }

    /// Deletes the object; its last state, if it existed. Panics if the
    /// server serves no such type.
    pub fn delete(
        &self,
        api_version: &str,
        kind: &str,
        ns: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        self.write(|api| {
            let t = control_target(api, api_version, kind, ns, Some(name))
                .unwrap_or_else(|e| panic!("{e}"));
            api.delete(&t, &json!({}))
        })
        .ok()
    }

    /// Closes every open watch connection abruptly (no last chunk), as a
    /// restarting API server or a broken network would; how many.
    pub fn drop_watches(&self) -> usize {
        let n = self.shared.lock().drop_watches();
        self.shared.notify();
        n
    }

    /// Discards the event history and expires every resource version
    /// handed out so far: a watch or `continue` from one gets 410 Expired.
    /// Open watches go on.
    pub fn compact(&self) {
        self.shared.lock().api.store.compact();
        self.shared.notify();
    }

    /// [`KubeApi::compact`] and [`KubeApi::drop_watches`] at once, so no
    /// bookmark slips in between: every watcher resumes from an expired
    /// version, gets 410 and must list again. How many watches were dropped.
    pub fn expire_watches(&self) -> usize {
        let n = {
            let mut st = self.shared.lock();
            st.api.store.compact();
            st.drop_watches()
        };
        self.shared.notify();
        n
    }

    /// Asks every watch that allows bookmarks for one now.
    pub fn request_bookmarks(&self) {
        self.shared.lock().bookmark_epoch += 1;
        self.shared.notify();
    }

    /// How often watches get a bookmark (1 s at start); for watches
    /// opened, or bookmarked, from now on.
    pub fn set_bookmark_interval(&self, every: Duration) {
        self.shared.lock().bookmark_interval = every;
    }

    /// Every request answered so far, oldest first.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.shared.lock().requests.clone()
    }

    /// Forgets the requests recorded so far.
    pub fn clear_requests(&self) {
        self.shared.lock().requests.clear();
    }

    /// How many watch streams are open.
    pub fn watch_count(&self) -> usize {
        self.shared.lock().watch_count()
    }

    /// The current resource version.
    pub fn resource_version(&self) -> u64 {
        self.shared.lock().api.store.rv()
    }
}

impl Drop for KubeApi {
    fn drop(&mut self) {
        self.shared.lock().close_all();
        self.shared.notify();
        // Wakes the accept loop, which then sees the shutdown.
        let _ = TcpStream::connect(self.addr);
    }
}

/// The target a control method names; `ns` is ignored for cluster-scoped
/// types, and none lists a namespaced type across namespaces.
fn control_target(
    api: &Api,
    api_version: &str,
    kind: &str,
    ns: Option<&str>,
    name: Option<&str>,
) -> Result<Target, ApiError> {
    let (res, version) = api.resources.by_kind(api_version, kind).ok_or_else(|| {
        ApiError::new(
            404,
            "NotFound",
            format!("no {kind} is served at {api_version}"),
        )
    })?;
    let namespaced = api.resources.get(res).namespaced;
    if namespaced && ns.is_none() && name.is_some() {
        return Err(ApiError::bad_request(format!(
            "{kind} is namespaced: name a namespace"
        )));
    }
    Ok(Target {
        res,
        version,
        ns: ns.filter(|_| namespaced).map(str::to_string),
        name: name.map(str::to_string),
        status: false,
    })
}

/// The target an object names by its apiVersion, kind, namespace and name.
fn object_target(api: &Api, obj: &Value, status: bool) -> Result<Target, ApiError> {
    let field = |path: &[&str]| {
        path.iter()
            .try_fold(obj, |v, k| v.get(*k))
            .and_then(Value::as_str)
    };
    let (Some(api_version), Some(kind)) = (field(&["apiVersion"]), field(&["kind"])) else {
        return Err(ApiError::bad_request(
            "the object needs apiVersion and kind",
        ));
    };
    let name = field(&["metadata", "name"]);
    let ns = field(&["metadata", "namespace"]);
    let mut t = control_target(api, api_version, kind, ns, name)?;
    if status {
        if !api.rt(&t).has_status(&t.version) {
            return Err(ApiError::no_route());
        }
        t.status = true;
    }
    Ok(t)
}
