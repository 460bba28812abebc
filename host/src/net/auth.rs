//! Registry authentication, done entirely by the host: the component never
//! sees a credential or a token.
//!
//! Credentials come from a docker `config.json` (`auths` entries with `auth`
//! or `username`/`password`). On a `401` with `WWW-Authenticate: Bearer`,
//! the host fetches a token from the realm (anonymously, or with Basic
//! credentials for that registry), caches it per (realm, service, scope)
//! until it expires, and retries; `Basic` challenges are answered with the
//! credentials directly.

use anyhow::{Context, Result};
use base64::Engine as _;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    pub username: String,
    pub password: String,
}

impl Credential {
    pub fn basic_header(&self) -> String {
        let raw = format!("{}:{}", self.username, self.password);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(raw)
        )
    }
}

/// Credentials by registry host (`host` or `host:port`).
#[derive(Debug, Clone, Default)]
pub struct Keychain {
    by_registry: HashMap<String, Credential>,
}

impl Keychain {
    /// Reads a docker `config.json`.
    pub fn from_docker_config(path: &Path) -> Result<Keychain> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Keychain::parse(&text).with_context(|| format!("parsing {}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Keychain> {
        let doc: serde_json::Value = serde_json::from_str(text)?;
        let mut by_registry = HashMap::new();
        let Some(auths) = doc.get("auths").and_then(|a| a.as_object()) else {
            return Ok(Keychain { by_registry });
        };
        for (registry, entry) in auths {
            let field = |k: &str| {
                entry
                    .get(k)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_string()
            };
            let cred = if !field("auth").is_empty() {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(field("auth"))
                    .with_context(|| format!("auths.{registry}.auth is not base64"))?;
                let decoded = String::from_utf8(decoded)
                    .with_context(|| format!("auths.{registry}.auth is not UTF-8"))?;
                let (u, p) = decoded
                    .split_once(':')
                    .with_context(|| format!("auths.{registry}.auth is not user:password"))?;
                Credential {
                    username: u.into(),
                    password: p.into(),
                }
            } else {
                Credential {
                    username: field("username"),
                    password: field("password"),
                }
            };
            by_registry.insert(normalise(registry), cred);
        }
        Ok(Keychain { by_registry })
    }

    /// Adds `other`'s credentials; earlier ones win on a conflict.
    pub fn extend(&mut self, other: Keychain) {
        for (k, v) in other.by_registry {
            self.by_registry.entry(k).or_insert(v);
        }
    }

    /// The credential for `host:port` (or `host` alone).
    pub fn get(&self, host: &str, port: Option<u16>) -> Option<&Credential> {
        let with_port = port.map(|p| format!("{host}:{p}"));
        with_port
            .and_then(|k| self.by_registry.get(&k))
            .or_else(|| self.by_registry.get(host))
    }
}

impl Keychain {
    /// The policy secret `name` under `dir`: a mounted Secret volume
    /// (`<dir>/<name>/.dockerconfigjson`), a `config.json`-shaped file, or a
    /// `kubernetes.io/dockerconfigjson` Secret manifest (YAML or JSON).
    pub fn from_secret(dir: &Path, name: &str) -> Result<Keychain, String> {
        // Names are validated by the component as DNS subdomains; check again.
        if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
            return Err(format!("invalid registry secret name {name:?}"));
        }
        let path = dir.join(name);
        let file = if path.is_dir() {
            path.join(".dockerconfigjson")
        } else {
            path
        };
        let text = std::fs::read_to_string(&file).map_err(|_| {
            format!(
                "registry secret {name} not found in --secrets-dir {}",
                dir.display()
            )
        })?;
        let config = secret_config(&text)
            .ok_or_else(|| format!("registry secret {name} holds no docker config"))?;
        Keychain::parse(&config).map_err(|e| format!("registry secret {name}: {e}"))
    }
}

/// The docker config JSON in a config file or in a Secret manifest.
fn secret_config(text: &str) -> Option<String> {
    let doc: serde_json::Value = serde_yaml::from_str(text).ok()?;
    if doc.get("auths").is_some() {
        return Some(doc.to_string());
    }
    if let Some(s) = doc
        .pointer("/stringData/.dockerconfigjson")
        .and_then(|v| v.as_str())
    {
        return Some(s.to_string());
    }
    let encoded = doc
        .pointer("/data/.dockerconfigjson")
        .and_then(|v| v.as_str())?;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    String::from_utf8(raw).ok()
}

/// `https://index.docker.io/v1/` and friends to `index.docker.io`.
fn normalise(registry: &str) -> String {
    let r = registry
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    r.split('/').next().unwrap_or(r).to_ascii_lowercase()
}

/// A parsed `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    Bearer {
        realm: String,
        service: String,
        scope: String,
    },
    Basic,
}

