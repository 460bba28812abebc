//! Registry authentication, done entirely by the host: the component never
//! sees a credential or a token.
//!
//! Credentials come from a docker `config.json`: `auths` entries with `auth`
//! or `username`/`password`, and the credential helpers `credHelpers` names
//! per registry and `credsStore` for the rest (`helpers.rs` runs them). On a `401` with `WWW-Authenticate: Bearer`,
//! the host fetches a token from the realm (anonymously, or with Basic
//! credentials for that registry), caches it per (realm, service, scope,
//! credential) until it expires, and retries; `Basic` challenges are
//! answered with the credentials directly.
//!
//! A token server is an untrusted peer: its `expires_in` is capped
//! ([`MAX_TOKEN_LIFETIME`]), a missing or zero one means the distribution
//! spec's 60 s, time arithmetic saturates, oversized tokens are refused,
//! and the cache is bounded in bytes and entries. Tokens are keyed by a
//! hash of the whole credential, never by the username alone: `_json_key`,
//! `AWS` and `oauth2accesstoken` are usernames that many secrets share.

use anyhow::{Context, Result};
use base64::Engine as _;
use ivpol_refs::registry_auth::{self, normalise_registry, MAX_TOKEN_BYTES, MAX_TOKEN_LIFETIME};
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

pub use super::credential::Credential;

/// Credentials by registry host (`host` or `host:port`).
#[derive(Debug, Clone, Default)]
pub struct Keychain {
    by_registry: HashMap<String, Credential>,
    /// `credHelpers`: the helper that holds each registry's credential.
    helpers: HashMap<String, String>,
    /// `credsStore`: the helper for every other registry.
    store: Option<String>,
    /// `credentials.providers` that call a cloud, each for its own hosts.
    providers: Vec<String>,
}

