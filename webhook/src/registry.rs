//! Registry access with no host to hold credentials: what `ivpol serve`'s
//! host does for the policy module, the webhook component does for itself,
//! over the same grammar (`ivpol_refs::registry_auth`).
//!
//! - Every registry is reached over HTTPS, but for those the operator lists
//!   in `IVPOL_INSECURE_REGISTRIES` (`host[:port]`, comma-separated; as
//!   `--insecure-registry`), which are reached over plain HTTP. Plain HTTP
//!   to any other is refused.
//! - A 401 is answered once: `Basic` with the registry's credential,
//!   `Bearer` with a token fetched from the challenge's realm (with the
//!   registry's credential, or anonymously, as GHCR and Docker Hub want
//!   even for public images) and kept for its lifetime.
//! - Credentials: a policy's `credentials.secrets` from
//!   `/policies/.secrets/<name>` (a mounted Secret volume's
//!   `.dockerconfigjson`, or a docker config file), else the instance's
//!   `/policies/.docker/config.json`. A credential goes to the registry it
//!   is for and to the token realm that registry's own challenge names,
//!   nowhere else.

use ivpol_oci::transport::{host_of, HttpRequest, HttpResponse, Transport, TransportError};
use ivpol_refs::registry_auth::{self, Challenge, Credential};
use ivpol_refs::REVOCATION_FETCH_HEADER;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The environment variable listing the plain-HTTP registries.
pub const INSECURE_REGISTRIES_ENV: &str = "IVPOL_INSECURE_REGISTRIES";
/// The instance's docker config, under the policy directory.
pub const DOCKER_CONFIG: &str = ".docker/config.json";
/// Where the policies' `credentials.secrets` are, under the policy directory.
pub const SECRETS_DIR: &str = ".secrets";
/// The largest docker config or Secret file read.
const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// The most tokens kept; a full store drops the expired ones, then all.
const MAX_TOKENS: usize = 256;
/// Renew a little early so a token never expires in flight.
const RENEW_EARLY: Duration = Duration::from_secs(5);

/// What the instance knows about registries: which are plain HTTP, where
/// credentials are, and the tokens fetched so far.
pub struct Registries {
    /// `host[:port]` reached over plain HTTP, lowercase.
    insecure: Vec<String>,
    /// The instance's docker config's credentials, or why it did not read.
    config: Result<Vec<(String, Credential)>, String>,
    /// Where the policies' secrets are read, when there is a directory.
    secrets_dir: Option<PathBuf>,
    tokens: Tokens,
}

impl Registries {
    /// The registries of an instance whose policy directory is `dir` (none:
    /// the policies were baked in) and whose plain-HTTP registries are
    /// `insecure`, as `IVPOL_INSECURE_REGISTRIES` lists them.
    pub fn new(dir: Option<&Path>, insecure: &str) -> Registries {
        let insecure = insecure
            .split(',')
            .map(|h| h.trim().to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .collect();
        let config = match dir {
            Some(dir) => read_config(&dir.join(DOCKER_CONFIG)),
            None => Ok(Vec::new()),
        };
        Registries {
            insecure,
            config,
            secrets_dir: dir.map(|d| d.join(SECRETS_DIR)),
            tokens: Tokens::default(),
        }
    }

    /// Why the instance's docker config did not read, if it did not.
    pub fn config_problem(&self) -> Option<&str> {
        self.config.as_ref().err().map(String::as_str)
    }

    /// `request` as it is sent: its scheme decided here, no Authorization
    /// of its own, and the credential that answers its registry's
    /// challenge found before it goes (a secret the policy names but the
    /// directory lacks fails every request, as in `ivpol serve`). A
    /// revocation fetch (an OCSP or CRL URL a certificate names; its
    /// answers are signed) goes as asked, unmarked, and its challenges are
    /// not answered.
    fn routed(&self, request: &HttpRequest) -> Result<Routed, TransportError> {
        let mut routed = request.clone();
        routed.headers.retain(|(k, _)| {
            !k.eq_ignore_ascii_case("authorization")
                && !k.eq_ignore_ascii_case(REVOCATION_FETCH_HEADER)
        });
        let revocation =
            (request.headers.iter()).any(|(k, _)| k.eq_ignore_ascii_case(REVOCATION_FETCH_HEADER));
        if revocation {
            return Ok(Routed {
                request: routed,
                answer_challenges: false,
                credential: None,
            });
        }
        routed.url = self.routed_url(&request.url)?;
        let host = host_of(&routed.url);
        let credential = self
            .credential(&host, &request.secrets)
            .map_err(|message| TransportError::Failed { host, message })?;
        Ok(Routed {
            request: routed,
            answer_challenges: true,
            credential,
        })
    }

    /// `url` over HTTPS, or over plain HTTP to a listed registry; plain
    /// HTTP to any other is refused.
    fn routed_url(&self, url: &str) -> Result<String, TransportError> {
        let host = host_of(url);
        let refused = |message: String| TransportError::Failed {
            host: host.clone(),
            message,
        };
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| refused(format!("{url} is not an absolute URL")))?;
        let insecure = self.insecure.contains(&host.to_ascii_lowercase());
        match (scheme, insecure) {
            ("https", true) | ("http", true) => Ok(format!("http://{rest}")),
            ("https", false) => Ok(url.to_string()),
            ("http", false) => Err(refused(format!(
                "plain HTTP refused: {host} is not in {INSECURE_REGISTRIES_ENV}"
            ))),
            (other, _) => Err(refused(format!("scheme {other} is not HTTP(S)"))),
        }
    }