pub fn parse_challenge(header: &str) -> Option<Challenge> {
    let (scheme, params) = header.trim().split_once(' ').unwrap_or((header.trim(), ""));
    if scheme.eq_ignore_ascii_case("basic") {
        return Some(Challenge::Basic);
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let mut realm = String::new();
    let mut service = String::new();
    let mut scope = String::new();
    for (k, v) in split_params(params) {
        match k.to_ascii_lowercase().as_str() {
            "realm" => realm = v,
            "service" => service = v,
            "scope" => scope = v,
            _ => {}
        }
    }
    (!realm.is_empty()).then_some(Challenge::Bearer {
        realm,
        service,
        scope,
    })
}

/// `k="v", k2="v,2"` with quoted commas kept.
fn split_params(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = s.trim();
    while let Some(eq) = rest.find('=') {
        let key = rest[..eq].trim().trim_start_matches(',').trim().to_string();
        rest = &rest[eq + 1..];
        let value;
        if let Some(stripped) = rest.strip_prefix('"') {
            let end = stripped.find('"').unwrap_or(stripped.len());
            value = stripped[..end].to_string();
            rest = stripped.get(end + 1..).unwrap_or("");
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            value = rest[..end].trim().to_string();
            rest = &rest[end..];
        }
        out.push((key, value));
        rest = rest.trim_start_matches(',').trim();
    }
    out
}

/// (realm, service, scope): what a bearer token is good for.
pub type TokenKey = (String, String, String);

/// Bearer tokens by [`TokenKey`], until they expire.
#[derive(Default)]
pub struct TokenCache {
    tokens: Mutex<HashMap<TokenKey, (String, Instant)>>,
}

/// Tokens without `expires_in` live 60 s (the distribution spec's default).
const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(60);
const MAX_TOKENS: usize = 10_000;

impl TokenCache {
    pub fn get(&self, key: &TokenKey) -> Option<String> {
        let tokens = self.tokens.lock().ok()?;
        tokens
            .get(key)
            .filter(|(_, exp)| *exp > Instant::now())
            .map(|(t, _)| t.clone())
    }

    pub fn put(&self, key: TokenKey, token: String, expires_in: Option<u64>) {
        let lifetime = expires_in
            .map(Duration::from_secs)
            .unwrap_or(DEFAULT_TOKEN_LIFETIME);
        // Renew a little early so a token never expires in flight.
        let expiry = Instant::now() + lifetime.saturating_sub(Duration::from_secs(5));
        if let Ok(mut tokens) = self.tokens.lock() {
            if tokens.len() >= MAX_TOKENS {
                let now = Instant::now();
                tokens.retain(|_, (_, exp)| *exp > now);
            }
            tokens.insert(key, (token, expiry));
        }
    }
}

/// The token from a token endpoint's JSON answer, with its lifetime.
pub fn parse_token_response(body: &[u8]) -> Option<(String, Option<u64>)> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let token = v
        .get("token")
        .or_else(|| v.get("access_token"))?
        .as_str()?
        .to_string();
    let expires = v.get("expires_in").and_then(|e| e.as_u64());
    (!token.is_empty()).then_some((token, expires))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_docker_config_both_ways() {
        let cfg = r#"{"auths":{
            "https://index.docker.io/v1/":{"auth":"dXNlcjpwYXNz"},
            "127.0.0.1:5000":{"username":"alice","password":"s3cret"}}}"#;
        let k = Keychain::parse(cfg).expect("valid");
        assert_eq!(
            k.get("index.docker.io", None).map(|c| c.username.as_str()),
            Some("user")
        );
        assert_eq!(
            k.get("127.0.0.1", Some(5000)).map(|c| c.password.as_str()),
            Some("s3cret")
        );
        assert!(k.get("127.0.0.1", Some(5001)).is_none());
        assert!(Keychain::parse(r#"{"auths":{"x":{"auth":"!!"}}}"#).is_err());
    }

    #[test]
    fn reads_policy_secrets_in_every_layout() {
        let dir = std::env::temp_dir().join(format!("ivpol-secrets-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("mounted")).expect("dir");
        let config = r#"{"auths":{"r.example":{"username":"u","password":"p"}}}"#;
        std::fs::write(dir.join("mounted/.dockerconfigjson"), config).expect("write");
        std::fs::write(dir.join("plain"), config).expect("write");
        let encoded = base64::engine::general_purpose::STANDARD.encode(config);
        let manifest = format!("apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockerconfigjson\nmetadata: {{name: regcred}}\ndata:\n  .dockerconfigjson: {encoded}\n");
        std::fs::write(dir.join("manifest"), manifest).expect("write");
        for name in ["mounted", "plain", "manifest"] {
            let k = Keychain::from_secret(&dir, name).expect(name);
            assert_eq!(
                k.get("r.example", None).map(|c| c.password.as_str()),
                Some("p"),
                "{name}"
            );
        }
        assert!(Keychain::from_secret(&dir, "missing")
            .unwrap_err()
            .contains("not found"));
        assert!(Keychain::from_secret(&dir, "../etc").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn parses_challenges() {
        let h = r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push""#;
        assert_eq!(
            parse_challenge(h),
            Some(Challenge::Bearer {
                realm: "https://auth.example/token".into(),
                service: "registry.example".into(),
                scope: "repository:a/b:pull,push".into()
            })
        );
        assert_eq!(
            parse_challenge(r#"Basic realm="Registry""#),
            Some(Challenge::Basic)
        );
        assert_eq!(parse_challenge("Negotiate"), None);
        assert_eq!(parse_challenge("Bearer service=x"), None);
    }

    #[test]
    fn tokens_expire() {
        let c = TokenCache::default();
        let key = ("r".to_string(), "s".to_string(), "p".to_string());
        c.put(key.clone(), "t".into(), Some(3600));
        assert_eq!(c.get(&key).as_deref(), Some("t"));
        c.put(key.clone(), "t".into(), Some(1));
        assert_eq!(c.get(&key), None);
        assert_eq!(
            parse_token_response(br#"{"access_token":"x","expires_in":5}"#),
            Some(("x".into(), Some(5)))
        );
        assert_eq!(parse_token_response(b"{}"), None);
    }
}
