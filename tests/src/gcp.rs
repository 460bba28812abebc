//! A double of the GCE/GKE metadata server's token endpoint, as Google
//! documents it: `GET /computeMetadata/v1/instance/service-accounts/default/token`
//! with `Metadata-Flavor: Google` answers
//! `{"access_token": …, "expires_in": …, "token_type": "Bearer"}` (and
//! carries `Metadata-Flavor: Google` back); without the header, 403.
//! Clients find it through `GCE_METADATA_HOST`.

use crate::http_double::{serve, Request, Response};
use std::sync::{Arc, Mutex};

const TOKEN_PATH: &str = "/computeMetadata/v1/instance/service-accounts/default/token";

pub struct Metadata {
    /// `host:port`, as `GCE_METADATA_HOST` takes it.
    pub host: String,
    /// The paths (with queries) asked for.
    pub seen: Arc<Mutex<Vec<String>>>,
}

impl Metadata {
    /// Hands out `token`.
    pub fn start(token: &str) -> Metadata {
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let (s, t) = (seen.clone(), token.to_string());
        let addr = serve(move |r| token_answer(r, &s, &t));
        Metadata {
            host: addr.to_string(),
            seen,
        }
    }

    /// The environment that points Google's auth libraries here, and
    /// nowhere else (no credentials file, no gcloud configuration).
    pub fn env(&self, home: &std::path::Path) -> Vec<(String, String)> {
        vec![
            ("GCE_METADATA_HOST".into(), self.host.clone()),
            ("HOME".into(), home.display().to_string()),
            (
                "CLOUDSDK_CONFIG".into(),
                home.join("gcloud").display().to_string(),
            ),
        ]
    }
}

fn token_answer(r: &Request, seen: &Mutex<Vec<String>>, token: &str) -> Response {
    if let Ok(mut s) = seen.lock() {
        s.push(r.target.clone());
    }
    let mut answer = match (r.header("Metadata-Flavor"), r.path()) {
        (Some("Google"), TOKEN_PATH) => Response::json(
            200,
            serde_json::json!({"access_token": token, "expires_in": 3599, "token_type": "Bearer"})
                .to_string(),
        ),
        (Some("Google"), _) => Response::json(404, "not found"),
        _ => Response::json(403, "Missing Metadata-Flavor:Google header."),
    };
    answer
        .headers
        .push(("Metadata-Flavor".into(), "Google".into()));
    answer
}

/// A double of Cloud KMS's REST API (`cloudkms.googleapis.com/v1`), as
/// Google documents it: `cryptoKeyVersions.list` (with `filter`) and
/// `cryptoKeyVersions.getPublicKey`, each with `Authorization: Bearer`
/// the metadata double's token; 401 `UNAUTHENTICATED` otherwise, 404
/// `NOT_FOUND` for a key it does not hold. Clients find it through
/// `CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDKMS`.
pub struct CloudKms {
    /// The endpoint, `http://127.0.0.1:PORT/`.
    pub endpoint: String,
    keys: Versions,
}

/// Each key's versions: (PEM, enabled), numbered from 1.
type Versions = Arc<Mutex<std::collections::BTreeMap<String, Vec<(String, bool)>>>>;

impl CloudKms {
    pub fn start(token: &str) -> CloudKms {
        let keys: Versions = Arc::default();
        let (k, t) = (keys.clone(), token.to_string());
        let addr = serve(move |r| kms_answer(r, &k, &t));
        CloudKms {
            endpoint: format!("http://{addr}/"),
            keys,
        }
    }

    /// Adds a version of `key` (`projects/…/cryptoKeys/K`) with public key
    /// `pem`, enabled or not.
    pub fn add_version(&self, key: &str, pem: &str, enabled: bool) {
        let mut keys = self.keys.lock().expect("keys");
        keys.entry(key.to_string())
            .or_default()
            .push((pem.to_string(), enabled));
    }

    /// The environment that points ivpol's Cloud KMS client here.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![(
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDKMS".into(),
            self.endpoint.clone(),
        )]
    }
}

fn kms_answer(r: &Request, keys: &Versions, token: &str) -> Response {
    if r.header("Authorization") != Some(&format!("Bearer {token}")) {
        return Response::json(
            401,
            r#"{"error": {"code": 401, "message": "Request had invalid authentication credentials.", "status": "UNAUTHENTICATED"}}"#,
        );
    }
    let path = r.path().trim_start_matches("/v1/");
    let keys = keys.lock().expect("keys");
    let not_found = || {
        Response::json(
            404,
            serde_json::json!({"error": {"code": 404, "message": format!("{path} not found."), "status": "NOT_FOUND"}})
                .to_string(),
        )
    };
    if let Some(key) = path.strip_suffix("/cryptoKeyVersions") {
        let Some(versions) = keys.get(key) else {
            return not_found();
        };
        let only_enabled = r.query("filter").as_deref() == Some("state=ENABLED");
        let listed: Vec<_> = (versions.iter().enumerate())
            .filter(|(_, (_, enabled))| *enabled || !only_enabled)
            .map(|(i, (_, enabled))| {
                let state = if *enabled { "ENABLED" } else { "DISABLED" };
                serde_json::json!({"name": format!("{key}/cryptoKeyVersions/{}", i + 1), "state": state})
            })
            .collect();
        return Response::json(
            200,
            serde_json::json!({"cryptoKeyVersions": listed, "totalSize": listed.len()}).to_string(),
        );
    }
    let found = path.strip_suffix("/publicKey").and_then(|version| {
        let (key, number) = version.split_once("/cryptoKeyVersions/")?;
        let index = number.parse::<usize>().ok()?.checked_sub(1)?;
        let (pem, _) = keys.get(key)?.get(index)?;
        Some(serde_json::json!({"pem": pem, "algorithm": "EC_SIGN_P256_SHA256", "name": version}))
    });
    match found {
        Some(answer) => Response::json(200, answer.to_string()),
        None => not_found(),
    }
}
