//! The component's network capability: the wasi:http `send_request` hook.
//!
//! Every outgoing request of the component lands here. The host checks it
//! against the registry policy (`policy.rs`): only GET and HEAD, only hosts
//! the policy allows, and, for a name, only the addresses the connector's
//! own lookup approved (`resolve.rs`). It picks HTTPS or (for
//! `--insecure-registry`) plain HTTP, sends it on a pooled rustls client,
//! answers registry auth challenges (`auth.rs`), and bounds it by the
//! request's deadline. A refused request reaches the guest as
//! `HttpRequestDenied`.

pub mod auth;
mod body;
mod challenge;
pub(crate) mod cloud;
pub(crate) mod credential;
mod entra;
mod exec;
mod helpers;
pub(crate) mod identity;
mod kms;
pub mod kubelet;
pub mod pinned;
pub mod policy;
mod providers;
pub(crate) mod resolve;
mod send;
pub mod tape;

use anyhow::{Context, Result};
use auth::{Keychain, TokenCache};
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use policy::NetPolicy;
use resolve::{CheckedResolver, Lookup};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use std::future::Future;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

type HttpsClient = Client<
    hyper_rustls::HttpsConnector<
        pinned::PinnedConnector<
            hyper_util::client::legacy::connect::HttpConnector<CheckedResolver>,
        >,
    >,
    Full<Bytes>,
>;

/// A TCP connect (per address) gives up after this, within the deadline.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A request on its way out, already routed.
struct Outgoing<'a> {
    method: &'a http::Method,
    uri: &'a http::Uri,
    headers: &'a http::HeaderMap,
    body: Bytes,
    /// The port as asked (credentials may be keyed by `host:port`).
    port: Option<u16>,
}

/// A request the host makes itself (see [`Net::request`]).
pub struct HostRequest {
    pub method: http::Method,
    pub uri: http::Uri,
    pub headers: http::HeaderMap,
    pub body: Bytes,
    /// An Authorization that worked before for this registry, sent up
    /// front to save a challenge round trip (and a second upload).
    pub auth: Option<String>,
}

/// Shared by every instance: policy, credentials, tokens, connection pool.
pub struct Net {
    policy: Arc<NetPolicy>,
    keychain: Keychain,
    /// Where policies' `credentials.secrets` are read from.
    secrets_dir: Option<std::path::PathBuf>,
    /// The cluster's Secrets instead (`serve --kubernetes`), once set.
    cluster_secrets: std::sync::OnceLock<Arc<dyn SecretSource>>,
    tokens: TokenCache,
    client: HttpsClient,
    /// Requests sent to registries (for tests and metrics).
    pub sent: AtomicU64,
    /// Whether `keychain` (the operator's `--registry-config`) also serves
    /// namespaced policies (`--registry-config-for-namespaced`).
    keychain_for_tenants: std::sync::atomic::AtomicBool,
    /// The component's requests in flight to each registry host, at most
    /// `per_registry` at once (`--registry-inflight`).
    inflight: Inflight,
    /// Docker credential helpers, run and their answers kept.
    helpers: helpers::Helpers,
    /// The helpers a policy's registry Secret may name
    /// (`--allow-credential-helper`); those of `--registry-config` always run.
    secret_helpers: std::sync::OnceLock<Vec<String>>,
    /// Kubelet credential provider plugins (`--image-credential-provider-*`),
    /// operator credentials like `--registry-config`'s.
    plugins: std::sync::OnceLock<kubelet::Plugins>,
    /// `credentials.providers: [github]`: `ghcr.io` with `GITHUB_TOKEN` (as
    /// `GITHUB_ACTOR`, else `unset`), read at start, as go-containerregistry's
    /// GitHub keychain does; empty without a token.
    github: Keychain,
    /// The providers that call a cloud (`amazon`, `google`, `azure`).
    providers: providers::Providers,
    /// `cosign.key.kms` keys, read with the host's identity.
    keys: kms::Keys,
    /// `tuf.root.path` files, read from the `--trust-root-dir`s.
    trust_files: kms::files::TrustFiles,
    /// The component's exchanges recorded, or replayed instead of sent
    /// (`apply` and `test` `--record` / `--replay`).
    tape: std::sync::OnceLock<Arc<tape::Tape>>,
}

/// Requests in flight per registry host: one slow or hostile registry
/// cannot hold more than its share of the host's connections, however many
/// pods name it. A request waits for a turn within its deadline.
struct Inflight {
    per_registry: std::sync::atomic::AtomicUsize,
    hosts: std::sync::Mutex<std::collections::HashMap<String, Arc<tokio::sync::Semaphore>>>,
}

/// The default of `--registry-inflight`.
pub const REGISTRY_INFLIGHT: usize = 16;

