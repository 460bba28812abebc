//! The component's network capability: the wasi:http `send_request` hook.
//!
//! Every outgoing request of the component lands here. The host checks it
//! against the registry policy (`policy.rs`), picks HTTPS or (for
//! `--insecure-registry`) plain HTTP, sends it on a pooled rustls client,
//! answers registry auth challenges (`auth.rs`), and bounds it by the
//! request's deadline. A refused request reaches the guest as
//! `HttpRequestDenied`.

pub mod auth;
mod body;
mod identity;
pub mod policy;

use anyhow::{Context, Result};
use auth::{Challenge, Keychain, TokenCache};
use bytes::Bytes;
use http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use policy::{NetPolicy, Route};
use std::future::Future;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

type HttpsClient = Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Full<Bytes>,
>;

/// A request on its way out, already routed.
struct Outgoing<'a> {
    method: &'a http::Method,
    uri: &'a http::Uri,
    headers: &'a http::HeaderMap,
    body: Bytes,
    /// The port as asked (credentials may be keyed by `host:port`).
    port: Option<u16>,
}

/// A request the host makes itself (see [`Net::request`]).
pub struct HostRequest {
    pub method: http::Method,
    pub uri: http::Uri,
    pub headers: http::HeaderMap,
    pub body: Bytes,
    /// An Authorization that worked before for this registry, sent up
    /// front to save a challenge round trip (and a second upload).
    pub auth: Option<String>,
}

/// Shared by every instance: policy, credentials, tokens, connection pool.
pub struct Net {
    policy: NetPolicy,
    keychain: Keychain,
    /// Where policies' `credentials.secrets` are read from.
    secrets_dir: Option<std::path::PathBuf>,
    tokens: TokenCache,
    client: HttpsClient,
    /// Requests sent to registries (for tests and metrics).
    pub sent: AtomicU64,
}

