//! `ivpol scan`: Kyverno's background scan over resources read from files.
//! Only policies with `evaluation.background.enabled` (the default) run,
//! every image is verified again (nothing the resource carries is trusted),
//! and the results come out as policy reports (`--report-api`: Kyverno's
//! default wgpolicyk8s.io, or openreports.io): one per namespace of the
//! resources, one cluster-wide report for cluster-scoped ones.
//!
//! With `--kubernetes`, the cluster is scanned instead: policies,
//! exceptions and namespaces from the API server (and `--policies` too),
//! its Pods and pod controllers as resources, and one report per resource
//! written back with server-side apply, as Kyverno's background scan does.

use super::engine::{self, PolicyRegistryArgs, Run};
use super::serve::parse_duration;
use super::Exit;
use anyhow::Result;
use clap::{Args, ValueEnum};
use ivpol_cluster::{Cluster, ClusterArgs};
pub(crate) use ivpol_report::policy_report::ReportApi;
use ivpol_report::policy_report::{self, documents};
use ivpol_report::{kubernetes, resources, Counts, Outcome};
use ivpol_runtime::cache::CacheConfig;
use ivpol_runtime::policies::{self, Document};
use ivpol_runtime::reports::ReportShape;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The name of every report `scan` prints.
const REPORT_NAME: &str = "ivpol-background-scan";

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum Format {
    Yaml,
    Json,
}

#[derive(Args)]
#[command(
    after_help = "Exit status (without --interval): 0 when no result failed or errored; \
1 when any did; 2 for bad usage, unreadable input, or policies that did not load. \
With --kubernetes, failed and errored results are in the Reports written: 0 once \
every Report is written, 2 when the cluster could not be read or written or \
policies did not load."
)]
pub(super) struct ScanArgs {
    /// Resource file (multi-document YAML or JSON) or directory; repeatable.
    /// Not with --kubernetes, which scans the cluster's resources.
    #[arg(
        long = "resources",
        alias = "resource",
        required_unless_present_any = ["kubernetes", "kubeconfig"],
        conflicts_with_all = ["kubernetes", "kubeconfig"],
        value_name = "FILE|DIR"
    )]
    resources: Vec<PathBuf>,
    /// Directory (or file) of IVP/NIVP policies and PolicyExceptions;
    /// repeatable. With --kubernetes, optional: added to the cluster's.
    #[arg(
        long = "policies",
        required_unless_present_any = ["kubernetes", "kubeconfig"],
        value_name = "DIR"
    )]
    policies: Vec<PathBuf>,
    /// With --kubernetes: the most Pods and pod controllers a scan reads
    /// (and Reports it looks through); past it the scan is refused.
    #[arg(long = "max-resources", default_value_t = 10_000, value_name = "N")]
    max_resources: usize,
    /// Namespace manifests that `namespaceSelector` and `namespaceObject` read.
    #[arg(long, value_name = "FILE|DIR")]
    namespaces: Option<PathBuf>,
    /// After the results, say on stderr why each verification ended as it
    /// did: the image, digest, attestor and the reason (not-found,
    /// bad-signature, identity, ...).
    #[arg(long)]
    explain: bool,
    /// Report format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
    output: Format,
    /// The reports' API: wgpolicyk8s.io PolicyReport and
    /// ClusterPolicyReport (Kyverno's default, what Policy Reporter reads),
    /// or openreports.io Report and ClusterReport.
    #[arg(long = "report-api", value_enum, default_value = "wgpolicyk8s")]
    report_api: ReportApi,
    /// With --kubernetes: name each report after its resource's UID and
    /// label it `app.kubernetes.io/managed-by: kyverno`, as Kyverno does
    /// (its chainsaw asserts require the label). By default reports are
    /// `ivpol-<uid>`, labelled `managed-by: ivpol`, so that ivpol's and
    /// Kyverno's reports live side by side; with this flag, do not run it
    /// beside Kyverno's own reporting.
    #[arg(long = "kyverno-names")]
    kyverno_names: bool,
    /// Scan again every DURATION (e.g. 10m), forever; verification results
    /// are reused for --cache-ttl. Without it, scan once and exit.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    interval: Option<Duration>,
    /// With --interval: how long a verification result is reused.
    #[arg(long = "cache-ttl", default_value = "60m", value_parser = parse_duration)]
    cache_ttl: Duration,
    /// With --interval: most verification results kept.
    #[arg(long = "cache-size", default_value_t = 1000, value_name = "ENTRIES")]
    cache_size: u64,
    /// Scan the cluster (--kubernetes, --kubeconfig): policies,
    /// PolicyExceptions and Namespaces from the API server, its Pods,
    /// Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs and
    /// CronJobs as resources, and one policy report per resource written
    /// back (server-side apply, field manager `ivpol`).
    #[command(flatten)]
    cluster: ClusterArgs,
    #[command(flatten)]
    component: super::component::ComponentArgs,
    #[command(flatten)]
    registry: PolicyRegistryArgs,
    #[command(flatten)]
    exceptions: engine::ExceptionArgs,
}