impl Inflight {
    /// A turn to send to `host`, waiting until `deadline` at the latest.
    async fn turn(
        &self,
        host: &str,
        deadline: Instant,
    ) -> Result<tokio::sync::OwnedSemaphorePermit, String> {
        let per = self
            .per_registry
            .load(std::sync::atomic::Ordering::Relaxed)
            .max(1);
        let semaphore = {
            let mut hosts = self.hosts.lock().unwrap_or_else(|p| p.into_inner());
            // Hosts nobody is sending to go, so the map stays as small as
            // the requests in flight.
            hosts.retain(|_, s| Arc::strong_count(s) > 1 || s.available_permits() < per);
            hosts
                .entry(host.to_string())
                .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(per)))
                .clone()
        };
        match tokio::time::timeout_at(deadline.into(), semaphore.acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            _ => Err(format!(
                "{per} requests to {host} already in flight, and none finished before the deadline"
            )),
        }
    }
}

/// Who the component's next registry requests are for (WIT
/// `registry-credentials.present`): the secrets the policy names, and the
/// namespace of a namespaced policy.
#[derive(Clone, Default)]
pub(crate) struct Presented {
    pub secrets: Arc<[String]>,
    pub tenant: Option<Arc<str>>,
}

impl Net {
    /// The capability, resolving names with the system resolver (or the
    /// test-only script named by [`resolve::TEST_DNS_ENV`]).
    pub fn new(
        policy: NetPolicy,
        keychain: Keychain,
        secrets_dir: Option<&Path>,
        extra_ca: Option<&Path>,
    ) -> Result<Net> {
        let lookup = resolve::lookup_from_env().map_err(anyhow::Error::msg)?;
        Net::with_lookup(policy, keychain, secrets_dir, extra_ca, lookup)
    }

    pub(crate) fn with_lookup(
        policy: NetPolicy,
        keychain: Keychain,
        secrets_dir: Option<&Path>,
        extra_ca: Option<&Path>,
        lookup: Arc<dyn Lookup>,
    ) -> Result<Net> {
        let policy = Arc::new(policy);
        let tls = tls_client_config(extra_ca)?;
        let cloud = cloud::client(tls.clone(), &policy)?;
        let entra = Arc::new(entra::Entra::new(cloud.clone()));
        // Names are resolved (and their addresses checked) by the
        // connector itself, on the lookup whose answer it dials.
        let resolver = CheckedResolver {
            policy: policy.clone(),
            lookup,
        };
        let mut http =
            hyper_util::client::legacy::connect::HttpConnector::new_with_resolver(resolver);
        http.enforce_http(false);
        http.set_connect_timeout(Some(CONNECT_TIMEOUT));
        http.set_nodelay(true);
        // `--resolve` pins, between TLS (which keeps the name) and TCP.
        let http = pinned::PinnedConnector {
            inner: http,
            policy: policy.clone(),
        };
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Ok(Net {
            policy,
            keychain,
            secrets_dir: secrets_dir.map(Path::to_path_buf),
            cluster_secrets: std::sync::OnceLock::new(),
            tokens: TokenCache::default(),
            client,
            sent: AtomicU64::new(0),
            keychain_for_tenants: std::sync::atomic::AtomicBool::new(false),
            inflight: Inflight {
                per_registry: std::sync::atomic::AtomicUsize::new(REGISTRY_INFLIGHT),
                hosts: Default::default(),
            },
            helpers: helpers::Helpers::default(),
            secret_helpers: std::sync::OnceLock::new(),
            plugins: std::sync::OnceLock::new(),
            github: Keychain::github_from_env(),
            providers: providers::Providers::new(entra.clone(), cloud.clone()),
            keys: kms::Keys::new(entra, cloud),
            trust_files: kms::files::TrustFiles::default(),
            tape: std::sync::OnceLock::new(),
        })
    }

    /// Records the component's exchanges on `tape`, or answers them from
    /// it without sending anything, from now on.
    pub fn use_tape(&self, tape: Arc<tape::Tape>) {
        let _ = self.tape.set(tape);
    }

    /// At most `n` of the component's requests in flight to one registry
    /// host (`--registry-inflight`).
    pub fn limit_inflight_per_registry(&self, n: usize) {
        self.inflight
            .per_registry
            .store(n.max(1), std::sync::atomic::Ordering::Relaxed);
    }

    /// The credential helpers a policy's registry Secret may name
    /// (`--allow-credential-helper`). A Secret is the policy author's, so
    /// by default it may name none: a helper runs with ivpol's own identity
    /// (its cloud role, its keyring), which a tenant must not borrow.
    pub fn allow_secret_credential_helpers(&self, names: Vec<String>) {
        let _ = self.secret_helpers.set(names);
    }

