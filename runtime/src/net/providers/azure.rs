//! `credentials.providers: [azure]`: Azure Container Registry
//! (`*.azurecr.io`, and the sovereign clouds' `.azurecr.cn`, `.azurecr.us`,
//! `.azurecr.de`), as Kyverno's Azure keychain reaches it: an Entra ID
//! token for the cloud's Resource Manager, exchanged at the registry's
//! `/oauth2/exchange` for a refresh token, which is presented as the
//! password of the null GUID user. The registry then issues its own access
//! tokens for that, as for any Basic credential.

use super::kept::{Expiring, Kept};
use crate::net::credential::Credential;
use crate::net::entra::Entra;
use ivpol_refs::encoding::query_value;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// The user ACR's refresh tokens are presented as.
const USER: &str = "00000000-0000-0000-0000-000000000000";
/// No exchange runs longer than this (the request's deadline too).
const TIMEOUT: Duration = Duration::from_secs(10);

/// Each cloud's registry suffix and the scope of its Resource Manager,
/// whose tokens its registries exchange.
const CLOUDS: [(&str, &str); 4] = [
    (".azurecr.io", "https://management.azure.com/.default"),
    (
        ".azurecr.cn",
        "https://management.chinacloudapi.cn/.default",
    ),
    (
        ".azurecr.us",
        "https://management.usgovcloudapi.net/.default",
    ),
    (
        ".azurecr.de",
        "https://management.microsoftazure.de/.default",
    ),
];

/// The Resource Manager scope for registry `host`, when it is an ACR one.
pub(super) fn scope_for(host: &str) -> Option<&'static str> {
    let host = host.to_ascii_lowercase();
    CLOUDS.iter().find_map(|(suffix, scope)| {
        let name = host.strip_suffix(suffix)?;
        let valid =
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        valid.then_some(*scope)
    })
}

/// The refresh tokens the registries gave, per registry.
pub(super) struct Azure {
    entra: Arc<Entra>,
    client: reqwest::Client,
    tokens: Kept<Credential>,
}

impl Azure {
    pub(super) fn new(entra: Arc<Entra>, client: reqwest::Client) -> Azure {
        Azure {
            entra,
            client,
            tokens: Kept::default(),
        }
    }

    /// The credential for `registry` (`host[:port]`, an ACR host whose
    /// scope is `scope`), kept or exchanged within `deadline`.
    pub(super) async fn credential(
        &self,
        registry: &str,
        scope: &'static str,
        deadline: Instant,
    ) -> Result<Credential, String> {
        let (entra, client) = (self.entra.clone(), self.client.clone());
        let registry = registry.to_ascii_lowercase();
        let key = registry.clone();
        self.tokens
            .get(&key, move || async move {
                let until = deadline.min(Instant::now() + TIMEOUT);
                let exchange = exchange(&entra, &client, &registry, scope);
                let answer = tokio::time::timeout_at(until.into(), exchange)
                    .await
                    .unwrap_or_else(|_| Err(format!("{registry}: no answer in time")));
                crate::metrics::metrics().cloud_fetch("azure", answer.is_ok());
                answer
            })
            .await
    }
}

/// An Entra token for `scope`, exchanged at `registry`.
async fn exchange(
    entra: &Entra,
    client: &reqwest::Client,
    registry: &str,
    scope: &str,
) -> Result<Expiring<Credential>, String> {
    let aad = entra.token(scope).await?;
    let service = registry.split(':').next().unwrap_or(registry);
    let mut form = format!(
        "grant_type=access_token&service={}&access_token={}",
        query_value(service),
        query_value(&aad.token)
    );
    if let Ok(tenant) = std::env::var("AZURE_TENANT_ID") {
        form.push_str(&format!("&tenant={}", query_value(&tenant)));
    }
    let what = format!("ACR token exchange at {registry}");
    let request = client
        .post(format!("https://{registry}/oauth2/exchange"))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(form);
    let doc = crate::net::cloud::json(request, &what).await?;
    let refresh = doc["refresh_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| format!("{what}: the answer holds no refresh_token"))?;
    // The refresh token is a JWT; without a readable `exp`, it is kept
    // no longer than the Entra token it came from.
    let expires = jwt_expiry(refresh).unwrap_or(aad.expires);
    Ok(Expiring {
        value: Credential {
            username: USER.to_string(),
            password: refresh.to_string(),
        },
        expires,
    })
}

/// The `exp` claim of a JWT, read without verifying it (the registry
/// verifies; this only says when to ask again).
fn jwt_expiry(jwt: &str) -> Option<SystemTime> {
    use base64::Engine;
    let payload = jwt.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let exp = claims["exp"].as_u64()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(exp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acr_hosts_of_each_cloud_and_nothing_else() {
        assert_eq!(
            scope_for("team.azurecr.io"),
            Some("https://management.azure.com/.default")
        );
        assert_eq!(
            scope_for("Team.AzureCR.cn"),
            Some("https://management.chinacloudapi.cn/.default")
        );
        assert!(scope_for("gov-1.azurecr.us").is_some());
        for bad in [
            "azurecr.io",
            ".azurecr.io",
            "team.azurecr.io.evil.com",
            "a.b.azurecr.io",
            "teamazurecr.io",
            "ghcr.io",
        ] {
            assert_eq!(scope_for(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_refresh_tokens_expiry_is_its_exp_claim() {
        use base64::Engine;
        let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"exp": 2000000000, "grant_type": "refresh_token"}"#);
        let jwt = format!("e30.{claims}.sig");
        assert_eq!(
            jwt_expiry(&jwt),
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(2_000_000_000))
        );
        assert_eq!(jwt_expiry("opaque"), None);
        assert_eq!(jwt_expiry("a.!!!.c"), None);
    }
}
