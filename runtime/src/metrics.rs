//! Prometheus metrics, served as text at `GET /metrics`: admission
//! requests and their latency, the verification cache, registry calls, the
//! instance pool, policy loading and open connections. One registry per
//! process.
//!
//! Label values that come from outside (a registry host the component was
//! told to reach) are bounded: the first [`MAX_REGISTRY_HOSTS`] hosts get
//! their own label, every later one is counted as `other`, so a request
//! naming endless hosts cannot grow `/metrics` without bound.

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::family::MetricConstructor;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::{LazyLock, Mutex, OnceLock};

/// Distinct `host` label values of `ivpol_registry_requests`.
pub(crate) const MAX_REGISTRY_HOSTS: usize = 64;
/// The `host` label of every host beyond the first [`MAX_REGISTRY_HOSTS`].
pub(crate) const OTHER_HOST: &str = "other";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// `ivpol` or `nivpol`.
    pub route: &'static str,
    /// `validate` or `mutate`.
    pub phase: &'static str,
    /// `allowed`, `denied` or `error` (a request that got no verdict).
    pub verdict: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PhaseLabels {
    pub phase: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CloudLabels {
    /// `amazon`, `google`, `azure`, or a KMS scheme (`awskms`): a fixed set.
    pub source: String,
    /// `ok` or `error`.
    pub result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct HelperLabels {
    /// The credential helper's name (at most 16; the rest `other`).
    pub helper: String,
    /// `ok` (a credential, or none stored) or `error`.
    pub result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RegistryLabels {
    pub host: String,
    /// The HTTP status, or `error` when no response came.
    pub status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    /// `loaded`, `rejected` or `failed` (see `live::Reloaded`).
    pub result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct HashLabels {
    pub hash: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct NamespaceLabels {
    /// The request's namespace (empty for a cluster-scoped object); at
    /// most [`MAX_WAIT_NAMESPACES`], the rest `other`.
    pub namespace: String,
}

/// Distinct `namespace` label values of `ivpol_instance_wait_seconds`.
const MAX_WAIT_NAMESPACES: usize = 64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct HostLabels {
    pub host: String,
}

/// One policy's result. `policy` is bounded by the loaded policies.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct PolicyResultLabels {
    pub policy: String,
    pub kind: &'static str,
    pub phase: &'static str,
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct VerificationLabels {
    /// `cosign` or `notary`.
    pub attestor: &'static str,
    /// `hit`, `miss` or `unkeyed`.
    pub cache: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FailureLabels {
    /// `deadline`, `out_of_memory`, `busy` or `trap`.
    pub reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PolicyLabels {
    pub policy: String,
    /// Empty for cluster policies.
    pub namespace: String,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

fn latency_buckets() -> Histogram {
    // 100 µs to ~13 s.
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.0001, 2.0, 18,
    ))
}

pub struct Metrics {
    registry: Registry,
    pub requests: Family<RequestLabels, Counter>,
    pub latency: Histograms<PhaseLabels>,
    /// Every request's series of `requests`, `latency` and
    /// `verification_seconds` ([`Handles`]).
    request_handles: Handles<Counter, { ROUTES.len() * PHASES.len() * VERDICTS.len() }>,
    latency_handles: Handles<Histogram, { PHASES.len() }>,
    verification_handles: Handles<Histogram, { ATTESTORS.len() * CACHE_USES.len() }>,
    pub cache_hits: Counter,
    pub cache_misses: Counter,
    pub cache_waits: Counter,
    pub cache_evictions: Counter,
    /// The store the replicas share (`--shared-cache`): hits, misses,
    /// waits on another replica's claim, entries that failed their MAC,
    /// and exchanges that failed or timed out.
    pub(crate) shared_cache_hits: Counter,
    pub(crate) shared_cache_misses: Counter,
    pub(crate) shared_cache_waits: Counter,
    pub(crate) shared_cache_rejected: Counter,
    pub(crate) shared_cache_errors: Counter,
    pub digest_hits: Counter,
    pub digest_misses: Counter,
    pub(crate) registry_requests: Family<RegistryLabels, Counter>,
    pub(crate) registry_latency: Histograms<HostLabels>,
    pub(crate) policy_results: Family<PolicyResultLabels, Counter>,
    pub(crate) verification_seconds: Histograms<VerificationLabels>,
    pub instances_idle: Gauge,
    pub instances_created: Counter,
    /// Instances replaced after `--instance-max-calls` calls.
    pub instances_retired: Counter,
    pub instance_acquire: Histogram,
    /// Webhook configurations the API server refused to apply.
    pub webhook_apply_failures: Counter,
    /// Webhook configurations applied again after a deletion or an edit.
    pub webhook_restores: Counter,
    /// Runs of docker credential helpers, by helper and result.
    pub(crate) credential_helper_runs: Family<HelperLabels, Counter>,
    /// Calls to a cloud for a registry credential or a KMS key.
    cloud_fetches: Family<CloudLabels, Counter>,
    /// Waits for a namespace's turn and an instance, by namespace.
    instance_waits: Histograms<NamespaceLabels>,
    wait_series: KeptByLabel<Histogram>,
    /// Linear memory held by all live instances (wasm memory never shrinks,
    /// so this is the sum of each instance's high-water mark).
    pub instance_memory: Gauge,
    pub policies_loaded: Gauge,
    pub policy_load_errors: Gauge,
    /// 1 for each policy document that did not load (and so denies).
    pub policies_rejected: Family<PolicyLabels, Gauge>,
    pub component_failures: Family<FailureLabels, Counter>,
    /// 1 when `serve` compiled the component in its own process (the
    /// child compile failed): its RSS then keeps the compiler's memory.
    pub compiled_in_process: Gauge,
    /// Requests on which a policy, judged alone, trapped the component.
    pub policy_traps: Family<PolicyLabels, Counter>,
    pub connections_open: Gauge,
    /// 1 for each policy serving its last good version after a reload
    /// rejected the new one.
    pub policies_stale: Family<PolicyLabels, Gauge>,
    /// Policy-set reloads by result.
    pub reloads: Family<ResultLabels, Counter>,
    /// The current policy set's generation (1 at start, +1 per reload).
    pub policy_generation: Gauge,
    /// 1 while this replica holds the Lease and writes to the cluster.
    pub leader: Gauge,
    /// 1, labelled with the hash of the current policy set's inputs.
    pub(crate) policy_set: Family<HashLabels, Gauge>,
    /// Admission results for reports, by what became of them: `collected`,
    /// `dropped` (the replica's bound was reached, or its write failed),
    /// `written` (into a resource's report, by the leader).
    pub admission_report_results: Family<ResultLabels, Counter>,
    registry_hosts: BoundedLabels,
    helper_names: BoundedLabels,
}

/// At most `max` distinct label values; the rest are [`OTHER_HOST`].
struct BoundedLabels {
    seen: Mutex<HashSet<String>>,
    max: usize,
}

impl BoundedLabels {
    fn new(max: usize) -> BoundedLabels {
        BoundedLabels {
            seen: Mutex::default(),
            max,
        }
    }

    fn label(&self, value: &str) -> String {
        let mut seen = match self.seen.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        if seen.contains(value) {
            return value.to_string();
        }
        if seen.len() < self.max {
            seen.insert(value.to_string());
            return value.to_string();
        }
        OTHER_HOST.to_string()
    }
}

/// A family's series by one label value, at most `max` values (the rest
/// share [`OTHER_HOST`]'s), kept after their first use: an observation
/// takes one lock and one lookup, and allocates nothing for a value seen
/// before (the family's own lookup wants its labels owned, and hashes them
/// under its lock, on every request).
struct KeptByLabel<M> {
    kept: Mutex<HashMap<String, M>>,
    other: OnceLock<M>,
    max: usize,
}

impl<M: Clone> KeptByLabel<M> {
    fn new(max: usize) -> Self {
        KeptByLabel {
            kept: Mutex::default(),
            other: OnceLock::new(),
            max,
        }
    }

    /// Calls `f` with the series of `value`, got from `series` the first
    /// time (`series(OTHER_HOST)` once the bound is reached).
    fn with(&self, value: &str, series: impl FnOnce(&str) -> M, f: impl FnOnce(&M)) {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = kept.get(value) {
            return f(m);
        }
        if kept.len() < self.max {
            let m = series(value);
            f(&m);
            kept.insert(value.to_string(), m);
            return;
        }
        drop(kept);
        f(self.other.get_or_init(|| series(OTHER_HOST)));
    }
}

/// The label values of the series every request counts.
const ROUTES: [&str; 2] = ["ivpol", "nivpol"];
const PHASES: [&str; 2] = ["validate", "mutate"];
const VERDICTS: [&str; 3] = ["allowed", "denied", "error"];
const ATTESTORS: [&str; 2] = ["cosign", "notary"];
const CACHE_USES: [&str; 3] = ["hit", "miss", "unkeyed"];

/// The slot of a combination of label values, each one of its known
/// values (row-major); none when one is not.
fn slot(labels: &[(&str, &[&str])]) -> Option<usize> {
    labels.iter().try_fold(0, |slot, (value, known)| {
        let i = known.iter().position(|k| k == value)?;
        Some(slot * known.len() + i)
    })
}

/// A family's series for a small fixed set of label values, got from the
/// family on first use (so a series appears when first counted, as with
/// `get_or_create`) and then used without hashing the labels or taking
/// the family's lock, which every request did three times. Clones of a
/// series share its value.
struct Handles<M, const N: usize>([OnceLock<M>; N]);

impl<M: Clone, const N: usize> Handles<M, N> {
    fn new() -> Self {
        Handles(std::array::from_fn(|_| OnceLock::new()))
    }

    /// Calls `f` with the series of `labels` in `family`, kept in `slot`
    /// (none: a label value outside the known ones, looked up each time).
    fn with<L, C>(
        &self,
        slot: Option<usize>,
        family: &Family<L, M, C>,
        labels: &L,
        f: impl FnOnce(&M),
    ) where
        L: Clone + Hash + Eq,
        C: MetricConstructor<M>,
    {
        match slot.and_then(|i| self.0.get(i)) {
            Some(kept) => f(kept.get_or_init(|| family.get_or_create(labels).clone())),
            None => f(&family.get_or_create(labels)),
        }
    }
}

/// Keeps `ivpol_http_connections_open` counted while alive.
pub struct OpenConnection(&'static Metrics);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.connections_open.dec();
    }
}

impl Metrics {
    fn new() -> Metrics {
        let mut m = Metrics {
            registry: Registry::with_prefix("ivpol"),
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_buckets),
            request_handles: Handles::new(),
            latency_handles: Handles::new(),
            verification_handles: Handles::new(),
            cache_hits: Counter::default(),
            cache_misses: Counter::default(),
            cache_waits: Counter::default(),
            cache_evictions: Counter::default(),
            shared_cache_hits: Counter::default(),
            shared_cache_misses: Counter::default(),
            shared_cache_waits: Counter::default(),
            shared_cache_rejected: Counter::default(),
            shared_cache_errors: Counter::default(),
            digest_hits: Counter::default(),
            digest_misses: Counter::default(),
            registry_requests: Family::default(),
            registry_latency: Family::new_with_constructor(latency_buckets),
            policy_results: Family::default(),
            verification_seconds: Family::new_with_constructor(latency_buckets),
            instances_idle: Gauge::default(),
            instances_created: Counter::default(),
            instances_retired: Counter::default(),
            instance_acquire: latency_buckets(),
            webhook_apply_failures: Counter::default(),
            webhook_restores: Counter::default(),
            credential_helper_runs: Family::default(),
            cloud_fetches: Family::default(),
            instance_memory: Gauge::default(),
            policies_loaded: Gauge::default(),
            policy_load_errors: Gauge::default(),
            policies_rejected: Family::default(),
            component_failures: Family::default(),
            compiled_in_process: Gauge::default(),
            policy_traps: Family::default(),
            connections_open: Gauge::default(),
            policies_stale: Family::default(),
            reloads: Family::default(),
            policy_generation: Gauge::default(),
            leader: Gauge::default(),
            policy_set: Family::default(),
            admission_report_results: Family::default(),
            registry_hosts: BoundedLabels::new(MAX_REGISTRY_HOSTS),
            helper_names: BoundedLabels::new(16),
            instance_waits: Family::new_with_constructor(latency_buckets),
            wait_series: KeptByLabel::new(MAX_WAIT_NAMESPACES),
        };
        m.register();
        m
    }

    fn register(&mut self) {
        let r = &mut self.registry;
        r.register(
            "admission_requests",
            "Admission requests by route, phase and verdict",
            self.requests.clone(),
        );
        r.register(
            "admission_request_duration_seconds",
            "Time from request body to response, by phase",
            self.latency.clone(),
        );
        r.register(
            "verification_cache_hits",
            "Verifications answered from the cache",
            self.cache_hits.clone(),
        );
        r.register(
            "verification_cache_misses",
            "Verifications that had to run",
            self.cache_misses.clone(),
        );
        r.register(
            "verification_cache_waits",
            "Lookups that waited for an identical verification in flight",
            self.cache_waits.clone(),
        );
        r.register(
            "verification_cache_evictions",
            "Entries removed for size or age",
            self.cache_evictions.clone(),
        );
        r.register(
            "shared_cache_hits",
            "Verifications answered from the store the replicas share",
            self.shared_cache_hits.clone(),
        );
        r.register(
            "shared_cache_misses",
            "Lookups in the shared store that found nothing to use",
            self.shared_cache_misses.clone(),
        );
        r.register(
            "shared_cache_waits",
            "Lookups that waited for another replica's verification",
            self.shared_cache_waits.clone(),
        );
        r.register(
            "shared_cache_rejected",
            "Shared entries ignored because their MAC failed",
            self.shared_cache_rejected.clone(),
        );
        r.register(
            "shared_cache_errors",
            "Exchanges with the shared store that failed or timed out",
            self.shared_cache_errors.clone(),
        );
        r.register(
            "digest_cache_hits",
            "Tag resolutions answered within the digest TTL",
            self.digest_hits.clone(),
        );
        r.register(
            "digest_cache_misses",
            "Tag resolutions that went to the registry",
            self.digest_misses.clone(),
        );
        r.register(
            "registry_requests",
            "HTTP requests the component made to registries, by host and status",
            self.registry_requests.clone(),
        );
        r.register(
            "registry_request_duration_seconds",
            "Registry call latency by host (at most 64 hosts; the rest are `other`)",
            self.registry_latency.clone(),
        );
        r.register(
            "policy_results",
            "Policy results by policy, kind, phase and result (pass, fail, skip, error)",
            self.policy_results.clone(),
        );
        r.register(
            "verification_duration_seconds",
            "Verification time by attestor type (cosign, notary) and cache outcome (hit, miss, unkeyed)",
            self.verification_seconds.clone(),
        );
        r.register(
            "instances_idle",
            "Component instances waiting in the pool",
            self.instances_idle.clone(),
        );
        r.register(
            "instances_created",
            "Component instances created (a trap drops one)",
            self.instances_created.clone(),
        );
        r.register(
            "instances_retired",
            "Component instances replaced by fresh ones after --instance-max-calls calls",
            self.instances_retired.clone(),
        );
        r.register(
            "instance_acquire_seconds",
            "Time to get an instance from the pool (or create one)",
            self.instance_acquire.clone(),
        );
        r.register(
            "webhook_apply_failures",
            "Webhook configurations the API server refused to apply (the others are applied)",
            self.webhook_apply_failures.clone(),
        );
        r.register(
            "credential_helper_runs",
            "Runs of docker credential helpers (credHelpers, credsStore), by helper and result",
            self.credential_helper_runs.clone(),
        );
        r.register(
            "cloud_fetches",
            "Registry credentials (credentials.providers) and KMS keys fetched from a cloud, by source and result",
            self.cloud_fetches.clone(),
        );
        r.register(
            "webhook_restores",
            "Webhook configurations applied again after someone deleted or edited them",
            self.webhook_restores.clone(),
        );
        r.register(
            "instance_wait_seconds",
            "Time a request waited for its namespace's turn and an instance, by the request's namespace (at most 64; the rest `other`)",
            self.instance_waits.clone(),
        );
        r.register(
            "instance_memory_bytes",
            "Linear memory held by live component instances",
            self.instance_memory.clone(),
        );
        r.register(
            "policies_loaded",
            "Policies that loaded",
            self.policies_loaded.clone(),
        );
        r.register(
            "policy_load_errors",
            "Policy documents that did not load",
            self.policy_load_errors.clone(),
        );
        r.register(
            "policy_rejected",
            "Policies that did not load, by name: each denies the requests in its scope",
            self.policies_rejected.clone(),
        );
        r.register(
            "component_failures",
            "Calls the component gave no answer to (each answered as an error result), by reason",
            self.component_failures.clone(),
        );
        r.register(
            "component_compiled_in_process",
            "1 when the component was compiled in the server's own process (no child compile), whose memory the server then keeps",
            self.compiled_in_process.clone(),
        );
        r.register(
            "policy_traps",
            "Requests on which a policy, judged alone after a trap, trapped the component again (it got an error result, the others their verdicts)",
            self.policy_traps.clone(),
        );
        r.register(
            "http_connections_open",
            "Client connections open on the webhook server",
            self.connections_open.clone(),
        );
        r.register(
            "policy_stale",
            "Policies serving their last good version: a reload rejected the new one",
            self.policies_stale.clone(),
        );
        r.register(
            "policy_reloads",
            "Policy-set reloads, by result (loaded, rejected, failed)",
            self.reloads.clone(),
        );
        r.register(
            "policy_generation",
            "Generation of the current policy set (1 at start, one more per reload)",
            self.policy_generation.clone(),
        );
        r.register(
            "leader",
            "1 while this replica holds the Lease: the one that writes policy status and webhooks",
            self.leader.clone(),
        );
        r.register(
            "admission_report_results",
            "Admission results for policy reports, by what became of them (collected, dropped, written)",
            self.admission_report_results.clone(),
        );
        r.register(
            "policy_set_info",
            "1, labelled with the hash of the current policy set's inputs",
            self.policy_set.clone(),
        );
    }

    /// The Prometheus text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }

    /// Counts a registry call to `host` and observes how long it took.
    pub(crate) fn registry_request(
        &self,
        host: &str,
        status: Option<u16>,
        took: std::time::Duration,
    ) {
        let status = status.map_or_else(|| "error".to_string(), |s| s.to_string());
        let host = self.registry_hosts.label(host);
        self.registry_latency
            .get_or_create(&HostLabels { host: host.clone() })
            .observe(took.as_secs_f64());
        self.registry_requests
            .get_or_create(&RegistryLabels { host, status })
            .inc();
    }

    /// Counts one run of the credential helper `helper`.
    /// One call to a cloud for `source` (a provider or a KMS scheme).
    pub(crate) fn cloud_fetch(&self, source: &'static str, ok: bool) {
        let result = if ok { "ok" } else { "error" }.to_string();
        let source = source.to_string();
        self.cloud_fetches
            .get_or_create(&CloudLabels { source, result })
            .inc();
    }

    pub(crate) fn credential_helper_run(&self, helper: &str, ok: bool) {
        let helper = self.helper_names.label(helper);
        let result = if ok { "ok" } else { "error" }.to_string();
        self.credential_helper_runs
            .get_or_create(&HelperLabels { helper, result })
            .inc();
    }

    /// Observes how long a request of `namespace` waited for an instance.
    pub(crate) fn observe_instance_wait(&self, namespace: &str, took: std::time::Duration) {
        let series = |namespace: &str| {
            let labels = NamespaceLabels {
                namespace: namespace.to_string(),
            };
            self.instance_waits.get_or_create(&labels).clone()
        };
        (self.wait_series).with(namespace, series, |h| h.observe(took.as_secs_f64()));
    }

    /// Counts one policy's result (`pass`, `fail`, `skip`, `error`).
    pub fn count_policy_result(
        &self,
        policy: &str,
        kind: &'static str,
        phase: &'static str,
        result: &'static str,
    ) {
        let labels = PolicyResultLabels {
            policy: policy.to_string(),
            kind,
            phase,
            result,
        };
        self.policy_results.get_or_create(&labels).inc();
    }

    /// Observes one verification's duration.
    pub fn observe_verification(&self, attestor: &'static str, cache: &'static str, seconds: f64) {
        let labels = VerificationLabels { attestor, cache };
        let slot = slot(&[(attestor, &ATTESTORS), (cache, &CACHE_USES)]);
        (self.verification_handles).with(slot, &self.verification_seconds, &labels, |h| {
            h.observe(seconds)
        });
    }

    /// Counts one admission request.
    pub fn count_request(&self, labels: &RequestLabels) {
        let slot = slot(&[
            (labels.route, &ROUTES),
            (labels.phase, &PHASES),
            (labels.verdict, &VERDICTS),
        ]);
        self.request_handles
            .with(slot, &self.requests, labels, |c| {
                c.inc();
            });
    }

    /// Observes one admission request's time in `phase`.
    pub fn observe_latency(&self, phase: &'static str, seconds: f64) {
        let labels = PhaseLabels { phase };
        let slot = slot(&[(phase, &PHASES)]);
        (self.latency_handles).with(slot, &self.latency, &labels, |h| h.observe(seconds));
    }

    /// Counts a reload that ended with `result`.
    pub fn count_reload(&self, result: &str) {
        let labels = ResultLabels {
            result: result.to_string(),
        };
        self.reloads.get_or_create(&labels).inc();
    }

    /// Labels `ivpol_policy_set_info` with the current set's hash (its
    /// first 16 hex digits) only.
    pub fn set_policy_set_hash(&self, hash: &str) {
        self.policy_set.clear();
        let labels = HashLabels {
            hash: hash.chars().take(16).collect(),
        };
        self.policy_set.get_or_create(&labels).set(1);
    }

    /// Counts a connection open until the guard drops.
    pub fn connection_opened(&'static self) -> OpenConnection {
        self.connections_open.inc();
        OpenConnection(self)
    }
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

pub fn metrics() -> &'static Metrics {
    &METRICS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kept series is the family's own: what it counts is encoded, a
    /// series appears only once counted, and a label value outside the
    /// known ones is counted all the same.
    #[test]
    fn kept_series_are_the_familys() {
        let m = Metrics::new();
        let denied = RequestLabels {
            route: "nivpol",
            phase: "mutate",
            verdict: "denied",
        };
        let odd = RequestLabels {
            verdict: "odd",
            ..denied.clone()
        };
        for labels in [&denied, &denied, &odd] {
            m.count_request(labels);
        }
        m.observe_latency("mutate", 0.5);
        m.observe_verification("notary", "unkeyed", 0.25);
        m.observe_verification("notary", "unkeyed", 0.25);
        let text = m.encode();
        for line in [
            "ivpol_admission_requests_total{route=\"nivpol\",phase=\"mutate\",verdict=\"denied\"} 2",
            "ivpol_admission_requests_total{route=\"nivpol\",phase=\"mutate\",verdict=\"odd\"} 1",
            "ivpol_admission_request_duration_seconds_sum{phase=\"mutate\"} 0.5",
            "ivpol_verification_duration_seconds_sum{attestor=\"notary\",cache=\"unkeyed\"} 0.5",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert!(!text.contains("verdict=\"allowed\""), "{text}");
        assert_eq!(
            slot(&[("b", &["a", "b"]), ("z", &["x", "y", "z"])]),
            Some(5)
        );
        assert_eq!(slot(&[("c", &["a", "b"])]), None);
    }

    #[test]
    fn host_labels_are_bounded() {
        let labels = BoundedLabels::new(3);
        assert_eq!(labels.label("a"), "a");
        assert_eq!(labels.label("b"), "b");
        assert_eq!(labels.label("c"), "c");
        assert_eq!(labels.label("d"), OTHER_HOST);
        assert_eq!(labels.label("a"), "a", "a host seen before keeps its label");
    }

    /// Waits are kept by namespace up to the bound, the rest counted as
    /// `other`; a namespace seen before keeps its own series.
    #[test]
    fn instance_waits_have_at_most_64_namespaces() {
        let m = Metrics::new();
        let second = std::time::Duration::from_secs(1);
        for i in 0..100 {
            m.observe_instance_wait(&format!("ns-{i}"), second);
        }
        m.observe_instance_wait("ns-0", second);
        let text = m.encode();
        let count = |ns: &str| {
            let line = format!("ivpol_instance_wait_seconds_count{{namespace=\"{ns}\"}} ");
            let found = text.lines().find_map(|l| l.strip_prefix(line.as_str()));
            found.map(|n| n.parse::<u64>().expect("a count"))
        };
        assert_eq!(count("ns-0"), Some(2), "{text}");
        assert_eq!(count("ns-63"), Some(1), "{text}");
        assert_eq!(count("ns-64"), None, "{text}");
        assert_eq!(count(OTHER_HOST), Some(36), "{text}");
    }

    /// Through the registry metric itself: 200 hosts give at most
    /// MAX_REGISTRY_HOSTS host labels plus `other`.
    #[test]
    fn registry_requests_have_at_most_64_hosts() {
        let m = Metrics::new();
        for i in 0..200 {
            m.registry_request(
                &format!("registry-{i}.example:443"),
                Some(200),
                std::time::Duration::ZERO,
            );
        }
        let text = m.encode();
        let hosts: HashSet<&str> = text
            .lines()
            .filter(|l| l.starts_with("ivpol_registry_requests_total{"))
            .filter_map(|l| l.split("host=\"").nth(1)?.split('"').next())
            .collect();
        assert_eq!(hosts.len(), MAX_REGISTRY_HOSTS + 1, "{hosts:?}");
        assert!(hosts.contains(OTHER_HOST));
        assert!(
            text.contains("ivpol_registry_requests_total{host=\"other\",status=\"200\"} 136"),
            "{text}"
        );
    }
}
