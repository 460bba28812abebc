//! A double of Vault's transit read-key endpoint, as its HTTP API documents
//! it: `GET /v1/<mount>/keys/<name>` with `X-Vault-Token`, answering
//! `{"data": {"latest_version": N, "keys": {"N": {"public_key": PEM}}}}`,
//! 403 `permission denied` for a wrong token, 404 for an unknown key.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// The transit engine's mount the double serves.
pub const MOUNT: &str = "transit";

pub struct Vault {
    pub addr: String,
    pub token: String,
    keys: Arc<Mutex<BTreeMap<String, Vec<String>>>>,
}

impl Vault {
    pub fn start(token: &str) -> Vault {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = format!("http://{}", listener.local_addr().expect("addr"));
        let keys: Arc<Mutex<BTreeMap<String, Vec<String>>>> = Arc::default();
        let (k, t) = (keys.clone(), token.to_string());
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let (k, t) = (k.clone(), t.clone());
                std::thread::spawn(move || serve(stream, &k, &t));
            }
        });
        Vault {
            addr,
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

fn serve(stream: TcpStream, keys: &Mutex<BTreeMap<String, Vec<String>>>, token: &str) {
    let Ok(read) = stream.try_clone() else { return };
    let mut reader = BufReader::new(read);
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut presented = None;
    let mut header = String::new();
    while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
        if let Some((k, v)) = header.split_once(':') {
            if k.trim().eq_ignore_ascii_case("x-vault-token") {
                presented = Some(v.trim().to_string());
            }
        }
        header.clear();
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/");
    let name = path.strip_prefix(&format!("/v1/{MOUNT}/keys/"));
    let (status, body) = match (presented.as_deref() == Some(token), name) {
        (false, _) => (403, r#"{"errors":["permission denied"]}"#.to_string()),
        (true, Some(name)) => match keys.lock().ok().and_then(|k| k.get(name).cloned()) {
            Some(versions) => (200, read_key(name, &versions)),
            None => (404, r#"{"errors":[]}"#.to_string()),
        },
        (true, None) => (404, r#"{"errors":[]}"#.to_string()),
    };
    let mut stream = stream;
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
}

fn read_key(name: &str, versions: &[String]) -> String {
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
