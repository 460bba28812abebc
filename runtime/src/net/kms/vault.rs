//! `hashivault://KEY`: the public key of a transit key, as sigstore's
//! Vault signer reads it: `GET $VAULT_ADDR/v1/<transit path>/keys/KEY`
//! with `X-Vault-Token: $VAULT_TOKEN`; the newest version's `public_key`.
//! `TRANSIT_SECRET_ENGINE_PATH` (default `transit`) names the engine's
//! mount, `VAULT_CACERT` a CA to trust beside the webpki roots.

use super::MAX_ANSWER;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};

pub(super) async fn public_key(name: &str) -> Result<String, String> {
    let addr = std::env::var("VAULT_ADDR").map_err(|_| "VAULT_ADDR is not set")?;
    let token = std::env::var("VAULT_TOKEN").map_err(|_| "VAULT_TOKEN is not set")?;
    let mount = std::env::var("TRANSIT_SECRET_ENGINE_PATH").unwrap_or_else(|_| "transit".into());
    let url = format!(
        "{}/v1/{}/keys/{name}",
        addr.trim_end_matches('/'),
        mount.trim_matches('/')
    );
    let uri: http::Uri = url.parse().map_err(|_| format!("{url} is not a URL"))?;
    let request = http::Request::get(uri)
        .header("X-Vault-Token", token)
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let response = client()?
        .request(request)
        .await
        .map_err(|e| format!("Vault at {addr}: {e}"))?;
    let status = response.status();
    let body = http_body_util::Limited::new(response.into_body(), MAX_ANSWER)
        .collect()
        .await
        .map_err(|e| format!("Vault at {addr}: {e}"))?
        .to_bytes();
    if !status.is_success() {
        return Err(format!(
            "Vault answered HTTP {} for transit key {name}",
            status.as_u16()
        ));
    }
    newest_key(&body).map_err(|why| format!("Vault transit key {name}: {why}"))
}

/// The newest version's `public_key` in a read-key answer:
/// `{"data": {"latest_version": 2, "keys": {"1": {…}, "2": {"public_key": "PEM"}}}}`.
fn newest_key(body: &[u8]) -> Result<String, String> {
    let doc: serde_json::Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let data = &doc["data"];
    let latest = data["latest_version"].as_u64().ok_or("no latest_version")?;
    data["keys"][latest.to_string()]["public_key"]
        .as_str()
        .filter(|k| !k.is_empty())
        .map(str::to_string)
        .ok_or_else(|| format!("version {latest} has no public_key (not an asymmetric key?)"))
}

type Client = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Empty<Bytes>,
>;

/// HTTPS (or, for a plain `http://` VAULT_ADDR, HTTP) with the webpki
/// roots and `VAULT_CACERT`.
fn client() -> Result<Client, String> {
    let ca = std::env::var_os("VAULT_CACERT").map(std::path::PathBuf::from);
    let tls =
        crate::net::tls_client_config(ca.as_deref()).map_err(|e| format!("VAULT_CACERT: {e:#}"))?;
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .build();
    Ok(
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(connector),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_version_is_read() {
        let body = br#"{"data": {"latest_version": 2, "type": "ecdsa-p256",
            "keys": {"1": {"public_key": "old"}, "2": {"public_key": "new"}}}}"#;
        assert_eq!(newest_key(body), Ok("new".to_string()));
        let symmetric = br#"{"data": {"latest_version": 1, "keys": {"1": 1700000000}}}"#;
        assert!(newest_key(symmetric)
            .expect_err("aes")
            .contains("no public_key"));
        let e = newest_key(b"{}").expect_err("refused").to_string();
        assert!(e.contains("no latest_version"), "{e}");
        let e = newest_key(b"not json").expect_err("refused").to_string();
        assert!(e.contains("expected ident"), "{e}");
    }
}
