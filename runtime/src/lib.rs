//! `ivpol-runtime`, the host's wasmtime side: engine configuration,
//! component loading, and a pool of instances that each hold the compiled
//! policy set; the capabilities the component imports (the verification
//! cache, namespaces, granted cluster resources, signing keys, registry
//! credentials); and the network it reaches registries through
//! ([`net`]: the allow-list, pinned addresses, auth challenges, credential
//! providers, KMS).
//!
//! An instance is used by one request at a time and returned to the pool
//! afterwards; an instance that trapped (deadline, out of memory, a bug) is
//! dropped, and the next request gets a fresh one.
//!
//! The lowest of the host's crates: it may import `ivpol-refs` and no other
//! workspace crate, and knows nothing of the server, the cluster watch or
//! the reports above it (docs/architecture.md, "Crates"). It makes no
//! policy decision: what a request gets is the component's answer.

// Public items are the ones the crates above use; the rest is `pub(crate)`.
#![warn(unreachable_pub)]

pub mod cache;
pub mod duration;
pub mod metrics;
pub mod net;
pub mod object_name;
pub mod policies;
pub mod resources;

mod bindings;
mod failure;
mod host_state;
mod idle;
mod isolation;
mod memory;
mod pool;
pub mod precompiled;
mod turns;
use failure::CallFailure;
pub use failure::{load_failure, Failure};
pub use host_state::{HostState, Namespaces};
use memory::MemoryLimiter;
pub use pool::{Pool, Summary};
pub use precompiled::Compiler;

use crate::cache::{Claims, VerificationCache};
use crate::metrics::metrics;
use crate::net::{Hooks, Net};
use crate::policies::Document;
use crate::resources::ClusterResources;
use anyhow::{Context, Result};
pub use bindings::ivpol::admission::types as wit;
use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use wasmtime::component::{Linker, ResourceAny};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};
use wasmtime_wasi::{ResourceTable, WasiCtx};
use wasmtime_wasi_http::WasiHttpCtx;

/// The component built from `guest/` by build.rs.
pub static EMBEDDED_COMPONENT: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/ivpol_guest.wasm"));

/// One epoch tick; deadlines are counted in ticks.
const EPOCH_TICK: Duration = Duration::from_millis(10);
/// How far past the webhook deadline guest code may run before it is interrupted.
const EPOCH_GRACE: Duration = Duration::from_millis(500);
/// Instances alive at once, per engine: the pooling allocator reserves
/// their slots up front (address space only, until used).
const MAX_INSTANCES: u32 = 128;

/// How much an instance pool may hold. Memory is bounded by design: a
/// policy set keeps at most `max_instances` instances alive (running or
/// idle), each within `instance_memory` bytes of linear memory, so one
/// generation holds at most `max_instances × instance_memory`. A policy
/// reload overlaps two generations, so a pod's memory limit must be at
/// least `2 × max_instances × instance_memory` plus the host's own (about
/// 256 MiB with full caches): the defaults (8 × 128 MiB) need 2304 MiB.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Idle instances kept per policy set, ready for the next request.
    pub instances: usize,
    /// Instances alive at once per policy set: the pool grows past
    /// `instances` (for evaluations that wait on registries) up to this;
    /// more requests wait for a turn within their deadline.
    pub max_instances: usize,
    /// Instances one namespace's requests may hold at once (`turns`), so
    /// that one tenant's slow registry cannot take every instance.
    pub namespace_instances: usize,
    /// Linear memory one instance may grow to; past it the instance traps
    /// (an out-of-memory failure, distinct from a deadline) and is dropped.
    pub instance_memory: usize,
    /// Calls an instance serves before it is replaced by a fresh one.
    pub instance_calls: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            instances: 4,
            max_instances: 8,
            namespace_instances: 2,
            instance_memory: 128 << 20,
            instance_calls: 10_000,
        }
    }
}

