//! The request path: a request of the component or of the host routed
//! under the registry policy, sent within its deadline and its registry's
//! share of requests in flight, a 401 answered once, and what failed told
//! apart (refused, DNS, TLS, timeout).

use super::auth::Keychain;
use super::policy::Route;
use super::resolve::{self, ResolveError};
use super::{body, HostRequest, Net, Outgoing, Presented};
use anyhow::Result;
use bytes::Bytes;
use http::header::AUTHORIZATION;
use http_body_util::{BodyExt, Full};
use ivpol_refs::REVOCATION_FETCH_HEADER;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use wasmtime_wasi_http::{Error as HttpError, WasiBody};

impl Net {
    /// Sends one request of the component, with auth (the credentials of
    /// the policy `secrets` it named, or the default keychain), within
    /// `deadline`.
    pub(super) async fn send(
        self: Arc<Self>,
        request: http::Request<WasiBody>,
        presented: Presented,
        deadline: Instant,
    ) -> Result<http::Response<WasiBody>, HttpError> {
        // The component only reads: GET and HEAD, and never a body.
        let (parts, _body) = request.into_parts();
        if parts.method != http::Method::GET && parts.method != http::Method::HEAD {
            tracing::warn!(
                "registry request refused: {} {} (the component may only GET and HEAD)",
                parts.method,
                parts.uri
            );
            return Err(HttpError::HttpRequestDenied);
        }
        if let Some(tape) = self.tape.get().cloned() {
            if let Some(replayed) = tape.replayed(&parts) {
                return replayed;
            }
            let resp = self.send_live(parts.clone(), presented, deadline).await?;
            return tape.recorded(&parts, resp, deadline).await;
        }
        self.send_live(parts, presented, deadline).await
    }

    /// Sends the request of `parts` to the network, as [`Net::send`] says.
    async fn send_live(
        self: Arc<Self>,
        parts: http::request::Parts,
        presented: Presented,
        deadline: Instant,
    ) -> Result<http::Response<WasiBody>, HttpError> {
        if parts.headers.contains_key(REVOCATION_FETCH_HEADER) {
            return self.send_revocation_fetch(parts, deadline).await;
        }
        let uri = self.routed(&parts.uri).map_err(|why| {
            tracing::warn!("registry request refused: {why}");
            HttpError::HttpRequestDenied
        })?;
        let mut headers = parts.headers.clone();
        // The guest holds no credentials; anything it sets here is dropped.
        headers.remove(AUTHORIZATION);
        let host_serves = self.host_keychain_serves(presented.tenant.as_deref());
        let secrets = self
            .secrets_keychain(&presented.secrets, host_serves)
            .map_err(|e| HttpError::InternalError(Some(e)))?;
        let host = uri.authority().map(|a| a.as_str()).unwrap_or_default();
        let turn = self
            .inflight
            .turn(host, deadline)
            .await
            .map_err(|e| HttpError::InternalError(Some(e)))?;
        let outgoing = Outgoing {
            method: &parts.method,
            uri: &uri,
            headers: &headers,
            body: Bytes::new(),
            port: parts.uri.port_u16(),
        };
        let (resp, _) = self
            .with_auth(outgoing, None, secrets.as_ref(), host_serves, deadline)
            .await?;
        Ok(resp.map(|b| body::DeadlineBody::new(b, deadline, turn).boxed_unsync()))
    }

