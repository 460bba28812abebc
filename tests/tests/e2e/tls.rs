//! `--tls-cert`/`--tls-key`: the webhook served over HTTPS (rustls).

use ivpol_tests::review::create_pod;
use ivpol_tests::{post_with, Options, Server};
use std::sync::Arc;

#[test]
fn serves_admission_reviews_over_https() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
        .expect("self-signed certificate");
    let (cert_pem, key_pem) = (cert.cert.pem(), cert.key_pair.serialize_pem());
    let policy = r#"apiVersion: policies.kyverno.io/v1
kind: ImageValidatingPolicy
metadata: {name: tls}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validationConfigurations: {mutateDigest: false, verifyDigest: false, required: false}
  attestors: []
  validations: [{expression: "false", message: over tls}]
"#;
    let s = Server::start_with(
        &[("p.yaml", policy)],
        Options {
            tls: Some((&cert_pem, &key_pem)),
            ..Options::default()
        },
    );
    assert!(s.base.starts_with("https://"), "{}", s.base);
    let agent = ureq::AgentBuilder::new()
        .tls_config(client_config(&[cert.cert.der().as_ref()]))
        .build();
    let url = s.base.replace("127.0.0.1", "localhost") + "/ivpol/validate/tls";
    let (status, body) = post_with(&agent, &url, &create_pod(&["ghcr.io/a/b:1"]).to_string());
    assert_eq!(status, 200);
    assert_eq!(
        body["response"]["status"]["message"],
        "Policy tls failed: over tls"
    );
}

/// The end-entity certificate a new TLS connection to `addr` is served,
/// trusting only `trusted` (self-signed certificates, as DER).
fn served_certificate(addr: &str, trusted: &[&[u8]]) -> Vec<u8> {
    let config = client_config(trusted);
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    let mut conn = rustls::ClientConnection::new(config, name).expect("client");
    let mut tcp = std::net::TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("timeout");
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp).expect("TLS handshake");
    }
    conn.peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.as_ref().to_vec())
        .expect("a server certificate")
}

