//! `ivpol test`: runs Kyverno CLI test files (`kyverno-test.yaml`, kind
//! `cli.kyverno.io/v1alpha1 Test`) for their ImageValidatingPolicy results,
//! and prints Kyverno's results table and summary, or the same results as
//! one JSON document or as JUnit XML.
//!
//! Results for other policy types (`isValidatingPolicy`, ...) cannot run
//! here: each is listed as `Skip` / `Not supported by ivpol`, counted
//! neither as passed nor as failed. A file that sets a field ivpol does not
//! implement is not run at all ([`schema`]).

mod schema;

use super::engine::{self, PolicyRegistryArgs, Run, TapeArgs};
use super::Exit;
use anyhow::{anyhow, bail, Context, Result};
use clap::ValueEnum;
use ivpol_report::junit;
use ivpol_report::resources::{self, Resource};
use ivpol_report::table::{self, Row};
use ivpol_report::{Outcome, Status};
use ivpol_runtime::cache::CacheConfig;
use ivpol_runtime::policies::{self, Document};
use ivpol_runtime::{Pool, Runtime};
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How results are printed.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum Output {
    /// Kyverno's table per test file, then the summary.
    Table,
    /// One JSON object: the summary, every row, every file that could not run.
    Json,
    /// JUnit XML: a testsuite per test file, a testcase per expectation.
    Junit,
}

#[derive(clap::Args)]
#[command(
    after_help = "Exit status: 0 when every expectation held; 1 when any did not \
(or a test file could not run, or sets a field ivpol does not implement); \
2 for bad usage or when no test file was found."
)]
pub(super) struct TestArgs {
    /// Directories searched (recursively) for test files.
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// The test file name looked for.
    #[arg(short = 'f', long = "file-name", default_value = "kyverno-test.yaml")]
    file_name: String,
    /// Add a MESSAGE column with each result's message (table output).
    #[arg(long = "detailed-results")]
    detailed_results: bool,
    /// Print only the failed expectations (after the summary in table output).
    #[arg(long = "fail-only")]
    fail_only: bool,
    /// Output format; with json and junit stdout holds that document only,
    /// and the progress lines go to stderr.
    #[arg(
        short = 'o',
        long = "output",
        alias = "output-format",
        value_enum,
        default_value = "table"
    )]
    output: Output,
    /// Namespace manifests that `namespaceSelector` and `namespaceObject` read.
    #[arg(long, value_name = "FILE|DIR")]
    namespaces: Option<PathBuf>,
    /// After the results, say on stderr why each verification ended as it
    /// did: the image, digest, attestor and the reason (not-found,
    /// bad-signature, identity, ...).
    #[arg(long)]
    explain: bool,
    #[command(flatten)]
    component: super::component::ComponentArgs,
    #[command(flatten)]
    registry: PolicyRegistryArgs,
    #[command(flatten)]
    tape: TapeArgs,
}

