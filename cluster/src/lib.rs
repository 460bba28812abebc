//! `ivpol serve --kubernetes`: the cluster as a host capability.
//!
//! The component never talks to the API server. The host watches what the
//! operator granted and hands the component plain, read-only data:
//!
//! - ImageValidatingPolicies, NamespacedImageValidatingPolicies and
//!   PolicyExceptions, as policy documents ([`policies`]); a change reloads
//!   the policy set as a file change does (`live.rs`);
//! - Namespaces, looked up per request for `namespaceSelector` and
//!   `namespaceObject`;
//! - the registry Secrets loaded policies name, fetched by name
//!   ([`secrets`]), never listed.
//!
//! Nothing serves before the first full list of policies and namespaces
//! has arrived: an empty policy set would admit everything.
//!
//! `ivpol-cluster` also owns the live policy set ([`live`]: the documents
//! read from files and the cluster, tenants' [`budget`]s, generations
//! swapped in on reload) and what the leader writes back ([`writers`]:
//! webhook configurations and policy statuses, both as the component words
//! them). Over `ivpol-runtime` only; the server and the reports sit above
//! it (docs/architecture.md, "Crates").

// Public items are the ones the crates above use; the rest is `pub(crate)`.
#![warn(unreachable_pub)]

pub mod budget;
pub mod live;

pub mod healing;
mod kept;
pub mod leader;
mod policies;
mod refused;
mod secrets;
pub mod writers;

pub use secrets::ClusterSecrets;

use anyhow::{Context, Result};
use clap::Args;
use futures_util::StreamExt;
use ivpol_runtime::policies::Document;
use k8s_openapi::api::core::v1::Namespace;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// The flags of `serve` that reach the cluster.
#[derive(Args, Clone, Default)]
pub struct ClusterArgs {
    /// Read policies, PolicyExceptions, Namespaces and registry Secrets from
    /// the Kubernetes API (in-cluster configuration, or --kubeconfig).
    #[arg(long)]
    pub kubernetes: bool,
    /// A kubeconfig file to reach the API server with (implies
    /// --kubernetes); its context's namespace is ivpol's own.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Let policies read this resource with `resource.get` and
    /// `resource.list` (read-only, cached for a few seconds): `<plural>`
    /// for the core group (`configmaps`), `<plural>.<group>` otherwise;
    /// repeatable. Nothing is granted by default.
    #[arg(long = "grant-resource", value_name = "RESOURCE")]
    pub grant_resource: Vec<String>,
}

/// A connection to the cluster and what ivpol watches in it.
pub struct Cluster {
    /// The namespace ivpol runs in: cluster policies' Secrets live here.
    pub own_namespace: String,
    /// The client every watch and fetch goes through, for the writers too.
    pub client: Client,
    policies: policies::PolicyWatch,
    namespaces: Store<Namespace>,
    /// The registry Secrets that loaded policies name.
    pub secrets: Arc<ClusterSecrets>,
    /// What `--grant-resource` lets policies read.
    pub resources: Arc<ClusterResources>,
    /// Notified on every change of a policy or exception.
    pub changed: Arc<Notify>,
}

impl Cluster {
    /// Connects and starts watching, if asked to; waits for the first
    /// full list of everything watched.
    pub async fn connect(args: &ClusterArgs) -> Result<Option<Arc<Cluster>>> {
        if !args.kubernetes && args.kubeconfig.is_none() {
            return Ok(None);
        }
        let client = client(args).await?;
        let own_namespace = client.default_namespace().to_string();
        let changed = Arc::new(Notify::new());
        let policies = policies::PolicyWatch::start(&client, changed.clone()).await?;
        let namespaces = watch_namespaces(&client);
        let cluster = Cluster {
            client: client.clone(),
            secrets: Arc::new(ClusterSecrets::new(client.clone(), own_namespace.clone())),
            resources: Arc::new(ClusterResources::new(
                client.clone(),
                args.grant_resource.clone(),
            )),
            own_namespace,
            policies,
            namespaces,
            changed,
        };
        cluster.wait_synced().await;
        tracing::info!(namespace = %cluster.own_namespace, "watching the cluster's policies and namespaces");
        Ok(Some(Arc::new(cluster)))
    }

