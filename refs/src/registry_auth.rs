//! Registry authentication's grammar, read alike by ivpol's host (which
//! answers the policy module's auth challenges, so that module never holds
//! a credential) and by the webhook component (which has no such host and
//! answers its own): a 401's `WWW-Authenticate` challenge, the token
//! endpoint's URL and answer (the distribution token spec), and the
//! credentials of a docker `config.json`'s `auths`.
//!
//! A token server is an untrusted peer: its `expires_in` is capped
//! ([`MAX_TOKEN_LIFETIME`]), a missing or zero one means the spec's 60 s,
//! and a token too large for a header, or that no header can carry, is
//! refused.

use crate::encoding::query_value;
use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::time::Duration;

/// A parsed `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    /// Fetch a token from `realm` for `service` and `scope`, then present it.
    Bearer {
        /// The token endpoint's URL.
        realm: String,
        /// The `service` the token is for.
        service: String,
        /// What the token grants (`repository:<name>:pull`), or empty.
        scope: String,
    },
    /// Present the registry's username and password.
    Basic,
}

/// The challenge of a `WWW-Authenticate` header; none for a scheme other
/// than Basic or Bearer, or a Bearer challenge without a realm.
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

/// The URL a token is asked for: the realm with `service` and, when the
/// challenge names one, `scope`.
pub fn token_url(realm: &str, service: &str, scope: &str) -> String {
    let sep = if realm.contains('?') { '&' } else { '?' };
    let mut url = format!("{realm}{sep}service={}", query_value(service));
    if !scope.is_empty() {
        url.push_str(&format!("&scope={}", query_value(scope)));
    }
    url
}

/// Tokens without `expires_in` (or with 0) live 60 s, the distribution
/// token spec's default.
pub const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(60);
/// No token is reused for longer than this, whatever the server says.
pub const MAX_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);
/// A token longer than this is refused (real ones are a few KiB).
pub const MAX_TOKEN_BYTES: usize = 64 << 10;
/// The largest token endpoint answer read.
pub const MAX_TOKEN_ANSWER_BYTES: usize = 1 << 20;

/// How long a token may be used, from the token answer's `expires_in`:
/// missing, zero, negative or not a number means the spec's 60 s; more
/// than [`MAX_TOKEN_LIFETIME`] is capped.
pub fn token_lifetime(expires_in: Option<&Value>) -> Duration {
    match expires_in.and_then(|e| e.as_u64()) {
        None | Some(0) => DEFAULT_TOKEN_LIFETIME,
        Some(secs) => Duration::from_secs(secs).min(MAX_TOKEN_LIFETIME),
    }
}

/// The token from a token endpoint's JSON answer (`token`, else
/// `access_token`), with its lifetime; an answer without a usable token is
/// an error saying why.
pub fn parse_token_response(body: &[u8]) -> Result<(String, Duration), String> {
    let v: Value =
        crate::json::from_slice(body).map_err(|e| format!("the answer is not JSON: {e}"))?;
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
    // A token goes into a header: refuse what no header can carry (the
    // bytes `http::HeaderValue` refuses: controls other than tab, DEL).
    if token.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        return Err("the token is not a valid header value".into());
    }
    Ok((token.to_string(), token_lifetime(v.get("expires_in"))))
}

/// A username and password for a registry.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    /// The username (`_json_key`, `AWS` and `oauth2accesstoken` are shared
    /// by many).
    pub username: String,
    /// The password or token.
    pub password: String,
}

/// Never the password: a credential may end up in a log line.
impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

impl Credential {
    /// The `Authorization` value presenting it (`Basic <base64>`).
    pub fn basic_header(&self) -> String {
        let raw = format!("{}:{}", self.username, self.password);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(raw)
        )
    }

    /// What identifies this credential in cache keys: a SHA-256 of the
    /// username and the password (length-prefixed, so no two pairs share
    /// a preimage). Two secrets with one username never share a token.
    pub fn id(&self) -> String {
        let mut h = Sha256::new();
        for part in [&self.username, &self.password] {
            h.update((part.len() as u64).to_be_bytes());
            h.update(part.as_bytes());
        }
        crate::encoding::hex(&h.finalize())
    }
}

/// The credentials of a docker config's `auths`, by registry as
/// [`normalise_registry`] names it. An entry holds `auth` (base64 of
/// `user:password`) or `username` and `password`; `{}`, docker's
/// placeholder for a credential a helper keeps, is skipped.
pub fn parse_auths(config: &Value) -> Result<Vec<(String, Credential)>, String> {
    let Some(auths) = config.get("auths") else {
        return Ok(Vec::new());
    };
    let auths = auths.as_object().ok_or("auths is not an object")?;
    let mut out = Vec::new();
    for (registry, entry) in auths {
        if let Some(credential) = auth_entry(registry, entry)? {
            out.push((normalise_registry(registry), credential));
        }
    }
    Ok(out)
}

fn auth_entry(registry: &str, entry: &Value) -> Result<Option<Credential>, String> {
    let field = |k: &str| {
        entry
            .get(k)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    let auth = field("auth");
    if !auth.is_empty() {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth)
            .map_err(|_| format!("auths.{registry}.auth is not base64"))?;
        let decoded = String::from_utf8(decoded)
            .map_err(|_| format!("auths.{registry}.auth is not UTF-8"))?;
        let (u, p) = decoded
            .split_once(':')
            .ok_or_else(|| format!("auths.{registry}.auth is not user:password"))?;
        return Ok(Some(Credential {
            username: u.into(),
            password: p.into(),
        }));
    }
    let (username, password) = (field("username"), field("password"));
    if username.is_empty() && password.is_empty() {
        return Ok(None);
    }
    Ok(Some(Credential { username, password }))
}

/// The host a registry API host's credential is kept under in a docker
/// config: Docker Hub's API host `registry-1.docker.io` is
/// `index.docker.io` there (what `docker login` writes, as
/// `https://index.docker.io/v1/`); any other host is itself. The inverse
/// of [`crate::api_host`].
pub fn config_host(api_host: &str) -> &str {
    if api_host.eq_ignore_ascii_case("registry-1.docker.io") {
        "index.docker.io"
    } else {
        api_host
    }
}

/// A docker config's registry key as a host: `https://index.docker.io/v1/`
/// and friends to `index.docker.io`, `host:port` kept, lowercase.
pub fn normalise_registry(registry: &str) -> String {
    let r = registry
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    r.split('/').next().unwrap_or(r).to_ascii_lowercase()
}

#[cfg(test)]
mod tests;
