//! TLS for the webhook server (rustls).

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::sync::Arc;
use tokio_rustls::TlsAcceptor;

pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor> {
    let certs = rustls_pemfile::certs(&mut std::io::BufReader::new(
        std::fs::File::open(cert).with_context(|| format!("opening {}", cert.display()))?,
    ))
    .collect::<Result<Vec<_>, _>>()
    .with_context(|| format!("reading certificates from {}", cert.display()))?;
    if certs.is_empty() {
        bail!("no certificate found in {}", cert.display());
    }
    let key = rustls_pemfile::private_key(&mut std::io::BufReader::new(
        std::fs::File::open(key).with_context(|| format!("opening {}", key.display()))?,
    ))
    .with_context(|| format!("reading the private key from {}", key.display()))?
    .with_context(|| format!("no private key found in {}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("building the TLS configuration")?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}
