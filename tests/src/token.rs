//! A token server for the distribution registry's `auth: token` variant:
//! it issues ES256 JWTs, granting whatever is asked to requests carrying
//! [`USER`]'s Basic credentials, and anonymous pulls of `public/...` only.

use crate::registry::Registry;
use base64::Engine as _;
use ring::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

pub const SERVICE: &str = "ivpol-test-registry";
pub const ISSUER: &str = "ivpol-test-issuer";
pub const USER: &str = "alice";
pub const PASSWORD: &str = "s3cret-never-in-the-guest";

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

pub struct TokenServer {
    pub addr: String,
    cert_pem: String,
    key: Arc<EcdsaKeyPair>,
    cert_der: Vec<u8>,
    /// Token requests that carried the right Basic credentials.
    pub authenticated: Arc<AtomicUsize>,
    pub anonymous: Arc<AtomicUsize>,
}

impl TokenServer {
    pub fn start() -> TokenServer {
        TokenServer::start_with_expires_in("300")
    }

    /// A token server whose answers carry `"expires_in": <expires_in>`
    /// (raw JSON, so a hostile value can be anything).
    pub fn start_with_expires_in(expires_in: &str) -> TokenServer {
        let expires_in = expires_in.to_string();
        let key_pair = rcgen::KeyPair::generate().expect("P-256 key");
        let cert = rcgen::CertificateParams::new(vec!["token-issuer".into()])
            .expect("params")
            .self_signed(&key_pair)
            .expect("self-signed");
        let rng = ring::rand::SystemRandom::new();
        let key = Arc::new(
            EcdsaKeyPair::from_pkcs8(
                &ECDSA_P256_SHA256_FIXED_SIGNING,
                &key_pair.serialize_der(),
                &rng,
            )
            .expect("ring key"),
        );
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let server = TokenServer {
            addr,
            cert_pem: cert.pem(),
            cert_der: cert.der().to_vec(),
            key,
            authenticated: Arc::default(),
            anonymous: Arc::default(),
        };
        let (key, der, auth, anon) = (
            server.key.clone(),
            server.cert_der.clone(),
            server.authenticated.clone(),
            server.anonymous.clone(),
        );
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut line = String::new();
                let _ = reader.read_line(&mut line);
                let mut has_creds = false;
                let expected = format!(
                    "authorization: basic {}",
                    base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"))
                )
                .to_ascii_lowercase();
                let mut header = String::new();
                while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                    if header.trim().to_ascii_lowercase() == expected {
                        has_creds = true;
                    }
                    header.clear();
                }
                let query = line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("")
                    .split_once('?')
                    .map(|(_, q)| q)
                    .unwrap_or("");
                let scope = query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("scope="))
                    .unwrap_or("");
                let scope = scope
                    .replace("%3A", ":")
                    .replace("%2F", "/")
                    .replace("%2C", ",");
                let mut parts = scope.split(':');
                let (_, name, actions) = (
                    parts.next(),
                    parts.next().unwrap_or(""),
                    parts.next().unwrap_or(""),
                );
                let granted: Vec<&str> = if has_creds {
                    auth.fetch_add(1, Ordering::SeqCst);
                    actions.split(',').filter(|a| !a.is_empty()).collect()
                } else {
                    anon.fetch_add(1, Ordering::SeqCst);
                    if name.starts_with("public/") {
                        vec!["pull"]
                    } else {
                        vec![]
                    }
                };
                let token = mint(&key, &der, name, &granted);
                let body = format!(
                    r#"{{"token":"{token}","access_token":"{token}","expires_in":{expires_in}}}"#
                );
                let mut out = stream;
                let _ = write!(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
            }
        });
        server
    }

    pub fn registry(&self) -> Registry {
        let dir = std::env::temp_dir().join(format!("ivpol-token-{}", self.addr.replace(':', "-")));
        std::fs::create_dir_all(&dir).expect("dir");
        let bundle = dir.join("token.crt");
        std::fs::write(&bundle, &self.cert_pem).expect("write bundle");
        Registry::start_with_auth(&format!(
            "auth:\n  token:\n    realm: http://{}/token\n    service: {SERVICE}\n    issuer: {ISSUER}\n    rootcertbundle: {}\n",
            self.addr,
            bundle.display()
        ))
    }

    /// A push-capable token, for the fixture generator.
    pub fn bearer(&self, name: &str) -> String {
        format!(
            "Bearer {}",
            mint(&self.key, &self.cert_der, name, &["pull", "push"])
        )
    }
}

fn mint(key: &EcdsaKeyPair, cert_der: &[u8], name: &str, actions: &[&str]) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let header = serde_json::json!({
        "alg": "ES256", "typ": "JWT",
        "x5c": [base64::engine::general_purpose::STANDARD.encode(cert_der)],
    });
    let claims = serde_json::json!({
        "iss": ISSUER, "sub": USER, "aud": SERVICE,
        "exp": now + 300, "nbf": now - 10, "iat": now, "jti": format!("{now}-{name}-{}", actions.len()),
        "access": [{"type": "repository", "name": name, "actions": actions}],
    });
    let signing_input = format!(
        "{}.{}",
        b64url(header.to_string().as_bytes()),
        b64url(claims.to_string().as_bytes())
    );
    let rng = ring::rand::SystemRandom::new();
    let sig = key.sign(&rng, signing_input.as_bytes()).expect("sign");
    format!("{signing_input}.{}", b64url(sig.as_ref()))
}