impl Limits {
    /// The pod memory this needs with two generations alive (see above),
    /// each with its reserve instance for failure answers.
    pub fn memory_needed(&self) -> usize {
        const HOST_RESERVE: usize = 256 << 20;
        let per_generation = self.max_instances.max(self.instances).saturating_add(1);
        2usize
            .saturating_mul(per_generation)
            .saturating_mul(self.instance_memory)
            .saturating_add(HOST_RESERVE)
    }
}

/// The engine and the pre-linked component.
pub struct Runtime {
    engine: Engine,
    pre: bindings::EngineContractPre<HostState>,
    net: Arc<Net>,
    cache: Arc<VerificationCache>,
    limits: Limits,
    /// The cluster objects granted to policies (`serve --kubernetes`).
    resources: std::sync::OnceLock<Arc<ClusterResources>>,
    /// Where exceptions to cluster policies may come from; any namespace
    /// unless set (the policy files are the operator's).
    exceptions: std::sync::OnceLock<wit::ExceptionScope>,
    /// The instant the component's wall clock reads, when fixed (a replay).
    clock: std::sync::OnceLock<std::time::SystemTime>,
}

impl Runtime {
    /// Stops the component's wall clock at `at` in every instance created
    /// from now on (a replay judges as of its recording).
    pub fn fix_clock(&self, at: std::time::SystemTime) {
        let _ = self.clock.set(at);
    }

    /// Lets policies read the cluster objects `resources` grants, in every
    /// instance created from now on.
    pub fn grant_resources(&self, resources: Arc<ClusterResources>) {
        let _ = self.resources.set(resources);
    }

    /// Takes exceptions to cluster policies only from `scope`, in every
    /// policy set loaded from now on.
    pub fn scope_exceptions(&self, scope: wit::ExceptionScope) {
        let _ = self.exceptions.set(scope);
    }

    fn load_options(&self) -> wit::LoadOptions {
        wit::LoadOptions {
            exceptions: self
                .exceptions
                .get()
                .cloned()
                .unwrap_or(wit::ExceptionScope::Any),
        }
    }

    /// The network capability every instance shares.
    pub fn net(&self) -> &Arc<Net> {
        &self.net
    }

    /// Compiles the component (or loads it precompiled from `cache_dir`),
    /// with the default [`Limits`].
    pub(crate) fn new(
        component_bytes: &[u8],
        net: Arc<Net>,
        cache: Arc<VerificationCache>,
        cache_dir: Option<&Path>,
    ) -> Result<Runtime> {
        let limits = Limits::default();
        Runtime::with_limits(
            component_bytes,
            net,
            cache,
            cache_dir,
            limits,
            Compiler::InProcess,
        )
    }

    /// [`Runtime::new`] with pools bounded by `limits`, compiling (when
    /// nothing is cached) where `compiler` says.
    pub fn with_limits(
        component_bytes: &[u8],
        net: Arc<Net>,
        cache: Arc<VerificationCache>,
        cache_dir: Option<&Path>,
        limits: Limits,
        compiler: Compiler,
    ) -> Result<Runtime> {
        let engine = Engine::new(&engine_config(limits.instance_memory))?;
        let memory = limits.instance_memory;
        let component = precompiled::load(&engine, component_bytes, cache_dir, compiler, memory)?;
        let mut linker: Linker<HostState> = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
        bindings::EngineContract::add_to_linker::<
            HostState,
            wasmtime::component::HasSelf<HostState>,
        >(&mut linker, |s| s)?;
        let pre = bindings::EngineContractPre::new(linker.instantiate_pre(&component)?)?;
        start_epoch_ticker(engine.clone());
        Ok(Runtime {
            engine,
            pre,
            net,
            cache,
            limits,
            resources: std::sync::OnceLock::new(),
            exceptions: std::sync::OnceLock::new(),
            clock: std::sync::OnceLock::new(),
        })
    }