/// A `kyverno-test.yaml`: the fields ivpol reads ([`schema`] refuses the
/// fields it does not implement before this is parsed).
#[derive(Deserialize, Default)]
#[serde(default)]
struct TestFile {
    metadata: Metadata,
    name: String,
    policies: Vec<String>,
    resources: Vec<String>,
    exceptions: Vec<String>,
    results: Vec<Expectation>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Metadata {
    name: String,
}

/// One `results[]` entry.
#[derive(Deserialize, Default, Clone)]
#[serde(default, rename_all = "camelCase")]
struct Expectation {
    policy: String,
    rule: String,
    is_image_validating_policy: bool,
    kind: String,
    resources: Vec<String>,
    /// Deprecated single-resource form.
    resource: String,
    result: String,
    namespace: String,
    operation: String,
}

/// Pass, fail and skip counts as Kyverno keeps them, plus what ivpol cannot run.
#[derive(Default)]
struct Tally {
    pass: usize,
    fail: usize,
    skip: usize,
    unsupported: usize,
}

/// One test file and what came of it.
struct FileRun {
    path: PathBuf,
    /// The test's name (`metadata.name`, or the deprecated `name`).
    name: String,
    rows: Vec<Row>,
    /// Why the file did not run.
    error: Option<String>,
}

/// Where the progress lines go: stdout for the table, stderr when stdout
/// holds a JSON or JUnit document.
#[derive(Clone, Copy)]
struct Progress {
    stderr: bool,
    /// `--explain`: why each verification ended as it did, on stderr.
    explain: bool,
}

impl Progress {
    fn say(self, line: &str) {
        match self.stderr {
            true => eprintln!("{line}"),
            false => println!("{line}"),
        }
    }
}

pub(super) async fn run(args: TestArgs) -> Result<Exit> {
    let files = find(&args.dirs, &args.file_name)?;
    if files.is_empty() {
        println!("\nNo test yamls available");
        return Ok(super::EXIT_USAGE);
    }
    let runtime =
        engine::runtime(&args.component, &args.registry, &CacheConfig::disabled()).await?;
    let tape = args.tape.attach(&runtime)?;
    let namespaces = match &args.namespaces {
        Some(p) => policies::read_namespaces(p)?,
        None => Default::default(),
    };
    let progress = Progress {
        stderr: args.output != Output::Table,
        explain: args.explain,
    };
    let mut tally = Tally::default();
    let mut runs = Vec::new();
    for file in &files {
        let run = match run_file(&runtime, file, &namespaces, progress).await {
            Ok((name, rows)) => FileRun {
                path: file.clone(),
                name,
                rows,
                error: None,
            },
            Err(e) => {
                let message = format!("{e:#}");
                for line in message.lines() {
                    progress.say(&format!("  Error: {line}"));
                }
                tally.fail += 1;
                FileRun {
                    path: file.clone(),
                    name: String::new(),
                    rows: Vec::new(),
                    error: Some(message),
                }
            }
        };
        count(&run.rows, &mut tally);
        if args.output == Output::Table && !args.fail_only && !run.rows.is_empty() {
            println!("\n{}", table::render(&run.rows, args.detailed_results));
        }
        runs.push(run);
    }
    engine::save_tape(tape.as_deref())?;
    if args.fail_only {
        for run in &mut runs {
            run.rows.retain(Row::failed);
        }
    }
    match args.output {
        Output::Table => print_summary(&args, &tally, &runs),
        Output::Json => println!("{}", render_json(&tally, &runs)),
        Output::Junit => print!("{}", render_junit(&runs)),
    }
    Ok(if tally.fail > 0 { 1 } else { 0 })
}

fn print_summary(args: &TestArgs, tally: &Tally, runs: &[FileRun]) {
    let total = tally.pass + tally.skip + tally.fail;
    match args.fail_only {
        false => println!(
            "\nTest Summary: {} tests passed and {} tests failed",
            tally.pass + tally.skip,
            tally.fail
        ),
        true => println!("\nTest Summary: {} out of {total} tests failed", tally.fail),
    }
    if tally.unsupported > 0 {
        println!(
            "{} results not checked: they are not ImageValidatingPolicy results, which is all ivpol runs",
            tally.unsupported
        );
    }
    println!();
    let failed_rows: Vec<Row> = runs.iter().flat_map(|r| r.rows.clone()).collect();
    if args.fail_only && !failed_rows.is_empty() {
        println!("Aggregated Failed Test Cases : ");
        print!("{}", table::render(&failed_rows, args.detailed_results));
    }
}

/// `-o json`: the summary line's counts, every row with its file and test,
/// and the files that did not run.
fn render_json(tally: &Tally, runs: &[FileRun]) -> String {
    let mut results = Vec::new();
    let mut errors = Vec::new();
    for run in runs {
        let file = run.path.display().to_string();
        if let Some(e) = &run.error {
            errors.push(json!({"file": file, "message": e}));
        }
        for (i, r) in run.rows.iter().enumerate() {
            results.push(json!({
                "file": file,
                "test": run.name,
                "id": i + 1,
                "policy": r.policy,
                "rule": r.rule,
                "resource": r.resource,
                "result": r.result,
                "reason": r.reason,
                "message": r.message,
            }));
        }
    }
    let v = json!({
        "summary": {
            "passed": tally.pass + tally.skip,
            "failed": tally.fail,
            "notSupported": tally.unsupported,
        },
        "results": results,
        "errors": errors,
    });
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

/// `-o junit`: a testsuite per test file (named by its path), a testcase
/// per row (`<skipped>` for results ivpol does not run), and an `<error>`
/// testcase for a file that did not run.
fn render_junit(runs: &[FileRun]) -> String {
    let suites: Vec<junit::Suite> = runs
        .iter()
        .map(|run| {
            let file = run.path.display().to_string();
            let mut cases: Vec<junit::Case> = run
                .rows
                .iter()
                .map(|r| junit::Case {
                    classname: r.policy.clone(),
                    name: r.resource.clone(),
                    outcome: match r.result.as_str() {
                        "Pass" => junit::CaseOutcome::Passed,
                        "Skip" => junit::CaseOutcome::Skipped {
                            message: r.reason.clone(),
                        },
                        _ => junit::CaseOutcome::Failed {
                            message: r.reason.clone(),
                            text: format!(
                                "policy: {}\nrule: {}\nresource: {}\nmessage: {}",
                                r.policy, r.rule, r.resource, r.message
                            ),
                        },
                    },
                })
                .collect();
            if let Some(e) = &run.error {
                cases.push(junit::Case {
                    classname: "ivpol test".into(),
                    name: file.clone(),
                    outcome: junit::CaseOutcome::Error { message: e.clone() },
                });
            }
            junit::Suite { name: file, cases }
        })
        .collect();
    junit::render("ivpol test", &suites)
}

fn count(rows: &[Row], tally: &mut Tally) {
    for r in rows {
        match (r.result.as_str(), r.reason.as_str()) {
            ("Pass", "Excluded") => tally.skip += 1,
            ("Pass", _) => tally.pass += 1,
            ("Skip", _) => tally.unsupported += 1,
            _ => tally.fail += 1,
        }
    }
}

/// Every file named `name` under `dirs` (hidden directories included, as
/// Kyverno's `.kyverno-test/`), sorted.
fn find(dirs: &[PathBuf], name: &str) -> Result<Vec<PathBuf>> {
    fn walk(dir: &Path, name: &str, out: &mut Vec<PathBuf>) -> Result<()> {
        if dir.is_file() {
            out.push(dir.to_path_buf());
            return Ok(());
        }
        let entries =
            std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
        for entry in entries {
            let p = entry?.path();
            if p.is_dir() {
                walk(&p, name, out)?;
            } else if p.file_name().and_then(|n| n.to_str()) == Some(name) {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for d in dirs {
        walk(d, name, &mut out)?;
    }
    out.sort();
    Ok(out)
}

/// Loads, runs and checks one test file: its name and rows.
async fn run_file(
    runtime: &Arc<Runtime>,
    path: &Path,
    namespaces: &BTreeMap<String, serde_json::Value>,
    progress: Progress,
) -> Result<(String, Vec<Row>)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let test = parse(&text, path)?;
    let name = match test.metadata.name.is_empty() {
        true => test.name.clone(),
        false => test.metadata.name.clone(),
    };
    progress.say(&format!("Loading test {name} ( {} ) ...", path.display()));
    let dir = path.parent().unwrap_or(Path::new("."));
    let paths = |list: &[String]| -> Vec<PathBuf> { list.iter().map(|p| dir.join(p)).collect() };
    progress.say("  Loading policies ...");
    let mut documents = read_each(&paths(&test.policies))?;
    progress.say("  Loading resources ...");
    let resource_paths = paths(&test.resources);
    exist(&resource_paths)?;
    let resources = resources::read(&resource_paths)?;
    progress.say("  Loading exceptions ...");
    documents.extend(read_each(&paths(&test.exceptions))?);
    let pool = Pool::load(runtime.clone(), documents).await?;
    engine::report_diagnostics(&pool);
    progress.say(&format!(
        "  Applying {} {} to {} {} ...",
        pool.summary().policies.len(),
        plural(pool.summary().policies.len(), "policy", "policies"),
        resources.len(),
        plural(resources.len(), "resource", "resources"),
    ));
    let runs = evaluate(&pool, &resources, &test.results, namespaces).await?;
    if progress.explain {
        for outcomes in runs.values() {
            eprint!("{}", ivpol_report::explain(outcomes));
        }
    }
    progress.say("  Checking results ...");
    Ok((name, check(&pool, &resources, &test.results, &runs)))
}

/// The test file `text`, refused when it sets a field ivpol does not
/// implement or one Kyverno does not know.
fn parse(text: &str, path: &Path) -> Result<TestFile> {
    let doc: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(text).with_context(|| format!("parsing {}", path.display()))?;
    let refusals = schema::refusals(&doc);
    if !refusals.is_empty() {
        let file = path.display().to_string();
        let lines: Vec<String> = refusals.iter().map(|r| r.message(&file)).collect();
        return Err(anyhow!(lines.join("\n")));
    }
    serde_yaml_ng::from_value(doc).with_context(|| format!("parsing {}", path.display()))
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// The named files (or directories); a missing one is an error.
fn read_each(paths: &[PathBuf]) -> Result<Vec<Document>> {
    exist(paths)?;
    policies::read_all(paths)
}

fn exist(paths: &[PathBuf]) -> Result<()> {
    match paths.iter().find(|p| !p.exists()) {
        Some(p) => bail!("{} does not exist", p.display()),
        None => Ok(()),
    }
}

/// Outcomes per operation: CREATE (the default) and each operation a result names.
async fn evaluate(
    pool: &Pool,
    resources: &[Resource],
    expectations: &[Expectation],
    namespaces: &BTreeMap<String, serde_json::Value>,
) -> Result<BTreeMap<String, Vec<Outcome>>> {
    let mut operations = vec!["CREATE".to_string()];
    for e in expectations.iter().filter(|e| e.is_image_validating_policy) {
        let op = e.operation.to_ascii_uppercase();
        if !op.is_empty() && !operations.contains(&op) {
            if !["CREATE", "UPDATE", "DELETE", "CONNECT"].contains(&op.as_str()) {
                bail!(
                    "result for policy {}: unknown operation {:?}",
                    e.policy,
                    e.operation
                );
            }
            operations.push(op);
        }
    }
    let mut runs = BTreeMap::new();
    for op in operations {
        let run = Run {
            operation: &op,
            background: false,
            namespaces,
            minimal_namespaces: true,
        };
        let outcomes = engine::evaluate_all(pool, resources, &run).await?;
        runs.insert(op, outcomes);
    }
    Ok(runs)
}

/// One row per expectation and resource it names.
fn check(
    pool: &Pool,
    resources: &[Resource],
    expectations: &[Expectation],
    runs: &BTreeMap<String, Vec<Outcome>>,
) -> Vec<Row> {
    let mut rows = Vec::new();
    for e in expectations {
        if !e.is_image_validating_policy {
            rows.push(unsupported(e));
            continue;
        }
        let op = match e.operation.is_empty() {
            true => "CREATE".to_string(),
            false => e.operation.to_ascii_uppercase(),
        };
        let outcomes = runs.get(&op).map(Vec::as_slice).unwrap_or_default();
        for wanted in names(e) {
            let matched: Vec<&Resource> = resources
                .iter()
                .filter(|r| is_named(r, e, &wanted))
                .collect();
            if matched.is_empty() {
                rows.push(not_found(e, &wanted));
            }
            for r in matched {
                rows.push(check_one(pool, e, r, outcomes));
            }
        }
    }
    rows
}

/// The resource names an expectation lists (all resources of its kind when none).
fn names(e: &Expectation) -> Vec<String> {
    match (e.resources.is_empty(), e.resource.is_empty()) {
        (false, _) => e.resources.clone(),
        (true, false) => vec![e.resource.clone()],
        (true, true) => vec![String::new()],
    }
}

/// Whether `r` is `wanted` (`name` or `namespace/name`; empty: any) of the
/// expectation's kind and namespace.
fn is_named(r: &Resource, e: &Expectation, wanted: &str) -> bool {
    let s = &r.subject;
    let (ns, name) = match wanted.split_once('/') {
        Some((ns, name)) => (ns, name),
        None => (e.namespace.as_str(), wanted),
    };
    (e.kind.is_empty() || e.kind == s.kind)
        && (name.is_empty() || name == s.name)
        && (ns.is_empty() || Some(ns) == s.namespace.as_deref())
}

/// The policy's name and namespace from `policy` or `namespace/policy`.
fn policy_of(e: &Expectation) -> (Option<&str>, &str) {
    match e.policy.split_once('/') {
        Some((ns, name)) => (Some(ns), name),
        None => (None, e.policy.as_str()),
    }
}

fn check_one(pool: &Pool, e: &Expectation, r: &Resource, outcomes: &[Outcome]) -> Row {
    let (ns, name) = policy_of(e);
    let found = outcomes.iter().find(|o| {
        o.subject.as_ref() == Some(&r.subject)
            && o.policy == name
            && (ns.is_none() || o.policy_namespace.as_deref() == ns)
    });
    let resource = r.subject.test_path();
    let Some(o) = found else {
        return absent(pool, e, resource);
    };
    let want = Status::parse(&e.result);
    let ok = want == Some(o.status);
    Row {
        policy: e.policy.clone(),
        rule: o.rule.clone(),
        resource,
        result: pass_fail(ok),
        reason: match ok {
            true => "Ok".into(),
            false => format!("Want {}, got {}", e.result, o.status.as_str()),
        },
        message: o.message.clone(),
    }
}

/// The policy gave no result for the resource: it did not match
/// (`Excluded`), or it never loaded (`Invalid Policy`). Kyverno counts an
/// excluded resource as passed whatever was expected; ivpol only when
/// `pass` or `skip` was.
fn absent(pool: &Pool, e: &Expectation, resource: String) -> Row {
    let (ns, name) = policy_of(e);
    let loaded = pool
        .summary()
        .policies
        .iter()
        .any(|p| p.name == name && (ns.is_none() || p.namespace.as_deref() == ns));
    let (ok, reason, message) = match loaded {
        true => {
            let ok = matches!(e.result.as_str(), "pass" | "skip");
            let reason = match ok {
                true => "Excluded".to_string(),
                false => format!("Want {}, got excluded", e.result),
            };
            (ok, reason, "Excluded".to_string())
        }
        false => (
            false,
            "Invalid Policy".to_string(),
            format!("policy {} did not load", e.policy),
        ),
    };
    Row {
        policy: e.policy.clone(),
        rule: e.rule.clone(),
        resource,
        result: pass_fail(ok),
        reason,
        message,
    }
}

fn not_found(e: &Expectation, wanted: &str) -> Row {
    let ns = match e.namespace.is_empty() {
        true => String::new(),
        false => format!("{}/", e.namespace),
    };
    Row {
        policy: e.policy.clone(),
        rule: e.rule.clone(),
        resource: format!("{}/{ns}{wanted}", e.kind),
        result: "Fail".into(),
        reason: "Not found".into(),
        message: "Not found".into(),
    }
}

fn unsupported(e: &Expectation) -> Row {
    Row {
        policy: e.policy.clone(),
        rule: e.rule.clone(),
        resource: format!("{}/{}", e.kind, names(e).join(",")),
        result: "Skip".into(),
        reason: "Not supported by ivpol".into(),
        message: "only ImageValidatingPolicy results (isImageValidatingPolicy: true) run in ivpol"
            .into(),
    }
}

fn pass_fail(ok: bool) -> String {
    match ok {
        true => "Pass".into(),
        false => "Fail".into(),
    }
}