    /// The credential for `host` (`host[:port]`): the first of the
    /// policy's `secrets` that has one, else the instance's docker config.
    fn credential(&self, host: &str, secrets: &[String]) -> Result<Option<Credential>, String> {
        for name in secrets {
            let auths = self.secret(name)?;
            if let Some(c) = lookup(&auths, host) {
                return Ok(Some(c));
            }
        }
        let config = self.config.as_ref().map_err(Clone::clone)?;
        Ok(lookup(config, host))
    }

    /// The credentials of the policy secret `name` (`<namespace>/<name>`
    /// for a namespaced policy: the directory is one namespace's worth, as
    /// `ivpol serve --secrets-dir` is).
    fn secret(&self, name: &str) -> Result<Vec<(String, Credential)>, String> {
        let name = name.rsplit_once('/').map_or(name, |(_, n)| n);
        let Some(dir) = &self.secrets_dir else {
            return Err(format!(
                "registry secret {name}: the policies were built in, so there is no {SECRETS_DIR} directory"
            ));
        };
        // Names are DNS subdomains when the policy loads; check again.
        if name.is_empty() || name.contains('\\') || name.starts_with('.') {
            return Err(format!("invalid registry secret name {name:?}"));
        }
        let path = dir.join(name);
        let file = match path.is_dir() {
            true => path.join(".dockerconfigjson"),
            false => path,
        };
        if !file.exists() {
            return Err(format!(
                "registry secret {name} not found in /policies/{SECRETS_DIR}"
            ));
        }
        read_config(&file).map_err(|why| format!("registry secret {name}: {why}"))
    }

    /// The Authorization answering the challenge of `answer` to `routed`,
    /// if there is one to give.
    fn authorization(
        &self,
        answer: &HttpResponse,
        routed: &Routed,
        inner: &dyn Transport,
    ) -> Result<Option<String>, TransportError> {
        let Some(challenge) = answer
            .header("www-authenticate")
            .and_then(registry_auth::parse_challenge)
        else {
            return Ok(None);
        };
        let credential = routed.credential.as_ref();
        let (realm, service, scope) = match challenge {
            Challenge::Basic => return Ok(credential.map(Credential::basic_header)),
            Challenge::Bearer {
                realm,
                service,
                scope,
            } => (realm, service, scope),
        };
        let key = TokenKey {
            realm,
            service,
            scope,
            credential: credential.map(Credential::id).unwrap_or_default(),
        };
        if let Some(token) = self.tokens.get(&key) {
            return Ok(Some(format!("Bearer {token}")));
        }
        let (token, lifetime) = self.fetch_token(&key, credential, inner)?;
        self.tokens.put(key, token.clone(), lifetime);
        Ok(Some(format!("Bearer {token}")))
    }

    /// A token for `key` from its realm, presenting `credential` if any.
    fn fetch_token(
        &self,
        key: &TokenKey,
        credential: Option<&Credential>,
        inner: &dyn Transport,
    ) -> Result<(String, Duration), TransportError> {
        let url = registry_auth::token_url(&key.realm, &key.service, &key.scope);
        let url = self.routed_url(&url)?;
        let host = host_of(&url);
        let mut headers = vec![("accept".to_string(), "application/json".to_string())];
        if let Some(c) = credential {
            headers.push(("authorization".into(), c.basic_header()));
        }
        let answer = inner.send(
            &HttpRequest::get(url, headers),
            registry_auth::MAX_TOKEN_ANSWER_BYTES,
        )?;
        let failed = |message: String| TransportError::Failed {
            host: host.clone(),
            message,
        };
        if !(200..300).contains(&answer.status) {
            return Err(failed(format!(
                "the token endpoint answered HTTP {}",
                answer.status
            )));
        }
        registry_auth::parse_token_response(&answer.body)
            .map_err(|why| failed(format!("the token endpoint's answer: {why}")))
    }
}

/// The credential `auths` holds for `host` (`host:port` first, then the
/// bare host, as docker looks them up; Docker Hub's API host under the
/// index's name).
fn lookup(auths: &[(String, Credential)], host: &str) -> Option<Credential> {
    let host = registry_auth::config_host(&host.to_ascii_lowercase()).to_string();
    let bare = host.split(':').next().unwrap_or_default();
    let find = |name: &str| {
        auths
            .iter()
            .find(|(r, _)| r == name)
            .map(|(_, c)| c.clone())
    };
    find(&host).or_else(|| find(bare))
}