impl Net {
    pub fn new(
        policy: NetPolicy,
        keychain: Keychain,
        secrets_dir: Option<&Path>,
        extra_ca: Option<&Path>,
    ) -> Result<Net> {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(path) = extra_ca {
            let pem = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
                let cert = cert.with_context(|| format!("parsing {}", path.display()))?;
                roots
                    .add(cert)
                    .with_context(|| format!("adding a CA from {}", path.display()))?;
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Ok(Net {
            policy,
            keychain,
            secrets_dir: secrets_dir.map(Path::to_path_buf),
            tokens: TokenCache::default(),
            client,
            sent: AtomicU64::new(0),
        })
    }

    /// Sends one request of the component, with auth, within `deadline`.
    async fn send(
        self: Arc<Self>,
        request: http::Request<WasiBody>,
        deadline: Instant,
    ) -> Result<http::Response<WasiBody>, HttpError> {
        // The component only reads (GET, HEAD): its request bodies are dropped.
        let (parts, _body) = request.into_parts();
        let uri = self.routed(&parts.uri).await.map_err(|why| {
            tracing::warn!("registry request refused: {why}");
            HttpError::HttpRequestDenied
        })?;
        let mut headers = parts.headers.clone();
        // The guest holds no credentials; anything it sets here is dropped.
        headers.remove(AUTHORIZATION);
        let secrets = self.policy_secrets(headers.remove(SECRETS_HEADER))?;
        let outgoing = Outgoing {
            method: &parts.method,
            uri: &uri,
            headers: &headers,
            body: Bytes::new(),
            port: parts.uri.port_u16(),
        };
        let (resp, _) = self
            .with_auth(outgoing, None, secrets.as_ref(), deadline)
            .await?;
        Ok(resp.map(|b| body::DeadlineBody::new(b, deadline).boxed_unsync()))
    }

    /// The URI a request really goes to, or why the policy refuses it: the
    /// scheme is `http` only for an `--insecure-registry`, whatever was asked.
    async fn routed(&self, asked: &http::Uri) -> Result<http::Uri, String> {
        let host = asked.host().unwrap_or_default().to_string();
        let https = asked.scheme_str() != Some("http");
        let port = asked.port_u16().unwrap_or(if https { 443 } else { 80 });
        let route = self
            .policy
            .route(&host, port, || resolve(host.clone(), port))
            .await?;
        if route == Route::Https && !https {
            return Err(format!(
                "plain HTTP to {host}:{port} refused: not an --insecure-registry"
            ));
        }
        let scheme = match route {
            Route::Http => "http",
            Route::Https => "https",
        };
        let path = asked.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        format!("{scheme}://{host}:{port}{path}")
            .parse()
            .map_err(|_| format!("{asked} is not a valid URI"))
    }

    /// Sends `req` (with `auth` up front, when the caller already has one),
    /// answers a 401 challenge once, and returns the response with the
    /// Authorization that was sent last, so a caller can present it again.
    async fn with_auth(
        &self,
        req: Outgoing<'_>,
        auth: Option<String>,
        secrets: Option<&Keychain>,
        deadline: Instant,
    ) -> Result<(http::Response<hyper::body::Incoming>, Option<String>), HttpError> {
        let resp = self.send_once(&req, auth.clone(), deadline).await?;
        if resp.status() != http::StatusCode::UNAUTHORIZED {
            return Ok((resp, auth));
        }
        let host = req.uri.host().unwrap_or_default();
        match self
            .authorization(&resp, host, req.port, secrets, deadline)
            .await
        {
            Some(auth) => {
                let resp = self.send_once(&req, Some(auth.clone()), deadline).await?;
                Ok((resp, Some(auth)))
            }
            None => Ok((resp, None)),
        }
    }

    /// One request of the host's own (OCI push and pull), under the same
    /// policy, TLS, credentials and token cache as the component's.
    pub async fn request(
        &self,
        req: HostRequest,
        deadline: Instant,
    ) -> Result<(http::Response<hyper::body::Incoming>, Option<String>)> {
        let uri = self
            .routed(&req.uri)
            .await
            .map_err(|why| anyhow::anyhow!("request to {} refused: {why}", req.uri))?;
        let outgoing = Outgoing {
            method: &req.method,
            uri: &uri,
            headers: &req.headers,
            body: req.body,
            port: req.uri.port_u16(),
        };
        self.with_auth(outgoing, req.auth, None, deadline)
            .await
            .map_err(|e| anyhow::anyhow!("{} {} failed: {e:?}", req.method, req.uri))
    }

    async fn send_once(
        &self,
        req: &Outgoing<'_>,
        auth: Option<String>,
        deadline: Instant,
    ) -> Result<http::Response<hyper::body::Incoming>, HttpError> {
        let uri = req.uri;
        let mut builder = http::Request::builder()
            .method(req.method.clone())
            .uri(uri.clone());
        for (k, v) in req.headers {
            if k != http::header::HOST {
                builder = builder.header(k, v);
            }
        }
        if let Some(a) = auth {
            builder = builder.header(AUTHORIZATION, a);
        }
        let req = builder
            .body(Full::new(req.body.clone()))
            .map_err(|_| HttpError::HttpRequestUriInvalid)?;
        self.sent.fetch_add(1, Ordering::Relaxed);
        let answer = tokio::time::timeout_at(deadline.into(), self.client.request(req)).await;
        let authority = uri.authority().map(|a| a.as_str()).unwrap_or_default();
        let status = match &answer {
            Ok(Ok(r)) => Some(r.status().as_u16()),
            _ => None,
        };
        crate::metrics::metrics().registry_request(authority, status);
        match answer {
            Err(_) => Err(HttpError::ConnectionTimeout),
            Ok(Err(e)) => {
                tracing::debug!("registry request to {uri} failed: {e:?}");
                Err(if e.is_connect() {
                    HttpError::ConnectionRefused
                } else {
                    HttpError::HttpProtocolError
                })
            }
            Ok(Ok(r)) => Ok(r),
        }
    }

    /// The Authorization header answering a 401's challenge, if we can.
    async fn authorization(
        &self,
        resp: &http::Response<hyper::body::Incoming>,
        host: &str,
        port: Option<u16>,
        secrets: Option<&Keychain>,
        deadline: Instant,
    ) -> Option<String> {
        let header = resp.headers().get(WWW_AUTHENTICATE)?.to_str().ok()?;
        // A policy's own secrets win over the host-wide --registry-config.
        let credential = secrets
            .and_then(|k| k.get(host, port))
            .or_else(|| self.keychain.get(host, port));
        match auth::parse_challenge(header)? {
            Challenge::Basic => credential.map(|c| c.basic_header()),
            Challenge::Bearer {
                realm,
                service,
                scope,
            } => {
                // Tokens obtained with different credentials are never shared.
                let who = credential.map(|c| c.username.clone()).unwrap_or_default();
                let key = (realm.clone(), format!("{service}\u{0}{who}"), scope.clone());
                if let Some(t) = self.tokens.get(&key) {
                    return Some(format!("Bearer {t}"));
                }
                let (token, expires) = self
                    .fetch_token(&realm, &service, &scope, credential, deadline)
                    .await?;
                self.tokens.put(key, token.clone(), expires);
                Some(format!("Bearer {token}"))
            }
        }
    }

    async fn fetch_token(
        &self,
        realm: &str,
        service: &str,
        scope: &str,
        credential: Option<&auth::Credential>,
        deadline: Instant,
    ) -> Option<(String, Option<u64>)> {
        let realm_uri: http::Uri = realm.parse().ok()?;
        let host = realm_uri.host()?.to_string();
        let https = realm_uri.scheme_str() != Some("http");
        let port = realm_uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        // The token endpoint is a network destination like any other.
        let route = self
            .policy
            .route(&host, port, || resolve(host.clone(), port))
            .await;
        match route {
            Ok(Route::Http) | Ok(Route::Https) if https || route == Ok(Route::Http) => {}
            _ => {
                tracing::warn!("token realm {realm} refused by the network policy");
                return None;
            }
        }
        let sep = if realm.contains('?') { '&' } else { '?' };
        let mut url = format!("{realm}{sep}service={}", encode(service));
        if !scope.is_empty() {
            url.push_str(&format!("&scope={}", encode(scope)));
        }
        let uri: http::Uri = url.parse().ok()?;
        let mut headers = http::HeaderMap::new();
        headers.insert(
            http::header::ACCEPT,
            http::HeaderValue::from_static("application/json"),
        );
        let auth = credential.map(|c| c.basic_header());
        let req = Outgoing {
            method: &http::Method::GET,
            uri: &uri,
            headers: &headers,
            body: Bytes::new(),
            port: realm_uri.port_u16(),
        };
        let resp = self.send_once(&req, auth, deadline).await.ok()?;
        if !resp.status().is_success() {
            tracing::warn!("token endpoint {realm} answered {}", resp.status());
            return None;
        }
        let limited = http_body_util::Limited::new(resp.into_body(), 1 << 20);
        let body = tokio::time::timeout_at(deadline.into(), limited.collect())
            .await
            .ok()?
            .ok()?
            .to_bytes();
        auth::parse_token_response(&body)
    }
}

impl Net {
    /// The credentials a policy names through the secrets header, read from
    /// `--secrets-dir`. Naming a secret the host cannot read fails the
    /// request: falling back to anonymous access would hide the mistake.
    fn policy_secrets(
        &self,
        header: Option<http::HeaderValue>,
    ) -> Result<Option<Keychain>, HttpError> {
        let Some(value) = header else {
            return Ok(None);
        };
        let names: Vec<String> = value
            .to_str()
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(String::from)
            .collect();
        self.secrets_keychain(&names)
            .map_err(|e| HttpError::InternalError(Some(e)))
    }

