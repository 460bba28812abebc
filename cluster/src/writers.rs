//! What the elected leader writes to the cluster: the webhook
//! configurations (`--register-webhooks`) and each cluster policy's
//! `status`. Every replica serves admission; only the Lease holder writes
//! (`leader.rs`), and only what differs from what is there.

use super::healing;
use super::kept::{keep_rejected, Rejected};
use super::refused::{one_by_one, Attempt, Refused};
use super::Cluster;
use crate::live::{Generation, Live};
use anyhow::{bail, Context, Result};
pub use ivpol_runtime::engine::WebhookOptions;
pub use ivpol_runtime::wit;
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The flags of `serve` for what its elected leader writes.
#[derive(clap::Args, Clone, Default)]
pub struct WriterArgs {
    /// Keep the MutatingWebhookConfiguration and
    /// ValidatingWebhookConfiguration (`ivpol webhooks`' output) applied as
    /// the policies change; written by the elected leader only.
    #[arg(long = "register-webhooks")]
    pub register_webhooks: bool,
    /// PEM CA certificate(s) for the webhooks' caBundle (default: `ca.crt`
    /// beside --tls-cert, as cert-manager writes it); a leaf certificate
    /// is refused. Read again every second: a rotated CA reaches the
    /// configurations without a restart.
    #[arg(long = "ca-bundle", value_name = "FILE")]
    pub ca_bundle: Option<PathBuf>,
    /// Leave every webhook's `caBundle` to cert-manager's CA injector: the
    /// configurations are written with `cert-manager.io/inject-ca-from:
    /// NAMESPACE/CERTIFICATE` and without a caBundle, so that the two never
    /// take the field from each other (the `cert-manager` overlay sets it).
    #[arg(
        long = "inject-ca-from",
        value_name = "NAMESPACE/CERTIFICATE",
        conflicts_with = "ca_bundle",
        requires = "register_webhooks",
        value_parser = parse_inject_ca_from
    )]
    pub inject_ca_from: Option<String>,
    /// The Service in front of ivpol, in ivpol's own namespace, that the
    /// registered webhooks call.
    #[arg(long = "webhook-service", default_value = "ivpol", value_name = "NAME")]
    pub webhook_service: String,
    /// That Service's port.
    #[arg(long = "webhook-port", default_value_t = 443)]
    pub webhook_port: u16,
    /// A namespace no registered webhook is called for, beside kube-system
    /// and ivpol's own (repeatable): the namespaces whose pods must start
    /// even while ivpol is down (cert-manager, the CNI, monitoring).
    #[arg(
        long = "exclude-namespace",
        value_name = "NS",
        requires = "register_webhooks"
    )]
    pub exclude_namespaces: Vec<String>,
    /// Register every webhook with failurePolicy Ignore, whatever the
    /// policies say (Kyverno's --forceFailurePolicyIgnore): an outage of
    /// ivpol then admits instead of blocking pod creation.
    #[arg(long = "failure-policy-ignore", requires = "register_webhooks")]
    pub failure_policy_ignore: bool,
    /// Register the webhooks under Kyverno's names
    /// (`kyverno-resource-*-webhook-cfg`) instead of ivpol's own, which
    /// replaces Kyverno's webhooks if it is installed too.
    #[arg(long = "kyverno-webhook-names", requires = "register_webhooks")]
    pub kyverno_names: bool,
    /// The ClusterRole that owns the webhook configurations (deploy/ names
    /// its own, `ivpol`): deleting it, as deleting the installation does,
    /// has the garbage collector delete them, so that no `Fail` webhook
    /// outlives ivpol. Read by the leader before each write; if it cannot
    /// be read, the configurations are written without an owner.
    #[arg(
        long = "webhook-owner-cluster-role",
        value_name = "NAME",
        requires = "register_webhooks"
    )]
    pub owner_cluster_role: Option<String>,
    /// The Lease in ivpol's own namespace that elects the one replica
    /// writing policy status and webhooks (every replica serves admission).
    #[arg(long = "lease-name", default_value = "ivpol", value_name = "NAME")]
    pub lease_name: String,
}