/// The `auths` of the docker config at `path`; none when there is no file.
fn read_config(path: &Path) -> Result<Vec<(String, Credential)>, String> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(Vec::new());
    };
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(format!(
            "{} is {} bytes, more than {MAX_CONFIG_BYTES}",
            path.display(),
            meta.len()
        ));
    }
    let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let config: serde_json::Value = serde_json::from_slice(&text)
        .map_err(|e| format!("{} is not a docker config: {e}", path.display()))?;
    registry_auth::parse_auths(&config).map_err(|why| format!("{}: {why}", path.display()))
}

/// A request as it is sent, whether its 401 is answered, and with what.
#[derive(Clone)]
struct Routed {
    request: HttpRequest,
    answer_challenges: bool,
    /// The registry's credential, if any: a token is fetched with it.
    credential: Option<Credential>,
}

/// What a bearer token is good for, and whose it is.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct TokenKey {
    realm: String,
    service: String,
    scope: String,
    /// [`Credential::id`], or empty for an anonymous token.
    credential: String,
}

/// Bearer tokens by [`TokenKey`] until they expire, at most
/// [`MAX_TOKENS`] of at most `MAX_TOKEN_BYTES` each.
#[derive(Default)]
struct Tokens(Mutex<HashMap<TokenKey, (Instant, String)>>);

impl Tokens {
    fn get(&self, key: &TokenKey) -> Option<String> {
        let tokens = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let (until, token) = tokens.get(key)?;
        (Instant::now() < *until).then(|| token.clone())
    }

    /// Keeps `token` for `lifetime` (at most `MAX_TOKEN_LIFETIME`), less a
    /// margin; one too short-lived is not kept.
    fn put(&self, key: TokenKey, token: String, lifetime: Duration) {
        let keep = (lifetime.min(registry_auth::MAX_TOKEN_LIFETIME)).saturating_sub(RENEW_EARLY);
        let Some(until) = Instant::now().checked_add(keep).filter(|_| !keep.is_zero()) else {
            return;
        };
        let mut tokens = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if tokens.len() >= MAX_TOKENS {
            let now = Instant::now();
            tokens.retain(|_, (until, _)| *until > now);
        }
        if tokens.len() >= MAX_TOKENS {
            tokens.clear();
        }
        tokens.insert(key, (until, token));
    }
}

/// A transport that answers registry auth challenges, over `inner`.
pub struct Authenticating {
    /// What requests are sent through (wasi:http in the component).
    pub inner: Arc<dyn Transport + Send + Sync>,
    /// The instance's registries.
    pub registries: Arc<Registries>,
}

impl Authenticating {
    /// `first`, the answer to `request`, or, when it is a 401 this instance
    /// can answer, the answer to `request` sent again with Authorization.
    fn answered(
        &self,
        routed: &Routed,
        first: HttpResponse,
        max_body: usize,
    ) -> Result<HttpResponse, TransportError> {
        if first.status != 401 || !routed.answer_challenges {
            return Ok(first);
        }
        let registries = &self.registries;
        let Some(authorization) = registries.authorization(&first, routed, &*self.inner)? else {
            return Ok(first);
        };
        let mut again = routed.request.clone();
        again.headers.push(("authorization".into(), authorization));
        self.inner.send(&again, max_body)
    }
}

impl Transport for Authenticating {
    fn send(&self, request: &HttpRequest, max_body: usize) -> Result<HttpResponse, TransportError> {
        let routed = self.registries.routed(request)?;
        let first = self.inner.send(&routed.request, max_body)?;
        self.answered(&routed, first, max_body)
    }

    /// The first tries go out together; the challenges are answered after.
    fn send_each(
        &self,
        requests: &[(HttpRequest, usize)],
    ) -> Vec<Result<HttpResponse, TransportError>> {
        let routed: Vec<_> = requests
            .iter()
            .map(|(r, max)| self.registries.routed(r).map(|r| (r, *max)))
            .collect();
        let sendable: Vec<(HttpRequest, usize)> = routed
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .map(|(r, max)| (r.request.clone(), *max))
            .collect();
        let mut firsts = self.inner.send_each(&sendable).into_iter();
        routed
            .into_iter()
            .map(|r| {
                let (routed, max_body) = r?;
                let first = firsts.next().unwrap_or_else(|| {
                    Err(TransportError::Failed {
                        host: host_of(&routed.request.url),
                        message: "no answer".into(),
                    })
                })?;
                self.answered(&routed, first, max_body)
            })
            .collect()
    }

    fn charge_parsed(&self, values: usize) -> Result<(), TransportError> {
        self.inner.charge_parsed(values)
    }
}

#[cfg(test)]
mod tests;
