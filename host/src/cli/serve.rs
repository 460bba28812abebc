//! `ivpol serve`: the admission webhook server.

use anyhow::{bail, Context, Result};
use clap::Args;
use ivpol_cluster::live::{Inputs, Live};
use ivpol_cluster::Cluster;
use ivpol_runtime::cache::CacheConfig;
use ivpol_runtime::{Compiler, Limits};
use ivpol_server::ServerConfig;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};

#[derive(Args)]
pub(super) struct ServeArgs {
    /// Address to listen on. `[::]:PORT` listens on IPv4 and IPv6 (IPv4
    /// only where the host has no IPv6).
    #[arg(long, default_value = "127.0.0.1:9443")]
    listen: SocketAddr,
    /// Serve `/metrics` on a listener of its own, over plain HTTP (the
    /// admission port then does not answer it), e.g. `[::]:9090`.
    #[arg(long = "metrics-listen", value_name = "ADDR")]
    metrics_listen: Option<SocketAddr>,
    /// Directory (or file) of IVP/NIVP policies; repeatable. Default
    /// `policies`, or none with --kubernetes.
    #[arg(long = "policies")]
    policies: Vec<PathBuf>,
    #[command(flatten)]
    cluster: ivpol_cluster::ClusterArgs,
    #[command(flatten)]
    writers: ivpol_cluster::writers::WriterArgs,
    #[command(flatten)]
    admission_reports: ivpol_report::admission::AdmissionReportArgs,
    #[command(flatten)]
    component: super::component::ComponentArgs,
    /// Namespace manifests (file or directory) that `namespaceSelector` and
    /// `namespaceObject` read; other namespaces only carry the
    /// `kubernetes.io/metadata.name` label.
    #[arg(long)]
    namespaces: Option<PathBuf>,
    /// How often --policies and --namespaces are read for changes; a change
    /// reloads the policy set without a restart (0 turns watching off;
    /// SIGHUP always reloads at once).
    #[arg(long = "reload-interval", default_value = "2s", value_parser = parse_duration)]
    reload_interval: Duration,
    /// After SIGTERM or SIGINT, how long readiness reports false while
    /// requests are still served, before the listener closes (time for the
    /// Service's endpoints to drop this pod). In-flight requests then get
    /// up to the longest webhook timeout to finish.
    #[arg(long = "shutdown-delay", default_value = "0s", value_parser = parse_duration)]
    shutdown_delay: Duration,
    #[command(flatten)]
    registry: super::engine::PolicyRegistryArgs,
    #[command(flatten)]
    exceptions: super::engine::ExceptionArgs,
    /// List each rejected and stale policy with its error in
    /// /health/readiness; by default it gives counts only (the errors go
    /// to the log and the policies' status).
    #[arg(long = "readiness-details")]
    readiness_details: bool,
    /// Most verification results kept in the cache.
    #[arg(long = "cache-size", default_value_t = 1000, value_name = "ENTRIES")]
    cache_size: u64,
    /// How long a verification result is reused (e.g. 60m, 90s, 1h).
    #[arg(long = "cache-ttl", default_value = "60m", value_parser = parse_duration)]
    cache_ttl: Duration,
    /// How long a tag's digest is reused before it is resolved again; 0
    /// resolves every time. A tag re-pushed within this window still
    /// verifies the digest it had (never a mix of the two).
    #[arg(long = "digest-ttl", default_value = "30s", value_parser = parse_duration)]
    digest_ttl: Duration,
    /// Verify every request from scratch: no verification or digest cache.
    #[arg(long = "no-cache")]
    no_cache: bool,
    #[command(flatten)]
    shared_cache: ivpol_runtime::cache::shared::SharedCacheArgs,
    /// PEM certificate chain for HTTPS.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key for HTTPS.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// How often --tls-cert/--tls-key are re-read; a changed valid pair
    /// serves new connections without a restart (0 turns reloading off).
    #[arg(long = "tls-reload-interval", default_value = "5s", value_parser = parse_duration)]
    tls_reload_interval: Duration,
    /// Component instances per policy set: evaluations that run at once
    /// (more wait for a turn within their deadline) and idle ones kept.
    #[arg(long, default_value_t = Limits::default().instances, value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u16).range(1..=64), usize::from))]
    instances: usize,
    /// Component instances alive at once per policy set: the pool grows
    /// past --instances up to this while evaluations wait on registries.
    /// Size the pod for 2 × this × --instance-memory-mib + 256 MiB.
    #[arg(long = "max-instances", default_value_t = Limits::default().max_instances, value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u16).range(1..=64), usize::from))]
    max_instances: usize,
    /// Instances the requests of one namespace may hold at once, so that
    /// one tenant's slow registry cannot take them all (its further
    /// requests wait for their own turn).
    #[arg(long = "namespace-instances", default_value_t = Limits::default().namespace_instances, value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u16).range(1..=64), usize::from))]
    namespace_instances: usize,
    /// The most bytes the policies and exceptions read from the API server
    /// may take together; past it the largest namespaces' objects are
    /// refused (each denies on its own namespace's routes).
    #[arg(long = "policy-set-bytes", default_value_t = ivpol_cluster::budget::Budgets::default().total, value_name = "BYTES")]
    policy_set_bytes: usize,
    /// The most bytes one namespace's policies and exceptions may take;
    /// past it every one of them is refused.
    #[arg(long = "namespace-policy-bytes", default_value_t = ivpol_cluster::budget::Budgets::default().per_namespace, value_name = "BYTES")]
    namespace_policy_bytes: usize,
    /// Linear memory one instance may use, in MiB; past it the evaluation
    /// is an out-of-memory error. Size the pod for
    /// 2 × --instances × --instance-memory-mib + 256 MiB (docs/security.md).
    #[arg(long = "instance-memory-mib", default_value_t = (Limits::default().instance_memory >> 20) as u32, value_parser = clap::value_parser!(u32).range(16..=4096))]
    instance_memory_mib: u32,
    /// Calls one instance serves before a fresh one replaces it (which
    /// bounds the per-call bookkeeping a long-lived instance accumulates).
    #[arg(long = "instance-max-calls", default_value_t = Limits::default().instance_calls, value_parser = clap::value_parser!(u64).range(1..))]
    instance_max_calls: u64,
    /// How long a client has to send a complete request head, from
    /// connect or from the end of the previous response (idle keep-alive).
    #[arg(long = "header-read-timeout", default_value = "10s", value_parser = parse_timeout)]
    header_read_timeout: Duration,
    /// How long a client has to finish the TLS handshake.
    #[arg(long = "tls-handshake-timeout", default_value = "10s", value_parser = parse_timeout)]
    tls_handshake_timeout: Duration,
    /// How long a client has to send a whole request body.
    #[arg(long = "body-read-timeout", default_value = "10s", value_parser = parse_timeout)]
    body_read_timeout: Duration,
    /// Client connections open at once; beyond it, new connections wait
    /// in the listen backlog until one closes.
    #[arg(long = "max-connections", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    max_connections: u32,
}