/// Where a registry's credential comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source<'a> {
    /// An `auths` entry.
    Stored(&'a Credential),
    /// The credential helper of this name.
    Helper(&'a str),
    /// The cloud provider of this name (`credentials.providers`).
    Provider(&'a str),
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
        let helpers = match doc.get("credHelpers") {
            None => HashMap::new(),
            Some(v) => v
                .as_object()
                .context("credHelpers is not an object")?
                .iter()
                .map(|(registry, helper)| match helper.as_str() {
                    Some(h) => Ok((normalise_registry(registry), h.to_string())),
                    None => anyhow::bail!("credHelpers.{registry} is not a helper name"),
                })
                .collect::<Result<_>>()?,
        };
        let store = match doc.get("credsStore") {
            None => None,
            Some(v) => Some(
                v.as_str()
                    .context("credsStore is not a helper name")?
                    .to_string(),
            ),
        };
        let by_registry = registry_auth::parse_auths(&doc)
            .map_err(|why| anyhow::anyhow!(why))?
            .into_iter()
            .collect();
        Ok(Keychain {
            by_registry,
            helpers,
            store,
            providers: Vec::new(),
        })
    }

    /// GitHub's keychain, as go-containerregistry builds it: `ghcr.io` with
    /// `GITHUB_TOKEN` as the password and `GITHUB_ACTOR` (else `unset`) as
    /// the username; empty without a token.
    pub(crate) fn github_from_env() -> Keychain {
        Keychain::github(
            std::env::var("GITHUB_TOKEN").ok(),
            std::env::var("GITHUB_ACTOR").ok(),
        )
    }

    pub(crate) fn github(token: Option<String>, actor: Option<String>) -> Keychain {
        let mut keychain = Keychain::default();
        if let Some(token) = token.filter(|t| !t.is_empty()) {
            let username = actor
                .filter(|a| !a.is_empty())
                .unwrap_or_else(|| "unset".into());
            let credential = Credential {
                username,
                password: token,
            };
            keychain.by_registry.insert("ghcr.io".into(), credential);
        }
        keychain
    }

    /// Adds `other`'s credentials; earlier ones win on a conflict.
    pub(crate) fn extend(&mut self, other: Keychain) {
        for (k, v) in other.by_registry {
            self.by_registry.entry(k).or_insert(v);
        }
        for (k, v) in other.helpers {
            self.helpers.entry(k).or_insert(v);
        }
        self.store = self.store.take().or(other.store);
        self.providers.extend(other.providers);
    }

    /// Asks the cloud provider `name` for the registries it serves.
    pub(crate) fn add_provider(&mut self, name: &str) {
        self.providers.push(name.to_string());
    }

    /// Where the credential for `host:port` (or `host` alone) comes from:
    /// the registry's own helper (`credHelpers`), else its `auths` entry,
    /// else a cloud provider serving the host, else the default store
    /// (`credsStore`); none for anonymous access.
    pub(crate) fn source(&self, host: &str, port: Option<u16>) -> Option<Source<'_>> {
        let host = registry_auth::config_host(host);
        let with_port = port.map(|p| format!("{host}:{p}"));
        let lookup = |map: &HashMap<String, _>| -> Option<String> {
            (with_port.as_ref())
                .filter(|k| map.contains_key(*k))
                .cloned()
                .or_else(|| map.contains_key(host).then(|| host.to_string()))
        };
        if let Some(k) = lookup(&self.helpers) {
            return self.helpers.get(&k).map(|h| Source::Helper(h));
        }
        if let Some(c) = self.get(host, port) {
            return Some(Source::Stored(c));
        }
        let provider = self
            .providers
            .iter()
            .find(|p| super::providers::serves(p, host));
        if let Some(p) = provider {
            return Some(Source::Provider(p));
        }
        self.store.as_deref().map(Source::Helper)
    }

    /// The credential for `host:port` (or `host` alone).
    pub fn get(&self, host: &str, port: Option<u16>) -> Option<&Credential> {
        let host = registry_auth::config_host(host);
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
    pub(crate) fn from_secret(dir: &Path, name: &str) -> Result<Keychain, String> {
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
        Keychain::from_secret_text(name, &text)
    }
}

impl Keychain {
    /// The credentials in a Secret object (JSON or YAML) named `name`.
    pub fn from_secret_text(name: &str, text: &str) -> Result<Keychain, String> {
        let config = secret_config(text)
            .ok_or_else(|| format!("registry secret {name} holds no docker config"))?;
        Keychain::parse(&config).map_err(|e| format!("registry secret {name}: {e}"))
    }
}

/// The docker config JSON in a config file or in a Secret manifest.
fn secret_config(text: &str) -> Option<String> {
    let doc: serde_json::Value = serde_yaml_ng::from_str(text).ok()?;
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

/// What a bearer token is good for, and whose it is.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(crate) struct TokenKey {
    pub realm: String,
    pub service: String,
    pub scope: String,
    /// [`Credential::id`], or empty for an anonymous token.
    pub credential: String,
}

impl TokenKey {
    fn bytes(&self) -> usize {
        self.realm.len() + self.service.len() + self.scope.len() + self.credential.len()
    }
}

/// The cache holds at most this many bytes of keys and tokens...
const CACHE_BYTES: u64 = 4 << 20;
/// ...counting each entry at least this much, so it also holds at most
/// `CACHE_BYTES / ENTRY_OVERHEAD` (8192) entries.
const ENTRY_OVERHEAD: u64 = 512;
/// Renew a little early so a token never expires in flight.
const RENEW_EARLY: Duration = Duration::from_secs(5);

#[derive(Clone)]
struct CachedToken {
    token: String,
    /// How long it is kept, already capped and shortened by [`RENEW_EARLY`].
    keep: Duration,
}

/// Each token expires after its own lifetime: moka never returns it past
/// that, and its housekeeping evicts it, so it stops counting against the
/// bounds.
struct TokenExpiry;

impl moka::Expiry<TokenKey, CachedToken> for TokenExpiry {
    fn expire_after_create(
        &self,
        _key: &TokenKey,
        value: &CachedToken,
        _created_at: Instant,
    ) -> Option<Duration> {
        Some(value.keep)
    }

    /// A token fetched again replaces the old one with its own lifetime.
    fn expire_after_update(
        &self,
        _key: &TokenKey,
        value: &CachedToken,
        _updated_at: Instant,
        _duration_until_expiry: Option<Duration>,
    ) -> Option<Duration> {
        Some(value.keep)
    }
}

/// Bearer tokens by [`TokenKey`], until they expire; bounded in bytes and
/// entries (moka, weighed by bytes, each entry expiring on its own).
pub(crate) struct TokenCache {
    tokens: moka::sync::Cache<TokenKey, CachedToken>,
}

impl Default for TokenCache {
    fn default() -> TokenCache {
        TokenCache::with_capacity(CACHE_BYTES)
    }
}

impl TokenCache {
    fn with_capacity(bytes: u64) -> TokenCache {
        let tokens = moka::sync::Cache::builder()
            .max_capacity(bytes)
            .weigher(|k: &TokenKey, v: &CachedToken| {
                let weight = (k.bytes() as u64)
                    .saturating_add(v.token.len() as u64)
                    .saturating_add(ENTRY_OVERHEAD);
                u32::try_from(weight).unwrap_or(u32::MAX)
            })
            .expire_after(TokenExpiry)
            .build();
        TokenCache { tokens }
    }

    /// The token kept for `key`, if it has not expired.
    pub(crate) fn get(&self, key: &TokenKey) -> Option<String> {
        self.tokens.get(key).map(|t| t.token)
    }

    /// Keeps `token` for `lifetime` (see [`token_lifetime`]), minus a
    /// margin; a token too short-lived or too large is not kept.
    pub(crate) fn put(&self, key: TokenKey, token: String, lifetime: Duration) {
        let keep = lifetime.min(MAX_TOKEN_LIFETIME).saturating_sub(RENEW_EARLY);
        if keep.is_zero() || token.len() > MAX_TOKEN_BYTES {
            return;
        }
        self.tokens.insert(key, CachedToken { token, keep });
    }

    #[cfg(test)]
    fn settle(&self) -> (u64, u64) {
        self.tokens.run_pending_tasks();
        (self.tokens.entry_count(), self.tokens.weighted_size())
    }
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
        // Requests go to Docker Hub's API host; `docker login` keys the index.
        assert_eq!(
            k.get("registry-1.docker.io", None)
                .map(|c| c.username.as_str()),
            Some("user")
        );
        let e = Keychain::parse(r#"{"auths":{"x":{"auth":"!!"}}}"#)
            .expect_err("refused")
            .to_string();
        assert!(e.contains("auths.x.auth is not base64"), "{e}");
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
        let e = Keychain::from_secret(&dir, "../etc")
            .expect_err("refused")
            .to_string();
        assert!(e.contains("invalid registry secret name"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn key(realm: &str, credential: &str) -> TokenKey {
        TokenKey {
            realm: realm.into(),
            service: "s".into(),
            scope: "repository:a:pull".into(),
            credential: credential.into(),
        }
    }

    #[test]
    fn tokens_expire() {
        let c = TokenCache::default();
        let k = key("r", "");
        c.put(k.clone(), "t".into(), Duration::from_secs(3600));
        assert_eq!(c.get(&k).as_deref(), Some("t"));
        // Shorter than the renewal margin: not kept, the old one replaced or not.
        let short = key("short", "");
        c.put(short.clone(), "t".into(), Duration::from_secs(1));
        assert_eq!(c.get(&short), None);
    }

    /// Each token is evicted after its own lifetime (less the renewal
    /// margin), not held until the longest one a server may grant.
    #[test]
    fn each_token_expires_on_its_own() {
        let c = TokenCache::default();
        let brief = key("brief", "");
        let long = key("long", "");
        c.put(
            brief.clone(),
            "b".into(),
            RENEW_EARLY + Duration::from_millis(200),
        );
        c.put(long.clone(), "l".into(), MAX_TOKEN_LIFETIME);
        assert_eq!(c.get(&brief).as_deref(), Some("b"));
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(c.get(&brief), None);
        assert_eq!(c.get(&long).as_deref(), Some("l"));
    }

    /// The cache saturates whatever lifetime a token server grants.
    #[test]
    fn token_lifetimes_saturate() {
        let c = TokenCache::default();
        c.put(key("r", ""), "t".into(), Duration::MAX);
        assert_eq!(c.get(&key("r", "")).as_deref(), Some("t"));
    }

    /// The cache holds a bounded number of bytes and entries, however many
    /// distinct scopes a registry makes the host fetch tokens for.
    #[test]
    fn token_cache_is_bounded_in_bytes_and_entries() {
        let c = TokenCache::with_capacity(64 << 10);
        for i in 0..1000 {
            c.put(
                key(&format!("r{i}"), ""),
                "x".repeat(1000),
                MAX_TOKEN_LIFETIME,
            );
        }
        let (entries, bytes) = c.settle();
        assert!(bytes <= 64 << 10, "{bytes} bytes");
        assert!(entries <= (64 << 10) / ENTRY_OVERHEAD, "{entries} entries");
        let c = TokenCache::with_capacity(64 << 10);
        for i in 0..1000 {
            c.put(key(&format!("r{i}"), ""), "x".into(), MAX_TOKEN_LIFETIME);
        }
        let (entries, _) = c.settle();
        assert!(entries <= (64 << 10) / ENTRY_OVERHEAD, "{entries} entries");
    }
}