/// The field manager of every write.
pub(crate) const FIELD_MANAGER: &str = "ivpol";
/// How often the leader checks for a new policy set to write out.
const EVERY: Duration = Duration::from_secs(1);
/// Every how many ticks the applied webhook configurations are checked.
const HEAL_EVERY: u64 = 2;

/// What the leader writes, and where its webhooks point.
pub struct Writers {
    pub client: Client,
    pub webhooks: Option<WebhookOptions>,
    /// The file the webhooks' caBundle was read from, read again each
    /// tick (a rotation swaps it under a Secret volume).
    pub ca_bundle_file: Option<PathBuf>,
    /// The ClusterRole named as the configurations' owner.
    pub owner_cluster_role: Option<String>,
}

impl Writers {
    /// Takes a CA bundle that changed on disk; whether it did. A file that
    /// cannot be read, or is no CA bundle now (a rotation half-way), keeps
    /// the last good one, with a warning once per change.
    fn reread_ca_bundle(&mut self, warned: &mut Option<String>) -> bool {
        let (Some(options), Some(path)) = (self.webhooks.as_mut(), &self.ca_bundle_file) else {
            return false;
        };
        match read_ca_bundle(path) {
            Ok(pem) if pem != options.ca_bundle => {
                tracing::info!(file = %path.display(), "the CA bundle changed: applying the webhook configurations with it");
                options.ca_bundle = pem;
                *warned = None;
                true
            }
            Ok(_) => false,
            Err(e) => {
                let why = format!("{e:#}");
                if warned.as_deref() != Some(why.as_str()) {
                    tracing::warn!("keeping the last good CA bundle: {why}");
                    *warned = Some(why);
                }
                false
            }
        }
    }
}

/// Writes after every new generation, and again whenever this replica
/// becomes the leader.
pub fn start(
    live: Arc<Live>,
    cluster: Arc<Cluster>,
    mut writers: Writers,
    leader: watch::Receiver<bool>,
) {
    tokio::spawn(async move {
        let mut written: Option<u64> = None;
        let mut ca_warned: Option<String> = None;
        // The configurations last applied, checked for drift (`healing.rs`).
        let mut applied: Vec<Value> = Vec::new();
        let mut tick = tokio::time::interval(EVERY);
        let mut ticks: u64 = 0;
        loop {
            tick.tick().await;
            ticks += 1;
            if !*leader.borrow() {
                written = None;
                continue;
            }
            if writers.webhooks.is_some() && healing::glass_broken(&cluster) {
                if written.is_some() {
                    tracing::warn!(
                        "{}=true on namespace {}: not writing or restoring webhook configurations",
                        healing::BREAK_GLASS,
                        cluster.own_namespace
                    );
                }
                written = None;
                continue;
            }
            if writers.reread_ca_bundle(&mut ca_warned) {
                written = None;
            }
            let generation = live.current();
            if written == Some(generation.number) {
                if !ticks.is_multiple_of(HEAL_EVERY) {
                    continue;
                }
                match healing::drifted(&writers.client, &applied).await {
                    Some(why) => {
                        tracing::warn!("{why}: applying the webhook configurations again");
                        ivpol_runtime::metrics::metrics().webhook_restores.inc();
                    }
                    None => continue,
                }
            }
            match write(&generation, &cluster, &writers).await {
                Ok(configs) => {
                    written = Some(generation.number);
                    applied = configs;
                }
                Err(e) => tracing::warn!("writing to the cluster (retrying): {e:#}"),
            }
        }
    });
}

/// Writes the webhook configurations (when registering) and the policies'
/// status; returns the configurations applied.
async fn write(
    generation: &Generation,
    cluster: &Cluster,
    writers: &Writers,
) -> Result<Vec<Value>> {
    let webhooks = match &writers.webhooks {
        Some(options) => {
            let owner = match &writers.owner_cluster_role {
                Some(name) => owner_reference(&writers.client, name).await,
                None => None,
            };
            Some(register_webhooks(generation, &writers.client, options, owner).await)
        }
        None => None,
    };
    let configured = webhooks.as_ref().map(|r| match r {
        Ok((refused, _)) => Ok(refused.clone()),
        Err(e) => Err(format!("{e:#}")),
    });
    let objects = cluster.policy_objects();
    let queries: Vec<wit::StatusQuery> = (objects.iter())
        .map(|(_, object)| status_query(generation, object, configured.as_ref()))
        .collect();
    let now = k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let statuses = generation.pool.status_conditions(&queries, &now).await?;
    for ((resource, object), wanted) in objects.iter().zip(statuses) {
        let wanted: Value = serde_json::from_str(&wanted).context("the component's status")?;
        write_status(&writers.client, resource, object, wanted).await?;
    }
    Ok(webhooks
        .transpose()?
        .map(|(_, applied)| applied)
        .unwrap_or_default())
}