pub(super) async fn run(args: ServeArgs) -> Result<()> {
    if args.no_cache && args.shared_cache.shared_cache.is_some() {
        bail!("--shared-cache shares the cache that --no-cache turns off: give one");
    }
    let cache = CacheConfig {
        enabled: !args.no_cache,
        size: args.cache_size,
        ttl: args.cache_ttl,
        digest_ttl: args.digest_ttl,
        shared: args.shared_cache.config()?,
    };
    let limits = Limits {
        instances: args.instances,
        max_instances: args.max_instances.max(args.instances),
        namespace_instances: args.namespace_instances,
        instance_memory: (args.instance_memory_mib as usize) << 20,
        instance_calls: args.instance_max_calls,
    };
    tracing::info!(
        instances = limits.instances,
        max_instances = limits.max_instances,
        namespace_instances = limits.namespace_instances,
        instance_memory_mib = args.instance_memory_mib,
        pod_memory_needed_mib = limits.memory_needed() >> 20,
        "instance pool sized (two policy-set generations may overlap during a reload)"
    );
    let cluster = Cluster::connect(&args.cluster).await?;
    // A long-lived server compiles in a child: cranelift's working memory
    // (about 200 MB) would otherwise stay in its heap.
    let runtime = super::engine::runtime_with(
        &args.component,
        &args.registry,
        &cache,
        limits,
        Compiler::Child,
    )
    .await?;
    if let Some(cluster) = &cluster {
        runtime.net().use_cluster_secrets(cluster.secrets.clone());
        runtime.net().use_cluster_keys(cluster.client.clone());
        runtime.grant_resources(cluster.resources.clone());
    }
    let own_namespace = cluster.as_ref().map(|c| c.own_namespace.as_str());
    runtime.scope_exceptions(args.exceptions.scope(own_namespace));
    let policies = match (args.policies.is_empty(), &cluster) {
        (true, None) => vec![PathBuf::from("policies")],
        _ => args.policies.clone(),
    };
    let inputs = Inputs {
        policies,
        namespaces: args.namespaces.clone(),
        cluster: cluster.clone(),
        budgets: ivpol_cluster::budget::Budgets {
            total: args.policy_set_bytes,
            per_namespace: args.namespace_policy_bytes,
        },
    };
    let live = Arc::new(Live::start(runtime, inputs).await?);
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(ivpol_server::tls::acceptor(
            cert,
            key,
            args.tls_reload_interval,
        )?),
        _ => {
            tracing::warn!("no --tls-cert/--tls-key: serving plain HTTP, which the Kubernetes API server will not call");
            None
        }
    };
    reload_on_change(live.clone(), args.reload_interval);
    let mut admission_reports = None;
    if let Some(cluster) = cluster {
        admission_reports = start_writers(&args, live.clone(), cluster.clone())?;
        reload_on_cluster_change(live.clone(), cluster, args.reload_interval);
    } else if args.writers.register_webhooks {
        bail!("--register-webhooks needs --kubernetes (or --kubeconfig)");
    }
    reload_on_sighup(live.clone())?;
    let config = ServerConfig {
        listen: args.listen,
        metrics_listen: args.metrics_listen,
        tls,
        limits: ivpol_server::ConnLimits {
            header_read: args.header_read_timeout,
            tls_handshake: args.tls_handshake_timeout,
            body_read: args.body_read_timeout,
            max_connections: args.max_connections as usize,
            ..ivpol_server::ConnLimits::default()
        },
        shutdown_delay: args.shutdown_delay,
        readiness_details: args.readiness_details,
        admission_reports,
    };
    ivpol_server::serve(config, live, shutdown_signal()?).await
}