pub(super) async fn run(args: ScanArgs) -> Result<Exit> {
    if args.cluster.kubernetes || args.cluster.kubeconfig.is_some() {
        return run_cluster(args).await;
    }
    let documents = policies::read_all(&args.policies)?;
    let namespaces = match &args.namespaces {
        Some(p) => policies::read_namespaces(p)?,
        None => Default::default(),
    };
    let cache = cache_config(&args);
    let runtime = engine::runtime(&args.component, &args.registry, &cache).await?;
    runtime.scope_exceptions(args.exceptions.scope(None));
    let pool = ivpol_runtime::Pool::load(runtime, documents).await?;
    let broken = engine::report_diagnostics(&pool);
    let run = Run {
        operation: "CREATE",
        background: true,
        namespaces: &namespaces,
        minimal_namespaces: false,
    };
    loop {
        let counts = scan_once(&args, &pool, &run).await;
        let Some(interval) = args.interval else {
            return Ok(super::apply::exit(&counts?, broken));
        };
        if let Err(e) = counts {
            eprintln!("ivpol: scan failed: {e:#}");
        }
        tokio::time::sleep(interval).await;
    }
}

/// Prints the reports on stdout, and the errors (and with --explain, why)
/// on stderr.
async fn print_reports(
    pool: &ivpol_runtime::Pool,
    args: &ScanArgs,
    reports: &[serde_json::Value],
    outcomes: &[Outcome],
) -> Result<()> {
    print!(
        "{}",
        policy_report::render(reports, args.output == Format::Json)
    );
    eprint!(
        "{}",
        policy_report::text(pool, outcomes, ReportShape::Errors).await?
    );
    if args.explain {
        eprint!("{}", ivpol_report::explain(outcomes));
    }
    Ok(())
}

/// Reads the resources (again: they may have changed), evaluates them and
/// prints the reports.
async fn scan_once(args: &ScanArgs, pool: &ivpol_runtime::Pool, run: &Run<'_>) -> Result<Counts> {
    let resources = resources::read(&args.resources)?;
    let outcomes = engine::evaluate_all(pool, &resources, run).await?;
    let shape = ReportShape::ReportsByNamespace((args.report_api.to_wit(), REPORT_NAME.into()));
    let reports = documents(pool, &outcomes, shape).await?;
    print_reports(pool, args, &reports, &outcomes).await?;
    Ok(Counts::of(&outcomes))
}

/// Verification results are reused across scans only with --interval.
fn cache_config(args: &ScanArgs) -> CacheConfig {
    match args.interval {
        Some(_) => CacheConfig {
            enabled: true,
            size: args.cache_size,
            ttl: args.cache_ttl,
            digest_ttl: Duration::ZERO,
            shared: None,
        },
        None => CacheConfig::disabled(),
    }
}

