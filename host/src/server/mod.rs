//! The HTTP(S) server: routes, body limits, and the AdmissionReview codec.
//!
//! Routes (all admission routes are POST, as Kyverno's):
//! - `/ivpol/validate/*policies`, `/ivpol/mutate/*policies`: cluster policies;
//! - `/nivpol/validate/*policies`, `/nivpol/mutate/*policies`: namespaced
//!   policies of the request's namespace;
//! - GET `/health/liveness`, `/health/readiness`.

mod envelope;
mod fallback;
mod review;
mod routes;
pub mod tls;

use crate::runtime::Pool;
use anyhow::{Context, Result};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;

pub struct ServerConfig {
    pub listen: SocketAddr,
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    pub namespaces: BTreeMap<String, serde_json::Value>,
}

/// Shared by every connection.
pub struct AppState {
    pub pool: Arc<Pool>,
    pub namespaces: BTreeMap<String, serde_json::Value>,
}

pub async fn serve(config: ServerConfig, pool: Arc<Pool>) -> Result<()> {
    let listener = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    let local = listener.local_addr()?;
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    // Tests and scripts wait for this line.
    tracing::info!("listening on {scheme}://{local}");
    let state = Arc::new(AppState {
        pool,
        namespaces: config.namespaces,
    });
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                continue;
            }
        };
        let state = state.clone();
        let tls = config.tls.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| routes::handle(state.clone(), req));
            let result = match tls {
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(s) => {
                        http1::Builder::new()
                            .serve_connection(TokioIo::new(s), service)
                            .await
                    }
                    Err(e) => {
                        tracing::debug!(%peer, "TLS handshake failed: {e}");
                        return;
                    }
                },
                None => {
                    http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await
                }
            };
            if let Err(e) = result {
                tracing::debug!(%peer, "connection error: {e}");
            }
        });
    }
}
