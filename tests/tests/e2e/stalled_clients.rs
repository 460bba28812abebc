//! Clients are untrusted peers: `ivpol serve` cuts off a client that
//! stalls in its request head, its TLS handshake, its body, or between
//! requests, and never holds more than `--max-connections` at once, while
//! good requests keep being served.
//!
//! The bounds asserted here are generous on purpose: they prove a stalled
//! connection is closed by the server, not how fast.

use ivpol_tests::review::create_pod;
use ivpol_tests::{post_with, Options, Server};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Far beyond the 1 s timeouts the servers here are given.
const BOUND: Duration = Duration::from_secs(60);

const POLICY: &str = r#"apiVersion: policies.kyverno.io/v1
kind: ImageValidatingPolicy
metadata: {name: p}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validationConfigurations: {mutateDigest: false, verifyDigest: false, required: false}
  attestors: []
  validations: [{expression: "false", message: served}]
"#;

fn start(flags: &[&str], tls: Option<(&str, &str)>) -> Server {
    Server::start_with(
        &[("p.yaml", POLICY)],
        Options {
            tls,
            extra_args: flags.iter().map(|f| f.to_string()).collect(),
            ..Options::default()
        },
    )
}

fn addr(s: &Server) -> String {
    s.base
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .to_string()
}

/// A connection that sent `bytes` and then nothing.
fn stalled(addr: &str, bytes: &[u8]) -> TcpStream {
    let mut c = TcpStream::connect(addr).expect("connect");
    c.write_all(bytes).expect("write");
    c
}

/// Reads until the server closes the connection (EOF or reset); what it
/// sent first, or None if it was still open at `deadline`.
fn read_until_closed(c: &mut TcpStream, deadline: Instant) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        c.set_read_timeout(Some(left)).expect("read timeout");
        match c.read(&mut buf) {
            Ok(0) => return Some(got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return None
            }
            Err(_) => return Some(got), // reset: closed too
        }
    }
}

fn assert_all_closed(conns: &mut [TcpStream], what: &str) {
    let deadline = Instant::now() + BOUND;
    for (i, c) in conns.iter_mut().enumerate() {
        assert!(
            read_until_closed(c, deadline).is_some(),
            "{what}: connection {i} still open after {BOUND:?}"
        );
    }
}

fn assert_served(s: &Server) {
    let (status, body) = s.get("/health/liveness");
    assert_eq!((status, &body["status"]), (200, &"ok".into()), "{body}");
    let r = s.review("/ivpol/validate/p", &create_pod(&["ghcr.io/a/b:1"]));
    assert_eq!(r["status"]["message"], "Policy p failed: served", "{r}");
}

/// 200 connections that each send half a request head are all closed by
/// the server, and good requests are served while they hang.
#[test]
fn half_sent_request_heads_are_cut_off() {
    let s = start(&["--header-read-timeout", "1"], None);
    let a = addr(&s);
    let mut conns: Vec<TcpStream> = (0..200)
        .map(|i| {
            let half = format!("POST /ivpol/validate/p HTTP/1.1\r\nHost: x\r\nX-Stall-{i}: ");
            stalled(&a, half.as_bytes())
        })
        .collect();
    // And some that send nothing at all.
    conns.extend((0..20).map(|_| stalled(&a, b"")));
    assert_served(&s);
    assert_all_closed(&mut conns, "half header");
    assert_served(&s);
}

/// A kept-alive connection that sends no next request is closed too (the
/// head timeout runs from the end of the previous response).
#[test]
fn idle_keep_alive_connections_are_closed() {
    let s = start(&["--header-read-timeout", "1"], None);
    let mut c = stalled(
        &addr(&s),
        b"GET /health/liveness HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n",
    );
    let got = read_until_closed(&mut c, Instant::now() + BOUND).expect("closed in time");
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
}

/// A body that never finishes gets a 408 and the connection is closed.
#[test]
fn trickled_bodies_time_out() {
    let s = start(&["--body-read-timeout", "1"], None);
    let a = addr(&s);
    let head = "POST /ivpol/validate/p HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"apiVersion\":";
    let mut conns: Vec<TcpStream> = (0..20).map(|_| stalled(&a, head.as_bytes())).collect();
    assert_served(&s);
    let deadline = Instant::now() + BOUND;
    for c in &mut conns {
        let got = read_until_closed(c, deadline).expect("closed in time");
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("HTTP/1.1 408"), "{text}");
        assert!(text.contains("not received within"), "{text}");
    }
}

/// Over TLS: connections that never start (or never finish) the handshake
/// are closed, and HTTPS requests are served meanwhile.
#[test]
fn stalled_tls_handshakes_are_cut_off() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("certificate");
    let (cert_pem, key_pem) = (cert.cert.pem(), cert.key_pair.serialize_pem());
    let s = start(
        &["--tls-handshake-timeout", "1"],
        Some((&cert_pem, &key_pem)),
    );
    let a = addr(&s);
    // Nothing, and the first bytes of a ClientHello record.
    let mut conns: Vec<TcpStream> = (0..100).map(|_| stalled(&a, b"")).collect();
    conns.extend((0..100).map(|_| stalled(&a, &[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])));
    let agent = ureq::AgentBuilder::new()
        .tls_config(client_config(cert.cert.der().as_ref()))
        .build();
    let url = s.base.replace("127.0.0.1", "localhost") + "/ivpol/validate/p";
    let (status, body) = post_with(&agent, &url, &create_pod(&["ghcr.io/a/b:1"]).to_string());
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["response"]["status"]["message"],
        "Policy p failed: served"
    );
    assert_all_closed(&mut conns, "TLS handshake");
}

fn client_config(trusted: &[u8]) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from(trusted.to_vec()))
        .expect("trust the test certificate");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

/// A kept-alive connection that has been served once (so it holds a slot).
fn holder(addr: &str) -> TcpStream {
    let mut c = stalled(
        addr,
        b"GET /health/liveness HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n",
    );
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    c.set_read_timeout(Some(BOUND)).expect("timeout");
    while !String::from_utf8_lossy(&got).contains("\"ok\"") {
        let n = c.read(&mut buf).expect("response");
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    c
}

/// `--max-connections 3`: a fourth connection is not served while three
/// are open, and is served as soon as one of them closes.
#[test]
fn the_connection_cap_holds() {
    let s = start(
        &["--max-connections", "3", "--header-read-timeout", "600"],
        None,
    );
    let a = addr(&s);
    let mut holders: Vec<TcpStream> = (0..3).map(|_| holder(&a)).collect();
    let mut fourth = stalled(
        &a,
        b"GET /health/liveness HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    // Not served while the cap is reached (the server has not accepted it).
    fourth
        .set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    let mut buf = [0u8; 1024];
    match fourth.read(&mut buf) {
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
        other => panic!("a connection beyond the cap was served: {other:?}"),
    }
    drop(holders.remove(0));
    let got = read_until_closed(&mut fourth, Instant::now() + BOUND).expect("served in time");
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("\"ok\""), "{text}");
}

#[test]
fn bad_limit_flags_are_refused() {
    for (flag, value) in [
        ("--header-read-timeout", "0"),
        ("--tls-handshake-timeout", "2h"),
        ("--body-read-timeout", "soon"),
        ("--max-connections", "0"),
    ] {
        let out = std::process::Command::new(ivpol_tests::ivpol_bin())
            .args(["serve", "--listen", "127.0.0.1:0", flag, value])
            .output()
            .expect("run ivpol");
        assert!(!out.status.success(), "{flag} {value} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag), "{flag} {value}: {err}");
    }
}
