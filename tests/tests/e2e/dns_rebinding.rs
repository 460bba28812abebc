//! The network capability connects to exactly the addresses it checked.
//!
//! Names resolve inside the connector, once per connection, and that very
//! answer is checked against the policy before it is dialled. The resolver
//! is scripted through the test-only `IVPOL_TEST_ONLY_DNS_ANSWERS`: the
//! name's first answer is an address the script declares public
//! (127.0.0.2), every later answer is loopback (127.0.0.1), on the same
//! port. A check-then-resolve-again host would pass the check on the first
//! answer and dial the second; ivpol dials the first and refuses the rest.

use ivpol_tests::policy::pod_policy;
use ivpol_tests::review::create_pod;
use ivpol_tests::review::message;
use ivpol_tests::{Options, Server};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn pin() -> String {
    pod_policy(
        "pin",
        "\"CREATE\"",
        "  attestors: []\n  validations:\n    - expression: \"true\"\n",
    )
}

/// Counts the connections made to `ip:port` (and closes them).
fn counting(ip: &str, port: u16) -> Arc<AtomicUsize> {
    let listener =
        TcpListener::bind((ip, port)).unwrap_or_else(|e| panic!("listening on {ip}:{port}: {e}"));
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            c.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    count
}

fn server_with_dns(script: &str) -> Server {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("dns.json");
    std::fs::write(&path, script).expect("script");
    let s = Server::start_with(
        &[("pin.yaml", &pin())],
        Options {
            env: vec![(
                "IVPOL_TEST_ONLY_DNS_ANSWERS".into(),
                path.display().to_string(),
            )],
            ..Options::default()
        },
    );
    // The server read the script at start; keep the file's directory alive
    // as long as the test anyway.
    std::mem::forget(dir);
    s
}

#[test]
fn a_rebound_name_never_reaches_the_rebound_address() {
    let port = ivpol_tests::registry::free_port();
    let checked = counting("127.0.0.2", port);
    let rebound = counting("127.0.0.1", port);
    let s = server_with_dns(
        r#"{"answers": {"rebind.test": [["127.0.0.2"], ["127.0.0.1"]]},
            "public_for_test": ["127.0.0.2"]}"#,
    );
    assert!(
        s.log().contains("TEST-ONLY"),
        "no loud warning:\n{}",
        s.log()
    );
    let image = format!("rebind.test:{port}/app:v1");
    // First request: the checked (first) answer is what gets dialled. It
    // is no registry, so the request fails, and fails closed.
    let r = s.review("/ivpol/mutate/pin", &create_pod(&[&image]));
    assert_eq!(r["allowed"], false, "{r}");
    assert!(
        checked.load(Ordering::SeqCst) >= 1,
        "the checked address was not dialled: {r}"
    );
    // Later lookups answer loopback: refused before any connection.
    let r = s.review("/ivpol/mutate/pin", &create_pod(&[&image]));
    assert_eq!(r["allowed"], false, "{r}");
    assert!(
        message(&r).contains(&format!(
            "request to rebind.test:{port} denied by the host's network policy"
        )),
        "{r}"
    );
    assert_eq!(
        rebound.load(Ordering::SeqCst),
        0,
        "a connection reached the rebound address"
    );
}

/// A DNS server that never answers costs the request its deadline (the
/// webhook timeout, 10 s by default), not the connection: the admission
/// request still gets a denying answer that names the host.
#[test]
fn a_stalled_dns_lookup_is_bounded_by_the_request_deadline() {
    let s = server_with_dns(r#"{"answers": {"slow.test": ["stall"]}}"#);
    let start = Instant::now();
    let r = s.review("/ivpol/mutate/pin", &create_pod(&["slow.test/app:v1"]));
    assert!(
        start.elapsed() < Duration::from_secs(120),
        "far past the deadline"
    );
    assert_eq!(r["allowed"], false, "{r}");
    assert!(message(&r).contains("slow.test"), "{r}");
}

/// Names the script does not know do not resolve: no silent fallback to
/// the system resolver in a test run.
#[test]
fn unknown_names_do_not_resolve() {
    let s = server_with_dns(r#"{"answers": {}}"#);
    let r = s.review("/ivpol/mutate/pin", &create_pod(&["unknown.test/app:v1"]));
    assert_eq!(r["allowed"], false, "{r}");
    assert!(message(&r).contains("unknown.test"), "{r}");
}

/// A bad script stops the server at start, with the reason.
#[test]
fn a_bad_dns_script_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("dns.json");
    std::fs::write(&path, r#"{"answers": {"a": [["not-an-ip"]]}}"#).expect("script");
    let policies = dir.path().join("policies");
    std::fs::create_dir(&policies).expect("dir");
    std::fs::write(policies.join("pin.yaml"), pin()).expect("policy");
    let out = std::process::Command::new(ivpol_tests::ivpol_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--policies"])
        .arg(&policies)
        .env("IVPOL_TEST_ONLY_DNS_ANSWERS", &path)
        .output()
        .expect("run ivpol");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("IVPOL_TEST_ONLY_DNS_ANSWERS") && err.contains("not-an-ip"),
        "{err}"
    );
}
