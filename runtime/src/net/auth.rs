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
        let mut by_registry = HashMap::new();
        let helpers = match doc.get("credHelpers") {
            None => HashMap::new(),
            Some(v) => v
                .as_object()
                .context("credHelpers is not an object")?
                .iter()
                .map(|(registry, helper)| match helper.as_str() {
                    Some(h) => Ok((normalise(registry), h.to_string())),
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
        let empty = serde_json::Map::new();
        let auths = doc
            .get("auths")
            .and_then(|a| a.as_object())
            .unwrap_or(&empty);
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
            } else if field("username").is_empty() && field("password").is_empty() {
                // `{}`: docker's placeholder for a credential kept by a helper.
                continue;
            } else {
                Credential {
                    username: field("username"),
                    password: field("password"),
                }
            };
            by_registry.insert(normalise(registry), cred);
        }
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

/// `https://index.docker.io/v1/` and friends to `index.docker.io`.
fn normalise(registry: &str) -> String {
    let r = registry
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    r.split('/').next().unwrap_or(r).to_ascii_lowercase()
}

/// A parsed `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Challenge {
    Bearer {
        realm: String,
        service: String,
        scope: String,
    },
    Basic,
}

pub(crate) fn parse_challenge(header: &str) -> Option<Challenge> {
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

/// Tokens without `expires_in` (or with 0) live 60 s, the distribution
/// token spec's default.
pub(crate) const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(60);
/// No token is reused for longer than this, whatever the server says.
pub(crate) const MAX_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);
/// A token longer than this is refused (real ones are a few KiB).
pub(crate) const MAX_TOKEN_BYTES: usize = 64 << 10;
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

/// How long a token may be used, from the token answer's `expires_in`:
/// missing, zero, negative or not a number means the spec's 60 s; more
/// than [`MAX_TOKEN_LIFETIME`] is capped.
pub(crate) fn token_lifetime(expires_in: Option<&serde_json::Value>) -> Duration {
    match expires_in.and_then(|e| e.as_u64()) {
        None | Some(0) => DEFAULT_TOKEN_LIFETIME,
        Some(secs) => Duration::from_secs(secs).min(MAX_TOKEN_LIFETIME),
    }
}

/// The token from a token endpoint's JSON answer, with its lifetime; an
/// answer without a usable token is an error saying why.
pub(crate) fn parse_token_response(body: &[u8]) -> Result<(String, Duration), String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("the answer is not JSON: {e}"))?;
    let token = v
        .get("token")
        .or_else(|| v.get("access_token"))
        .and_then(|t| t.as_str())
        .ok_or("the answer has no token")?;
    if token.is_empty() {
        return Err("the answer's token is empty".into());
    }
    if token.len() > MAX_TOKEN_BYTES {
        return Err(format!(
            "the token is {} bytes, more than {MAX_TOKEN_BYTES}",
            token.len()
        ));
    }
    // A token goes into a header: refuse what no header can carry.
    if http::HeaderValue::from_str(&format!("Bearer {token}")).is_err() {
        return Err("the token is not a valid header value".into());
    }
    Ok((token.to_string(), token_lifetime(v.get("expires_in"))))
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
        assert_eq!(
            parse_token_response(br#"{"access_token":"x","expires_in":5}"#),
            Ok(("x".into(), Duration::from_secs(5)))
        );
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

    /// What a hostile or sloppy token server can send gets a bounded
    /// lifetime or a clear refusal, never a panic.
    #[test]
    fn token_answers_are_bounded() {
        let life = |body: &str| parse_token_response(body.as_bytes()).map(|(_, l)| l);
        let hour = Ok(MAX_TOKEN_LIFETIME);
        let minute = Ok(DEFAULT_TOKEN_LIFETIME);
        assert_eq!(
            life(r#"{"token":"t","expires_in":18446744073709551615}"#),
            hour
        );
        assert_eq!(life(r#"{"token":"t","expires_in":1e300}"#), minute);
        assert_eq!(
            life(r#"{"token":"t","expires_in":99999999999999999999999}"#),
            minute
        );
        assert_eq!(life(r#"{"token":"t","expires_in":-5}"#), minute);
        assert_eq!(life(r#"{"token":"t","expires_in":"300"}"#), minute);
        assert_eq!(life(r#"{"token":"t","expires_in":0}"#), minute);
        assert_eq!(life(r#"{"token":"t"}"#), minute);
        assert_eq!(
            life(r#"{"token":"t","expires_in":120}"#),
            Ok(Duration::from_secs(120))
        );
        for (body, why) in [
            ("{}", "no token"),
            ("[1]", "no token"),
            ("not json", "not JSON"),
            (r#"{"token":""}"#, "empty"),
            (r#"{"token":7}"#, "no token"),
            ("{\"token\":\"a\\nb\"}", "header value"),
        ] {
            let err = parse_token_response(body.as_bytes()).expect_err(body);
            assert!(err.contains(why), "{body}: {err}");
        }
        let huge = format!(r#"{{"token":"{}"}}"#, "a".repeat(MAX_TOKEN_BYTES + 1));
        let e = parse_token_response(huge.as_bytes())
            .expect_err("refused")
            .to_string();
        assert!(e.contains("more than 65536"), "{e}");
        // The cache itself saturates whatever lifetime it is handed.
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

    #[test]
    fn credential_ids_bind_the_password() {
        let a = Credential {
            username: "_json_key".into(),
            password: "key-of-team-a".into(),
        };
        let b = Credential {
            username: "_json_key".into(),
            password: "key-of-team-b".into(),
        };
        assert_ne!(a.id(), b.id());
        assert_eq!(a.id(), a.clone().id());
        assert!(!a.id().contains("_json_key") && !a.id().contains("team"));
        // No ambiguity between where the username ends and the password starts.
        let c = Credential {
            username: "ab".into(),
            password: "c".into(),
        };
        let d = Credential {
            username: "a".into(),
            password: "bc".into(),
        };
        assert_ne!(c.id(), d.id());
    }
}
