//! The HTTP(S) server: connection handling, routes, body limits, and the
//! AdmissionReview codec.
//!
//! Routes (all admission routes are POST, as Kyverno's):
//! - `/ivpol/validate/*policies`, `/ivpol/mutate/*policies`: cluster policies;
//! - `/nivpol/validate/*policies`, `/nivpol/mutate/*policies`: namespaced
//!   policies of the request's namespace;
//! - GET `/health/liveness`, `/health/readiness`, `/metrics`.
//!
//! With `--metrics-listen`, `/metrics` moves to a listener of its own
//! (plain HTTP, nothing else on it), so that a NetworkPolicy can open the
//! scrape port to the monitoring namespace alone while the admission port
//! stays the API server's.
//!
//! Clients are untrusted peers, so every connection is bounded
//! ([`ConnLimits`]): a TLS handshake, a request head (also the wait for the
//! next request on a kept-alive connection) and a request body each get a
//! timeout, a response the client does not read gets one too, and at most
//! `max_connections` are open at once. Beyond the cap, new connections are
//! not accepted: they wait in the kernel's listen backlog until a slot
//! frees (and the client's own connect timeout applies), so a flood cannot
//! make the process spend memory or file descriptors on them. A failing
//! `accept` (EMFILE, ENFILE, ENOBUFS) backs off, 10 ms doubling to 1 s,
//! instead of spinning.
//!
//! `ivpol-server` is transport: every answer it sends is the component's
//! (or the fixed last-resort denial when no instance can run). Over
//! `ivpol-runtime`, `ivpol-cluster` (the live policy set) and
//! `ivpol-report` (admission results); the command line starts it.

// Public items are the ones the command line uses; the rest is `pub(crate)`.
#![warn(unreachable_pub)]

mod conn_timer;
mod decision;
mod envelope;
mod listen;
mod review;
mod routes;
pub mod tls;

use anyhow::{Context, Result};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use ivpol_cluster::live::Live;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

pub struct ServerConfig {
    pub listen: SocketAddr,
    /// Where `/metrics` is served instead of on `listen`, over plain HTTP.
    pub metrics_listen: Option<SocketAddr>,
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    pub limits: ConnLimits,
    /// After a shutdown signal, how long readiness reports false while
    /// requests are still accepted (so that the Service stops sending
    /// them before the listener closes).
    pub shutdown_delay: Duration,
    /// Readiness lists each rejected and stale policy with its error (CEL
    /// source included); by default it gives only counts, since anyone who
    /// reaches the port may read it.
    pub readiness_details: bool,
    /// Where validate-phase results go for policy reports
    /// (`--admission-reports`).
    pub admission_reports: Option<Arc<ivpol_report::admission::Collector>>,
}

/// What one client connection may take.
#[derive(Clone, Copy, Debug)]
pub struct ConnLimits {
    /// From accept (or the end of the previous response) to a complete
    /// request head.
    pub header_read: Duration,
    /// From accept to a finished TLS handshake.
    pub tls_handshake: Duration,
    /// To read a whole request body.
    pub body_read: Duration,
    /// A response write that makes no progress for this long ends the
    /// connection (a client that does not read).
    pub write_stall: Duration,
    /// Connections open at once.
    pub max_connections: usize,
}

impl Default for ConnLimits {
    fn default() -> ConnLimits {
        ConnLimits {
            header_read: Duration::from_secs(10),
            tls_handshake: Duration::from_secs(10),
            body_read: Duration::from_secs(10),
            write_stall: Duration::from_secs(10),
            max_connections: 1024,
        }
    }
}

/// Shared by every connection.
pub(crate) struct AppState {
    /// The policy set; each request takes the current generation once.
    pub live: Arc<Live>,
    pub body_read_timeout: Duration,
    /// Set by a shutdown signal: readiness turns false.
    pub draining: AtomicBool,
    /// See [`ServerConfig::readiness_details`].
    pub readiness_details: bool,
    /// `/metrics` has a listener of its own, so the admission port does
    /// not answer it.
    pub metrics_elsewhere: bool,
    /// See [`ServerConfig::admission_reports`].
    pub admission_reports: Option<Arc<ivpol_report::admission::Collector>>,
}

/// What a listener serves.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Listener {
    /// Admission, policy validation, health (and `/metrics` unless it has
    /// its own).
    Admission,
    /// `/metrics` only (`--metrics-listen`).
    Metrics,
}

/// Connections the metrics listener takes at once: scrapers, not clients.
const METRICS_CONNECTIONS: usize = 16;