/// `scan --kubernetes`: every scan reads the cluster's policies again (the
/// pool is reloaded when they changed), lists the resources, evaluates
/// them and writes the Reports.
async fn run_cluster(args: ScanArgs) -> Result<Exit> {
    let cluster = Cluster::connect(&args.cluster).await?.ok_or_else(|| {
        anyhow::anyhow!("scanning the cluster needs --kubernetes or --kubeconfig")
    })?;
    let client = cluster.client.clone();
    let runtime = engine::runtime(&args.component, &args.registry, &cache_config(&args)).await?;
    runtime.net().use_cluster_secrets(cluster.secrets.clone());
    runtime.net().use_cluster_keys(client.clone());
    runtime.grant_resources(cluster.resources.clone());
    runtime.scope_exceptions(args.exceptions.scope(Some(&cluster.own_namespace)));
    let mut loaded: Option<Loaded> = None;
    loop {
        let documents = cluster_documents(&args, &cluster)?;
        let key: Vec<(String, String)> = documents
            .iter()
            .map(|d| (d.source.clone(), d.content.clone()))
            .collect();
        if loaded.as_ref().is_none_or(|l| l.key != key) {
            let pool = ivpol_runtime::Pool::load(runtime.clone(), documents).await?;
            let broken = engine::report_diagnostics(&pool);
            loaded = Some(Loaded { key, pool, broken });
        }
        let Loaded { pool, broken, .. } = loaded.as_ref().expect("loaded above");
        let written = scan_cluster(&args, &cluster, &client, pool).await;
        let Some(interval) = args.interval else {
            written?;
            return Ok(match broken {
                true => {
                    eprintln!("ivpol: some policies did not load");
                    super::EXIT_USAGE
                }
                false => 0,
            });
        };
        if let Err(e) = written {
            eprintln!("ivpol: scan failed: {e:#}");
        }
        tokio::time::sleep(interval).await;
    }
}

/// The policy set a cluster scan evaluates with, and the documents it
/// was loaded from (`(source, content)`), to tell when they changed.
struct Loaded {
    key: Vec<(String, String)>,
    pool: ivpol_runtime::Pool,
    broken: bool,
}

/// The cluster's policy documents, then those of --policies.
fn cluster_documents(args: &ScanArgs, cluster: &Cluster) -> Result<Vec<Document>> {
    let mut documents = cluster.documents();
    if !args.policies.is_empty() {
        documents.extend(policies::read_all(&args.policies)?);
    }
    Ok(documents)
}

/// One scan of the cluster: lists, evaluates, writes one Report per
/// resource with results (and deletes those of resources left without
/// any), prints the Reports.
async fn scan_cluster(
    args: &ScanArgs,
    cluster: &Arc<Cluster>,
    client: &kube::Client,
    pool: &ivpol_runtime::Pool,
) -> Result<Counts> {
    let resources = kubernetes::list_workloads(client, args.max_resources).await?;
    let namespaces: BTreeMap<String, serde_json::Value> = resources
        .iter()
        .filter_map(|r| r.subject.namespace.clone())
        .collect::<BTreeSet<String>>()
        .into_iter()
        .filter_map(|ns| {
            let object = cluster.namespace_object(&ns)?;
            Some((ns, serde_json::from_str(&object).ok()?))
        })
        .collect();
    let run = Run {
        operation: "CREATE",
        background: true,
        namespaces: &namespaces,
        minimal_namespaces: false,
    };
    let outcomes = engine::evaluate_all(pool, &resources, &run).await?;
    let mut by_uid: BTreeMap<&str, Vec<&Outcome>> = BTreeMap::new();
    for o in &outcomes {
        if let Some(uid) = o.subject.as_ref().and_then(|s| s.uid.as_deref()) {
            by_uid.entry(uid).or_default().push(o);
        }
    }
    let style = policy_report::Style {
        api: args.report_api,
        kyverno_names: args.kyverno_names,
    };
    let mut reports = Vec::new();
    let mut resultless = BTreeSet::new();
    for r in &resources {
        let uid = r.subject.uid.as_deref().unwrap_or_default();
        let own = by_uid.get(uid).map(Vec::as_slice).unwrap_or_default();
        match policy_report::for_resource(pool, style, &r.subject, own).await? {
            Some(report) => reports.push(report),
            None => {
                if let (Some(ns), Some(uid)) = (&r.subject.namespace, &r.subject.uid) {
                    resultless.insert((ns.clone(), style.name_for(uid)));
                }
            }
        }
    }
    kubernetes::apply_reports(client, style, &reports).await?;
    let deleted = kubernetes::delete_stale(client, style, &resultless, args.max_resources).await?;
    print_reports(pool, args, &reports, &outcomes).await?;
    eprintln!(
        "ivpol: scanned {} resources; wrote {} {}, deleted {deleted} left without results",
        resources.len(),
        reports.len(),
        style.api.plural()
    );
    Ok(Counts::of(&outcomes))
}
