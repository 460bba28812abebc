//! `credentials.providers`: the cloud keychains Kyverno resolves through
//! go-containerregistry's k8schain. Each provider serves the registry hosts
//! of its cloud only (a provider named for another host is skipped, as in
//! Kyverno), gets a short-lived credential with ivpol's own cloud identity
//! through that cloud's official SDK or identity crate, and keeps it until shortly before it
//! expires, refreshing it in the background meanwhile.
//!
//! `github` needs no call: it is `GITHUB_TOKEN`, a stored credential
//! (`Keychain::github`).

pub(super) mod amazon;
mod azure;
pub(super) mod google;
pub(super) mod kept;

use super::credential::Credential;
use super::entra::Entra;
use std::sync::Arc;
use std::time::Instant;

/// Whether provider `name` serves registry `host` (no port).
pub(crate) fn serves(name: &str, host: &str) -> bool {
    match name {
        "amazon" => amazon::Ecr::parse(host).is_some(),
        "google" => google::serves(host),
        "azure" => azure::scope_for(host).is_some(),
        _ => false,
    }
}

/// The providers that call a cloud, each calling on first use.
pub(crate) struct Providers {
    amazon: amazon::Amazon,
    azure: azure::Azure,
}

impl Providers {
    /// Azure's provider gets Entra tokens from `entra` and exchanges them
    /// through `client`, the host's cloud client.
    pub(crate) fn new(entra: Arc<Entra>, client: reqwest::Client) -> Providers {
        Providers {
            amazon: amazon::Amazon::default(),
            azure: azure::Azure::new(entra, client),
        }
    }

    /// The credential provider `name` gives for `host` (at `port`, when
    /// the image names one); none when it does not serve the host. Why
    /// not, when it serves and fails.
    pub(crate) async fn credential(
        &self,
        name: &str,
        host: &str,
        port: Option<u16>,
        deadline: Instant,
    ) -> Result<Option<Credential>, String> {
        let answer = match name {
            // Boxed: the SDK's futures are deep, and every caller's future
            // would otherwise carry their whole layout.
            "amazon" => match amazon::Ecr::parse(host) {
                Some(ecr) => Box::pin(self.amazon.credential(&ecr, deadline))
                    .await
                    .map(Some),
                None => return Ok(None),
            },
            "google" if google::serves(host) => {
                Box::pin(google::credential(deadline)).await.map(Some)
            }
            "azure" => match azure::scope_for(host) {
                Some(scope) => {
                    let registry = port.map_or_else(|| host.to_string(), |p| format!("{host}:{p}"));
                    Box::pin(self.azure.credential(&registry, scope, deadline))
                        .await
                        .map(Some)
                }
                None => return Ok(None),
            },
            _ => return Ok(None),
        };
        answer.map_err(|why| format!("{name}: {why}"))
    }
}