/// Serves until `shutdown` completes, then drains: readiness turns false,
/// new connections are still accepted for `shutdown_delay`, then the
/// listener closes and in-flight requests get up to the longest webhook
/// timeout (plus a margin) to finish; kept-alive idle connections close.
pub async fn serve(
    config: ServerConfig,
    live: Arc<Live>,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    let listener = listen::bind(config.listen)?;
    let local = listener.local_addr()?;
    let metrics_listener = match config.metrics_listen {
        Some(addr) => {
            let l = listen::bind(addr)?;
            tracing::info!("serving /metrics on http://{}", l.local_addr()?);
            Some(l)
        }
        None => None,
    };
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let limits = config.limits;
    tracing::info!(
        max_connections = limits.max_connections,
        header_read_timeout = ?limits.header_read,
        tls_handshake_timeout = ?limits.tls_handshake,
        body_read_timeout = ?limits.body_read,
        "client connection limits"
    );
    // Tests and scripts wait for this line: nothing may follow the address.
    tracing::info!("listening on {scheme}://{local}");
    let state = Arc::new(AppState {
        live,
        body_read_timeout: limits.body_read,
        draining: AtomicBool::new(false),
        readiness_details: config.readiness_details,
        metrics_elsewhere: metrics_listener.is_some(),
        admission_reports: config.admission_reports,
    });
    let graceful = GracefulShutdown::new();
    let accepting = Accept {
        listener: &listener,
        serves: Listener::Admission,
        state: &state,
        tls: &config.tls,
        limits,
        graceful: &graceful,
    };
    let scraping = async {
        match &metrics_listener {
            Some(l) => {
                let metrics_limits = ConnLimits {
                    max_connections: METRICS_CONNECTIONS,
                    ..limits
                };
                let accept = Accept {
                    listener: l,
                    serves: Listener::Metrics,
                    state: &state,
                    tls: &None,
                    limits: metrics_limits,
                    graceful: &graceful,
                };
                accept.run().await
            }
            None => std::future::pending().await,
        }
    };
    let stop = async {
        shutdown.await;
        state.draining.store(true, Ordering::SeqCst);
        tracing::info!(
            delay = ?config.shutdown_delay,
            "shutting down: readiness is now false; still accepting for the delay"
        );
        tokio::time::sleep(config.shutdown_delay).await;
    };
    tokio::select! {
        result = accepting.run() => result?,
        result = scraping => result?,
        () = stop => {}
    }
    drop(listener);
    drop(metrics_listener);
    let grace = state.live.current().pool.deadline(&[]) + Duration::from_secs(2);
    tracing::info!(
        in_flight = graceful.count(),
        "listener closed; finishing in-flight requests (at most {grace:?})"
    );
    match tokio::time::timeout(grace, graceful.shutdown()).await {
        Ok(()) => tracing::info!("all connections closed; exiting"),
        Err(_) => tracing::warn!("in-flight requests still running after {grace:?}; exiting"),
    }
    Ok(())
}

/// The accept loop's borrowed parts.
struct Accept<'a> {
    listener: &'a TcpListener,
    serves: Listener,
    state: &'a Arc<AppState>,
    tls: &'a Option<tokio_rustls::TlsAcceptor>,
    limits: ConnLimits,
    graceful: &'a GracefulShutdown,
}

impl Accept<'_> {
    /// Accepts connections until an error that is not the accept's own.
    async fn run(&self) -> Result<()> {
        let limits = self.limits;
        let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
        let mut backoff = Backoff::default();
        loop {
            // A slot first: at the cap, connections wait in the listen backlog.
            let slot = slots
                .clone()
                .acquire_owned()
                .await
                .context("connection slots closed")?;
            let (stream, peer) = match self.listener.accept().await {
                Ok(s) => {
                    backoff.reset();
                    s
                }
                Err(e) => {
                    let pause = backoff.next_pause();
                    tracing::warn!("accept failed, pausing {pause:?}: {e}");
                    tokio::time::sleep(pause).await;
                    continue;
                }
            };
            // An answer goes out as soon as it is written, as Go's servers
            // (Kyverno's among them) send it: Nagle's algorithm would hold
            // a response that hyper writes in two parts for the client's ACK.
            let _ = stream.set_nodelay(true);
            let connection = Connection {
                serves: self.serves,
                state: self.state.clone(),
                tls: self.tls.clone(),
                limits,
                watcher: self.graceful.watcher(),
            };
            tokio::spawn(async move {
                let _slot = slot;
                connection.serve(stream, peer).await;
            });
        }
    }
}

