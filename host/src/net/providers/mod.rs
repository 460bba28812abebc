//! `credentials.providers`: the cloud keychains Kyverno resolves through
//! go-containerregistry's k8schain. Each provider serves the registry hosts
//! of its cloud only (a provider named for another host is skipped, as in
//! Kyverno), gets a short-lived credential with ivpol's own cloud identity
//! through that cloud's official SDK, and keeps it until shortly before it
//! expires, refreshing it in the background meanwhile.
//!
//! `github` needs no call: it is `GITHUB_TOKEN`, a stored credential
//! (`Keychain::github`).

pub(super) mod amazon;
mod google;
pub(super) mod kept;

use super::auth::Credential;
use std::time::Instant;

/// Whether provider `name` serves registry `host` (no port).
pub(crate) fn serves(name: &str, host: &str) -> bool {
    match name {
        "amazon" => amazon::Ecr::parse(host).is_some(),
        "google" => google::serves(host),
        _ => false,
    }
}

/// The providers that call a cloud, created on first use.
#[derive(Default)]
pub(crate) struct Providers {
    amazon: amazon::Amazon,
}

impl Providers {
    /// The credential provider `name` gives for `host`; none when it does
    /// not serve the host. Why not, when it serves and fails.
    pub(crate) async fn credential(
        &self,
        name: &str,
        host: &str,
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
            _ => return Ok(None),
        };
        answer.map_err(|why| format!("{name}: {why}"))
    }
}
