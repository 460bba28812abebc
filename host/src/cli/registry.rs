//! The registry flags every registry-facing subcommand shares (`serve`,
//! `push`, `pull`, `inspect`, and `--component oci://`), and the [`Net`]
//! they configure: one network policy, one credential source, one set of
//! TLS roots for the component's calls and the host's own.

use anyhow::Result;
use clap::Args;
use ivpol_runtime::net::auth::Keychain;
use ivpol_runtime::net::policy::{HostPort, NetPolicy};
use ivpol_runtime::net::Net;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Args, Clone, Default)]
pub(super) struct RegistryArgs {
    /// Registry that may be reached (HOST[:PORT]); repeatable. Without
    /// any, every public host is allowed and non-public addresses are refused.
    #[arg(long = "allow-registry", value_name = "HOST[:PORT]")]
    pub allow_registry: Vec<HostPort>,
    /// OCSP or CRL endpoint (HOST[:PORT]) that Notary certificates may name
    /// for their revocation status; repeatable. Given, only these are
    /// asked; without any, every public host is, unless --allow-registry
    /// restricts the network (then none is, and revocable certificates
    /// fail as unknown).
    #[arg(long = "allow-revocation", value_name = "HOST[:PORT]")]
    pub allow_revocation: Vec<HostPort>,
    /// Registry reached over plain HTTP (and allowed); repeatable.
    #[arg(long = "insecure-registry", value_name = "HOST[:PORT]")]
    pub insecure_registry: Vec<HostPort>,
    /// Dial HOST:PORT at ADDR (comma-separated for several), as curl's
    /// --resolve, instead of what DNS answers; repeatable. The addresses
    /// obey the network policy as looked-up ones do.
    #[arg(long = "resolve", value_name = "HOST:PORT:ADDR")]
    pub resolve: Vec<ivpol_runtime::net::pinned::PinnedAddress>,
    /// Docker config.json with registry credentials: `auths`, and the
    /// credential helpers `credHelpers` and `credsStore` name
    /// (`docker-credential-<name>` on PATH).
    #[arg(long = "registry-config", value_name = "FILE")]
    pub registry_config: Option<PathBuf>,
    /// A credential helper a policy's registry Secret may name in its
    /// `credHelpers` or `credsStore` (repeatable). None by default: a
    /// helper runs with ivpol's own identity (cloud role, keyring), which a
    /// policy author must not borrow unless the operator says so.
    #[arg(long = "allow-credential-helper", value_name = "NAME")]
    pub allow_credential_helper: Vec<String>,
    /// Let the --registry-config credentials serve namespaced policies
    /// too; by default they serve cluster policies only, so that a
    /// tenant's NIVP cannot read the private images they reach.
    #[arg(long = "registry-config-for-namespaced")]
    pub registry_config_for_namespaced: bool,
    /// The most requests of the component in flight to one registry host
    /// at once; more wait for a turn within their deadline, so that one
    /// slow registry cannot hold every connection.
    #[arg(long = "registry-inflight", default_value_t = ivpol_runtime::net::REGISTRY_INFLIGHT, value_name = "N", value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u16).range(1..=1024), usize::from))]
    pub registry_inflight: usize,
    /// The kubelet's CredentialProviderConfig (`kubelet.config.k8s.io/v1`):
    /// its plugins give credentials for the images their `matchImages`
    /// match, after --registry-config, as on the node.
    #[arg(
        long = "image-credential-provider-config",
        value_name = "FILE",
        requires = "plugin_dir"
    )]
    pub plugin_config: Option<PathBuf>,
    /// The directory of those plugins' executables.
    #[arg(
        long = "image-credential-provider-bin-dir",
        value_name = "DIR",
        requires = "plugin_config"
    )]
    pub plugin_dir: Option<PathBuf>,
    /// Extra PEM CA certificates trusted for registry TLS.
    #[arg(long = "registry-ca", value_name = "FILE")]
    pub registry_ca: Option<PathBuf>,
    /// A directory policies' `tuf.root.path` files may be read from (a
    /// mounted ConfigMap of TUF roots); repeatable. None by default: the
    /// host reads no file a policy names.
    #[arg(long = "trust-root-dir", value_name = "DIR")]
    pub trust_root_dir: Vec<PathBuf>,
}

impl RegistryArgs {
    /// The network capability these flags describe; `secrets_dir` is where
    /// policies' `credentials.secrets` are read (serve only).
    pub(super) fn net(&self, secrets_dir: Option<&Path>) -> Result<Arc<Net>> {
        let keychain = match &self.registry_config {
            Some(p) => Keychain::from_docker_config(p)?,
            None => Keychain::default(),
        };
        let policy = NetPolicy {
            allow: self.allow_registry.clone(),
            insecure: self.insecure_registry.clone(),
            pins: self.resolve.clone(),
            revocation: self.allow_revocation.clone(),
        };
        let net = Net::new(policy, keychain, secrets_dir, self.registry_ca.as_deref())?;
        if self.registry_config_for_namespaced {
            net.share_keychain_with_tenants();
        }
        net.limit_inflight_per_registry(self.registry_inflight);
        net.allow_secret_credential_helpers(self.allow_credential_helper.clone());
        net.allow_trust_root_dirs(&self.trust_root_dir)?;
        if let (Some(config), Some(dir)) = (&self.plugin_config, &self.plugin_dir) {
            net.use_credential_plugins(ivpol_runtime::net::kubelet::Plugins::load(config, dir)?);
        }
        Ok(Arc::new(net))
    }
}