    /// Uses the kubelet's credential provider plugins too, after
    /// `--registry-config`, where that serves.
    pub fn use_credential_plugins(&self, plugins: kubelet::Plugins) {
        let _ = self.plugins.set(plugins);
    }

    /// The operator's credential plugin that may answer for `registry`.
    pub(crate) fn plugin_serving(&self, registry: &str) -> Option<&str> {
        self.plugins.get()?.serving(registry)
    }

    /// The credential for `host[:port]` (and `repository`, which a kubelet
    /// plugin may match on): the policy's own secrets first, then (where
    /// it serves) the host-wide `--registry-config`, then the kubelet's
    /// credential plugins; a credential helper is run when one holds it.
    /// Why there is none when a helper or plugin fails or may not run.
    pub(crate) async fn credential(
        &self,
        host: &str,
        port: Option<u16>,
        repository: Option<&str>,
        secrets: Option<&Keychain>,
        host_keychain: bool,
        deadline: Instant,
    ) -> Result<Option<credential::Credential>, String> {
        use auth::Source;
        let found = match secrets.and_then(|k| k.source(host, port)) {
            Some(s) => Some((s, false)),
            None => host_keychain
                .then(|| self.keychain.source(host, port))
                .flatten()
                .map(|s| (s, true)),
        };
        let registry = port.map_or_else(|| host.to_string(), |p| format!("{host}:{p}"));
        let (name, operators) = match found {
            None => {
                let plugins = self.plugins.get().filter(|_| host_keychain);
                let Some(plugins) = plugins else {
                    return Ok(None);
                };
                let image = format!("{registry}/{}", repository.unwrap_or_default());
                return plugins
                    .credential(&image, deadline)
                    .await
                    .map_err(|why| format!("registry-auth: {why}"));
            }
            Some((Source::Stored(c), _)) => return Ok(Some(c.clone())),
            Some((Source::Provider(name), _)) => {
                return self
                    .providers
                    .credential(name, host, port, deadline)
                    .await
                    .map_err(|why| format!("registry-auth: {why}"))
            }
            Some((Source::Helper(name), operators)) => (name, operators),
        };
        let allowed = self
            .secret_helpers
            .get()
            .is_some_and(|a| a.iter().any(|n| n == name));
        if !operators && !allowed {
            return Err(format!(
                "registry-auth: a registry secret names the credential helper {name}, which --allow-credential-helper does not list"
            ));
        }
        self.helpers
            .get(name, &registry, deadline)
            .await
            .map_err(|why| format!("registry-auth: {why}"))
    }