/// Reads the inputs every `interval` and reloads when they changed (a
/// mounted ConfigMap's `..data` swap included: files are read through
/// their symlinks). Reading is cheap next to a reload, which only runs on
/// a change.
fn reload_on_change(live: Arc<Live>, interval: Duration) {
    if interval.is_zero() {
        return;
    }
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            live.reload("a policy or namespace file changed").await;
        }
    });
}

/// Reloads when the cluster's policies or exceptions change (after a short
/// pause, so that `kubectl apply` of many objects is one reload), and
/// fetches the policies' registry Secrets again every `interval` (10 s
/// when file watching is off), so that a rotation reaches registries.
fn reload_on_cluster_change(live: Arc<Live>, cluster: Arc<Cluster>, interval: Duration) {
    let changed = cluster.changed.clone();
    let reloading = live.clone();
    tokio::spawn(async move {
        loop {
            changed.notified().await;
            tokio::time::sleep(Duration::from_millis(200)).await;
            reloading.reload("the cluster's policies changed").await;
        }
    });
    let interval = match interval.is_zero() {
        true => Duration::from_secs(10),
        false => interval,
    };
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            cluster.secrets.refresh().await;
        }
    });
}

/// Elects the one replica that writes to the cluster, and has it write
/// policy status and (with --register-webhooks) the webhook configurations;
/// with --admission-reports, the collector every replica hands its
/// results to (and the leader merges into reports).
fn start_writers(
    args: &ServeArgs,
    live: Arc<Live>,
    cluster: Arc<Cluster>,
) -> Result<Option<Arc<ivpol_report::admission::Collector>>> {
    use ivpol_cluster::{leader, writers};
    let flags = &args.writers;
    let ca_bundle_file = match flags.register_webhooks && flags.inject_ca_from.is_none() {
        false => None,
        true => Some(writers::ca_bundle_file(
            flags.ca_bundle.as_deref(),
            args.tls_cert.as_deref(),
        )?),
    };
    let ca_bundle = match &ca_bundle_file {
        Some(file) => writers::read_ca_bundle(file)?,
        None => Vec::new(),
    };
    let webhooks = match flags.register_webhooks {
        false => None,
        true => Some(ivpol_runtime::engine::WebhookOptions {
            service_name: flags.webhook_service.clone(),
            service_namespace: cluster.own_namespace.clone(),
            service_port: flags.webhook_port,
            ca_bundle,
            inject_ca_from: flags.inject_ca_from.clone(),
            exclude_namespaces: ["kube-system".to_string(), cluster.own_namespace.clone()]
                .into_iter()
                .chain(flags.exclude_namespaces.iter().cloned())
                .collect(),
            force_failure_policy_ignore: flags.failure_policy_ignore,
            kyverno_names: flags.kyverno_names,
        }),
    };
    let client = cluster.client.clone();
    let leading = leader::elect(
        client.clone(),
        &cluster.own_namespace,
        &flags.lease_name,
        leader::identity(),
    );
    let collector = args.admission_reports.admission_reports.then(|| {
        let collector = Arc::new(ivpol_report::admission::Collector::default());
        ivpol_report::admission::start(
            collector.clone(),
            live.clone(),
            cluster.clone(),
            args.admission_reports.style(),
            leading.clone(),
        );
        collector
    });
    writers::start(
        live,
        cluster,
        writers::Writers {
            client,
            webhooks,
            ca_bundle_file,
            owner_cluster_role: flags.owner_cluster_role.clone(),
        },
        leading,
    );
    Ok(collector)
}

