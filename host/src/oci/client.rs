//! A distribution-API client for one repository, on the host's [`Net`]:
//! the same network policy, TLS roots, docker credentials and token cache
//! as the component's registry calls, so there is one registry client
//! configuration, not two.

use super::reference::Reference;
use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use http_body_util::BodyExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ivpol_runtime::net::{HostRequest, Net};

/// How long one registry call (including its body) may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(300);
/// Redirects followed for a blob (registries send blobs to storage hosts).
const MAX_REDIRECTS: usize = 5;

pub(crate) struct Client {
    net: Arc<Net>,
    reference: Reference,
    /// The last Authorization that worked, presented up front next time
    /// (a push otherwise uploads every blob twice: once to get the challenge).
    auth: Mutex<Option<String>>,
}

/// A response with its body read.
pub(crate) struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Client {
    pub(crate) fn new(net: Arc<Net>, reference: &Reference) -> Client {
        Client {
            net,
            reference: reference.clone(),
            auth: Mutex::new(None),
        }
    }

    pub(crate) fn reference(&self) -> &Reference {
        &self.reference
    }

    /// `https://<registry>/v2/<repository>/<path>` (the host downgrades to
    /// HTTP for an `--insecure-registry`).
    fn url(&self, path: &str) -> String {
        format!(
            "https://{}/v2/{}/{path}",
            self.reference.api_host(),
            self.reference.repository
        )
    }

    /// Sends one request to this registry; the body is read up to `limit`.
    pub(crate) async fn call(
        &self,
        method: Method,
        url: &str,
        headers: HeaderMap,
        body: Bytes,
        limit: u64,
    ) -> Result<Answer> {
        let uri: http::Uri = url.parse().with_context(|| format!("{url} is not a URL"))?;
        let same_registry = uri.authority().map(|a| a.as_str()) == Some(self.reference.api_host());
        let auth = match same_registry {
            true => self.auth.lock().ok().and_then(|a| a.clone()),
            // Credentials for the registry never go to another host.
            false => None,
        };
        let deadline = Instant::now() + CALL_TIMEOUT;
        let req = HostRequest {
            method,
            uri,
            headers,
            body,
            auth,
        };
        let (resp, used) = self.net.request(req, deadline).await?;
        if same_registry && used.is_some() && resp.status() != StatusCode::UNAUTHORIZED {
            if let Ok(mut a) = self.auth.lock() {
                *a = used;
            }
        }
        read(resp, limit, deadline, url).await
    }

    /// GETs `path` under the repository, following redirects (for blobs).
    pub(crate) async fn get(&self, path: &str, accept: &str, limit: u64) -> Result<Answer> {
        let mut url = self.url(path);
        for _ in 0..=MAX_REDIRECTS {
            let mut headers = HeaderMap::new();
            headers.insert(http::header::ACCEPT, HeaderValue::from_str(accept)?);
            let answer = self
                .call(Method::GET, &url, headers, Bytes::new(), limit)
                .await?;
            if !answer.status.is_redirection() {
                return Ok(answer);
            }
            let location = answer
                .headers
                .get(http::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .context("a redirect without a Location")?;
            url = absolute(&url, location)?;
        }
        bail!("more than {MAX_REDIRECTS} redirects for {}", self.url(path))
    }

    /// Whether the registry already has the blob `digest`.
    pub(crate) async fn has_blob(&self, digest: &str) -> Result<bool> {
        let url = self.url(&format!("blobs/{digest}"));
        // A HEAD answer declares the blob's length but carries no body.
        let answer = self
            .call(Method::HEAD, &url, HeaderMap::new(), Bytes::new(), u64::MAX)
            .await?;
        match answer.status {
            s if s.is_success() => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            s => Err(registry_error("HEAD", &url, s, &answer.body)),
        }
    }

    /// Uploads a blob: POST opens an upload session, PUT with `?digest=`
    /// closes it with the whole content (the flow every registry supports).
    pub(crate) async fn upload_blob(&self, digest: &str, bytes: Bytes) -> Result<()> {
        let start = self.url("blobs/uploads/");
        let opened = self
            .call(
                Method::POST,
                &start,
                HeaderMap::new(),
                Bytes::new(),
                1 << 16,
            )
            .await?;
        if opened.status != StatusCode::ACCEPTED {
            return Err(registry_error("POST", &start, opened.status, &opened.body));
        }
        let location = opened
            .headers
            .get(http::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .context("the registry opened an upload without a Location")?;
        let location = absolute(&start, location)?;
        let sep = if location.contains('?') { '&' } else { '?' };
        let put = format!("{location}{sep}digest={digest}");
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
        let done = self
            .call(Method::PUT, &put, headers, bytes, 1 << 16)
            .await?;
        if done.status != StatusCode::CREATED {
            return Err(registry_error("PUT", &location, done.status, &done.body));
        }
        Ok(())
    }

    /// PUTs a manifest under `reference` (a tag); returns the registry's
    /// `Docker-Content-Digest`, when it sends one.
    pub(crate) async fn put_manifest(
        &self,
        reference: &str,
        media_type: &str,
        body: Bytes,
    ) -> Result<Option<String>> {
        let url = self.url(&format!("manifests/{reference}"));
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_str(media_type)?,
        );
        let done = self.call(Method::PUT, &url, headers, body, 1 << 16).await?;
        if done.status != StatusCode::CREATED {
            return Err(registry_error("PUT", &url, done.status, &done.body));
        }
        Ok(header(&done.headers, "docker-content-digest"))
    }
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Reads a body, refusing one larger than `limit` before and while reading.
async fn read(
    resp: http::Response<hyper::body::Incoming>,
    limit: u64,
    deadline: Instant,
    url: &str,
) -> Result<Answer> {
    let (parts, body) = resp.into_parts();
    let declared = header(&parts.headers, "content-length").and_then(|l| l.parse::<u64>().ok());
    // Error bodies are read (bounded) for their message even when `limit` is 0.
    let limit = if parts.status.is_success() {
        limit
    } else {
        1 << 16
    };
    if declared.is_some_and(|l| l > limit) && parts.status.is_success() {
        bail!(
            "{url}: the registry sends {} bytes, more than the {limit} allowed",
            declared.unwrap_or_default()
        );
    }
    let limited = http_body_util::Limited::new(body, limit as usize);
    let body = tokio::time::timeout_at(deadline.into(), limited.collect())
        .await
        .map_err(|_| anyhow::anyhow!("{url}: reading the answer timed out"))?
        .map_err(|e| {
            anyhow::anyhow!("{url}: reading the answer failed ({e}); more than {limit} bytes?")
        })?
        .to_bytes();
    Ok(Answer {
        status: parts.status,
        headers: parts.headers,
        body,
    })
}

/// A registry's refusal, with the first error message of its JSON body.
pub(crate) fn registry_error(
    method: &str,
    url: &str,
    status: StatusCode,
    body: &[u8],
) -> anyhow::Error {
    let message = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/errors/0/message")
                .and_then(|m| m.as_str())
                .map(str::to_string)
        });
    match message {
        Some(m) => anyhow::anyhow!("{method} {url}: the registry answered {status}: {m}"),
        None => anyhow::anyhow!("{method} {url}: the registry answered {status}"),
    }
}

