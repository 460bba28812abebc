//! `ivpol serve`: the admission webhook server.

use crate::net::auth::Keychain;
use crate::net::policy::{HostPort, NetPolicy};
use crate::net::Net;
use crate::policies;
use crate::runtime::{Pool, Runtime};
use crate::server::{self, ServerConfig};
use anyhow::Result;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:9443")]
    listen: SocketAddr,
    /// Directory (or file) of IVP/NIVP policies; repeatable.
    #[arg(long = "policies", default_value = "policies")]
    policies: Vec<PathBuf>,
    #[command(flatten)]
    component: super::component::ComponentArgs,
    /// Namespace manifests (file or directory) that `namespaceSelector` and
    /// `namespaceObject` read; other namespaces only carry the
    /// `kubernetes.io/metadata.name` label.
    #[arg(long)]
    namespaces: Option<PathBuf>,
    /// Registry the component may reach (HOST[:PORT]); repeatable. Without
    /// any, every public host is allowed and non-public addresses are refused.
    #[arg(long = "allow-registry", value_name = "HOST[:PORT]")]
    allow_registry: Vec<HostPort>,
    /// Registry reached over plain HTTP (and allowed); repeatable.
    #[arg(long = "insecure-registry", value_name = "HOST[:PORT]")]
    insecure_registry: Vec<HostPort>,
    /// Docker config.json with registry credentials (`auths`).
    #[arg(long = "registry-config", value_name = "FILE")]
    registry_config: Option<PathBuf>,
    /// Directory of the registry secrets that policies name in
    /// `credentials.secrets`: `<name>/.dockerconfigjson` (a mounted Secret),
    /// or a `<name>` file holding a docker config or a Secret manifest.
    #[arg(long = "secrets-dir", value_name = "DIR")]
    secrets_dir: Option<PathBuf>,
    /// Extra PEM CA certificates trusted for registry TLS.
    #[arg(long = "registry-ca", value_name = "FILE")]
    registry_ca: Option<PathBuf>,
    /// PEM certificate chain for HTTPS.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key for HTTPS.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
}

pub async fn run(args: ServeArgs) -> Result<()> {
    let component = args.component.bytes()?;
    let keychain = match &args.registry_config {
        Some(p) => Keychain::from_docker_config(p)?,
        None => Keychain::default(),
    };
    let policy = NetPolicy {
        allow: args.allow_registry.clone(),
        insecure: args.insecure_registry.clone(),
    };
    let net = Arc::new(Net::new(
        policy,
        keychain,
        args.secrets_dir.as_deref(),
        args.registry_ca.as_deref(),
    )?);
    let cache_dir = args.component.cache_dir();
    let runtime = Arc::new(Runtime::new(&component, net, cache_dir.as_deref())?);
    let documents = policies::read_all(&args.policies)?;
    let pool = Pool::load(runtime, documents).await?;
    let summary = pool.summary();
    for d in &summary.diagnostics {
        tracing::warn!(source = %d.source, document = d.document, policy = ?d.policy, "policy not loaded: {}", d.message);
    }
    tracing::info!(
        loaded = summary.policies.len(),
        rejected = summary.diagnostics.len(),
        "policies loaded"
    );
    let namespaces = match &args.namespaces {
        Some(p) => policies::read_namespaces(p)?,
        None => Default::default(),
    };
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(server::tls::acceptor(cert, key)?),
        _ => {
            tracing::warn!("no --tls-cert/--tls-key: serving plain HTTP, which the Kubernetes API server will not call");
            None
        }
    };
    let config = ServerConfig {
        listen: args.listen,
        tls,
        namespaces,
    };
    server::serve(config, Arc::new(pool)).await
}