    /// The names of the interfaces the component imports, as it declares
    /// them (`wasi:http/outgoing-handler@0.2.12`).
    #[cfg(test)]
    fn component_imports(&self) -> Vec<String> {
        let component = self.pre.instance_pre().component();
        component
            .component_type()
            .imports(&self.engine)
            .map(|(name, _)| name.to_string())
            .collect()
    }

    /// A runtime for a one-shot command that makes no registry call: the
    /// network stays default-deny and nothing is cached between calls.
    pub fn offline(component_bytes: &[u8], cache_dir: Option<&Path>) -> Result<Runtime> {
        let net = Arc::new(Net::new(
            Default::default(),
            Default::default(),
            None,
            None,
        )?);
        let none = VerificationCache::new(&crate::cache::CacheConfig::disabled());
        Runtime::new(component_bytes, net, none, cache_dir)
    }

    async fn instantiate(&self) -> Result<(Store<HostState>, bindings::EngineContract)> {
        let mut wasi = WasiCtx::builder();
        if let Some(at) = self.clock.get() {
            wasi.wall_clock(net::tape::FixedClock(*at));
        }
        let state = HostState {
            wasi: wasi.build(),
            http: WasiHttpCtx::new(),
            hooks: Hooks {
                net: self.net.clone(),
                deadline: Instant::now() + Duration::from_secs(30),
                presented: Default::default(),
                identities: Default::default(),
            },
            table: ResourceTable::new(),
            limits: MemoryLimiter::new(self.limits.instance_memory),
            claims: Claims::new(self.cache.clone()),
            resources: self.resources.get().cloned(),
            namespaces: None,
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limits);
        store.set_epoch_deadline(ticks(Duration::from_secs(30)));
        let module = self.pre.instantiate_async(&mut store).await?;
        Ok((store, module))
    }
}

impl Runtime {
    /// Verifies one Sigstore bundle in a fresh instance (`ivpol sigstore
    /// verify-bundle`), `times` times in a row, with the time the calls
    /// took (instantiation excluded). The outer error is a trap, the inner
    /// one a failed verification (the first call's outcome; every call
    /// verifies the same input).
    pub async fn verify_bundle(
        &self,
        bundle: Vec<u8>,
        artifact_sha256: Vec<u8>,
        signer: sigstore::Signer,
        trusted_root: Option<String>,
        times: u32,
    ) -> Result<(std::result::Result<(), wit::VerificationFailure>, Duration)> {
        let (mut store, module) = self.instantiate().await?;
        let verifier = module.ivpol_admission_sigstore();
        repeated(&mut store, times, async |store| {
            let call = verifier.call_verify_bundle(
                store,
                &bundle,
                &artifact_sha256,
                &signer,
                trusted_root.as_deref(),
            );
            call.await
        })
        .await
        .context("the component trapped verifying the bundle")
    }

    /// Verifies one Notary signature envelope in a fresh instance (`ivpol
    /// notary verify`), `times` times in a row, as [`Self::verify_bundle`].
    pub async fn verify_envelope(
        &self,
        envelope: Vec<u8>,
        envelope_media_type: &str,
        target: notary::Descriptor,
        certs: String,
        tsa_certs: Option<String>,
        times: u32,
    ) -> Result<(std::result::Result<(), wit::VerificationFailure>, Duration)> {
        let (mut store, module) = self.instantiate().await?;
        let verifier = module.ivpol_admission_notary();
        repeated(&mut store, times, async |store| {
            let call = verifier.call_verify_envelope(
                store,
                &envelope,
                envelope_media_type,
                &target,
                &certs,
                tsa_certs.as_deref(),
            );
            call.await
        })
        .await
        .context("the component trapped verifying the envelope")
    }

