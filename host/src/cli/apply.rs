//! `ivpol apply`: Kyverno's `kyverno apply` for IVP/NIVP: the validate phase
//! on resources read from files (and JSON-mode policies on `--json`
//! payloads), without a cluster and without a verification cache.

use super::engine::{self, PolicyRegistryArgs, Run, TapeArgs};
use super::{Exit, EXIT_USAGE};
use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use ivpol_report::policy_report::{self, documents};
use ivpol_report::{resources, Counts, Outcome};
use ivpol_runtime::cache::CacheConfig;
use ivpol_runtime::reports::{ApplyHeader, ReportShape};
use ivpol_runtime::{policies, Pool};
use std::path::PathBuf;

/// How results are printed.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum Output {
    /// `kyverno apply`'s text (with `-p`: the reports as YAML).
    Table,
    Json,
    Yaml,
}

#[derive(Args)]
#[command(
    after_help = "Exit status: 0 when no result failed or errored (warnings, such as \
--audit-warn makes, do not count); 1 when any did; 2 for bad usage, unreadable \
input, or policies that did not load."
)]
pub(super) struct ApplyArgs {
    /// Policy files or directories, as in `kyverno apply policy.yaml`.
    #[arg(value_name = "POLICY")]
    positional: Vec<PathBuf>,
    /// Policy file or directory (IVP/NIVP YAML or JSON); repeatable.
    #[arg(long = "policy", value_name = "FILE|DIR")]
    policy: Vec<PathBuf>,
    /// Resource file (multi-document YAML or JSON) or directory; repeatable.
    #[arg(
        short = 'r',
        long = "resource",
        alias = "resources",
        value_name = "FILE|DIR"
    )]
    resource: Vec<PathBuf>,
    /// JSON payload for `evaluation.mode: JSON` policies; repeatable.
    #[arg(long = "json", value_name = "FILE")]
    json: Vec<PathBuf>,
    /// PolicyException file or directory; repeatable.
    #[arg(
        short = 'e',
        long = "exception",
        alias = "exceptions",
        value_name = "FILE|DIR"
    )]
    exception: Vec<PathBuf>,
    /// The admission operation the resources are evaluated under.
    #[arg(long, default_value = "CREATE", value_parser = ["CREATE", "UPDATE", "DELETE"])]
    operation: String,
    /// Output format.
    #[arg(
        short = 'o',
        long = "output",
        alias = "output-format",
        value_enum,
        default_value = "table"
    )]
    output: Output,
    /// Print openreports.io reports (a ClusterReport `merged`, a Report per NIVP).
    #[arg(short = 'p', long = "policy-report")]
    policy_report: bool,
    /// Report the failures of audit policies (validationActions without
    /// Deny) as warnings instead of failures; they then do not fail the run.
    #[arg(long = "audit-warn")]
    audit_warn: bool,
    /// After the results, say on stderr why each verification ended as it
    /// did: the image, digest, attestor and the reason (not-found,
    /// bad-signature, identity, ...).
    #[arg(long)]
    explain: bool,
    /// Namespace manifests that `namespaceSelector` and `namespaceObject` read.
    #[arg(long, value_name = "FILE|DIR")]
    namespaces: Option<PathBuf>,
    #[command(flatten)]
    component: super::component::ComponentArgs,
    #[command(flatten)]
    registry: PolicyRegistryArgs,
    #[command(flatten)]
    tape: TapeArgs,
}

pub(super) async fn run(args: ApplyArgs) -> Result<Exit> {
    let policy_paths: Vec<PathBuf> = args
        .positional
        .iter()
        .chain(&args.policy)
        .cloned()
        .collect();
    if policy_paths.is_empty() {
        bail!("require policy: give policy files or directories (`ivpol apply POLICY... --resource FILE`)");
    }
    if args.resource.is_empty() && args.json.is_empty() {
        bail!("resource file(s) required: give --resource FILE or --json FILE");
    }
    let mut documents = policies::read_all(&policy_paths)?;
    let exceptions = policies::read_all(&args.exception)?;
    let exception_count = engine::count_exceptions(&exceptions);
    documents.extend(exceptions);
    let resources = resources::read(&args.resource)?;
    let payloads = resources::read_payloads(&args.json)?;
    let namespaces = match &args.namespaces {
        Some(p) => policies::read_namespaces(p)?,
        None => Default::default(),
    };
    let cache = CacheConfig::disabled();
    let runtime = engine::runtime(&args.component, &args.registry, &cache).await?;
    let tape = args.tape.attach(&runtime)?;
    let pool = Pool::load(runtime, documents).await?;
    let broken = engine::report_diagnostics(&pool);
    let text_out = args.output == Output::Table && !args.policy_report;
    if text_out {
        let header = ApplyHeader {
            policies: count(pool.summary().policies.len()),
            resources: count(resources.len() + payloads.len()),
            exceptions: count(exception_count),
        };
        let shape = ReportShape::ApplyHeader(header);
        print!("{}", policy_report::text(&pool, &[], shape).await?);
    }
    let run = Run {
        operation: &args.operation,
        background: false,
        namespaces: &namespaces,
        minimal_namespaces: true,
    };
    let mut outcomes = engine::evaluate_all(&pool, &resources, &run).await?;
    outcomes.extend(engine::evaluate_payloads(&pool, &payloads).await?);
    engine::save_tape(tape.as_deref())?;
    if args.audit_warn {
        ivpol_report::audit_failures_as_warnings(&mut outcomes);
    }
    let counts = Counts::of(&outcomes);
    print!("{}", render(&pool, &args, &outcomes).await?);
    eprint!(
        "{}",
        policy_report::text(&pool, &outcomes, ReportShape::Errors).await?
    );
    if args.explain {
        eprint!("{}", ivpol_report::explain(&outcomes));
    }
    Ok(exit(&counts, broken))
}

/// A count as the component's shapes take it.
fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// stdout for `args.output` and `--policy-report`, as the component shapes it.
async fn render(pool: &Pool, args: &ApplyArgs, outcomes: &[Outcome]) -> Result<String> {
    if args.policy_report {
        let reports = documents(pool, outcomes, ReportShape::ReportsByPolicy).await?;
        return Ok(policy_report::render(&reports, args.output == Output::Json));
    }
    if args.output == Output::Table {
        return policy_report::text(pool, outcomes, ReportShape::ApplyTable).await;
    }
    let both = documents(pool, outcomes, ReportShape::ResultsAndSummary).await?;
    let both = both.first().unwrap_or(&serde_json::Value::Null);
    Ok(match args.output {
        Output::Json => serde_json::to_string_pretty(both).unwrap_or_default() + "\n",
        _ => serde_yaml_ng::to_string(both).unwrap_or_default(),
    })
}

/// 2 when policies did not load, 1 when a result failed or errored, else 0.
pub(super) fn exit(counts: &Counts, broken: bool) -> Exit {
    if broken {
        eprintln!("ivpol: some policies did not load");
        return EXIT_USAGE;
    }
    if counts.fail > 0 {
        eprintln!("ivpol: exit as there are policy violations");
        return 1;
    }
    if counts.error > 0 {
        eprintln!("ivpol: exit as there are policy errors");
        return 1;
    }
    0
}
