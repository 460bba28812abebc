//! `ivpol scan`: Kyverno's background scan over resources read from files.
//! Only policies with `evaluation.background.enabled` (the default) run,
//! every image is verified again (nothing the resource carries is trusted),
//! and the results come out as openreports.io reports: one Report per
//! namespace of the resources, one ClusterReport for cluster-scoped ones.

use super::engine::{self, PolicyRegistryArgs, Run};
use super::serve::parse_duration;
use super::Exit;
use crate::cache::CacheConfig;
use crate::policies;
use crate::report::{openreports, resources, text, Counts, Status};
use anyhow::Result;
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

/// The name of every report `scan` prints.
const REPORT_NAME: &str = "ivpol-background-scan";

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Yaml,
    Json,
}

#[derive(Args)]
#[command(
    after_help = "Exit status (without --interval): 0 when no result failed or errored; \
1 when any did; 2 for bad usage, unreadable input, or policies that did not load."
)]
pub struct ScanArgs {
    /// Resource file (multi-document YAML or JSON) or directory; repeatable.
    #[arg(
        long = "resources",
        alias = "resource",
        required = true,
        value_name = "FILE|DIR"
    )]
    resources: Vec<PathBuf>,
    /// Directory (or file) of IVP/NIVP policies and PolicyExceptions; repeatable.
    #[arg(long = "policies", required = true, value_name = "DIR")]
    policies: Vec<PathBuf>,
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
    #[command(flatten)]
    component: super::component::ComponentArgs,
    #[command(flatten)]
    registry: PolicyRegistryArgs,
}

pub async fn run(args: ScanArgs) -> Result<Exit> {
    let documents = policies::read_all(&args.policies)?;
    let namespaces = match &args.namespaces {
        Some(p) => policies::read_namespaces(p)?,
        None => Default::default(),
    };
    let cache = match args.interval {
        Some(_) => CacheConfig {
            enabled: true,
            size: args.cache_size,
            ttl: args.cache_ttl,
            digest_ttl: Duration::ZERO,
        },
        None => CacheConfig::disabled(),
    };
    let pool = engine::load_pool(&args.component, &args.registry, &cache, documents).await?;
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

/// Reads the resources (again: they may have changed), evaluates them and
/// prints the reports.
async fn scan_once(args: &ScanArgs, pool: &crate::runtime::Pool, run: &Run<'_>) -> Result<Counts> {
    let resources = resources::read(&args.resources)?;
    let outcomes = engine::evaluate_all(pool, &resources, run).await?;
    let seconds = openreports::now_seconds();
    let reports = openreports::by_resource_namespace(&outcomes, REPORT_NAME, seconds);
    print!(
        "{}",
        openreports::render(&reports, args.output == Format::Json)
    );
    eprint!("{}", text::blocks(&outcomes, Status::Error, "error"));
    if args.explain {
        eprint!("{}", crate::report::explain(&outcomes));
    }
    Ok(Counts::of(&outcomes))
}