    /// Sends a revocation fetch of the component (an OCSP or CRL URL a
    /// certificate names): over the URL's own scheme, to an endpoint
    /// `--allow-revocation` admits, with no credentials and no answer to
    /// an auth challenge; the answers are signed, the component checks
    /// them.
    async fn send_revocation_fetch(
        self: Arc<Self>,
        parts: http::request::Parts,
        deadline: Instant,
    ) -> Result<http::Response<WasiBody>, HttpError> {
        let refused = |why: String| {
            tracing::warn!("revocation fetch of {} refused: {why}", parts.uri);
            HttpError::HttpRequestDenied
        };
        let https = match parts.uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(refused("the scheme is not HTTP(S)".into())),
        };
        let host = parts.uri.host().unwrap_or_default();
        let port = parts.uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        self.policy.revocation_route(host, port).map_err(refused)?;
        let mut headers = parts.headers.clone();
        headers.remove(AUTHORIZATION);
        headers.remove(REVOCATION_FETCH_HEADER);
        let authority = parts
            .uri
            .authority()
            .map(|a| a.as_str())
            .unwrap_or_default();
        let turn = self
            .inflight
            .turn(authority, deadline)
            .await
            .map_err(|e| HttpError::InternalError(Some(e)))?;
        let outgoing = Outgoing {
            method: &parts.method,
            uri: &parts.uri,
            headers: &headers,
            body: Bytes::new(),
            port: parts.uri.port_u16(),
        };
        let resp = self.send_once(&outgoing, None, deadline).await?;
        Ok(resp.map(|b| body::DeadlineBody::new(b, deadline, turn).boxed_unsync()))
    }

    /// The URI a request really goes to, or why the policy refuses it: the
    /// scheme is `http` only for an `--insecure-registry`, whatever was asked.
    /// A name's addresses are checked later, by the connector's resolver.
    pub(super) fn routed(&self, asked: &http::Uri) -> Result<http::Uri, String> {
        let host = asked.host().unwrap_or_default().to_string();
        match asked.scheme_str() {
            None | Some("http") | Some("https") => {}
            Some(other) => return Err(format!("scheme {other} is not HTTP(S)")),
        }
        let https = asked.scheme_str() != Some("http");
        let port = asked.port_u16().unwrap_or(if https { 443 } else { 80 });
        let route = self.policy.route(&host, port)?;
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
    /// `secrets` are the policy's; `host_keychain` says whether the
    /// host-wide keychain may answer too.
    pub(super) async fn with_auth(
        &self,
        req: Outgoing<'_>,
        auth: Option<String>,
        secrets: Option<&Keychain>,
        host_keychain: bool,
        deadline: Instant,
    ) -> Result<(http::Response<hyper::body::Incoming>, Option<String>), HttpError> {
        let resp = self.send_once(&req, auth.clone(), deadline).await?;
        if resp.status() != http::StatusCode::UNAUTHORIZED {
            return Ok((resp, auth));
        }
        match self
            .authorization(&resp, &req, secrets, host_keychain, deadline)
            .await
            .map_err(|why| HttpError::InternalError(Some(why)))?
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
            .map_err(|why| anyhow::anyhow!("request to {} refused: {why}", req.uri))?;
        let outgoing = Outgoing {
            method: &req.method,
            uri: &uri,
            headers: &req.headers,
            body: req.body,
            port: req.uri.port_u16(),
        };
        self.with_auth(outgoing, req.auth, None, true, deadline)
            .await
            .map_err(|e| anyhow::anyhow!("{} {} failed: {e:?}", req.method, req.uri))
    }

    pub(super) async fn send_once(
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
        let started = Instant::now();
        // The deadline rides along to the resolver (DNS is bounded by it).
        let answer = resolve::DEADLINE
            .scope(
                deadline,
                tokio::time::timeout_at(deadline.into(), self.client.request(req)),
            )
            .await;
        let authority = uri.authority().map(|a| a.as_str()).unwrap_or_default();
        let status = match &answer {
            Ok(Ok(r)) => Some(r.status().as_u16()),
            _ => None,
        };
        crate::metrics::metrics().registry_request(authority, status, started.elapsed());
        match answer {
            Err(_) => Err(HttpError::ConnectionTimeout),
            Ok(Err(e)) => match ResolveError::find(&e) {
                Some(ResolveError::Refused(why)) => {
                    tracing::warn!("registry request to {uri} refused: {why}");
                    Err(HttpError::HttpRequestDenied)
                }
                Some(ResolveError::Timeout(_)) => {
                    tracing::warn!("registry request to {uri}: {e}");
                    Err(HttpError::DnsTimeout)
                }
                Some(ResolveError::Failed(why)) => {
                    tracing::warn!("registry request to {uri}: {why}");
                    Err(HttpError::DnsError {
                        rcode: Some(why.clone()),
                        info_code: None,
                    })
                }
                None => {
                    tracing::debug!("registry request to {uri} failed: {e:?}");
                    Err(match tls_failure(&e) {
                        Some(why) => {
                            tracing::warn!("registry request to {uri}: TLS: {why}");
                            HttpError::TlsCertificateError
                        }
                        None if e.is_connect() => HttpError::ConnectionRefused,
                        None => HttpError::HttpProtocolError,
                    })
                }
            },
            Ok(Ok(r)) => Ok(r),
        }
    }
}

/// Why the registry's certificate was refused, when that is what failed:
/// an untrusted certificate is not a refused connection, and says so.
/// (rustls' error reaches the client boxed inside hyper-rustls' and
/// hyper's errors; its Debug form names the certificate problem.)
fn tls_failure(e: &hyper_util::client::legacy::Error) -> Option<String> {
    let text = format!("{e:?}");
    let at = text.find("InvalidCertificate(")?;
    let rest = &text[at + "InvalidCertificate(".len()..];
    Some(rest.split(')').next().unwrap_or_default().to_string())
}
