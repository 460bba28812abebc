//! `credentials.providers: [google]`: Container Registry (`gcr.io`,
//! `*.gcr.io`) and Artifact Registry (`*-docker.pkg.dev`) get an OAuth2
//! access token as the password of `oauth2accesstoken`, as
//! go-containerregistry's Google keychain presents it.
//!
//! The token is Application Default Credentials', through Google's own
//! auth crate: `GOOGLE_APPLICATION_CREDENTIALS` (a service account key,
//! workload identity federation, an authorized user), else the metadata
//! server (GKE Workload Identity; `GCE_METADATA_HOST` overrides its
//! address). The crate keeps the token and refreshes it before it expires.

use crate::net::credential::Credential;
use google_cloud_auth::credentials::{AccessTokenCredentials, Builder};
use std::time::{Duration, Instant};

/// No token request runs longer than this (the request's deadline too).
const TIMEOUT: Duration = Duration::from_secs(10);
/// The scope registries accept.
const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
/// The user a token is presented as.
const USER: &str = "oauth2accesstoken";

/// Whether `host` is one of Google's registries.
pub(super) fn serves(host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    host == "gcr.io"
        || host.ends_with(".gcr.io")
        || host
            .strip_suffix(".pkg.dev")
            .is_some_and(|region| region.ends_with("-docker") && !region.contains('.'))
}

/// The credentials, built once for the process.
async fn credentials() -> Result<&'static AccessTokenCredentials, String> {
    static CREDENTIALS: tokio::sync::OnceCell<Result<AccessTokenCredentials, String>> =
        tokio::sync::OnceCell::const_new();
    let built = CREDENTIALS
        .get_or_init(|| async {
            Builder::default()
                .with_scopes([SCOPE])
                .build_access_token_credentials()
                .map_err(|e| format!("Application Default Credentials: {e}"))
        })
        .await;
    built.as_ref().map_err(Clone::clone)
}

/// An access token of Application Default Credentials (registries and
/// `gcpkms://` keys share it).
pub(in crate::net) async fn access_token() -> Result<String, String> {
    let credentials = credentials().await?;
    let token = credentials
        .access_token()
        .await
        .map_err(|e| format!("access token: {e}"))?;
    Ok(token.token)
}

/// The credential for a Google registry, within `deadline`.
pub(super) async fn credential(deadline: Instant) -> Result<Credential, String> {
    let until = deadline.min(Instant::now() + TIMEOUT);
    let fetch = async {
        Ok(Credential {
            username: USER.to_string(),
            password: access_token().await?,
        })
    };
    let answer = tokio::time::timeout_at(until.into(), fetch)
        .await
        .unwrap_or_else(|_| Err("access token: no answer in time".to_string()));
    crate::metrics::metrics().cloud_fetch("google", answer.is_ok());
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn googles_registries_and_nothing_else() {
        for good in [
            "gcr.io",
            "eu.gcr.io",
            "us-docker.pkg.dev",
            "europe-west1-docker.pkg.dev",
            "GCR.IO",
        ] {
            assert!(serves(good), "{good}");
        }
        for bad in [
            "evilgcr.io",
            "gcr.io.evil.com",
            "pkg.dev",
            "us-maven.pkg.dev",
            "a.b-docker.pkg.dev",
            "ghcr.io",
        ] {
            assert!(!serves(bad), "{bad}");
        }
    }
}
