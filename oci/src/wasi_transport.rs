//! [`Transport`] over `wasi:http/outgoing-handler`: the component's only
//! network access. The host's `send_request` hook decides what is allowed,
//! answers auth challenges (with the credentials of the secrets named
//! through `registry-credentials`) and picks TLS or plain HTTP; a refused
//! request comes back as `HttpRequestDenied`, which we report naming the
//! host.

use super::transport::{HttpRequest, HttpResponse, Transport, TransportError};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{ErrorCode, Fields, Method, OutgoingRequest, RequestOptions, Scheme};
use wasip2::io::streams::StreamError;

/// Sends through wasi:http with per-request timeouts.
pub struct WasiTransport {
    /// Connect, first-byte and between-bytes timeout, in nanoseconds.
    pub timeout_ns: u64,
    /// Names to the host the secrets (and the tenant) whose credentials
    /// the next request is to carry: the WIT `registry-credentials`
    /// import, which the component glue hands in (this layer does not
    /// reach up to the bindings).
    pub present: fn(secrets: &[String], tenant: Option<&str>),
}

impl Transport for WasiTransport {
    fn send(&self, request: &HttpRequest, max_body: usize) -> Result<HttpResponse, TransportError> {
        let sent = self.start(request)?;
        receive(sent, max_body)
    }

    /// Every request is handed to the host before any answer is awaited:
    /// the host runs them at the same time.
    fn send_each(
        &self,
        requests: &[(HttpRequest, usize)],
    ) -> Vec<Result<HttpResponse, TransportError>> {
        let sent: Vec<_> = requests.iter().map(|(r, _)| self.start(r)).collect();
        await_all(&sent);
        sent.into_iter()
            .zip(requests)
            .map(|(sent, (_, max_body))| receive(sent?, *max_body))
            .collect()
    }
}

/// Waits until every started request has its answer's head. The host
/// drives an outgoing request only while the guest waits on it, so waiting
/// on them one at a time would send them one after another.
fn await_all(sent: &[Result<Sent, TransportError>]) {
    let mut waiting: Vec<wasip2::io::poll::Pollable> = sent
        .iter()
        .filter_map(|s| s.as_ref().ok())
        .map(|s| s.future.subscribe())
        .collect();
    while !waiting.is_empty() {
        let refs: Vec<&wasip2::io::poll::Pollable> = waiting.iter().collect();
        let mut ready = wasip2::io::poll::poll(&refs);
        ivpol_refs::sort::sort(&mut ready);
        for i in ready.into_iter().rev() {
            waiting.swap_remove(i as usize);
        }
    }
}

/// A request the host is working on, and the host it went to.
struct Sent {
    future: wasip2::http::types::FutureIncomingResponse,
    host: String,
}

impl WasiTransport {
    /// Hands `request` to the host; the answer is read by [`receive`].
    fn start(&self, request: &HttpRequest) -> Result<Sent, TransportError> {
        let (scheme, authority, path) = split_url(&request.url);
        let host = authority.to_string();
        let failed = |message: String| TransportError::Failed {
            host: host.clone(),
            message,
        };
        let entries: Vec<(String, Vec<u8>)> = request
            .headers
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.as_bytes().to_vec()))
            .collect();
        let headers =
            Fields::from_list(&entries).map_err(|e| failed(format!("bad header: {e:?}")))?;
        let req = OutgoingRequest::new(headers);
        let method = if request.method == "HEAD" {
            Method::Head
        } else {
            Method::Get
        };
        let scheme = if scheme == "http" {
            Scheme::Http
        } else {
            Scheme::Https
        };
        req.set_method(&method)
            .map_err(|()| failed("bad method".into()))?;
        req.set_scheme(Some(&scheme))
            .map_err(|()| failed("bad scheme".into()))?;
        req.set_authority(Some(authority))
            .map_err(|()| failed("bad authority".into()))?;
        req.set_path_with_query(Some(path))
            .map_err(|()| failed("bad path".into()))?;
        let options = RequestOptions::new();
        // Setting a timeout only fails when the host does not support it.
        let _ = options.set_connect_timeout(Some(self.timeout_ns));
        let _ = options.set_first_byte_timeout(Some(self.timeout_ns));
        let _ = options.set_between_bytes_timeout(Some(self.timeout_ns));
        // The host reads the secrets named last when the request is handed
        // over, so each request names its own (the call is cheap).
        (self.present)(&request.secrets, request.tenant.as_deref());
        let future =
            outgoing_handler::handle(req, Some(options)).map_err(|e| map_error(&host, e))?;
        Ok(Sent { future, host })
    }
}

/// Waits for the answer to `sent` and reads at most `max_body` bytes of it.
fn receive(sent: Sent, max_body: usize) -> Result<HttpResponse, TransportError> {
    let Sent { future, host } = sent;
    let failed = |message: String| TransportError::Failed {
        host: host.clone(),
        message,
    };
    future.subscribe().block();
    let response = match future.get() {
        Some(Ok(Ok(r))) => r,
        Some(Ok(Err(e))) => return Err(map_error(&host, e)),
        Some(Err(())) | None => return Err(failed("response already taken".into())),
    };
    let status = response.status();
    let headers: Vec<(String, String)> = response
        .headers()
        .entries()
        .into_iter()
        .map(|(k, v)| (k, String::from_utf8_lossy(&v).into_owned()))
        .collect();
    let body = response
        .consume()
        .map_err(|()| failed("no response body".into()))?;
    let stream = body
        .stream()
        .map_err(|()| failed("no response body stream".into()))?;
    // Sized from Content-Length (within the limit) so that a large body
    // is not held twice while the buffer doubles.
    let expected = headers
        .iter()
        .find(|(k, _): &&(String, String)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut bytes = Vec::with_capacity(expected.min(max_body));
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                if bytes.len() + chunk.len() > max_body {
                    return Err(TransportError::TooLarge {
                        host,
                        limit: max_body,
                    });
                }
                bytes.extend_from_slice(&chunk);
            }
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(failed(format!("reading the body: {}", e.to_debug_string())))
            }
        }
    }
    Ok(HttpResponse {
        status,
        headers,
        body: bytes,
    })
}

fn map_error(host: &str, e: ErrorCode) -> TransportError {
    let host = host.to_string();
    match e {
        ErrorCode::HttpRequestDenied => TransportError::Denied { host },
        ErrorCode::ConnectionTimeout
        | ErrorCode::ConnectionReadTimeout
        | ErrorCode::HttpResponseTimeout => TransportError::Timeout { host },
        ErrorCode::HttpResponseBodySize(_) => TransportError::TooLarge { host, limit: 0 },
        ErrorCode::InternalError(Some(message)) => TransportError::Failed { host, message },
        ErrorCode::TlsCertificateError => TransportError::Failed {
            host,
            message: "TLS: the registry's certificate is not trusted for its name (the host's --registry-ca)".into(),
        },
        other => TransportError::Failed {
            host,
            message: format!("{other:?}"),
        },
    }
}

/// `scheme://authority/path?query` into its parts.
fn split_url(url: &str) -> (&str, &str, &str) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("https", url));
    match rest.find('/') {
        Some(i) => (scheme, &rest[..i], &rest[i..]),
        None => (scheme, rest, "/"),
    }
}