/// SIGHUP reloads at once.
fn reload_on_sighup(live: Arc<Live>) -> Result<()> {
    let mut hup = signal(SignalKind::hangup()).context("listening for SIGHUP")?;
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            let outcome = live.reload("SIGHUP").await;
            tracing::info!(result = outcome.label(), "SIGHUP reload done");
        }
    });
    Ok(())
}

/// Completes on the first SIGTERM or SIGINT.
fn shutdown_signal() -> Result<impl std::future::Future<Output = ()>> {
    let mut term = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("listening for SIGINT")?;
    Ok(async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        tracing::info!("{name} received");
    })
}

pub(super) use ivpol_runtime::duration::parse_duration;

/// A connection timeout: a duration from 1 ms to 1 h (0 would mean no
/// timeout, which is not on offer).
pub(super) fn parse_timeout(s: &str) -> Result<Duration> {
    let d = parse_duration(s)?;
    if d.is_zero() || d > Duration::from_secs(3600) {
        bail!("{s:?}: a timeout must be more than 0 and at most 1h");
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::parse_timeout;
    use std::time::Duration;

    #[test]
    fn timeouts_are_durations_within_an_hour() {
        assert_eq!(parse_timeout("1").ok(), Some(Duration::from_secs(1)));
        for bad in ["0", "0s", "2h", "x"] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
    }
}
