//! The HTTP seam: the client's only way out. In the component it is
//! wasi:http (`wasi_transport`); the host decides what is allowed, adds
//! credentials, and answers auth challenges, so nothing secret passes here.

use std::sync::Arc;
use thiserror::Error;

/// One HTTP request to a registry or TUF mirror.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// The HTTP method (`GET`).
    pub method: &'static str,
    /// Absolute `https://host[:port]/path?query` URL.
    pub url: String,
    /// Request headers, such as `Accept`.
    pub headers: Vec<(String, String)>,
    /// The policy's `credentials.secrets` (as the host names them) whose
    /// credentials the host presents for this request; empty: the host's
    /// own keychain only. Names only: the secrets stay in the host.
    pub secrets: Arc<[String]>,
    /// The namespace of the namespaced policy the request is for (none for
    /// a cluster policy): the host's own keychain is the operator's, and
    /// serves a tenant only when the operator says so.
    pub tenant: Option<Arc<str>>,
}

impl HttpRequest {
    /// A GET of `url` with `headers`, naming no secrets.
    pub fn get(url: String, headers: Vec<(String, String)>) -> HttpRequest {
        HttpRequest {
            method: "GET",
            url,
            headers,
            secrets: Arc::default(),
            tenant: None,
        }
    }
}

/// The answer to an [`HttpRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    /// The HTTP status code.
    pub status: u16,
    /// Response headers, as received.
    pub headers: Vec<(String, String)>,
    /// The response body, read in full.
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why a request got no response.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum TransportError {
    /// The host's network policy does not allow requests to `host`.
    #[error("request to {host} denied by the host's network policy")]
    Denied {
        /// The host the request was for.
        host: String,
    },
    /// The request to `host` timed out.
    #[error("request to {host} timed out")]
    Timeout {
        /// The host the request was for.
        host: String,
    },
    /// The response body was larger than the request allowed.
    #[error("response from {host} is larger than {limit} bytes")]
    TooLarge {
        /// The host the request was for.
        host: String,
        /// The body limit in bytes; 0 when the host's own limit cut it off.
        limit: usize,
    },
    /// The evaluation's registry data budget ([`super::budget`]) ran out.
    #[error("registry data budget of {limit} bytes exceeded")]
    BudgetExceeded {
        /// The budget in bytes.
        limit: usize,
    },
    /// The evaluation's budget of parsed registry JSON values ran out.
    #[error("registry data budget of {limit} parsed JSON values exceeded")]
    ValueBudgetExceeded {
        /// The budget in JSON values.
        limit: usize,
    },
    /// The request failed for any other reason, given in `message`.
    #[error("request to {host} failed: {message}")]
    Failed {
        /// The host the request was for.
        host: String,
        /// What went wrong.
        message: String,
    },
}

/// Sends one request and reads at most `max_body` bytes of the answer.
pub trait Transport {
    /// Sends `request`; a body over `max_body` bytes is
    /// [`TransportError::TooLarge`].
    fn send(&self, request: &HttpRequest, max_body: usize) -> Result<HttpResponse, TransportError>;

    /// Sends independent requests, each with its own body limit, and
    /// answers in the same order. A transport that can have several
    /// requests in flight (wasi:http) sends them all before it waits for
    /// any; the default sends one after another.
    fn send_each(
        &self,
        requests: &[(HttpRequest, usize)],
    ) -> Vec<Result<HttpResponse, TransportError>> {
        requests
            .iter()
            .map(|(request, max_body)| self.send(request, *max_body))
            .collect()
    }

    /// Charges `values` JSON values (registry data about to be parsed into
    /// a tree) to the evaluation's budget, if there is one.
    fn charge_parsed(&self, values: usize) -> Result<(), TransportError> {
        let _ = values;
        Ok(())
    }
}

/// A transport with no network, for evaluation outside the component.
pub struct Offline;

impl Transport for Offline {
    fn send(
        &self,
        request: &HttpRequest,
        _max_body: usize,
    ) -> Result<HttpResponse, TransportError> {
        let host = host_of(&request.url);
        Err(TransportError::Failed {
            host,
            message: "no network access in this context".into(),
        })
    }
}

/// Names a policy's `credentials.secrets`, and the namespace of a
/// namespaced one, on every request ([`HttpRequest::secrets`],
/// [`HttpRequest::tenant`]).
pub struct WithSecrets {
    /// The transport requests are sent through.
    pub inner: Arc<dyn Transport + Send + Sync>,
    /// The secret names set on every request.
    pub secrets: Arc<[String]>,
    /// The tenant set on every request.
    pub tenant: Option<Arc<str>>,
}

impl WithSecrets {
    fn named(&self, request: &HttpRequest) -> HttpRequest {
        HttpRequest {
            secrets: self.secrets.clone(),
            tenant: self.tenant.clone(),
            ..request.clone()
        }
    }
}

impl Transport for WithSecrets {
    fn send(&self, request: &HttpRequest, max_body: usize) -> Result<HttpResponse, TransportError> {
        self.inner.send(&self.named(request), max_body)
    }

    fn send_each(
        &self,
        requests: &[(HttpRequest, usize)],
    ) -> Vec<Result<HttpResponse, TransportError>> {
        let named: Vec<(HttpRequest, usize)> =
            requests.iter().map(|(r, m)| (self.named(r), *m)).collect();
        self.inner.send_each(&named)
    }

    fn charge_parsed(&self, values: usize) -> Result<(), TransportError> {
        self.inner.charge_parsed(values)
    }
}

/// The `host[:port]` of an absolute URL.
pub fn host_of(url: &str) -> String {
    url.split('/').nth(2).unwrap_or_default().to_string()
}
