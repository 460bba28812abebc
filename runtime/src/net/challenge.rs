//! Registry auth challenges: the Authorization that answers a 401, from
//! the credential for the registry and, for Bearer, a token fetched from
//! the realm (under the same policy) and kept.

use super::auth::{Keychain, TokenKey};
use super::{credential, Net, Outgoing};
use bytes::Bytes;
use http::header::WWW_AUTHENTICATE;
use http_body_util::BodyExt;
use ivpol_refs::registry_auth::{self, Challenge};
use std::time::{Duration, Instant};

impl Net {
    /// The Authorization header answering a 401's challenge, if we can.
    pub(super) async fn authorization(
        &self,
        resp: &http::Response<hyper::body::Incoming>,
        req: &Outgoing<'_>,
        secrets: Option<&Keychain>,
        host_keychain: bool,
        deadline: Instant,
    ) -> Result<Option<String>, String> {
        let Some(header) = resp
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|h| h.to_str().ok())
        else {
            return Ok(None);
        };
        let Some(challenge) = registry_auth::parse_challenge(header) else {
            return Ok(None);
        };
        // A policy's own secrets win over the host-wide --registry-config,
        // which serves a namespaced policy only when the operator says so.
        let (host, port) = (req.uri.host().unwrap_or_default(), req.port);
        let repository = repository_of(req.uri.path());
        let credential = self
            .credential(host, port, repository, secrets, host_keychain, deadline)
            .await?;
        let credential = credential.as_ref();
        Ok(match challenge {
            Challenge::Basic => credential.map(|c| c.basic_header()),
            Challenge::Bearer {
                realm,
                service,
                scope,
            } => {
                // Tokens obtained with different credentials are never
                // shared: the key holds a hash of the whole credential.
                let key = TokenKey {
                    realm: realm.clone(),
                    service: service.clone(),
                    scope: scope.clone(),
                    credential: credential.map(|c| c.id()).unwrap_or_default(),
                };
                if let Some(t) = self.tokens.get(&key) {
                    return Ok(Some(format!("Bearer {t}")));
                }
                let Some((token, lifetime)) = self
                    .fetch_token(&realm, &service, &scope, credential, deadline)
                    .await
                else {
                    return Ok(None);
                };
                self.tokens.put(key, token.clone(), lifetime);
                Some(format!("Bearer {token}"))
            }
        })
    }

    async fn fetch_token(
        &self,
        realm: &str,
        service: &str,
        scope: &str,
        credential: Option<&credential::Credential>,
        deadline: Instant,
    ) -> Option<(String, Duration)> {
        let realm_uri: http::Uri = realm.parse().ok()?;
        // The token endpoint is a network destination like any other.
        if let Err(why) = self.routed(&realm_uri) {
            tracing::warn!("token realm {realm} refused by the network policy: {why}");
            return None;
        }
        let url = registry_auth::token_url(realm, service, scope);
        let uri: http::Uri = url.parse().ok()?;
        let mut headers = http::HeaderMap::new();
        headers.insert(
            http::header::ACCEPT,
            http::HeaderValue::from_static("application/json"),
        );
        let auth = credential.map(|c| c.basic_header());
        let req = Outgoing {
            method: &http::Method::GET,
            uri: &uri,
            headers: &headers,
            body: Bytes::new(),
            port: realm_uri.port_u16(),
        };
        let resp = self.send_once(&req, auth, deadline).await.ok()?;
        if !resp.status().is_success() {
            tracing::warn!("token endpoint {realm} answered {}", resp.status());
            return None;
        }
        let limited =
            http_body_util::Limited::new(resp.into_body(), registry_auth::MAX_TOKEN_ANSWER_BYTES);
        let body = tokio::time::timeout_at(deadline.into(), limited.collect())
            .await
            .ok()?
            .ok()?
            .to_bytes();
        registry_auth::parse_token_response(&body)
            .map_err(|why| tracing::warn!("token endpoint {realm}: {why}"))
            .ok()
    }
}

/// The repository a registry API path is about
/// (`/v2/<repository>/{manifests,blobs,tags,referrers}/…`).
pub(super) fn repository_of(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/v2/")?;
    ["/manifests/", "/blobs/", "/tags/", "/referrers/"]
        .iter()
        .filter_map(|marker| rest.rfind(marker).map(|i| &rest[..i]))
        .max_by_key(|r| r.len())
}