    /// The credentials of the secrets a policy names, merged (earlier
    /// names win); none when it names none.
    fn secrets_keychain(&self, names: &[String]) -> Result<Option<Keychain>, String> {
        if names.is_empty() {
            return Ok(None);
        }
        let Some(dir) = &self.secrets_dir else {
            return Err(format!(
                "the policy names registry secrets ({}) but ivpol serve has no --secrets-dir",
                names.join(",")
            ));
        };
        let mut merged = Keychain::default();
        for name in names {
            merged.extend(Keychain::from_secret(dir, name)?);
        }
        Ok(Some(merged))
    }
}

/// The header through which the component names a policy's secrets
/// (`SECRETS_HEADER` in the guest's `oci::transport`).
const SECRETS_HEADER: &str = "x-ivpol-registry-secrets";

async fn resolve(host: String, port: u16) -> std::io::Result<Vec<std::net::IpAddr>> {
    Ok(tokio::net::lookup_host((host.as_str(), port))
        .await?
        .map(|a| a.ip())
        .collect())
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The per-store hook: the shared [`Net`] plus this request's deadline.
pub struct Hooks {
    pub net: Arc<Net>,
    pub deadline: Instant,
}

impl WasiHttpHooks for Hooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> Box<
        dyn Future<
                Output = Result<
                    (
                        http::Response<WasiBody>,
                        Box<dyn Future<Output = Result<(), HttpError>> + Send>,
                    ),
                    HttpError,
                >,
            > + Send,
    > {
        drop(fut);
        let net = self.net.clone();
        let deadline = self.deadline;
        Box::new(async move {
            let resp = net.send(request, deadline).await?;
            let done: Box<dyn Future<Output = Result<(), HttpError>> + Send> =
                Box::new(async { Ok(()) });
            Ok((resp, done))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A one-shot HTTP server that records the request head it receives.
    async fn recording_server() -> (String, tokio::task::JoinHandle<String>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let handle = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.expect("accept");
            let mut buf = vec![0u8; 8192];
            let n = stream.read(&mut buf).await.unwrap_or(0);
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
                .await;
            String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase()
        });
        (addr, handle)
    }

    fn guest_request(url: &str, headers: &[(&str, &str)]) -> http::Request<WasiBody> {
        let mut b = http::Request::builder().method("GET").uri(url);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let body = http_body_util::Empty::<Bytes>::new()
            .map_err(|never| match never {})
            .boxed_unsync();
        b.body(body).expect("request")
    }

    /// Whatever credential-looking header the guest sets never leaves the
    /// host, and the host's own credentials are only added on a challenge.
    #[tokio::test]
    async fn guest_authorization_and_secret_names_are_stripped() {
        let (addr, seen) = recording_server().await;
        let policy = NetPolicy {
            allow: vec![],
            insecure: vec![addr.parse().expect("host:port")],
        };
        let keychain = Keychain::parse(&format!(
            r#"{{"auths":{{"{addr}":{{"username":"u","password":"host-only"}}}}}}"#
        ))
        .expect("keychain");
        let dir = std::env::temp_dir();
        let net = Arc::new(Net::new(policy, keychain, Some(&dir), None).expect("net"));
        let req = guest_request(
            &format!("https://{addr}/v2/app/manifests/v1"),
            &[
                ("authorization", "Bearer forged-by-guest"),
                (SECRETS_HEADER, ""),
            ],
        );
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        let resp = net.send(req, deadline).await.expect("sent");
        assert_eq!(resp.status(), 200);
        let head = seen.await.expect("recorded");
        assert!(head.starts_with("get /v2/app/manifests/v1 "), "{head}");
        assert!(!head.contains("authorization"), "{head}");
        assert!(!head.contains(SECRETS_HEADER), "{head}");
        assert!(!head.contains("host-only"), "{head}");
    }

    /// The host's own requests (OCI push) carry their body and a known
    /// Authorization, go out over plain HTTP only for an insecure
    /// registry, and are refused with the policy's reason otherwise.
    #[tokio::test]
    async fn host_requests_carry_body_and_auth_under_the_same_policy() {
        let (addr, seen) = recording_server().await;
        let policy = NetPolicy {
            allow: vec![],
            insecure: vec![addr.parse().expect("host:port")],
        };
        let net = Net::new(policy, Keychain::default(), None, None).expect("net");
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        let req = |uri: String| HostRequest {
            method: http::Method::PUT,
            uri: uri.parse().expect("uri"),
            headers: http::HeaderMap::new(),
            body: Bytes::from_static(b"blob-bytes"),
            auth: Some("Bearer known".into()),
        };
        let (resp, used) = net
            .request(
                req(format!("https://{addr}/v2/a/blobs/uploads/x")),
                deadline,
            )
            .await
            .expect("sent");
        assert_eq!(resp.status(), 200);
        assert_eq!(used.as_deref(), Some("Bearer known"));
        let head = seen.await.expect("request seen");
        assert!(head.starts_with("put /v2/a/blobs/uploads/x"), "{head}");
        assert!(head.contains("authorization: bearer known"), "{head}");
        assert!(head.ends_with("blob-bytes"), "{head}");
        let err = net
            .request(req("https://10.0.0.1/v2/".into()), deadline)
            .await
            .expect_err("refused");
        assert!(err.to_string().contains("non-public address"), "{err}");
    }

    #[tokio::test]
    async fn refused_destinations_are_denied_before_any_connection() {
        let net =
            Arc::new(Net::new(NetPolicy::default(), Keychain::default(), None, None).expect("net"));
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        for url in [
            "https://127.0.0.1:1/v2/",
            "https://169.254.169.254/latest/meta-data",
            "http://[::1]:5000/v2/",
        ] {
            let err = net
                .clone()
                .send(guest_request(url, &[]), deadline)
                .await
                .expect_err(url);
            assert!(
                matches!(err, HttpError::HttpRequestDenied),
                "{url}: {err:?}"
            );
        }
        assert_eq!(net.sent.load(Ordering::Relaxed), 0, "nothing was sent");
    }
}
