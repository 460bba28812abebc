//! The store's data: the WASI context the component gets (empty but for
//! wasi:http through the registry hook), and the host functions of its
//! world (cache, credentials, keys, namespaces, cluster resources).

use super::bindings;
use super::memory::MemoryLimiter;
use crate::cache::Claims;
use crate::net::identity::Identity;
use crate::net::Hooks;
use crate::resources::ClusterResources;
use std::sync::Arc;
use wasmtime_wasi::{ResourceTable, WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// Store data: an empty WASI context (no files, no environment, no
/// sockets), wasi:http through the registry hook, and the memory limiter.
pub struct HostState {
    pub(super) wasi: WasiCtx,
    pub(super) http: WasiHttpCtx,
    pub(super) hooks: Hooks,
    pub(super) table: ResourceTable,
    pub(super) limits: MemoryLimiter,
    /// Verification cache keys this instance claimed in its current call.
    pub(super) claims: Claims,
    /// The cluster objects granted to policies, if any.
    pub(super) resources: Option<Arc<ClusterResources>>,
    /// The namespaces of the generation serving the current call.
    pub(super) namespaces: Option<Arc<dyn Namespaces>>,
}

/// The Namespace objects the host knows (WIT `namespaces`): the cluster's
/// watch or `--namespaces`, as the serving generation has them.
pub trait Namespaces: Send + Sync {
    /// The Namespace `name` as JSON; none when unknown.
    fn namespace_object(&self, name: &str) -> Option<String>;
}

/// The shared WIT types need no host functions.
impl bindings::ivpol::admission::types::Host for HostState {}

use bindings::ivpol::admission::verification_cache::CredentialScope;

impl HostState {
    /// The component's key completed with the identity of the registry
    /// credentials in `scope` (see `net/identity.rs`); none when they
    /// cannot be read, and then nothing is cached. A scope's identity is
    /// worked out once per call, or once per instance when it binds only
    /// credentials fixed for the process's life.
    async fn scoped(&mut self, key: &str, scope: &CredentialScope) -> Option<String> {
        let (registries, secrets) = (&scope.registries, &scope.secrets);
        let tenant = scope.tenant.as_deref();
        let identities = &mut self.hooks.identities;
        if let Some(done) = identities.key(registries, secrets, tenant, key) {
            return Some(done);
        }
        let identity = self.identity(scope).await?;
        let identities = &mut self.hooks.identities;
        Some(identities.keep(registries, secrets, tenant, identity, key))
    }

    /// The identity of `scope`'s credentials.
    /// (The future holds the shared `Net`, not `self`, whose WASI state
    /// is not `Sync`.)
    fn identity(
        &self,
        scope: &CredentialScope,
    ) -> impl std::future::Future<Output = Option<Identity>> + Send + 'static {
        let (net, deadline) = (self.hooks.net.clone(), self.hooks.deadline);
        let scope = scope.clone();
        async move {
            net.identity(
                &scope.registries,
                &scope.secrets,
                scope.tenant.as_deref(),
                deadline,
            )
            .await
        }
    }
}

impl bindings::ivpol::admission::verification_cache::Host for HostState {
    async fn get(&mut self, key: String, credentials: CredentialScope) -> Option<Vec<u8>> {
        let key = self.scoped(&key, &credentials).await?;
        let cache = self.claims.cache();
        let deadline = self.hooks.deadline;
        cache.get(&key, &mut self.claims, deadline).await
    }

    async fn put(&mut self, key: String, credentials: CredentialScope, value: Vec<u8>) {
        let Some(key) = self.scoped(&key, &credentials).await else {
            return;
        };
        let cache = self.claims.cache();
        cache.put(&key, &value, &mut self.claims);
    }

    async fn get_digest(&mut self, image: String, credentials: CredentialScope) -> Option<String> {
        let key = self.scoped(&image, &credentials).await?;
        self.claims.cache().get_digest(&key)
    }

    async fn put_digest(&mut self, image: String, credentials: CredentialScope, digest: String) {
        if let Some(key) = self.scoped(&image, &credentials).await {
            self.claims.cache().put_digest(&key, &digest);
        }
    }
}

impl bindings::ivpol::admission::registry_credentials::Host for HostState {
    async fn present(&mut self, secrets: Vec<String>, tenant: Option<String>) {
        self.hooks.presented = crate::net::Presented {
            secrets: secrets.into(),
            tenant: tenant.map(Arc::from),
        };
    }
}

impl bindings::ivpol::admission::signing_keys::Host for HostState {
    async fn public_key(&mut self, uri: String, tenant: Option<String>) -> Result<String, String> {
        let (net, deadline) = (self.hooks.net.clone(), self.hooks.deadline);
        net.public_key(&uri, tenant.as_deref(), deadline).await
    }

    async fn trust_file(
        &mut self,
        path: String,
        _tenant: Option<String>,
    ) -> Result<String, String> {
        self.hooks.net.trust_file(&path)
    }
}

impl bindings::ivpol::admission::namespaces::Host for HostState {
    async fn get(&mut self, name: String) -> Option<String> {
        self.namespaces.as_ref()?.namespace_object(&name)
    }
}

impl bindings::ivpol::admission::cluster_resources::Host for HostState {
    async fn granted(&mut self) -> Vec<String> {
        self.resources
            .as_ref()
            .map(|r| r.granted())
            .unwrap_or_default()
    }

    async fn get(
        &mut self,
        api_version: String,
        resource: String,
        namespace: String,
        name: String,
    ) -> Result<Option<String>, String> {
        let resources = self.granted_resources()?;
        let read = resources.get(&api_version, &resource, &namespace, &name);
        within(self.hooks.deadline, read).await
    }

    async fn list(
        &mut self,
        api_version: String,
        resource: String,
        namespace: String,
    ) -> Result<String, String> {
        let resources = self.granted_resources()?;
        let read = resources.list(&api_version, &resource, &namespace);
        within(self.hooks.deadline, read).await
    }
}

impl HostState {
    fn granted_resources(&self) -> Result<Arc<ClusterResources>, String> {
        self.resources.clone().ok_or_else(|| {
            "no cluster resources are granted (ivpol serve --kubernetes --grant-resource)"
                .to_string()
        })
    }
}

/// `read`, or an error once the request's deadline passes.
async fn within<T>(
    deadline: std::time::Instant,
    read: impl std::future::Future<Output = Result<T, String>>,
) -> Result<T, String> {
    let deadline = tokio::time::Instant::from_std(deadline);
    match tokio::time::timeout_at(deadline, read).await {
        Ok(result) => result,
        Err(_) => Err("reading the cluster object took past the request's deadline".into()),
    }
}

impl WasiHttpView for HostState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.hooks,
        }
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}