/// The kubelet's way of updating a mounted Secret: the files are
/// `name -> ..data/name`, and `..data` is swapped to a new directory at once.
fn swap_secret(dir: &std::path::Path, generation: &str, cert: &str, key: &str) {
    let data = dir.join(format!("..{generation}"));
    std::fs::create_dir(&data).expect("data dir");
    std::fs::write(data.join("tls.crt"), cert).expect("cert");
    std::fs::write(data.join("tls.key"), key).expect("key");
    let tmp = dir.join("..data_tmp");
    std::os::unix::fs::symlink(&data, &tmp).expect("symlink");
    std::fs::rename(&tmp, dir.join("..data")).expect("swap ..data");
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn a_rotated_certificate_is_served_without_a_restart() {
    let make = || {
        let c = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
            .expect("self-signed certificate");
        (
            c.cert.pem(),
            c.key_pair.serialize_pem(),
            c.cert.der().to_vec(),
        )
    };
    let (a_pem, a_key, a_der) = make();
    let (b_pem, b_key, b_der) = make();
    let s = Server::start_with(
        &[],
        Options {
            tls: Some((&a_pem, &a_key)),
            extra_args: vec!["--tls-reload-interval".into(), "200ms".into()],
            ..Options::default()
        },
    );
    let addr = s.base.trim_start_matches("https://").to_string();
    let trusted = [a_der.as_slice(), b_der.as_slice()];
    assert_eq!(served_certificate(&addr, &trusted), a_der);
    // Turn the files the server reads into the kubelet's layout, still A.
    let dir = s.dir.path();
    swap_secret(dir, "a", &a_pem, &a_key);
    for f in ["tls.crt", "tls.key"] {
        let tmp = dir.join(format!("{f}.tmp"));
        std::os::unix::fs::symlink(format!("..data/{f}"), &tmp).expect("symlink");
        std::fs::rename(&tmp, dir.join(f)).expect("replace with symlink");
    }
    // Rotate to B: new connections see B, without a restart.
    swap_secret(dir, "b", &b_pem, &b_key);
    wait_until("the server serves the new certificate", || {
        served_certificate(&addr, &trusted) == b_der
    });
    let mut log = String::new();
    wait_until("the reload is logged", || {
        log.push_str(&s.log());
        log.contains("TLS certificate reloaded")
    });
    // Garbage: logged, and B stays in service.
    swap_secret(dir, "c", "not a certificate", "not a key");
    wait_until("the bad pair is logged", || {
        log.push_str(&s.log());
        log.contains("TLS certificate not reloaded")
    });
    assert_eq!(served_certificate(&addr, &trusted), b_der);
    // A key that is not the certificate's is refused too.
    swap_secret(dir, "d", &a_pem, &b_key);
    wait_until("the mismatched pair is logged", || {
        log.push_str(&s.log());
        log.matches("TLS certificate not reloaded").count() >= 2
    });
    assert_eq!(served_certificate(&addr, &trusted), b_der);
    // And the server still answers requests.
    let agent = ureq::AgentBuilder::new()
        .tls_config(client_config(&[b_der.as_slice()]))
        .build();
    let url = s.base.replace("127.0.0.1", "localhost") + "/health/readiness";
    let status = match agent.get(&url).call() {
        Ok(r) => r.status(),
        Err(e) => panic!("GET {url}: {e}"),
    };
    assert_eq!(status, 200);
}

/// A TLS client trusting only `trusted` (self-signed certificates, as DER).
fn client_config(trusted: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for der in trusted {
        roots
            .add(rustls::pki_types::CertificateDer::from(der.to_vec()))
            .expect("trust the test certificate");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

/// `--metrics-listen` serves `/metrics` over plain HTTP on a port of its
/// own, and nothing else there; the admission port (HTTPS) stops answering
/// it, so a NetworkPolicy can open the scrape port alone to monitoring.
#[test]
fn metrics_get_a_plain_http_listener_of_their_own() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("certificate");
    let (cert_pem, key_pem) = (cert.cert.pem(), cert.key_pair.serialize_pem());
    let s = Server::start_with(
        &[],
        Options {
            tls: Some((&cert_pem, &key_pem)),
            extra_args: vec!["--metrics-listen".into(), "127.0.0.1:0".into()],
            ..Options::default()
        },
    );
    let startup = s.log();
    let metrics_base = startup
        .lines()
        .find_map(|l| l.split("serving /metrics on ").nth(1))
        .map(|rest| {
            rest.split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .unwrap_or_else(|| panic!("no metrics listener in the log:\n{startup}"));
    assert!(metrics_base.starts_with("http://"), "{metrics_base}");
    let scrape = ureq::get(&format!("{metrics_base}/metrics"))
        .call()
        .expect("GET /metrics");
    assert_eq!(scrape.status(), 200);
    assert!(scrape
        .header("content-type")
        .is_some_and(|t| t.starts_with("application/openmetrics-text")));
    assert!(scrape.into_string().expect("text").contains("# EOF"));
    for path in ["/health/readiness", "/ivpol/validate/p", "/"] {
        match ureq::get(&format!("{metrics_base}{path}")).call() {
            Err(ureq::Error::Status(404, _)) => {}
            other => panic!("{path} on the metrics listener: {other:?}"),
        }
    }
    let agent = ureq::AgentBuilder::new()
        .tls_config(client_config(&[cert.cert.der().as_ref()]))
        .build();
    let admission = s.base.replace("127.0.0.1", "localhost");
    match agent.get(&format!("{admission}/metrics")).call() {
        Err(ureq::Error::Status(404, _)) => {}
        other => panic!("/metrics on the admission port: {other:?}"),
    }
    let ready = agent
        .get(&format!("{admission}/health/liveness"))
        .call()
        .expect("liveness");
    assert_eq!(ready.status(), 200);
}
