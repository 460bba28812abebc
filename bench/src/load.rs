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

/// GETs every one of `paths` at once, each over a keep-alive connection
/// of its own, batch after batch for `duration`: each latency is a batch's,
/// from its requests sent to its last answer. That is the round trip of
/// requests a client sends together, and on a registry that shares the
/// machine it is longer than the slowest of them sent alone, since the
/// registry works on them at once.
pub async fn round_trip_together(
    addr: &str,
    paths: &[String],
    duration: Duration,
) -> anyhow::Result<Measured> {
    let start = Instant::now();
    let mut senders = Vec::new();
    for _ in paths {
        senders.push(connect(addr).await?);
    }
    let mut latencies = Vec::new();
    while start.elapsed() < duration {
        let t = Instant::now();
        let mut batch = tokio::task::JoinSet::new();
        for (mut sender, path) in senders.drain(..).zip(paths.iter().cloned()) {
            let addr = addr.to_string();
            batch.spawn(async move {
                let req = request(&addr, &path, Bytes::new())?;
                let answer = sender.send_request(req).await?;
                answer.into_body().collect().await?;
                anyhow::Ok(sender)
            });
        }
        while let Some(sender) = batch.join_next().await {
            senders.push(sender??);
        }
        latencies.push(t.elapsed().as_micros() as u64);
    }
    latencies.sort_unstable();
    Ok(Measured {
        requests: latencies.len(),
        errors: 0,
        elapsed: start.elapsed(),
        latencies,
    })
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
    let mut sender = connect(addr).await?;
    let (mut latencies, mut errors) = (Vec::new(), 0);
    while Instant::now() < deadline {
        let req = request(addr, path, body.clone())?;
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

/// A keep-alive HTTP/1 connection to `addr`, its driver spawned.
async fn connect(addr: &str) -> anyhow::Result<http1::SendRequest<Full<Bytes>>> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, conn) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    Ok(sender)
}

/// A POST of `body` to `path`, or a GET when it is empty.
fn request(addr: &str, path: &str, body: Bytes) -> anyhow::Result<hyper::Request<Full<Bytes>>> {
    let method = if body.is_empty() { "GET" } else { "POST" };
    Ok(hyper::Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, addr)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        // What a verifier asks a registry for (the RTT probe's GET).
        .header(hyper::header::ACCEPT, ACCEPT)
        .body(Full::new(body))?)
}

const ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/json";

fn memchr(needle: &[u8], hay: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A keep-alive HTTP/1 server on 127.0.0.1 that answers `/slow`
    /// after `slow` and anything else at once.
    fn server(slow: Duration) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                std::thread::spawn(move || answer_each(stream, slow));
            }
        });
        addr
    }

    fn answer_each(mut stream: std::net::TcpStream, slow: Duration) {
        let mut asked = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = stream.read(&mut buf) {
            asked.extend_from_slice(&buf[..n]);
            while let Some(end) = asked.windows(4).position(|w| w == b"\r\n\r\n") {
                if asked.starts_with(b"GET /slow ") {
                    std::thread::sleep(slow);
                }
                asked.drain(..end + 4);
                let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                if stream.write_all(ok).is_err() {
                    return;
                }
            }
        }
    }

    /// A batch lasts until its slowest answer: requests sent together are
    /// one round trip, not the fastest of them.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_waits_for_its_slowest_answer() {
        let addr = server(Duration::from_millis(20));
        let paths = [
            "/fast".to_string(),
            "/slow".to_string(),
            "/fast".to_string(),
        ];
        let run = round_trip_together(&addr, &paths, Duration::from_millis(150))
            .await
            .unwrap();
        assert!(run.requests >= 1, "no batch in 150 ms");
        // The slow answer is held 20 ms, so no batch can end sooner.
        assert!(run.latencies[0] >= 20_000, "{:?}", run.latencies);
        assert_eq!(run.errors, 0);
    }
}