/// Applies the configurations `ivpol webhooks` would print, each with the
/// live entries of the policies that are rejected now (`kept.rs`); returns
/// the policies whose webhooks the API server refused (`refused.rs`) and
/// the configurations as applied.
async fn register_webhooks(
    generation: &Generation,
    client: &Client,
    options: &WebhookOptions,
    owner: Option<Value>,
) -> Result<(Refused, Vec<Value>)> {
    let list = generation
        .pool
        .webhook_configurations(options.clone())
        .await?
        .map_err(anyhow::Error::msg)
        .context("building the webhook configurations")?;
    let mut list: Value =
        serde_json::from_str(&list).context("the component's webhook configurations")?;
    let rejected: BTreeSet<Rejected> = generation
        .pool
        .summary()
        .rejected
        .iter()
        .map(|r| Rejected {
            namespaced: r.namespace.is_some(),
            name: r.name.clone(),
        })
        .collect();
    let items = list["items"]
        .as_array_mut()
        .map(Vec::as_mut_slice)
        .unwrap_or_default();
    if let Some(owner) = owner {
        for item in items.iter_mut() {
            item["metadata"]["ownerReferences"] = json!([owner]);
        }
    }
    let rejected = std::sync::Arc::new(rejected);
    let refused = apply_each(items, |item| {
        let (client, rejected) = (client.clone(), rejected.clone());
        Box::pin(async move { apply_configuration(&client, item, &rejected).await })
    })
    .await?;
    tracing::info!(
        generation = generation.number,
        refused = refused.len(),
        "webhook configurations applied"
    );
    let applied = list["items"].as_array().cloned().unwrap_or_default();
    Ok((refused, applied))
}

/// The owner reference to the ClusterRole `name`; none, with a warning,
/// when it cannot be read (the configurations are still written: an
/// owner only helps uninstall, enforcement must not wait for it).
async fn owner_reference(client: &Client, name: &str) -> Option<Value> {
    use k8s_openapi::api::rbac::v1::ClusterRole;
    let api: Api<ClusterRole> = Api::all(client.clone());
    let found = api.get_opt(name).await;
    let uid = match &found {
        Ok(Some(role)) => role.metadata.uid.clone(),
        _ => None,
    };
    match uid {
        Some(uid) => Some(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "name": name,
            "uid": uid,
        })),
        None => {
            let why = match found {
                Err(e) => e.to_string(),
                Ok(_) => "not found".to_string(),
            };
            tracing::warn!(cluster_role = name, "writing the webhook configurations without an owner: reading the ClusterRole: {why}");
            None
        }
    }
}

/// One configuration being applied.
type Applying<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Refused>> + Send + 'a>>;

/// Applies each configuration on its own: one the API server refuses is
/// logged, counted (`ivpol_webhook_apply_failures_total`) and reported in
/// the error, and the others are still applied, so that one bad
/// configuration cannot leave every policy without its webhook.
async fn apply_each(
    items: &mut [Value],
    mut apply: impl for<'a> FnMut(&'a mut Value) -> Applying<'a>,
) -> Result<Refused> {
    let mut failed = Vec::new();
    let mut refused = Refused::new();
    for item in items.iter_mut() {
        let name = item["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        match apply(item).await {
            Ok(some) => {
                if !some.is_empty() {
                    ivpol_runtime::metrics::metrics()
                        .webhook_apply_failures
                        .inc();
                }
                refused.extend(some);
            }
            Err(e) => {
                tracing::error!(config = %name, "a webhook configuration was not applied; the others are: {e:#}");
                ivpol_runtime::metrics::metrics()
                    .webhook_apply_failures
                    .inc();
                failed.push(format!("{e:#}"));
            }
        }
    }
    match failed.is_empty() {
        true => Ok(refused),
        false => bail!("{}", failed.join("; ")),
    }
}

