//! A double of the Azure services ivpol's host calls, each following the
//! protocol Microsoft documents, over TLS with one self-signed certificate
//! (the CA to trust) for `127.0.0.1`, [`REGISTRY`] and [`VAULT`]:
//!
//! - Entra ID's token endpoint, `POST /{tenant}/oauth2/v2.0/token`, with a
//!   client assertion (workload identity): a Bearer token for the asked
//!   scope when the assertion is the federated token the pod was given,
//!   401 `invalid_client` otherwise. Clients find it through
//!   `AZURE_AUTHORITY_HOST`.
//! - Azure Container Registry: `POST /oauth2/exchange` turns an Entra token
//!   for Resource Manager into a refresh token (a JWT with `exp`);
//!   `GET /oauth2/token` turns Basic `00000000-…:<refresh>` into an access
//!   token; `/v2/…` with that token is handed to the plain registry behind
//!   the double, anything else gets ACR's Bearer challenge.
//! - Key Vault: `GET /keys/{name}[/{version}]?api-version=…` with an Entra
//!   token for Key Vault answers the key as a JWK.

use crate::http_double::{serve_tls, Reply, Request, Response};
use base64::Engine;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The registry's name (resolved to the double with `--resolve`).
pub const REGISTRY: &str = "ivpoltest.azurecr.io";
/// The key vault's name (likewise).
pub const VAULT: &str = "ivpoltest.vault.azure.net";
pub const TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
pub const CLIENT_ID: &str = "04b07795-8ddb-461a-bbee-02f9e1bf7b46";
/// The service account token the pod was given.
pub const FEDERATED: &str = "eyJhbGciOiJSUzI1NiJ9.k8s-service-account.sig";
const NULL_USER: &str = "00000000-0000-0000-0000-000000000000";
const ARM_SCOPE: &str = "https://management.azure.com/.default";
const VAULT_SCOPE: &str = "https://vault.azure.net/.default";
const ACR_ACCESS: &str = "acr-access-token";

type Keys = Arc<Mutex<BTreeMap<String, serde_json::Value>>>;

pub struct Azure {
    pub addr: SocketAddr,
    /// The certificate to trust (`--registry-ca`).
    pub crt: PathBuf,
    /// The requests seen, as `METHOD path`.
    pub seen: Arc<Mutex<Vec<String>>>,
    keys: Keys,
    dir: tempfile::TempDir,
}