    /// Lets the host-wide keychain serve namespaced policies too
    /// (`--registry-config-for-namespaced`).
    pub fn share_keychain_with_tenants(&self) {
        self.keychain_for_tenants
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the host-wide keychain serves requests for `tenant` (none:
    /// a cluster policy, the operator's own).
    fn host_keychain_serves(&self, tenant: Option<&str>) -> bool {
        tenant.is_none()
            || self
                .keychain_for_tenants
                .load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Net {
    /// The credentials of the secrets a policy names (`registry-credentials`),
    /// from the cluster or `--secrets-dir`, merged (earlier names win); none
    /// when it names none. Naming a secret the host cannot read fails the
    /// request: falling back to anonymous access would hide the mistake.
    /// `credentials.providers` entries (`provider:<name>`) add the host's
    /// credential for that provider, where the host's credentials serve
    /// (`host_serves`: a cluster policy, or shared); a namespaced policy
    /// naming one otherwise fails, rather than borrow ivpol's identity.
    fn secrets_keychain(
        &self,
        names: &[String],
        host_serves: bool,
    ) -> Result<Option<Keychain>, String> {
        let (providers, names): (Vec<&String>, Vec<&String>) =
            names.iter().partition(|n| n.starts_with(PROVIDER_PREFIX));
        let mut from_secrets = self.named_secrets(&names)?;
        for p in providers {
            let name = p.trim_start_matches(PROVIDER_PREFIX);
            if !host_serves {
                return Err(format!(
                    "registry-auth: credentials.providers {name}: the host's credentials serve namespaced policies only with --registry-config-for-namespaced"
                ));
            }
            let keychain = from_secrets.get_or_insert_with(Keychain::default);
            match name {
                "github" => keychain.extend(self.github.clone()),
                "amazon" | "google" | "azure" => keychain.add_provider(name),
                other => {
                    return Err(format!(
                        "registry-auth: credentials.providers {other} is not implemented"
                    ))
                }
            }
        }
        Ok(from_secrets)
    }

    /// The Secrets among a policy's credential names, merged.
    fn named_secrets(&self, names: &[&String]) -> Result<Option<Keychain>, String> {
        if names.is_empty() {
            return Ok(None);
        }
        if let Some(cluster) = self.cluster_secrets.get() {
            let mut merged = Keychain::default();
            for name in names {
                merged.extend(cluster.keychain(name)?);
            }
            return Ok(Some(merged));
        }
        let Some(dir) = &self.secrets_dir else {
            return Err(format!(
                "the policy names registry secrets ({}) but ivpol serve has no --secrets-dir",
                names
                    .iter()
                    .map(|n| n.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ));
        };
        let mut merged = Keychain::default();
        for name in names {
            // A namespaced policy names `<namespace>/<name>`; a secrets
            // directory is one namespace's worth, the one ivpol runs in.
            let name = name.rsplit_once('/').map_or(name.as_str(), |(_, n)| n);
            merged.extend(Keychain::from_secret(dir, name)?);
        }
        Ok(Some(merged))
    }

    /// The PEM key a policy of `tenant` names by `uri` (`cosign.key.kms`),
    /// kept or read within `deadline`.
    pub(crate) async fn public_key(
        &self,
        uri: &str,
        tenant: Option<&str>,
        deadline: Instant,
    ) -> Result<String, String> {
        let host_serves = self.host_keychain_serves(tenant);
        self.keys
            .public_key(uri, tenant, host_serves, deadline)
            .await
    }

    /// Reads `tuf.root.path` files from `dirs`, and nowhere else.
    pub fn allow_trust_root_dirs(&self, dirs: &[std::path::PathBuf]) -> Result<()> {
        self.trust_files.allow(dirs)
    }

    /// The trust file `path` a policy names (`tuf.root.path`).
    pub(crate) fn trust_file(&self, path: &str) -> Result<String, String> {
        self.trust_files.read(path)
    }

    /// Reads every `(uri, tenant)` key again (a policy set loaded).
    pub async fn refresh_keys(&self, keys: Vec<(String, Option<String>)>) {
        let reads = keys.iter().map(|(uri, tenant)| {
            let host_serves = self.host_keychain_serves(tenant.as_deref());
            self.keys.refresh(uri, tenant.as_deref(), host_serves)
        });
        futures_util::future::join_all(reads).await;
    }

    /// Reads `k8s://` keys from the cluster from now on.
    pub fn use_cluster_keys(&self, client: kube::Client) {
        self.keys.use_cluster(client);
    }

    /// Reads policies' `credentials.secrets` from the cluster from now on
    /// (`serve --kubernetes`); `--secrets-dir` is then not consulted.
    pub fn use_cluster_secrets(&self, source: Arc<dyn SecretSource>) {
        let _ = self.cluster_secrets.set(source);
    }
}

/// TLS for the host's clients: ring, the webpki roots, and the PEM CAs in
/// `extra_ca` (`--registry-ca`, `VAULT_CACERT`).
pub(crate) fn tls_client_config(extra_ca: Option<&Path>) -> Result<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = extra_ca {
        let pem = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.with_context(|| format!("parsing {}", path.display()))?;
            roots
                .add(cert)
                .with_context(|| format!("adding a CA from {}", path.display()))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// How the component names a `credentials.providers` entry among a
/// policy's registry secrets.
pub const PROVIDER_PREFIX: &str = "provider:";

/// Registry secrets by the name a policy gives them (`<name>` for a
/// cluster policy, `<namespace>/<name>` for a namespaced one).
pub trait SecretSource: Send + Sync {
    /// The credentials in the secret, or why there are none.
    fn keychain(&self, name: &str) -> Result<Keychain, String>;
}

/// The per-store hook: the shared [`Net`], this call's deadline, the
/// policy secrets the component named last (`registry-credentials`), and
/// the credential identities this call worked out.
pub(crate) struct Hooks {
    pub net: Arc<Net>,
    pub deadline: Instant,
    pub presented: Presented,
    pub identities: identity::Identities,
}

impl WasiHttpHooks for Hooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> Box<
        dyn Future<
                Output = Result<
                    (
                        http::Response<WasiBody>,
                        Box<dyn Future<Output = Result<(), HttpError>> + Send>,
                    ),
                    HttpError,
                >,
            > + Send,
    > {
        drop(fut);
        let net = self.net.clone();
        let deadline = self.deadline;
        // Named before this request was handed over: they are its secrets.
        let presented = self.presented.clone();
        Box::new(async move {
            let resp = net.send(request, presented, deadline).await?;
            let done: Box<dyn Future<Output = Result<(), HttpError>> + Send> =
                Box::new(async { Ok(()) });
            Ok((resp, done))
        })
    }
}

#[cfg(test)]
mod tests;
