//! The host's own HTTPS client for the clouds' identity and key services
//! (Entra ID, ACR's token exchange, Key Vault, Cloud KMS). It trusts what
//! the registry client trusts (the webpki roots and `--registry-ca`) and
//! dials `--resolve` pins as it does. The registry allow-list does not
//! govern it: these are the host's calls to its own cloud, never the
//! component's, and each goes only to its service's fixed domains.
//!
//! Redirects are not followed: a bearer token goes to the URL asked and
//! nowhere else.

use super::policy::NetPolicy;
use anyhow::Context;
use bytes::Bytes;
use std::net::SocketAddr;
use std::time::Duration;

/// No request runs longer than this (callers' deadlines bound it too).
const TIMEOUT: Duration = Duration::from_secs(10);
/// The most bytes an answer may have (tokens and keys are small).
const MAX_ANSWER: usize = 256 << 10;

/// The client, with `tls` and the policy's pins.
pub(crate) fn client(
    tls: rustls::ClientConfig,
    policy: &NetPolicy,
) -> anyhow::Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .connect_timeout(Duration::from_secs(5));
    for pin in &policy.pins {
        // Port 0: the URL's port is dialled (reqwest pins names, not ports).
        let addrs: Vec<SocketAddr> = pin.addrs.iter().map(|ip| SocketAddr::new(*ip, 0)).collect();
        builder = builder.resolve_to_addrs(&pin.host, &addrs);
    }
    builder.build().context("building the cloud HTTPS client")
}

/// `request`'s JSON answer, or why not: a failed call, an answer that is
/// not a success (with the service's own message), or one that is not JSON.
/// `what` names the service in errors.
pub(crate) async fn json(
    request: reqwest::RequestBuilder,
    what: &str,
) -> Result<serde_json::Value, String> {
    let (status, body) = send(request, what).await?;
    if !status.is_success() {
        let why = error_message(&body);
        return Err(format!("{what}: HTTP {}: {why}", status.as_u16()));
    }
    serde_json::from_slice(&body).map_err(|e| format!("{what}: {e}"))
}

/// `request`'s answer: its status and at most [`MAX_ANSWER`] bytes of body.
async fn send(
    request: reqwest::RequestBuilder,
    what: &str,
) -> Result<(reqwest::StatusCode, Bytes), String> {
    let mut response = request
        .send()
        .await
        .map_err(|e| format!("{what}: {}", error_chain(&e)))?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("{what}: {}", error_chain(&e)))?
    {
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err(format!("{what}: the answer is over {MAX_ANSWER} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((status, body.into()))
}

/// An error and its causes on one line (reqwest's own Display stops at
/// "error sending request").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The `message` of an error answer's JSON (`{"error": {"message": …}}`,
/// as Azure and Google both answer), else its first bytes.
fn error_message(body: &[u8]) -> String {
    let doc: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let message = doc.as_ref().and_then(|d| {
        d["error"]["message"]
            .as_str()
            .or_else(|| d["error_description"].as_str())
            .or_else(|| d["error"].as_str())
            .map(str::to_string)
    });
    message.unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_answers_say_why_in_one_line() {
        let azure = br#"{"error": {"code": "KeyNotFound", "message": "A key with (name/id) k was not found"}}"#;
        assert_eq!(error_message(azure), "A key with (name/id) k was not found");
        let entra = br#"{"error": "invalid_client", "error_description": "AADSTS70021: no match"}"#;
        assert_eq!(error_message(entra), "AADSTS70021: no match");
        assert_eq!(error_message(b"plain"), "plain");
    }
}
