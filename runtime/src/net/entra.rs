//! Microsoft Entra ID access tokens, for `credentials.providers: [azure]`
//! and `azurekms://` keys, through Microsoft's identity crate (which keeps
//! each token until shortly before it expires). The credential is chosen
//! from the environment as Kyverno's Azure keychain chooses it:
//!
//! - `AZURE_FEDERATED_TOKEN_FILE`: workload identity (AKS), with
//!   `AZURE_CLIENT_ID` and `AZURE_TENANT_ID`;
//! - else `AZURE_CLIENT_SECRET`: a service principal's secret, with the same;
//! - else managed identity (IMDS; `AZURE_CLIENT_ID` names a user-assigned one).
//!
//! `AZURE_AUTHORITY_HOST` names a sovereign cloud's authority. Every call
//! goes through the host's cloud client (`cloud.rs`), not the crate's own.

use azure_core::credentials::TokenCredential;
use azure_core::http::{ClientOptions, RetryOptions, Transport};
use azure_identity::{
    ClientSecretCredential, ClientSecretCredentialOptions, ManagedIdentityCredential,
    ManagedIdentityCredentialOptions, UserAssignedId, WorkloadIdentityCredential,
    WorkloadIdentityCredentialOptions,
};
use std::sync::Arc;
use std::time::SystemTime;

/// An access token and when it expires.
pub(crate) struct Token {
    pub token: String,
    pub expires: SystemTime,
}

/// The host's Entra identity, built on first use.
pub(crate) struct Entra {
    client: reqwest::Client,
    credential: tokio::sync::OnceCell<Result<Arc<dyn TokenCredential>, String>>,
}

impl Entra {
    pub(crate) fn new(client: reqwest::Client) -> Entra {
        Entra {
            client,
            credential: tokio::sync::OnceCell::new(),
        }
    }

    /// A token for `scope` (`https://<resource>/.default`).
    pub(crate) async fn token(&self, scope: &str) -> Result<Token, String> {
        let credential = self
            .credential
            .get_or_init(|| async { credential(&self.client).map_err(|e| first_line(&e)) })
            .await
            .as_ref()
            .map_err(|why| format!("Entra ID credential: {why}"))?;
        let token = credential
            .get_token(&[scope], None)
            .await
            .map_err(|e| format!("Entra ID token for {scope}: {}", first_line(&e)))?;
        Ok(Token {
            token: token.token.secret().to_string(),
            expires: token.expires_on.into(),
        })
    }
}

/// The credential the environment configures (see the module's text).
fn credential(client: &reqwest::Client) -> azure_core::Result<Arc<dyn TokenCredential>> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let client_options = ClientOptions {
        transport: Some(Transport::new(Arc::new(client.clone()))),
        // A failure denies now and is tried again by the next request; the
        // crate's own retries would spend the request's deadline.
        retry: RetryOptions::none(),
        ..ClientOptions::default()
    };
    if var("AZURE_FEDERATED_TOKEN_FILE").is_some() {
        let mut options = WorkloadIdentityCredentialOptions::default();
        options.credential_options.client_options = client_options;
        return Ok(WorkloadIdentityCredential::new(Some(options))?);
    }
    if let Some(secret) = var("AZURE_CLIENT_SECRET") {
        let tenant = var("AZURE_TENANT_ID").unwrap_or_default();
        let client_id = var("AZURE_CLIENT_ID").unwrap_or_default();
        let options = ClientSecretCredentialOptions { client_options };
        return Ok(ClientSecretCredential::new(
            &tenant,
            client_id,
            secret.into(),
            Some(options),
        )?);
    }
    let options = ManagedIdentityCredentialOptions {
        user_assigned_id: var("AZURE_CLIENT_ID").map(UserAssignedId::ClientId),
        client_options,
    };
    Ok(ManagedIdentityCredential::new(Some(options))?)
}

/// An Azure error's first line (the crate appends troubleshooting links).
fn first_line(e: &azure_core::Error) -> String {
    let text = e.to_string();
    text.lines().next().unwrap_or_default().trim().to_string()
}
