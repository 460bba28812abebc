//! What every subcommand that evaluates needs: the registry flags (shared
//! by `serve`, `apply`, `test` and `scan`) and a loaded instance pool.

use anyhow::{anyhow, Context, Result};
use clap::Args;
use ivpol_report::resources::{Payload, Resource};
use ivpol_report::Outcome;
use ivpol_runtime::cache::{CacheConfig, VerificationCache};
use ivpol_runtime::net::tape::Tape;
use ivpol_runtime::policies::{self, Document};
use ivpol_runtime::{wit, Compiler, Limits, Pool, Runtime};
use k8s_openapi::jiff::Timestamp;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

/// The registry flags of the subcommands that run policies: the flags every
/// registry-facing subcommand shares, and where the registry secrets that
/// policies name in `credentials.secrets` are read.
#[derive(Args, Clone)]
pub(super) struct PolicyRegistryArgs {
    #[command(flatten)]
    pub registry: super::registry::RegistryArgs,
    /// Directory of the registry secrets that policies name in
    /// `credentials.secrets`: `<name>/.dockerconfigjson` (a mounted Secret),
    /// or a `<name>` file holding a docker config or a Secret manifest.
    #[arg(long = "secrets-dir", value_name = "DIR")]
    pub secrets_dir: Option<PathBuf>,
}

/// Whose PolicyExceptions may exempt requests from cluster policies
/// (`serve`, `scan --kubernetes`). A tenant who may write exceptions in its
/// own namespace must not exempt itself from the cluster's policies, so in
/// cluster mode only ivpol's own namespace counts unless these say more.
#[derive(Args, Clone, Default)]
pub(super) struct ExceptionArgs {
    /// A namespace whose PolicyExceptions may apply to
    /// ImageValidatingPolicies (repeatable; `*` for any namespace, as
    /// Kyverno before 1.13). Default: ivpol's own namespace with
    /// --kubernetes; any namespace for policy files alone. An exception
    /// for a namespaced policy applies only from that policy's namespace.
    #[arg(long = "exception-namespace", value_name = "NS")]
    pub exception_namespaces: Vec<String>,
    /// Refuse every PolicyException: none exempts anything.
    #[arg(long = "no-policy-exceptions", conflicts_with = "exception_namespaces")]
    pub no_policy_exceptions: bool,
}

impl ExceptionArgs {
    /// The scope these flags give, `own_namespace` being ivpol's namespace
    /// in cluster mode (none for policy files alone).
    pub(super) fn scope(&self, own_namespace: Option<&str>) -> wit::ExceptionScope {
        if self.no_policy_exceptions {
            return wit::ExceptionScope::None;
        }
        if self.exception_namespaces.iter().any(|n| n == "*") {
            tracing::warn!(
                "--exception-namespace '*': a PolicyException in any namespace may exempt requests from every cluster policy; anyone who may write one can bypass them"
            );
            return wit::ExceptionScope::Any;
        }
        match (self.exception_namespaces.is_empty(), own_namespace) {
            (false, _) => wit::ExceptionScope::Namespaces(self.exception_namespaces.clone()),
            (true, Some(own)) => wit::ExceptionScope::Namespaces(vec![own.to_string()]),
            (true, None) => wit::ExceptionScope::Any,
        }
    }
}

/// Recording and replaying the component's registry exchanges (`apply`,
/// `test`), so that tests that verify signatures run offline in CI.
#[derive(Args, Clone, Default)]
pub(super) struct TapeArgs {
    /// Record every registry exchange the component makes into FILE: one
    /// archive (JSON, each body stored once under its digest) for --replay.
    #[arg(long = "record", value_name = "FILE", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Answer the component's registry requests from the recording FILE
    /// and send nothing: a request the recording does not hold fails.
    /// Signatures are verified as always; the component's clock reads the
    /// time the recording was made.
    #[arg(long = "replay", value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// With --replay, the time the component's clock reads instead of the
    /// recording's (RFC 3339, e.g. 2026-12-06T12:00:00Z).
    #[arg(long = "replay-time", value_name = "TIME", requires = "replay")]
    pub replay_time: Option<Timestamp>,
}

impl TapeArgs {
    /// The recording or replay these flags ask for, attached to `runtime`'s
    /// network (and, for a replay, its clock); none without the flags.
    pub(super) fn attach(&self, runtime: &Runtime) -> Result<Option<Arc<Tape>>> {
        let tape = match (&self.record, &self.replay) {
            (Some(path), _) => Tape::record(path),
            (None, Some(path)) => Tape::replay(path)?,
            (None, None) => return Ok(None),
        };
        let at = match self.replay_time {
            Some(t) => Some(SystemTime::from(t)),
            None => tape.recorded_at(),
        };
        if let Some(at) = at {
            runtime.fix_clock(at);
        }
        let tape = Arc::new(tape);
        runtime.net().use_tape(tape.clone());
        Ok(Some(tape))
    }
}

/// Writes a recording made with [`TapeArgs::attach`]; nothing otherwise.
pub(super) fn save_tape(tape: Option<&Tape>) -> Result<()> {
    match tape {
        Some(t) => t.save(),
        None => Ok(()),
    }
}