impl Azure {
    /// Starts the double, its registry in front of the plain registry at
    /// `registry` (which holds the images).
    pub fn start(registry: &str) -> Azure {
        let dir = tempfile::tempdir().expect("dir");
        let names = vec!["127.0.0.1".into(), REGISTRY.into(), VAULT.into()];
        let cert = rcgen::generate_simple_self_signed(names).expect("cert");
        let (crt, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        std::fs::write(&crt, cert.cert.pem()).expect("cert");
        std::fs::write(&key, cert.key_pair.serialize_pem()).expect("key");
        let behind: SocketAddr = registry.parse().expect("registry address");
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let keys: Keys = Arc::default();
        let (s, k) = (seen.clone(), keys.clone());
        let addr = serve_tls(&crt, &key, move |r| {
            if let Ok(mut seen) = s.lock() {
                seen.push(format!("{} {}", r.method, r.path()));
            }
            route(r, &k, behind)
        });
        Azure {
            addr,
            crt,
            seen,
            keys,
            dir,
        }
    }

    /// The environment of a pod with workload identity (the federated
    /// token `token` in its projected file), pointed at this double.
    pub fn env_with_token(&self, token: &str) -> Vec<(String, String)> {
        let file = self.dir.path().join("azure-identity-token");
        std::fs::write(&file, token).expect("token file");
        vec![
            (
                "AZURE_AUTHORITY_HOST".into(),
                format!("https://{}/", self.addr),
            ),
            ("AZURE_TENANT_ID".into(), TENANT.into()),
            ("AZURE_CLIENT_ID".into(), CLIENT_ID.into()),
            (
                "AZURE_FEDERATED_TOKEN_FILE".into(),
                file.display().to_string(),
            ),
        ]
    }

    /// [`Azure::env_with_token`] with the right token.
    pub fn env(&self) -> Vec<(String, String)> {
        self.env_with_token(FEDERATED)
    }

    /// `host:port` of the double under `name`.
    pub fn named(&self, name: &str) -> String {
        format!("{name}:{}", self.addr.port())
    }

    /// The `--resolve` that dials `name` (at the double's port) here.
    pub fn resolve(&self, name: &str) -> [String; 2] {
        [
            "--resolve".into(),
            format!("{}:127.0.0.1", self.named(name)),
        ]
    }

    /// Key Vault holds key `name`, the P-256 public key `pem`.
    pub fn add_p256_key(&self, name: &str, pem: &str) {
        let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .expect("PEM");
        // A P-256 SubjectPublicKeyInfo ends with the uncompressed point.
        let point = &der[der.len() - 65..];
        assert_eq!(point[0], 4, "an uncompressed P-256 point");
        let b64url = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        let jwk = serde_json::json!({
            "kid": format!("https://{VAULT}/keys/{name}/0a1b2c3d"),
            "kty": "EC-HSM", "crv": "P-256", "key_ops": ["sign", "verify"],
            "x": b64url(&point[1..33]), "y": b64url(&point[33..]),
        });
        self.keys
            .lock()
            .expect("keys")
            .insert(name.to_string(), jwk);
    }
}

fn route(
    r: &Request,
    keys: &Mutex<BTreeMap<String, serde_json::Value>>,
    behind: SocketAddr,
) -> Reply {
    let path = r.path();
    if path == format!("/{TENANT}/oauth2/v2.0/token") {
        return Reply::Answer(entra_token(r));
    }
    match path {
        "/oauth2/exchange" => Reply::Answer(exchange(r)),
        "/oauth2/token" => Reply::Answer(acr_token(r)),
        _ if path.starts_with("/v2") => {
            if r.header("Authorization") == Some(&format!("Bearer {ACR_ACCESS}")) {
                return Reply::Forward(behind);
            }
            let mut challenge = Response::json(401, r#"{"errors":[{"code":"UNAUTHORIZED"}]}"#);
            let host = r.header("Host").unwrap_or(REGISTRY);
            challenge.headers.push((
                "WWW-Authenticate".into(),
                format!("Bearer realm=\"https://{host}/oauth2/token\",service=\"{REGISTRY}\""),
            ));
            Reply::Answer(challenge)
        }
        _ if path.starts_with("/keys/") => Reply::Answer(vault_key(r, keys)),
        _ => Reply::Answer(Response::json(404, "{}")),
    }
}

/// Client credentials with a client assertion (the federated token).
fn entra_token(r: &Request) -> Response {
    let good = r.method == "POST"
        && r.form("grant_type").as_deref() == Some("client_credentials")
        && r.form("client_id").as_deref() == Some(CLIENT_ID)
        && r.form("client_assertion_type").as_deref()
            == Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
        && r.form("client_assertion").as_deref() == Some(FEDERATED);
    if !good {
        return Response::json(
            401,
            r#"{"error": "invalid_client", "error_description": "AADSTS700213: No matching federated identity record found for presented assertion subject."}"#,
        );
    }
    let scope = r.form("scope").unwrap_or_default();
    Response::json(
        200,
        serde_json::json!({"token_type": "Bearer", "expires_in": 3599,
            "ext_expires_in": 3599, "access_token": format!("entra:{scope}")})
        .to_string(),
    )
}

/// ACR's exchange of an Entra token for Resource Manager.
fn exchange(r: &Request) -> Response {
    let good = r.method == "POST"
        && r.form("grant_type").as_deref() == Some("access_token")
        && r.form("service").as_deref() == Some(REGISTRY)
        && r.form("access_token") == Some(format!("entra:{ARM_SCOPE}"));
    if !good {
        return Response::json(
            401,
            r#"{"errors":[{"code":"UNAUTHORIZED","message":"exchange refused"}]}"#,
        );
    }
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("time")
        .as_secs()
        + 3 * 3600;
    let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(serde_json::json!({"exp": exp, "grant_type": "refresh_token"}).to_string());
    Response::json(
        200,
        serde_json::json!({"refresh_token": refresh_token(&claims)}).to_string(),
    )
}

fn refresh_token(claims: &str) -> String {
    format!("eyJhbGciOiJSUzI1NiJ9.{claims}.acr-signature")
}

/// ACR's token endpoint: an access token for the null user's refresh token.
fn acr_token(r: &Request) -> Response {
    let presented = r
        .header("Authorization")
        .and_then(|a| a.strip_prefix("Basic "))
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok());
    let good = presented
        .as_deref()
        .and_then(|p| p.split_once(':'))
        .is_some_and(|(user, token)| {
            user == NULL_USER
                && token.starts_with("eyJhbGciOiJSUzI1NiJ9.")
                && token.ends_with(".acr-signature")
        });
    if !good {
        return Response::json(401, r#"{"errors":[{"code":"UNAUTHORIZED"}]}"#);
    }
    Response::json(200, format!(r#"{{"access_token": "{ACR_ACCESS}"}}"#))
}

/// Key Vault's get-key.
fn vault_key(r: &Request, keys: &Mutex<BTreeMap<String, serde_json::Value>>) -> Response {
    if r.header("Authorization") != Some(&format!("Bearer entra:{VAULT_SCOPE}")) {
        return Response::json(
            401,
            r#"{"error": {"code": "Unauthorized", "message": "AKV10000: Request is missing a Bearer or PoP token."}}"#,
        );
    }
    if r.query("api-version").is_none() {
        return Response::json(
            400,
            r#"{"error": {"code": "MissingApiVersionParameter", "message": "The api-version query parameter is required."}}"#,
        );
    }
    let name = r
        .path()
        .trim_start_matches("/keys/")
        .split('/')
        .next()
        .unwrap_or_default();
    match keys.lock().ok().and_then(|k| k.get(name).cloned()) {
        Some(jwk) => Response::json(
            200,
            serde_json::json!({"key": jwk, "attributes": {"enabled": true}}).to_string(),
        ),
        None => Response::json(
            404,
            format!(
                r#"{{"error": {{"code": "KeyNotFound", "message": "A key with (name/id) {name} was not found in this key vault."}}}}"#
            ),
        ),
    }
}
