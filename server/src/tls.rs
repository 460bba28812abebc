//! TLS for the webhook server (rustls), with certificate hot reload.
//!
//! In a cluster the serving certificate is a mounted Secret that
//! cert-manager renews and the kubelet swaps in place (a symlink swap of the
//! volume's `..data` directory). A poller re-reads `--tls-cert`/`--tls-key`
//! every `--tls-reload-interval` and, when their bytes changed and form a
//! valid pair, new handshakes get the new certificate; connections already
//! open keep theirs. A bad or half-written pair is logged once and the
//! previous certificate stays in service.
//!
//! Why polling the contents, and not a stat on every handshake or inotify:
//! the kubelet only propagates a Secret update every minute or so, so a few
//! seconds of extra delay cost nothing; handshakes never touch the disk;
//! comparing bytes (two small files) cannot miss a change that keeps mtime
//! and size, and it follows symlinks without watching directories.

use anyhow::{bail, Context, Result};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio_rustls::TlsAcceptor;

/// An acceptor serving the pair at `cert`/`key`, re-read every `reload`.
/// The pair must be valid at start.
pub fn acceptor(cert: &Path, key: &Path, reload: Duration) -> Result<TlsAcceptor> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let files = PairFiles {
        cert: cert.to_path_buf(),
        key: key.to_path_buf(),
    };
    let bytes = files.read()?;
    let first = certified_key(&files, &bytes, &provider)?;
    let resolver = Arc::new(ReloadingCert {
        current: RwLock::new(first),
    });
    let config = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(resolver.clone());
    if !reload.is_zero() {
        let watcher = Watcher {
            files,
            provider,
            resolver,
            last: bytes,
        };
        std::thread::Builder::new()
            .name("ivpol-tls-reload".into())
            .spawn(move || watcher.run(reload))
            .context("starting the TLS reload thread")?;
    }
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The certificate every new handshake gets.
#[derive(Debug)]
struct ReloadingCert {
    current: RwLock<Arc<CertifiedKey>>,
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        // A poisoned lock still holds a complete pair: the writer only swaps an Arc.
        let current = match self.current.read() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        Some(current.clone())
    }
}

struct PairFiles {
    cert: PathBuf,
    key: PathBuf,
}

/// The two files' bytes, as last read.
#[derive(PartialEq, Eq)]
struct PairBytes {
    cert: Vec<u8>,
    key: Vec<u8>,
}

impl PairFiles {
    fn read(&self) -> Result<PairBytes> {
        let read = |p: &Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
        Ok(PairBytes {
            cert: read(&self.cert)?,
            key: read(&self.key)?,
        })
    }
}

/// Parses a PEM chain and key and checks that the key is the certificate's.
fn certified_key(
    files: &PairFiles,
    bytes: &PairBytes,
    provider: &CryptoProvider,
) -> Result<Arc<CertifiedKey>> {
    let certs = CertificateDer::pem_slice_iter(&bytes.cert)
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("reading certificates from {}", files.cert.display()))?;
    if certs.is_empty() {
        bail!("no certificate found in {}", files.cert.display());
    }
    let key = match PrivateKeyDer::from_pem_slice(&bytes.key) {
        Ok(key) => key,
        Err(pem::Error::NoItemsFound) => bail!("no private key found in {}", files.key.display()),
        Err(e) => Err(e)
            .with_context(|| format!("reading the private key from {}", files.key.display()))?,
    };
    let pair = CertifiedKey::from_der(certs, key, provider).with_context(|| {
        format!(
            "{} and {} are not a usable certificate and key pair",
            files.cert.display(),
            files.key.display()
        )
    })?;
    Ok(Arc::new(pair))
}

struct Watcher {
    files: PairFiles,
    provider: Arc<CryptoProvider>,
    resolver: Arc<ReloadingCert>,
    /// What the last attempt read, good or bad: each change is tried (and
    /// a bad one logged) once.
    last: PairBytes,
}

impl Watcher {
    fn run(mut self, every: Duration) {
        loop {
            std::thread::sleep(every);
            self.poll();
        }
    }

    fn poll(&mut self) {
        let bytes = match self.files.read() {
            Ok(b) => b,
            // Mid-swap a file can be missing for a moment; the next poll sees the result.
            Err(e) => {
                tracing::debug!("TLS reload: {e:#}");
                return;
            }
        };
        if bytes == self.last {
            return;
        }
        match certified_key(&self.files, &bytes, &self.provider) {
            Ok(pair) => {
                match self.resolver.current.write() {
                    Ok(mut current) => *current = pair,
                    Err(poisoned) => *poisoned.into_inner() = pair,
                }
                tracing::info!(
                    cert = %self.files.cert.display(),
                    "TLS certificate reloaded: new connections use it"
                );
            }
            Err(e) => {
                tracing::warn!("TLS certificate not reloaded, the previous one stays in use: {e:#}")
            }
        }
        self.last = bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(cert: &str, key: &str) -> Result<Arc<CertifiedKey>> {
        let files = PairFiles {
            cert: PathBuf::from("tls.crt"),
            key: PathBuf::from("tls.key"),
        };
        let bytes = PairBytes {
            cert: cert.as_bytes().to_vec(),
            key: key.as_bytes().to_vec(),
        };
        certified_key(&files, &bytes, &rustls::crypto::ring::default_provider())
    }

    fn error(cert: &str, key: &str) -> String {
        format!("{:#}", pair(cert, key).expect_err("refused"))
    }

    /// A PEM section that is not valid base64.
    const BROKEN_CERT: &str = "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n";
    const BROKEN_KEY: &str = "-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n";

    #[test]
    fn files_without_a_certificate_or_key_are_named() {
        assert_eq!(error("", BROKEN_KEY), "no certificate found in tls.crt");
        let e = error(BROKEN_CERT, "");
        assert!(e.starts_with("reading certificates from tls.crt"), "{e}");
    }

    #[test]
    fn a_missing_or_broken_key_is_named() {
        let cert = include_str!("../../conformance/notary/notation-core-go/x509/testdata/pem.crt");
        assert_eq!(error(cert, "not pem"), "no private key found in tls.key");
        let e = error(cert, BROKEN_KEY);
        assert!(e.starts_with("reading the private key from tls.key"), "{e}");
    }
}