/// Applies one configuration, with the live entries of the policies that
/// are rejected now (`kept.rs`). If the API server refuses it (400 or
/// 422), its webhooks are applied one more at a time (`refused.rs`), and
/// the policies of those refused are returned.
async fn apply_configuration(
    client: &Client,
    item: &mut Value,
    rejected: &BTreeSet<Rejected>,
) -> Result<Refused> {
    let kind = item["kind"].as_str().unwrap_or_default().to_string();
    let name = item["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let api = super::webhook_configurations(client, &kind);
    if !rejected.is_empty() {
        let live = api
            .get_opt(&name)
            .await
            .with_context(|| format!("reading {kind} {name}"))?;
        let live = live.map(|o| o.data);
        let kept = keep_rejected(item, live.as_ref(), rejected);
        if !kept.is_empty() {
            tracing::warn!(
                config = %name,
                webhooks = ?kept,
                "keeping the webhooks of policies that do not load, so that their requests are still sent to ivpol (and denied)"
            );
        }
    }
    let params = PatchParams::apply(FIELD_MANAGER).force();
    match api.patch(&name, &params, &Patch::Apply(&*item)).await {
        Ok(_) => Ok(Refused::new()),
        Err(kube::Error::Api(e)) if e.code == 400 || e.code == 422 => {
            tracing::error!(config = %name, "the API server refused the configuration ({e}); applying its webhooks one at a time");
            let apply = |candidate: Value| -> Attempt {
                let (api, name, params) = (api.clone(), name.clone(), params.clone());
                Box::pin(async move {
                    api.patch(&name, &params, &Patch::Apply(&candidate))
                        .await
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                })
            };
            one_by_one(item, apply)
                .await
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("applying {kind} {name}"))
        }
        Err(e) => Err(e).with_context(|| format!("applying {kind} {name}")),
    }
}

/// What the status of `object` depends on beyond the policy set: whether
/// a reload left its last good version enforcing, and its webhook (refused
/// on its own, or every webhook not applied at all).
fn status_query(
    generation: &Generation,
    object: &DynamicObject,
    webhooks: Option<&Result<Refused, String>>,
) -> wit::StatusQuery {
    let name = object.metadata.name.clone().unwrap_or_default();
    let namespace = object.metadata.namespace.clone();
    let key = Rejected {
        namespaced: namespace.is_some(),
        name: name.clone(),
    };
    let webhook = webhooks.map(|r| match r {
        Err(e) => Err(e.clone()),
        Ok(refused) => match refused.get(&key) {
            Some(why) => Err(format!("the API server refused its webhook: {why}")),
            None => Ok(()),
        },
    });
    let stale = (generation.stale.iter())
        .find(|s| s.name == name && s.namespace == namespace)
        .map(|s| s.error.clone());
    wit::StatusQuery {
        name,
        namespace,
        stale,
        webhook,
    }
}

/// Sets `status.conditionStatus` of one cluster policy to `wanted` (the
/// component's), when it differs from what the object has.
async fn write_status(
    client: &Client,
    resource: &ApiResource,
    object: &DynamicObject,
    wanted: Value,
) -> Result<()> {
    let name = object.metadata.name.clone().unwrap_or_default();
    let current = object.data.pointer("/status/conditionStatus");
    if current.is_some_and(|c| without_times(c) == without_times(&wanted)) {
        return Ok(());
    }
    let api: Api<DynamicObject> = match &object.metadata.namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    };
    let patch = json!({"status": {"conditionStatus": wanted}});
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("writing the status of {} {name}", resource.kind))?;
    Ok(())
}

/// The condition status with its transition times left out, to compare.
fn without_times(status: &Value) -> Value {
    let mut status = status.clone();
    for c in status["conditions"].as_array_mut().into_iter().flatten() {
        if let Some(c) = c.as_object_mut() {
            c.remove("lastTransitionTime");
        }
    }
    status
}