    /// Verifies, in a fresh instance, that already fetched `signatures`
    /// hold a cosign signature of the OCI manifest `digest` by `signer`
    /// (a pulled component's own signature). The outer error is a trap,
    /// the inner one a failed verification.
    pub async fn verify_artifact(
        &self,
        digest: &str,
        signatures: &sigstore::ArtifactSignatures,
        signer: &sigstore::Signer,
        trusted_root: Option<&str>,
        ignore_tlog: bool,
    ) -> Result<std::result::Result<(), wit::VerificationFailure>> {
        let (mut store, module) = self.instantiate().await?;
        let call = module.ivpol_admission_sigstore().call_verify_artifact(
            &mut store,
            digest,
            signatures,
            signer,
            trusted_root,
            ignore_tlog,
        );
        call.await
            .map_err(anyhow::Error::from)
            .context("the component trapped verifying the signatures")
    }
}

/// Runs `call` `times` times (at least once) in one instance, each with
/// the whole deadline of a fresh one: the first call's outcome (every call
/// gets the same input) and the time the calls took, instantiation
/// excluded. An error is a trap.
async fn repeated<T>(
    store: &mut Store<HostState>,
    times: u32,
    mut call: impl AsyncFnMut(&mut Store<HostState>) -> wasmtime::Result<T>,
) -> Result<(T, Duration)> {
    let started = Instant::now();
    let mut first = None;
    for _ in 0..times.max(1) {
        store.set_epoch_deadline(ticks(Duration::from_secs(30)));
        let outcome = call(store).await.map_err(anyhow::Error::from)?;
        first.get_or_insert(outcome);
    }
    let took = started.elapsed();
    let first = first.context("no call was made")?;
    Ok((first, took))
}

/// The WIT types of bundle verification.
pub use bindings::exports::ivpol::admission::sigstore;

/// The WIT types of Notary envelope verification.
pub use bindings::exports::ivpol::admission::notary;

/// The WIT types the engine interface defines itself (`webhook-options`).
pub use bindings::exports::ivpol::admission::engine;

/// Kyverno's shapes of results, which the component words (`Pool::shape`).
pub use bindings::exports::ivpol::admission::reports;

/// The engine's settings. A precompiled artifact loads only into an engine
/// with the same settings, so `ivpol compile-component` builds its engine
/// here too, from the same instance memory limit.
pub(crate) fn engine_config(instance_memory: usize) -> Config {
    let mut config = Config::new();
    config.epoch_interruption(true);
    // Tables filled when an instance is made, not checked at every
    // indirect call (every `dyn` call in the component: CEL's values,
    // the services): an instance serves thousands of calls.
    config.table_lazy_init(false);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling(
        instance_memory,
    )));
    // `IVPOL_PROFILE=perfmap` names the component's functions for `perf`
    // (docs/performance.md says how the profile was taken).
    if std::env::var_os("IVPOL_PROFILE").is_some_and(|v| v == "perfmap") {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    config
}

/// Pooled instance slots with copy-on-write memory images: instantiation
/// maps the component's initial memory instead of copying it.
fn pooling(instance_memory: usize) -> PoolingAllocationConfig {
    let mut p = PoolingAllocationConfig::default();
    p.total_component_instances(MAX_INSTANCES)
        .total_core_instances(MAX_INSTANCES * 4)
        .total_memories(MAX_INSTANCES * 2)
        .total_tables(MAX_INSTANCES * 4)
        .max_memory_size(instance_memory);
    p
}

fn ticks(d: Duration) -> u64 {
    (d.as_millis() / EPOCH_TICK.as_millis()).max(1) as u64
}

/// One ticker per engine (wasmtime#11814: a ticker per request is ruinous).
/// It holds the engine weakly and ends with it, so that a short-lived
/// runtime (the one that checks a pulled component's signature) leaves
/// neither a thread nor its compiled code behind.
fn start_epoch_ticker(engine: Engine) {
    let engine = engine.weak();
    std::thread::Builder::new()
        .name("ivpol-epoch".into())
        .spawn(move || loop {
            std::thread::sleep(EPOCH_TICK);
            match engine.upgrade() {
                Some(engine) => engine.increment_epoch(),
                None => break,
            }
        })
        .map(|_| ())
        .unwrap_or_else(|e| tracing::error!("cannot start the epoch ticker: {e}"));
}

#[cfg(test)]
mod tests;