    /// The policy documents the cluster holds now.
    pub fn documents(&self) -> Vec<Document> {
        self.policies.documents()
    }

    /// The ImageValidatingPolicies and NamespacedImageValidatingPolicies the
    /// cluster holds now (not the exceptions), for their status.
    pub fn policy_objects(&self) -> Vec<(kube::api::ApiResource, Arc<kube::api::DynamicObject>)> {
        self.policies.policy_objects()
    }

    /// The Namespace object `name` as JSON, if the watch has seen it.
    pub fn namespace_object(&self, name: &str) -> Option<String> {
        if name.is_empty() {
            return None;
        }
        let ns = self.namespaces.get(&ObjectRef::new(name))?;
        serde_json::to_string(ns.as_ref()).ok()
    }

    async fn wait_synced(&self) {
        let waiting = async {
            self.policies.wait_synced().await;
            let _ = self.namespaces.wait_until_ready().await;
        };
        tokio::pin!(waiting);
        loop {
            tokio::select! {
                _ = &mut waiting => return,
                _ = tokio::time::sleep(Duration::from_secs(10)) => {
                    tracing::warn!("still waiting for the first list of policies and namespaces from the API server; not serving yet");
                }
            }
        }
    }
}

/// The client: from --kubeconfig, else in-cluster (or the usual
/// KUBECONFIG inference).
pub async fn client(args: &ClusterArgs) -> Result<Client> {
    let config = match &args.kubeconfig {
        Some(path) => {
            let file = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(file, &Default::default())
                .await
                .with_context(|| format!("using {}", path.display()))?
        }
        None => kube::Config::infer()
            .await
            .context("finding the in-cluster Kubernetes configuration")?,
    };
    Client::try_from(config).context("building the Kubernetes client")
}

/// A reflector of every Namespace (names and labels are what admission
/// needs; a cluster's namespaces are few).
fn watch_namespaces(client: &Client) -> Store<Namespace> {
    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(
        writer,
        watcher(
            Api::<Namespace>::all(client.clone()),
            watcher::Config::default(),
        ),
    )
    .default_backoff();
    tokio::spawn(drive(stream, "namespaces", None));
    reader
}

/// Runs a watch stream for good, logging its errors (the backoff retries
/// them) and notifying `changed` of every event.
async fn drive<S, K>(stream: S, what: &'static str, changed: Option<Arc<Notify>>)
where
    S: futures_util::Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
{
    futures_util::pin_mut!(stream);
    while let Some(event) = stream.next().await {
        match event {
            Ok(_) => {
                if let Some(changed) = &changed {
                    changed.notify_one();
                }
            }
            Err(e) => tracing::warn!("watching {what}: {e} (retrying)"),
        }
    }
}

/// The cluster's webhook configurations of `kind`
/// (`MutatingWebhookConfiguration` or `ValidatingWebhookConfiguration`).
pub fn webhook_configurations(client: &Client, kind: &str) -> Api<kube::api::DynamicObject> {
    let plural = format!("{}s", kind.to_ascii_lowercase());
    let resource = api_resource("admissionregistration.k8s.io/v1", kind, &plural);
    Api::all_with(client.clone(), &resource)
}

pub(crate) use ivpol_runtime::object_name::is_object_name;
use ivpol_runtime::resources::{api_resource, ClusterResources};

#[cfg(test)]
mod tests {
    use super::api_resource;

    #[test]
    fn api_versions_split_into_group_and_version() {
        let core = api_resource("v1", "ConfigMap", "configmaps");
        assert_eq!((core.group.as_str(), core.version.as_str()), ("", "v1"));
        let apps = api_resource("apps/v1", "Deployment", "deployments");
        assert_eq!((apps.group.as_str(), apps.version.as_str()), ("apps", "v1"));
    }
}