/// The component, compiled, with its network and cache.
pub(super) async fn runtime(
    component: &super::component::ComponentArgs,
    registry: &PolicyRegistryArgs,
    cache: &CacheConfig,
) -> Result<Arc<Runtime>> {
    let limits = Limits::default();
    runtime_with(component, registry, cache, limits, Compiler::InProcess).await
}

/// [`runtime`] with pools bounded by `limits` (`serve`'s flags), compiling
/// where `compiler` says.
pub(super) async fn runtime_with(
    component: &super::component::ComponentArgs,
    registry: &PolicyRegistryArgs,
    cache: &CacheConfig,
    limits: Limits,
    compiler: Compiler,
) -> Result<Arc<Runtime>> {
    let bytes = component.bytes(&registry.registry).await?;
    let net = registry.registry.net(registry.secrets_dir.as_deref())?;
    let cache = VerificationCache::new(cache);
    let cache_dir = component.cache_dir();
    Ok(Arc::new(Runtime::with_limits(
        &bytes,
        net,
        cache,
        cache_dir.as_deref(),
        limits,
        compiler,
    )?))
}

/// Runs `evaluate` on each resource in turn and collects one outcome per
/// policy result. A resource the component refuses (or a trap) is an error:
/// the run stops, naming the resource.
pub(super) async fn evaluate_all(
    pool: &Pool,
    resources: &[Resource],
    run: &Run<'_>,
) -> Result<Vec<Outcome>> {
    let deadline = pool.deadline(&[]);
    let operation = wit::Operation::parse(run.operation)
        .with_context(|| format!("unknown operation {:?}", run.operation))?;
    let mut out = Vec::new();
    for r in resources {
        let namespace =
            r.subject
                .namespace
                .as_deref()
                .and_then(|ns| match run.minimal_namespaces {
                    true => policies::namespace_or_minimal(run.namespaces, ns),
                    false => policies::namespace_object(run.namespaces, ns),
                });
        let verdict = pool
            .evaluate(
                r.object.to_string(),
                operation,
                namespace,
                run.background,
                deadline,
            )
            .await
            .and_then(|v| v.map_err(|e| anyhow!(e)))
            .with_context(|| format!("evaluating {} ({})", r.subject.path(), r.source))?;
        let mut results = verdict.results;
        results.sort_by(|a, b| (&a.namespace, &a.policy).cmp(&(&b.namespace, &b.policy)));
        let subject = Some(r.subject.clone());
        out.extend(worded(
            results.iter().map(|p| Outcome::new(subject.clone(), p)),
        )?);
    }
    Ok(out)
}

/// How [`evaluate_all`] runs.
pub(super) struct Run<'a> {
    pub operation: &'a str,
    pub background: bool,
    pub namespaces: &'a BTreeMap<String, serde_json::Value>,
    /// A namespace missing from `namespaces` is taken to carry only its
    /// name label, as the Kyverno CLI does (`apply`, `test`); otherwise it
    /// is unknown, and policies that need its labels report an error
    /// (`scan`, like admission).
    pub minimal_namespaces: bool,
}

/// Every JSON payload through `evaluate-json`.
pub(super) async fn evaluate_payloads(pool: &Pool, payloads: &[Payload]) -> Result<Vec<Outcome>> {
    let deadline = pool.deadline(&[]);
    let mut out = Vec::new();
    for p in payloads {
        let verdict = pool
            .evaluate_json(p.text.clone(), deadline)
            .await
            .and_then(|v| v.map_err(|e| anyhow!(e)))
            .with_context(|| format!("evaluating JSON payload {}", p.source))?;
        out.extend(worded(
            verdict.results.iter().map(|r| Outcome::new(None, r)),
        )?);
    }
    Ok(out)
}

/// The outcomes, each with the report entry the component words for
/// every result outside admission; a result without one is an error
/// rather than a result left out of the run.
fn worded(outcomes: impl Iterator<Item = Option<Outcome>>) -> Result<Vec<Outcome>> {
    (outcomes.collect::<Option<Vec<_>>>())
        .ok_or_else(|| anyhow!("the component gave a result without its report entry"))
}

/// Policy documents that did not load, on stderr; true if there were any.
pub(super) fn report_diagnostics(pool: &Pool) -> bool {
    let diagnostics = &pool.summary().diagnostics;
    for d in diagnostics {
        let name = d.policy.as_deref().unwrap_or("?");
        eprintln!(
            "ivpol: policy not loaded: {} (document {}, {name}): {}",
            d.source, d.document, d.message
        );
    }
    !diagnostics.is_empty()
}

/// How many documents of kind PolicyException `documents` hold (for the
/// `with K exception(s)` count; the component reads them).
pub(super) fn count_exceptions(documents: &[Document]) -> usize {
    documents
        .iter()
        .flat_map(|d| serde_yaml_ng::Deserializer::from_str(&d.content))
        .filter_map(|de| <serde_json::Value as serde::Deserialize>::deserialize(de).ok())
        .filter(|v| v.get("kind").and_then(|k| k.as_str()) == Some("PolicyException"))
        .count()
}