/// Where the webhooks' `caBundle` is read: `--ca-bundle`, else the `ca.crt`
/// beside the serving certificate (as cert-manager writes it). Every
/// certificate in it must be a CA ([`read_ca_bundle`]): a leaf certificate
/// would make the API server trust exactly one key and break at the first
/// rotation.
pub fn ca_bundle_file(explicit: Option<&Path>, tls_cert: Option<&Path>) -> Result<PathBuf> {
    Ok(match (explicit, tls_cert) {
        (Some(p), _) => p.to_path_buf(),
        (None, Some(cert)) => cert.with_file_name("ca.crt"),
        (None, None) => {
            bail!("--register-webhooks needs --ca-bundle (or --tls-cert with a ca.crt beside it)")
        }
    })
}

/// `--inject-ca-from`: cert-manager's `namespace/name` of a Certificate,
/// each part a DNS label or subdomain as the API server requires.
pub fn parse_inject_ca_from(value: &str) -> Result<String> {
    let valid = |part: &str| {
        !part.is_empty()
            && part.len() <= 253
            && part.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && !l.starts_with('-')
                    && !l.ends_with('-')
                    && l.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            })
    };
    match value.split_once('/') {
        Some((namespace, name)) if valid(namespace) && !namespace.contains('.') && valid(name) => {
            Ok(value.to_string())
        }
        _ => {
            bail!("{value:?} is not NAMESPACE/CERTIFICATE (lowercase names, e.g. ivpol/ivpol-tls)")
        }
    }
}

/// The CA bundle in `path`, every certificate in it a CA.
pub fn read_ca_bundle(path: &Path) -> Result<Vec<u8>> {
    let pem =
        std::fs::read(path).with_context(|| format!("reading the CA bundle {}", path.display()))?;
    let certs = x509_cert::Certificate::load_pem_chain(&pem).map_err(|e| {
        anyhow::anyhow!(
            "the CA bundle {} is not PEM certificates: {e}",
            path.display()
        )
    })?;
    if certs.is_empty() {
        bail!("the CA bundle {} holds no certificate", path.display());
    }
    for cert in &certs {
        let ca = cert
            .tbs_certificate()
            .get_extension::<x509_cert::ext::pkix::BasicConstraints>()
            .ok()
            .flatten()
            .is_some_and(|(_, bc)| bc.ca);
        if !ca {
            bail!(
                "the CA bundle {} holds a certificate that is not a CA (no basicConstraints CA:TRUE), subject {}: give the CA that signed the serving certificate, not the certificate itself",
                path.display(),
                cert.tbs_certificate().subject()
            );
        }
    }
    Ok(pem)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One configuration the API server refuses does not stop the others
    /// from being applied; the error names it.
    #[tokio::test]
    async fn a_refused_configuration_does_not_stop_the_others() {
        let mut items = vec![
            json!({"metadata": {"name": "mutating"}}),
            json!({"metadata": {"name": "validating"}}),
            json!({"metadata": {"name": "policy"}}),
        ];
        let mut applied = Vec::new();
        let result = apply_each(&mut items, |item| {
            let name = item["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let refused = name == "mutating";
            if !refused {
                applied.push(name);
            }
            Box::pin(async move {
                match refused {
                    true => bail!("applying MutatingWebhookConfiguration mutating: Invalid"),
                    false => Ok(Refused::new()),
                }
            })
        })
        .await;
        assert_eq!(applied, ["validating", "policy"]);
        let error = result.expect_err("the refusal is reported");
        assert!(error.to_string().contains("mutating: Invalid"), "{error}");
    }

    #[test]
    fn inject_ca_from_takes_a_namespace_and_a_certificate_name() {
        for good in ["ivpol/ivpol-tls", "ns-1/cert.example"] {
            assert_eq!(parse_inject_ca_from(good).expect(good), good);
        }
        for bad in [
            "ivpol",
            "/ivpol-tls",
            "ivpol/",
            "Ivpol/tls",
            "a.b/tls",
            "ivpol/tls/x",
            "ivpol/-tls",
        ] {
            let e = parse_inject_ca_from(bad).expect_err(bad).to_string();
            assert!(e.contains("is not NAMESPACE/CERTIFICATE"), "{bad}: {e}");
        }
    }
}
