//! The load generator: N keep-alive HTTP/1 connections, each sending the
//! same POST as soon as the previous answer arrived, for a fixed time.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

/// What one run measured.
pub struct Measured {
    pub requests: usize,
    pub errors: usize,
    pub elapsed: Duration,
    /// Latencies in microseconds, sorted.
    pub latencies: Vec<u64>,
}

impl Measured {
    /// The runs of several rounds as one: their requests, errors, time
    /// and latencies together.
    pub fn merged(runs: &[Measured]) -> Measured {
        let mut latencies: Vec<u64> = runs
            .iter()
            .flat_map(|r| r.latencies.iter().copied())
            .collect();
        latencies.sort_unstable();
        Measured {
            requests: runs.iter().map(|r| r.requests).sum(),
            errors: runs.iter().map(|r| r.errors).sum(),
            elapsed: runs.iter().map(|r| r.elapsed).sum(),
            latencies,
        }
    }

    pub fn rps(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }

    /// The `q` quantile (0..=1) in milliseconds.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        if self.latencies.is_empty() {
            return f64::NAN;
        }
        let i = ((self.latencies.len() - 1) as f64 * q).round() as usize;
        self.latencies[i] as f64 / 1000.0
    }
}

/// POSTs `body` (GETs, when it is empty) to `http://addr{path}` over
/// `connections` connections for `duration`; an answer that is not 200
/// with `expect` in its body counts as an error.
pub async fn run(
    addr: &str,
    path: &str,
    body: &str,
    expect: &'static str,
    connections: usize,
    duration: Duration,
) -> anyhow::Result<Measured> {
    drive(addr, path, body, Some(expect), connections, duration).await
}

/// GETs `http://addr{path}` at one connection for `duration`, every
/// answer counted whatever its status: the round trip of a registry
/// request the cold path makes, a 404 among them (a registry without the
/// referrers API).
pub async fn round_trip(addr: &str, path: &str, duration: Duration) -> anyhow::Result<Measured> {
    drive(addr, path, "", None, 1, duration).await
}

async fn drive(
    addr: &str,
    path: &str,
    body: &str,
    expect: Option<&'static str>,
    connections: usize,
    duration: Duration,
) -> anyhow::Result<Measured> {
    let start = Instant::now();
    let deadline = start + duration;
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let (addr, path, body) = (
            addr.to_string(),
            path.to_string(),
            Bytes::from(body.to_string()),
        );
        tasks.push(tokio::spawn(async move {
            connection(&addr, &path, body, expect, deadline).await
        }));
    }
    let mut latencies = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await??;
        latencies.extend(l);
        errors += e;
    }
    let elapsed = start.elapsed();
    latencies.sort_unstable();
    Ok(Measured {
        requests: latencies.len(),
        errors,
        elapsed,
        latencies,
    })
}

async fn connection(
    addr: &str,
    path: &str,
    body: Bytes,
    expect: Option<&str>,
    deadline: Instant,
) -> anyhow::Result<(Vec<u64>, usize)> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (mut sender, conn) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let (mut latencies, mut errors) = (Vec::new(), 0);
    while Instant::now() < deadline {
        let method = if body.is_empty() { "GET" } else { "POST" };
        let req = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header(hyper::header::HOST, addr)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            // What a verifier asks a registry for (the RTT probe's GET).
            .header(hyper::header::ACCEPT, ACCEPT)
            .body(Full::new(body.clone()))?;
        let t = Instant::now();
        let resp = sender.send_request(req).await?;
        let ok = resp.status() == 200;
        let answer = resp.into_body().collect().await?.to_bytes();
        let expected = match expect {
            Some(expect) => ok && memchr(expect.as_bytes(), &answer),
            None => true,
        };
        if expected {
            latencies.push(t.elapsed().as_micros() as u64);
        } else {
            errors += 1;
        }
    }
    Ok((latencies, errors))
}

const ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/json";

fn memchr(needle: &[u8], hay: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}
