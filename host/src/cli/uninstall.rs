//! `ivpol uninstall --kubernetes`: removes the webhook configurations
//! ivpol registered, so that no `failurePolicy: Fail` webhook is left
//! calling a Service that is about to be deleted (which would block every
//! matching request in the cluster).
//!
//! It first breaks the glass on ivpol's Namespace (`ivpol.io/break-glass`),
//! so that a leader still running does not restore what is deleted, then
//! deletes every Mutating and ValidatingWebhookConfiguration carrying
//! ivpol's `app.kubernetes.io/managed-by` label. Run it before deleting the
//! Deployment; it is safe to run twice.

use anyhow::{Context, Result};
use clap::Args;
use ivpol_cluster::{client, healing::BREAK_GLASS, webhook_configurations, ClusterArgs};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, Client};
use std::path::PathBuf;

/// The label every configuration ivpol registers carries.
const MANAGED_BY: &str = "app.kubernetes.io/managed-by=ivpol";

#[derive(Args)]
pub(super) struct UninstallArgs {
    /// Reach the cluster with the in-cluster configuration (or the usual
    /// KUBECONFIG inference).
    #[arg(long, required_unless_present = "kubeconfig")]
    kubernetes: bool,
    /// A kubeconfig file to reach the API server with.
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// ivpol's Namespace, where the break-glass annotation goes (default:
    /// the kubeconfig context's namespace).
    #[arg(long, value_name = "NS")]
    namespace: Option<String>,
}

pub(super) async fn run(args: UninstallArgs) -> Result<()> {
    let cluster = ClusterArgs {
        kubernetes: true,
        kubeconfig: args.kubeconfig,
        ..ClusterArgs::default()
    };
    let client = client(&cluster).await?;
    let namespace = args
        .namespace
        .unwrap_or_else(|| client.default_namespace().to_string());
    break_glass(&client, &namespace).await?;
    let mut deleted = 0;
    for kind in [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ] {
        deleted += delete_managed(&client, kind).await?;
    }
    eprintln!(
        "ivpol: deleted {deleted} webhook configuration(s); now delete the Deployment (for example `kubectl delete -f deploy/`)"
    );
    Ok(())
}

/// Stops a running leader from restoring the configurations; a Namespace
/// that is gone already needs nothing.
async fn break_glass(client: &Client, namespace: &str) -> Result<()> {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let patch = serde_json::json!({"metadata": {"annotations": {BREAK_GLASS: "true"}}});
    match api
        .patch(namespace, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => {
            eprintln!("ivpol: annotated namespace {namespace} {BREAK_GLASS}=true (no more webhook writes)");
            Ok(())
        }
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(e) => {
            Err(e).with_context(|| format!("annotating namespace {namespace} with {BREAK_GLASS}"))
        }
    }
}

/// Deletes every configuration of `kind` that carries ivpol's label; how
/// many.
async fn delete_managed(client: &Client, kind: &str) -> Result<usize> {
    let api = webhook_configurations(client, kind);
    let listed = api
        .list(&ListParams::default().labels(MANAGED_BY))
        .await
        .with_context(|| format!("listing the {kind}s labelled {MANAGED_BY}"))?;
    let mut deleted = 0;
    for object in listed.items {
        let name = object.metadata.name.unwrap_or_default();
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => continue,
            Err(e) => return Err(e).with_context(|| format!("deleting {kind} {name}")),
        }
        eprintln!("ivpol: deleted {kind} {name}");
        deleted += 1;
    }
    Ok(deleted)
}
