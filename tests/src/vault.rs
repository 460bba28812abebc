//! A double of Vault's transit read-key endpoint, as its HTTP API documents
//! it: `GET /v1/<mount>/keys/<name>` with `X-Vault-Token`, answering
//! `{"data": {"latest_version": N, "keys": {"N": {"public_key": PEM}}}}`,
//! 403 `permission denied` for a wrong token, 404 for an unknown key.

use crate::http_double::{serve, Request, Response};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The transit engine's mount the double serves.
pub const MOUNT: &str = "transit";

type Keys = Arc<Mutex<BTreeMap<String, Vec<String>>>>;

pub struct Vault {
    pub addr: String,
    pub token: String,
    keys: Keys,
}

impl Vault {
    pub fn start(token: &str) -> Vault {
        let keys: Keys = Arc::default();
        let (k, t) = (keys.clone(), token.to_string());
        let addr = serve(move |r| read_key(r, &k, &t));
        Vault {
            addr: format!("http://{addr}"),
            token: token.to_string(),
            keys,
        }
    }

    /// Adds a version of transit key `name` with public key `pem`.
    pub fn add_version(&self, name: &str, pem: &str) {
        let mut keys = self.keys.lock().expect("keys");
        keys.entry(name.to_string())
            .or_default()
            .push(pem.to_string());
    }

    /// The environment ivpol reads Vault's address and token from.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("VAULT_ADDR".into(), self.addr.clone()),
            ("VAULT_TOKEN".into(), self.token.clone()),
        ]
    }
}

fn read_key(r: &Request, keys: &Mutex<BTreeMap<String, Vec<String>>>, token: &str) -> Response {
    if r.header("X-Vault-Token") != Some(token) {
        return Response::json(403, r#"{"errors":["permission denied"]}"#);
    }
    let name = r.path().strip_prefix(&format!("/v1/{MOUNT}/keys/"));
    let versions = name.and_then(|n| keys.lock().ok()?.get(n).cloned());
    match (name, versions) {
        (Some(name), Some(versions)) => Response::json(200, answer(name, &versions)),
        _ => Response::json(404, r#"{"errors":[]}"#),
    }
}

fn answer(name: &str, versions: &[String]) -> String {
    let keys: serde_json::Map<String, serde_json::Value> = versions
        .iter()
        .enumerate()
        .map(|(i, pem)| {
            let version = serde_json::json!({"public_key": pem, "name": "P-256", "creation_time": "2026-01-01T00:00:00Z"});
            ((i + 1).to_string(), version)
        })
        .collect();
    serde_json::json!({
        "data": {
            "name": name,
            "type": "ecdsa-p256",
            "latest_version": versions.len(),
            "min_decryption_version": 1,
            "keys": keys,
        }
    })
    .to_string()
}