/// One accepted client connection.
struct Connection {
    serves: Listener,
    state: Arc<AppState>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    limits: ConnLimits,
    watcher: hyper_util::server::graceful::Watcher,
}

impl Connection {
    async fn serve(self, stream: tokio::net::TcpStream, peer: SocketAddr) {
        let Connection {
            serves,
            state,
            tls,
            limits,
            watcher,
        } = self;
        let _open = ivpol_runtime::metrics::metrics().connection_opened();
        let service = service_fn(move |req| routes::handle(state.clone(), serves, req));
        let mut http = http1::Builder::new();
        http.timer(conn_timer::ConnTimer::default())
            .header_read_timeout(limits.header_read);
        let stream = StallGuard::new(stream, limits.write_stall);
        let result = match tls {
            None => {
                let conn = http.serve_connection(TokioIo::new(stream), service);
                watcher.watch(conn).await
            }
            Some(acceptor) => {
                match tokio::time::timeout(limits.tls_handshake, acceptor.accept(stream)).await {
                    Ok(Ok(s)) => {
                        let conn = http.serve_connection(TokioIo::new(s), service);
                        watcher.watch(conn).await
                    }
                    Ok(Err(e)) => {
                        tracing::debug!(%peer, "TLS handshake failed: {e}");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(%peer, "TLS handshake timed out");
                        return;
                    }
                }
            }
        };
        if let Err(e) = result {
            tracing::debug!(%peer, "connection closed: {e}");
        }
    }
}

/// The pause after a failed accept: 10 ms, doubling to 1 s; reset by a
/// successful accept.
#[derive(Default)]
struct Backoff {
    last: Option<Duration>,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(10);
    const MAX: Duration = Duration::from_secs(1);

    fn next_pause(&mut self) -> Duration {
        let next = match self.last {
            None => Backoff::FIRST,
            Some(d) => d.saturating_mul(2).min(Backoff::MAX),
        };
        self.last = Some(next);
        next
    }

    fn reset(&mut self) {
        self.last = None;
    }
}

/// A stream whose writes fail once one stays blocked for `limit`: a client
/// that stops reading its response cannot hold the connection. Reads are
/// untouched (hyper's header timeout and the body timeout bound those).
struct StallGuard<S> {
    inner: S,
    limit: Duration,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> StallGuard<S> {
    fn new(inner: S, limit: Duration) -> StallGuard<S> {
        StallGuard {
            inner,
            limit,
            stalled: None,
        }
    }

    /// Tracks a pending write; an error once it has been pending too long.
    fn check(&mut self, cx: &mut std::task::Context<'_>, pending: bool) -> Option<std::io::Error> {
        if !pending {
            self.stalled = None;
            return None;
        }
        let limit = self.limit;
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        sleep.as_mut().poll(cx).is_ready().then(|| {
            std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client did not read the response",
            )
        })
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for StallGuard<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for StallGuard<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        match self.check(cx, r.is_pending()) {
            Some(e) => Poll::Ready(Err(e)),
            None => r,
        }
    }

    fn poll_flush(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_flush(cx);
        match self.check(cx, r.is_pending()) {
            Some(e) => Poll::Ready(Err(e)),
            None => r,
        }
    }

    fn poll_shutdown(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_shutdown(cx);
        match self.check(cx, r.is_pending()) {
            Some(e) => Poll::Ready(Err(e)),
            None => r,
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        match self.check(cx, r.is_pending()) {
            Some(e) => Poll::Ready(Err(e)),
            None => r,
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_backoff_doubles_to_a_second_and_resets() {
        let mut b = Backoff::default();
        let pauses: Vec<u64> = (0..10).map(|_| b.next_pause().as_millis() as u64).collect();
        assert_eq!(pauses, [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
        b.reset();
        assert_eq!(b.next_pause(), Duration::from_millis(10));
    }

    /// A peer that never reads: the server's write fails after the limit
    /// instead of waiting forever.
    #[tokio::test]
    async fn a_write_the_client_never_reads_fails() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let client = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let (_peer_never_reads, _) = listener.accept().await.expect("accept");
        let mut guarded = StallGuard::new(client, Duration::from_millis(100));
        let chunk = vec![0u8; 64 << 10];
        let result: std::io::Result<()> = tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                std::future::poll_fn(|cx| Pin::new(&mut guarded).poll_write(cx, &chunk)).await?;
            }
        })
        .await
        .expect("the write gave up within the test's bound");
        let err = result.expect_err("a stalled write errors");
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    }
}