/// Resolves a `Location` (absolute, or a path on the same host).
fn absolute(base: &str, location: &str) -> Result<String> {
    if location.starts_with("http://") || location.starts_with("https://") {
        return Ok(location.to_string());
    }
    let uri: http::Uri = base.parse()?;
    let (scheme, authority) = (
        uri.scheme_str().unwrap_or("https"),
        uri.authority().map(|a| a.as_str()).unwrap_or_default(),
    );
    if !location.starts_with('/') {
        bail!("unsupported relative Location {location:?}");
    }
    Ok(format!("{scheme}://{authority}{location}"))
}

#[cfg(test)]
mod tests {
    use super::absolute;

    #[test]
    fn locations_resolve_against_the_registry() {
        let base = "https://r.example:5000/v2/a/blobs/uploads/";
        assert_eq!(
            absolute(base, "/v2/a/blobs/uploads/x?_state=1")
                .ok()
                .as_deref(),
            Some("https://r.example:5000/v2/a/blobs/uploads/x?_state=1")
        );
        assert_eq!(
            absolute(base, "https://s3.example/b").ok().as_deref(),
            Some("https://s3.example/b")
        );
        let e = absolute(base, "x").expect_err("refused").to_string();
        assert!(e.contains("unsupported relative Location"), "{e}");
    }
}
