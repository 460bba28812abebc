//! `ivpol webhooks`: prints the MutatingWebhookConfiguration and
//! ValidatingWebhookConfiguration Kyverno would register for the policies,
//! pointed at the Service in front of `ivpol serve`. The component builds
//! them (the host does not read policies); the host reads the files and
//! prints YAML or JSON.

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use ivpol_runtime::policies;
use ivpol_runtime::{engine::WebhookOptions, Pool, Runtime};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Args)]
pub(super) struct WebhooksArgs {
    /// Directory (or file) of IVP/NIVP policies; repeatable.
    #[arg(long = "policies", required = true, value_name = "DIR")]
    policies: Vec<PathBuf>,
    /// Name of the Service in front of `ivpol serve`.
    #[arg(long, value_name = "NAME")]
    service: String,
    /// Namespace of that Service.
    #[arg(long, value_name = "NS")]
    namespace: String,
    /// Port of that Service.
    #[arg(long, default_value_t = 443)]
    port: u16,
    /// PEM file of the CA that signed the serving certificate (`caBundle`);
    /// every certificate in it must be a CA.
    #[arg(
        long = "ca-bundle",
        value_name = "FILE",
        required_unless_present = "inject_ca_from"
    )]
    ca_bundle: Option<PathBuf>,
    /// Leave `caBundle` to cert-manager's CA injector: the configurations
    /// carry `cert-manager.io/inject-ca-from: NAMESPACE/CERTIFICATE` and no
    /// caBundle.
    #[arg(
        long = "inject-ca-from",
        value_name = "NAMESPACE/CERTIFICATE",
        conflicts_with = "ca_bundle",
        value_parser = ivpol_cluster::writers::parse_inject_ca_from
    )]
    inject_ca_from: Option<String>,
    /// Namespace no webhook is called for; repeatable. Default: kube-system
    /// and --namespace, as Kyverno's Helm chart configures.
    #[arg(long = "exclude-namespace", value_name = "NS")]
    exclude_namespace: Vec<String>,
    /// Exclude no namespace at all (not even kube-system).
    #[arg(long = "no-namespace-exclusions", conflicts_with = "exclude_namespace")]
    no_namespace_exclusions: bool,
    /// Register every webhook with failurePolicy Ignore, whatever the
    /// policies say (Kyverno's --forceFailurePolicyIgnore), as `serve
    /// --failure-policy-ignore` does.
    #[arg(long = "failure-policy-ignore", alias = "force-failure-policy-ignore")]
    force_failure_policy_ignore: bool,
    /// Name the configurations and webhooks as Kyverno does
    /// (`kyverno-resource-*-webhook-cfg`); by default they take ivpol's own
    /// names, so that ivpol and Kyverno can run side by side.
    #[arg(long = "kyverno-names")]
    kyverno_names: bool,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Yaml)]
    output: Format,
    #[command(flatten)]
    component: super::component::ComponentArgs,
    // For `--component oci://` only: generation itself makes no registry call.
    #[command(flatten)]
    registry: super::registry::RegistryArgs,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// Two YAML documents, mutating first, for `kubectl apply -f -`.
    Yaml,
    /// One `v1` `List` holding the two.
    Json,
}

pub(super) async fn run(args: WebhooksArgs) -> Result<()> {
    // The same check as `serve --register-webhooks`: only CA certificates.
    let ca_bundle = match &args.ca_bundle {
        Some(file) => ivpol_cluster::writers::read_ca_bundle(file)?,
        None => Vec::new(),
    };
    let documents = policies::read_all(&args.policies)?;
    if documents.is_empty() {
        bail!(
            "no policy files (.yaml, .yml, .json) under {}",
            list(&args.policies)
        );
    }
    let component = args.component.bytes(&args.registry).await?;
    // Generation makes no registry calls.
    let cache_dir = args.component.cache_dir();
    let runtime = Arc::new(Runtime::offline(&component, cache_dir.as_deref())?);
    let pool = Pool::load(runtime, documents).await?;
    let summary = pool.summary();
    for d in &summary.diagnostics {
        let policy = d
            .policy
            .as_deref()
            .map(|p| format!(" (policy {p})"))
            .unwrap_or_default();
        eprintln!(
            "ivpol: {} document {}{policy} not loaded, so it gets no webhook: {}",
            d.source, d.document, d.message
        );
    }
    if summary.policies.is_empty() {
        bail!(
            "no policy loaded from {}: there is nothing to register",
            list(&args.policies)
        );
    }
    let exclude_namespaces = match (
        args.no_namespace_exclusions,
        args.exclude_namespace.is_empty(),
    ) {
        (true, _) => Vec::new(),
        (false, true) => vec!["kube-system".to_string(), args.namespace.clone()],
        (false, false) => args.exclude_namespace.clone(),
    };
    let options = WebhookOptions {
        service_name: args.service.clone(),
        service_namespace: args.namespace.clone(),
        service_port: args.port,
        ca_bundle,
        inject_ca_from: args.inject_ca_from.clone(),
        exclude_namespaces,
        force_failure_policy_ignore: args.force_failure_policy_ignore,
        kyverno_names: args.kyverno_names,
    };
    let list = match pool.webhook_configurations(options).await? {
        Ok(json) => json,
        Err(why) => bail!("cannot build the webhook configurations: {why}"),
    };
    let list: serde_json::Value =
        serde_json::from_str(&list).context("the component returned invalid JSON")?;
    let empty = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|c| c["webhooks"].as_array().is_none_or(|w| w.is_empty()));
    if empty {
        eprintln!("ivpol: no loaded policy has admission enabled in Kubernetes mode: both configurations are empty");
    }
    print!("{}", render(&list, args.output)?);
    Ok(())
}

fn render(list: &serde_json::Value, format: Format) -> Result<String> {
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(list)? + "\n",
        Format::Yaml => {
            let mut out = String::new();
            for (i, item) in list["items"].as_array().into_iter().flatten().enumerate() {
                if i > 0 {
                    out.push_str("---\n");
                }
                out.push_str(&serde_yaml_ng::to_string(item)?);
            }
            out
        }
    })
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
